"""Text protocols for language-model agents: a prompt for a state, and a strict, linear-time parser.

`text_protocol(env)` returns the protocol an environment names with its `text_protocol()` method
(`ArithmeticText`, `MadText`, `RoutineText` for the built-ins; the base class has none):
`render_prompt(state)` shows the position in words, `parse(text, state)` turns one reply into an
action id or a `Refusal` with a reason, `reply(state, action)` is an
action's canonical reply, and `step(state, text)` plays a reply. A refusal is
played by stepping an out-of-range action, so the shared refusal rule applies: a turn is used,
nothing else changes, `rejected` is set. Everything here is host-side, on one unbatched state.
The parsers are single-pass scanners that stop at the first surplus part, so their time is linear
in the text, and they never raise. The grammars (arithmetic's `<ACT>...</ACT>` and
`<FINAL>n</FINAL>`, MAD's `select N`, Routine's `choose N`) and the refusal reasons: see
docs/environments.md#text-protocol-and-play.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import jax
import numpy as np

from jaxcredit.env import Environment, State
from jaxcredit.env_registry import ENVIRONMENTS
from jaxcredit.envs.mad import BLANK
from jaxcredit.envs.problems import OPS, apply_op

WHITESPACE = " \t\r\n"
OP_SPELLINGS = {"+": 0, "-": 1, "\u2212": 1, "*": 2, "x": 2, "\u00d7": 2, "/": 3, "\u00f7": 3}
MAX_DIGITS = 10
_OPS = "".join(re.escape(op) for op in OP_SPELLINGS)
_LENIENT_ARITHMETIC = [  # what a refused reply meant, read leniently (`lenient_reply`)
    ("combine", re.compile(rf"COMBINE\s*(\d{{1,10}})\s*([{_OPS}X])\s*(\d{{1,10}})", re.IGNORECASE)),
    ("final", re.compile(r"FINAL[^0-9A-Za-z]{0,12}(\d{1,10})", re.IGNORECASE)),
    ("undo", re.compile(r"\bUNDO\b", re.IGNORECASE)),
]
_LENIENT_MAD = [("cell", re.compile(r"\b(select|unselect)\s*(\d{1,10})", re.IGNORECASE)),
                ("submit", re.compile(r"\bsubmit\b", re.IGNORECASE))]
_LENIENT_MAD_NOTE = ("note", re.compile(r"\bnote\s*(\d{1,10})", re.IGNORECASE))  # MAD with decorative actions only
_MAX_PARTS = 6
_MAX_WORD = 16


class Refusal(NamedTuple):
    """A reply the protocol refuses; `reason` says why in one line."""

    reason: str


_SPACES = re.compile(r"[ \t\r\n]*")
_DIGITS = re.compile(r"[0-9]+")  # ASCII digits only: never Arabic-Indic or other Unicode digits
_WORDS = {("A", "Z"): re.compile(r"[A-Z]+"), ("a", "z"): re.compile(r"[a-z]+")}


def _scan(body: str, *, word_chars: tuple[str, str]) -> list[tuple[str, object]] | Refusal:
    """Split `body` into at most `_MAX_PARTS` parts: ("num", int), ("word", str), ("op", id), ("eq", None).

    Linear time with a small constant: whitespace runs are skipped by one regular-expression match
    (C speed), and numbers and words are matched only up to one character past their limit."""
    parts: list[tuple[str, object]] = []
    pos, end = 0, len(body)
    word = _WORDS[word_chars]
    symbols = word_chars == ("A", "Z")
    while True:
        pos = _SPACES.match(body, pos).end()
        if pos == end:
            return parts
        if len(parts) == _MAX_PARTS:
            return Refusal("malformed: too many parts in the command")
        c = body[pos]
        number = _DIGITS.match(body, pos, min(end, pos + MAX_DIGITS + 1))
        if number:
            if number.end() - pos > MAX_DIGITS:
                return Refusal(f"malformed: a number has more than {MAX_DIGITS} digits")
            parts.append(("num", int(number.group())))
            pos = number.end()
            continue
        name = word.match(body, pos, min(end, pos + _MAX_WORD + 1))
        if name:
            if name.end() - pos > _MAX_WORD:
                return Refusal("malformed: unknown command")
            parts.append(("word", name.group()))
            pos = name.end()
        elif c in OP_SPELLINGS and symbols:
            parts.append(("op", OP_SPELLINGS[c]))
            pos += 1
        elif c == "=" and symbols:
            parts.append(("eq", None))
            pos += 1
        else:
            return Refusal(f"malformed: unexpected character {c!r}")


def _host(state: State):
    return jax.tree_util.tree_map(np.asarray, state)


def _scan_words(text) -> tuple[str, list] | Refusal:
    """A lowercase-command reply stripped of surrounding whitespace and scanned into words and
    numbers, or the `Refusal` saying why it cannot be."""
    if not isinstance(text, str):
        return Refusal("malformed: the reply is not text")
    stripped = text.strip(WHITESPACE)
    parts = _scan(stripped, word_chars=("a", "z"))
    return parts if isinstance(parts, Refusal) else (stripped, parts)


class _TextProtocol:
    """What every text protocol shares: `reply` (the canonical text of an action; `parse(reply(s,
    a), s) == a` for a legal `a`) and `step` (parse a reply and play it)."""

    def __init__(self, env):
        self.env = env

    def reply(self, state: State, action: int) -> str:
        """The canonical reply that plays `action` (`parse(reply(s, a), s) == a` for a legal `a`)."""
        return self.env.action_name(int(action))

    def step(self, state: State, text: str) -> tuple[State, int | Refusal]:
        """Parse `text` and play it: the action, or an out-of-range action for a refusal."""
        return _play(self.env, self, state, text)

    def lenient_reply(self, text: str, state: State) -> str | None:
        """The reply in this protocol's exact grammar that `text` most likely meant (case-insensitive
        keywords, any tags or none, the first command in it), or None; what a transcript audit
        reads a refused reply as (`jaxcredit.analysis.intent`). Default: None (no lenient reading)."""
        return None


def _first(patterns, text):
    """`(kind, match)` of the pattern matching earliest in `text`, or `(None, None)`."""
    found = [(m.start(), kind, m) for kind, pattern in patterns if (m := pattern.search(text))]
    return min(found, key=lambda x: x[0])[1:] if found else (None, None)


class ArithmeticText(_TextProtocol):
    """The text protocol of `Arithmetic` (see the module docstring for the grammar)."""

    def lenient_reply(self, text: str, state: State) -> str | None:
        """The first COMBINE (its result recomputed), FINAL or UNDO in `text`, in the exact grammar."""
        kind, match = _first(_LENIENT_ARITHMETIC, text)
        if kind == "combine":
            a, b = int(match.group(1)), int(match.group(3))
            op = OP_SPELLINGS.get(match.group(2).lower(), 2)
            result = apply_op(a, op, b)
            return f"<ACT>COMBINE {a} {'+-*/'[op]} {b} = {result if result is not None else 0}</ACT>"
        if kind == "final":
            return f"<FINAL>{int(match.group(1))}</FINAL>"
        return "<ACT>UNDO</ACT>" if kind == "undo" else None

    def render_prompt(self, state: State) -> str:
        """The prompt for one unbatched state: rules, target, numbers, turns left, history."""
        env, host = self.env, _host(state)
        st = host.env_state
        numbers = " ".join(str(v) for v, alive in zip(st.values.tolist(), st.live.tolist()) if alive)
        history = "; ".join(f"{a} {op} {b} = {c}" for a, op, b, c in env.history(state)) or "none"
        use = "Use every number exactly once. " if env.require_all_used else ""
        return (
            "Reach the target by combining two available numbers at a time with + - * / "
            "(the result replaces them; - must not go negative, / must be exact). "
            f"{use}UNDO reverses the latest combination.\n"
            f"Target: {int(host.problem.target)}\n"
            f"Numbers available: {numbers}\n"
            f"Turns left: {env.max_turns - int(host.turn)}\n"
            f"History: {history}\n"
            "Reply with exactly one of: <ACT>COMBINE a op b = c</ACT>, <ACT>UNDO</ACT>, <FINAL>n</FINAL>"
        )

    def parse(self, text: str, state: State) -> int | Refusal:
        """One reply -> an action id legal in `state`, or a `Refusal` with its reason. Never raises."""
        if not isinstance(text, str):
            return Refusal("malformed: the reply is not text")
        text = text.strip(WHITESPACE)
        if text.startswith("<ACT>") and text.endswith("</ACT>") and len(text) >= 11:
            parts, is_final = _scan(text[5:-6], word_chars=("A", "Z")), False
        elif text.startswith("<FINAL>") and text.endswith("</FINAL>") and len(text) >= 15:
            parts, is_final = _scan(text[7:-8], word_chars=("A", "Z")), True
        else:
            return Refusal("malformed: reply with exactly one <ACT>...</ACT> or <FINAL>n</FINAL>")
        if isinstance(parts, Refusal):
            return parts
        kinds = [kind for kind, _ in parts]
        host = _host(state)
        if bool(host.terminated | host.truncated):
            return Refusal("the episode has ended")
        st = host.env_state
        if is_final:
            if kinds != ["num"]:
                return Refusal("malformed: expected <FINAL>n</FINAL> with one number n")
            slot = self._slot(st, parts[0][1])
            return Refusal(f"{parts[0][1]} is not an available number") if slot is None else self.env.final_action(slot)
        if kinds and kinds[0] == "word" and parts[0][1] not in ("COMBINE", "UNDO"):
            if parts[0][1] == "FINAL":
                return Refusal("malformed: FINAL goes in <FINAL>n</FINAL>, not in <ACT>")
            return Refusal(f"malformed: unknown command {parts[0][1]!r}; use COMBINE or UNDO")
        if kinds == ["word"] and parts[0][1] == "UNDO":
            return self.env.undo_action if int(st.depth) > 0 else Refusal("nothing to undo")
        if kinds != ["word", "num", "op", "num", "eq", "num"] or parts[0][1] != "COMBINE":
            return Refusal("malformed: expected <ACT>COMBINE a op b = c</ACT> or <ACT>UNDO</ACT>")
        (_, a), (_, op), (_, b), (_, c) = parts[1], parts[2], parts[3], parts[5]
        i = self._slot(st, a)
        if i is None:
            return Refusal(f"{a} is not an available number")
        j = self._slot(st, b, skip=i)
        if j is None:
            return Refusal(f"{b} is not an available number" + (" a second time" if a == b else ""))
        result = apply_op(a, op, b)
        if result is None:
            why = {1: "is negative", 3: "is not exact" if b else "divides by zero"}[op]
            return Refusal(f"{a} {OPS[op]} {b} {why}")
        if result != c:
            return Refusal(f"wrong result: {a} {OPS[op]} {b} = {result}, not {c}")
        return self.env.combine_action(i, op, j)

    def reply(self, state: State, action: int) -> str:
        """The canonical reply that plays `action` in `state` (`parse(reply(s, a), s) == a` for a legal `a`)."""
        st, action = _host(state).env_state, int(action)
        values = st.values.tolist()
        if action == self.env.undo_action:
            return "<ACT>UNDO</ACT>"
        if action > self.env.undo_action:
            return f"<FINAL>{values[action - self.env.undo_action - 1]}</FINAL>"
        i, j, op = (int(x) for x in self.env._decode(action))
        return f"<ACT>COMBINE {values[i]} {OPS[op]} {values[j]} = {apply_op(values[i], op, values[j])}</ACT>"

    @staticmethod
    def _slot(st, value: int, skip: int | None = None) -> int | None:
        for slot, (v, alive) in enumerate(zip(st.values.tolist(), st.live.tolist())):
            if alive and v == value and slot != skip:
                return slot
        return None


class MadText(_TextProtocol):
    """The text protocol of `MadSelectiveCopy`: `select N`, `unselect N`, `submit`, and `note N` when
    the environment has decorative actions."""

    def lenient_reply(self, text: str, state: State) -> str | None:
        """The first select, unselect or submit (or note, with decorative actions) in `text`, in the
        exact grammar."""
        notes = self.env.decorative_actions
        kind, match = _first(_LENIENT_MAD + ([_LENIENT_MAD_NOTE] if notes else []), text)
        if kind == "cell":
            return f"{match.group(1).lower()} {int(match.group(2))}"
        if kind == "note":
            return f"note {int(match.group(1))}"
        return "submit" if kind == "submit" else None

    def render_prompt(self, state: State) -> str:
        """The prompt for one unbatched state: rules, tape, selection, turns left."""
        env, host = self.env, _host(state)
        cells = " ".join(f"{k}:{'_' if t == BLANK else f't{t:02d}'}" for k, t in enumerate(host.problem.tolist()))
        selected = ", ".join(str(k) for k, sel in enumerate(host.env_state.tolist()) if sel) or "none"
        note_rule, note_choice = "", ""
        if env.decorative_actions:  # without them the prompt is exactly the plain one
            note_rule = f"note N (N in 0..{env.decorative_actions - 1}) changes nothing and uses a turn.\n"
            note_choice = ", note N"
        return (
            "Select exactly the cells that hold a token (not the blanks _), then submit.\n"
            f"{note_rule}"
            f"Tape: {cells}\n"
            f"Selected: {selected}\n"
            f"Turns left: {env.max_turns - int(host.turn)}\n"
            f"Reply with exactly one of: select N, unselect N, submit{note_choice}"
        )

    def parse(self, text: str, state: State) -> int | Refusal:
        """One reply -> an action id legal in `state`, or a `Refusal` with its reason. Never raises."""
        scanned = _scan_words(text)
        if isinstance(scanned, Refusal):
            return scanned
        stripped, parts = scanned
        kinds = [kind for kind, _ in parts]
        is_submit = kinds == ["word"] and parts[0][1] == "submit"
        words = ("select", "unselect", "note") if self.env.decorative_actions else ("select", "unselect")
        if not is_submit and (kinds != ["word", "num"] or parts[0][1] not in words):
            notes = ", note N" if self.env.decorative_actions else ""
            return Refusal(f"malformed: expected select N, unselect N{notes} or submit")
        if not is_submit and stripped[len(parts[0][1])] not in WHITESPACE:
            what = "note" if parts[0][1] == "note" else "cell"
            return Refusal(f"malformed: put a space between the command and the {what} number")
        host = _host(state)
        if bool(host.terminated | host.truncated):
            return Refusal("the episode has ended")
        if is_submit:
            return self.env.submit_action
        word, cell = parts[0][1], parts[1][1]
        if word == "note":
            if cell >= self.env.decorative_actions:
                return Refusal(f"no note {cell}; notes are 0..{self.env.decorative_actions - 1}")
            return self.env.submit_action + 1 + cell
        if cell >= self.env.length:
            return Refusal(f"no cell {cell}; cells are 0..{self.env.length - 1}")
        selected = bool(host.env_state[cell])
        if word == "select":
            return Refusal(f"cell {cell} is already selected") if selected else cell
        return self.env.length + cell if selected else Refusal(f"cell {cell} is not selected")


class RoutineText(_TextProtocol):
    """The text protocol of `Routine`: `choose N`."""

    def render_prompt(self, state: State) -> str:
        """The prompt for one unbatched state: the rule, this turn's cue, turns left."""
        env, host = self.env, _host(state)
        k = min(int(host.env_state.progress), env.horizon - 1)
        if bool(host.problem.decision[k]) and env.cue == "index":  # the right choice stays hidden
            ordinal = int(np.sum(np.asarray(host.problem.decision)[:k]))
            cue = (f"Decision turn {ordinal + 1} of {env.num_decisions}: one choice is right, the same one every "
                   "episode; any other choice is a mistake.")
        elif bool(host.problem.decision[k]):
            cue = f"Decision turn: the right choice is {int(host.problem.right[k])}; any other choice is a mistake."
        else:
            cue = "Routine turn: every choice is equally good, but you must choose one."
        return (
            f"Each turn, choose one of 0..{env.num_choices - 1}. Mistakes on decision turns lower the final "
            "success.\n"
            f"Turn {int(host.env_state.progress) + 1} of {env.horizon}. {cue}\n"
            f"Turns left: {env.max_turns - int(host.turn)}\n"
            "Reply with exactly: choose N"
        )

    def parse(self, text: str, state: State) -> int | Refusal:
        """One reply -> an action id legal in `state`, or a `Refusal` with its reason. Never raises."""
        scanned = _scan_words(text)
        if isinstance(scanned, Refusal):
            return scanned
        stripped, parts = scanned
        if [kind for kind, _ in parts] != ["word", "num"] or parts[0][1] != "choose":
            return Refusal("malformed: expected choose N")
        if stripped[len("choose")] not in WHITESPACE:
            return Refusal("malformed: put a space between choose and the number")
        host = _host(state)
        if bool(host.terminated | host.truncated):
            return Refusal("the episode has ended")
        choice = parts[1][1]
        if choice >= self.env.num_choices:
            return Refusal(f"no choice {choice}; choices are 0..{self.env.num_choices - 1}")
        return choice


def _play(env: Environment, protocol, state: State, text: str) -> tuple[State, int | Refusal]:
    parsed = protocol.parse(text, state)
    action = env.num_actions if isinstance(parsed, Refusal) else parsed  # out of range: refused
    return env.step(state, action), parsed


def text_protocol(env: Environment):
    """The text protocol of `env` (its `Environment.text_protocol()`); raises `ValueError` for an
    environment without one."""
    make = getattr(env, "text_protocol", None)
    protocol = make() if callable(make) else None
    if protocol is None:
        with_one = [name for name, cls in ENVIRONMENTS.items() if cls.text_protocol is not Environment.text_protocol]
        raise ValueError(f"environment {env.name!r} has no text protocol; choices: {', '.join(with_one)}")
    return protocol
