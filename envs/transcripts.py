"""Transcripts of agents playing through a protocol: the JSONL schema, its reader and validator, and replay.

One transcript is one episode, one JSON object per line of a `.jsonl` file (`SCHEMA` names the
version): the environment (`env`, `env_config`), the `protocol` (`text` or `menu`), the `problem`,
the `turns` (each with the agent's raw `reply`, or null when the agent gave none) and the
`outcome`. `env`, `problem` and each turn's `reply` are required; the other fields are written by
`jaxcredit.agents.play` and recomputed by the replay when absent. `replay` plays the replies again
from the problem: the environment, not the file, decides what each reply did (and the audit refuses
a stored `prompt` that is not the one the environment shows). `id` is unique within a file
(`read_transcripts` refuses a duplicate). The schema field by field, with an example:
docs/agents.md#the-transcript-schema.

Host-side only. Bad input raises `ValueError` naming the transcript (and turn) at fault.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from jaxcredit.env import Environment, State
from jaxcredit.envs.menu_protocol import PROTOCOLS, make_protocol
from jaxcredit.envs.registry import make
from jaxcredit.envs.text_protocol import Refusal
from jaxcredit.rundir_io import read_jsonl

SCHEMA = "jaxcredit.transcript/1"
STATUSES = ("solved", "out of turns", "error", "unfinished")


def problem_to_json(env: Environment, problem: Any) -> dict:
    """A problem as the schema's JSON (`env.problem_to_json`): `{"numbers", "target"}` (arithmetic) or
    `{"tape"}` (mad); raises `ValueError` for an environment without a transcript format."""
    return env.problem_to_json(problem)


def problem_from_json(env: Environment, obj: Any) -> Any:
    """The problem pytree of the schema's JSON (`env.problem_from_json`, validated by the environment);
    raises `ValueError`."""
    if not isinstance(obj, dict):
        raise ValueError(f"problem must be a JSON object, got {type(obj).__name__}")
    return env.problem_from_json(obj)


def _check_text(value: Any, where: str) -> None:
    """Raise `ValueError` naming `where` when a string in `value` is not Unicode text that UTF-8
    can hold (JSON's `\\ud800` escapes give lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"{where}: not valid Unicode text (a lone surrogate at character {error.start})") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, where)
            _check_text(item, where)
    elif isinstance(value, list):
        for item in value:
            _check_text(item, where)


def validate_transcript(row: Any, *, where: str = "transcript") -> dict:
    """`row` with its optional fields filled in, after checking the schema and that its text is
    valid Unicode; raises `ValueError` naming `where` (and the turn)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where} is not a JSON object")
    _check_text({k: v for k, v in row.items() if k != "turns"}, where)
    if row.get("schema", SCHEMA) != SCHEMA:
        raise ValueError(f"{where}: unknown schema {row.get('schema')!r}; this reader knows {SCHEMA}")
    for key in ("env", "problem", "turns"):
        if key not in row:
            raise ValueError(f"{where}: missing required field {key!r}")
    if not isinstance(row["env"], str):
        raise ValueError(f"{where}: env must be a string")
    config = row.get("env_config") or {}
    if not isinstance(config, dict):
        raise ValueError(f"{where}: env_config must be a JSON object")
    protocol = row.get("protocol", "text")
    if protocol not in PROTOCOLS:
        raise ValueError(f"{where}: unknown protocol {protocol!r}; choices: {', '.join(PROTOCOLS)}")
    turns = row["turns"]
    if not isinstance(turns, list):
        raise ValueError(f"{where}: turns must be a list")
    for k, turn in enumerate(turns):
        if not isinstance(turn, dict) or "reply" not in turn:
            raise ValueError(f"{where} turn {k}: each turn must be an object with a reply")
        if turn["reply"] is None and k != len(turns) - 1:
            raise ValueError(f"{where} turn {k}: only the last turn may have no reply (the agent failed)")
        if turn["reply"] is not None and not isinstance(turn["reply"], str):
            raise ValueError(f"{where} turn {k}: reply must be a string or null")
        if turn.get("prompt") is not None and not isinstance(turn["prompt"], str):
            raise ValueError(f"{where} turn {k}: prompt must be a string or null")
        _check_text(turn, f"{where} turn {k}")
    return {**row, "schema": SCHEMA, "env_config": config, "protocol": protocol}


def read_transcripts(path: str) -> list[dict]:
    """Every transcript of a JSONL file, validated (`validate_transcript`), ids filled in
    (`line-N` where a transcript has none). Ids must be unique: a duplicate is refused naming
    both lines (`agent play` writes `<run id>-p<k>`, unique across runs, so files concatenate)."""
    rows = read_jsonl(path, final_newline=False)  # other tools' files may end without a newline
    out, lines = [], {}
    for number, row in enumerate(rows, start=1):
        row = validate_transcript(row, where=f"{path} line {number}")
        row = {**row, "id": row.get("id", f"line-{number}")}
        if not isinstance(row["id"], str) or not row["id"]:
            raise ValueError(f"{path} line {number}: id must be a non-empty string")
        if row["id"] in lines:
            raise ValueError(f"{path} line {number}: transcript id {row['id']!r} is also the id of line "
                             f"{lines[row['id']]}; ids must be unique")
        lines[row["id"]] = number
        out.append(row)
    if not out:
        raise ValueError(f"{path} holds no transcripts")
    return out


class Replay(NamedTuple):
    """A transcript played again: `states[k]` is the state before turn k (`states[-1]` after the
    last turn), `parsed[k]` the action id or `Refusal` of turn k's reply (None: no reply)."""

    env: Environment
    protocol: Any
    states: list[State]
    parsed: list[int | Refusal | None]


def environment_of(transcript: dict) -> Environment:
    """The environment a transcript was played in; raises `ValueError` naming it when unknown."""
    return make(transcript["env"], **transcript.get("env_config", {}))


def replay(transcript: dict, *, env: Environment | None = None) -> Replay:
    """Play a validated transcript's replies again from its problem (see `Replay`).

    Raises `ValueError` when a turn comes after the episode ended or the problem is invalid.
    """
    where = f"transcript {transcript.get('id', '?')}"
    env = environment_of(transcript) if env is None else env
    protocol = make_protocol(env, transcript.get("protocol", "text"))
    try:
        state = env.init_problem(problem_from_json(env, transcript["problem"]))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    states, parsed = [state], []
    for k, turn in enumerate(transcript["turns"]):
        if bool(state.done):
            raise ValueError(f"{where} turn {k}: the episode had already ended")
        if turn["reply"] is None:
            parsed.append(None)
            break
        state, result = protocol.step(state, turn["reply"])
        states.append(state)
        parsed.append(result)
    return Replay(env=env, protocol=protocol, states=states, parsed=parsed)


def outcome_of(state: State, *, error: str | None = None) -> dict:
    """The schema's `outcome` of an episode whose last state is `state`."""
    if bool(state.terminated):
        status = "solved" if float(state.reward) > 0 else "unfinished"
    elif bool(state.truncated):
        status = "out of turns"
    else:
        status = "error" if error is not None else "unfinished"
    return {"status": status, "success": bool(state.terminated) and float(state.reward) > 0,
            "return": float(state.reward) if bool(state.terminated) else 0.0, "turns": int(state.turn)}
