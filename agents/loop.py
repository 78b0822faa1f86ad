"""The agent loop: any language-model agent plays problems through a protocol, and we keep transcripts.

`play(env, agent, problems)` starts one episode per problem, shows the agent the protocol's
prompt, plays its reply (`jaxcredit.envs.menu_protocol.make_protocol`: the free-form text
commands or the lettered menu) and repeats until the episode ends, recording every turn in the
transcript schema of `jaxcredit.envs.transcripts`. An agent is a callable `prompt -> reply`, a
batched callable `list[str] -> list[str]` (`batched=True`: up to `batch_size` live episodes in
lockstep), or an object with `respond(prompts, states, protocol)` that also sees the states (the
reference agents). A reply marked invalid (`InvalidReply`) is played as a refused turn and
recorded with its reason. An agent that raises ends its episodes with the error (the last turn's
`reply` null, status `error`), and no further problem is started. See
docs/agents.md#playing-an-agent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from jaxcredit.env import Environment
from jaxcredit.envs.menu_protocol import make_protocol
from jaxcredit.envs.text_protocol import Refusal
from jaxcredit.envs.transcripts import SCHEMA, outcome_of, problem_to_json


class AgentError(Exception):
    """An agent could not give a reply (network, timeout, malformed response, exhausted script)."""


class InvalidReply(Exception):
    """An agent's reply that cannot be played (e.g. over the size cap): not a failure of the
    agent but a refused turn, recorded with `reply: ""` and this reason as its `refusal`."""


class _Refused(str):
    """The empty reply played for an `InvalidReply`, carrying its reason."""

    reason: str


def split_problems(problems: Any) -> list:
    """A list of single problems from a list or from a batched problem pytree (leaves `[N, ...]`)."""
    if isinstance(problems, (list, tuple)):
        return list(problems)
    leaves = jax.tree_util.tree_leaves(problems)
    if not leaves or np.ndim(leaves[0]) == 0:
        raise ValueError("problems must be a list of problems or a batched problem pytree with leaves [N, ...]")
    count = int(np.shape(leaves[0])[0])
    return [jax.tree_util.tree_map(lambda x, i=i: np.asarray(x)[i], problems) for i in range(count)]


def _responder(agent: Any, batched: bool) -> Callable:
    """`(prompts, states, protocol) -> replies` for every accepted agent form."""
    if hasattr(agent, "respond"):
        return agent.respond
    if not callable(agent):
        raise ValueError(f"agent must be callable (prompt -> reply) or have respond(); got {type(agent).__name__}")
    if batched:
        return lambda prompts, states, protocol: agent(list(prompts))

    def one(prompt: str) -> str:
        try:
            return agent(prompt)
        except InvalidReply as invalid:
            refused = _Refused("")
            refused.reason = str(invalid)
            return refused

    return lambda prompts, states, protocol: [one(prompt) for prompt in prompts]


def _turn_record(env: Environment, turn: int, prompt: str, reply: str | None, parsed, state) -> dict:
    accepted = parsed is not None and not isinstance(parsed, Refusal)
    return {"turn": turn, "prompt": prompt, "reply": reply,
            "action": env.action_name(parsed) if accepted else None,
            "action_id": int(parsed) if accepted else None,
            "refusal": parsed.reason if isinstance(parsed, Refusal) else None,
            "reward": float(state.reward) if parsed is not None else 0.0,
            "done": bool(state.done) if parsed is not None else False}


def play(env: Environment, agent: Any, problems: Any, *, protocol: str = "text", batched: bool = False,
         batch_size: int = 16, agent_name: str = "agent", progress: bool = False,
         on_transcript: Callable[[dict], None] | None = None, ids: Sequence[str] | None = None) -> list[dict]:
    """Play every problem to the end through `protocol` and return one transcript per problem played.

    `problems`: a list of problems or a batched problem pytree (leaves `[N, ...]`, e.g.
    `jaxcredit.envs.problem_set(...)`). `on_transcript(transcript)` is called as each episode ends
    (write it out there, so nothing is lost on a crash). `ids` name the transcripts (default
    `p0, p1, ...`). After an agent error the loop stops: the problems not started have no
    transcript. Raises `ValueError` for a bad protocol, agent or reply type.
    """
    rules = make_protocol(env, protocol)
    items = split_problems(problems)
    ids = [f"p{k}" for k in range(len(items))] if ids is None else list(ids)
    if len(ids) != len(items):
        raise ValueError(f"ids: {len(ids)} names for {len(items)} problems")
    respond = _responder(agent, batched)
    group = batch_size if (batched or hasattr(agent, "respond")) else 1
    if not isinstance(group, int) or group < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    config = env.config()
    transcripts: list[dict] = []
    bar = tqdm(total=len(items), desc=f"{agent_name} on {env.name}", unit="problem", file=sys.stderr,
               disable=not progress)
    try:
        for start in range(0, len(items), group):
            chunk = range(start, min(start + group, len(items)))
            states = {k: env.init_problem(items[k]) for k in chunk}
            records = {k: {"schema": SCHEMA, "id": ids[k], "agent": agent_name, "env": env.name, "env_config": config,
                           "protocol": protocol, "problem": problem_to_json(env, items[k]), "turns": [],
                           "outcome": None, "error": None} for k in chunk}
            error = None
            while error is None and any(not bool(s.done) for s in states.values()):
                live = [k for k in chunk if not bool(states[k].done)]
                prompts = [rules.render_prompt(states[k]) for k in live]
                try:
                    replies = list(respond(prompts, [states[k] for k in live], rules))
                    if len(replies) != len(live) or not all(isinstance(r, str) for r in replies):
                        raise AgentError(f"the agent must return {len(live)} str replies, got "
                                         f"{[type(r).__name__ for r in replies]}")
                except Exception as failure:  # noqa: BLE001 - any agent failure ends its episodes with the error
                    error = failure if isinstance(failure, AgentError) else AgentError(
                        f"{type(failure).__name__}: {failure}")
                    for k, prompt in zip(live, prompts):
                        turn = int(states[k].turn)
                        records[k]["turns"].append(_turn_record(env, turn, prompt, None, None, states[k]))
                    break
                for k, prompt, reply in zip(live, prompts, replies):
                    turn = int(states[k].turn)
                    states[k], parsed = rules.step(states[k], reply)
                    record = _turn_record(env, turn, prompt, str(reply), parsed, states[k])
                    if isinstance(reply, _Refused):  # played as the empty reply: refused, one turn used
                        record["refusal"] = f"invalid reply: {reply.reason}"
                    records[k]["turns"].append(record)
            for k in chunk:
                failed = error is not None and not bool(states[k].done)
                records[k]["error"] = str(error) if failed else None
                records[k]["outcome"] = outcome_of(states[k], error=str(error) if failed else None)
                transcripts.append(records[k])
                if on_transcript is not None:
                    on_transcript(records[k])
                bar.update(1)
            if error is not None:
                break
    finally:
        bar.close()
    return transcripts
