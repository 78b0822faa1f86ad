"""What a refused reply most likely meant: the invalid-command categories of a transcript audit.

A refused reply falls in one category:

- **illegal**: well-formed in the protocol's grammar but refused by the rules (a number that is
  not available, a wrong result, nothing to undo, a cell already selected, a letter past the menu);
- **misformatted**: outside the grammar, but a command is recognisable in it, e.g.
  `<ACT>FINAL 22</ACT>` for `<FINAL>22</FINAL>`, `COMBINE 2 + 3 = 5` without tags, `Select 2`,
  `(B)`;
- **unparseable**: no command recognisable.

The intended action is read leniently (case-insensitive keywords, any tags or none, the first
command in the reply, results recomputed), rewritten in the protocol's exact grammar and parsed
by the protocol itself: it is the action when that parse is legal, else None. Only the first
`SCAN_LIMIT` characters are read, so the time stays bounded on any reply.
"""

from __future__ import annotations

import re

from jaxcredit.envs.problems import apply_op
from jaxcredit.envs.text_protocol import OP_SPELLINGS, Refusal

CATEGORIES = ("unparseable", "misformatted", "illegal")
SCAN_LIMIT = 2000
_OPS = "".join(re.escape(op) for op in OP_SPELLINGS)
_ARITHMETIC = [
    ("combine", re.compile(rf"COMBINE\s*(\d{{1,10}})\s*([{_OPS}X])\s*(\d{{1,10}})", re.IGNORECASE)),
    ("final", re.compile(r"FINAL[^0-9A-Za-z]{0,12}(\d{1,10})", re.IGNORECASE)),
    ("undo", re.compile(r"\bUNDO\b", re.IGNORECASE)),
]
_MAD = [("cell", re.compile(r"\b(select|unselect)\s*(\d{1,10})", re.IGNORECASE)),
        ("submit", re.compile(r"\bsubmit\b", re.IGNORECASE))]
_MAD_NOTE = ("note", re.compile(r"\bnote\s*(\d{1,10})", re.IGNORECASE))  # MAD with decorative actions only
_LETTER = re.compile(r"(?<![A-Za-z])([A-Z]{1,3})(?![A-Za-z])")


def _first(patterns, text):
    found = [(m.start(), kind, m) for kind, pattern in patterns if (m := pattern.search(text))]
    return min(found, key=lambda x: x[0])[1:] if found else (None, None)


def _canonical(protocol, text: str, state) -> str | None:
    """The reply in the protocol's exact grammar that `text` most likely meant, or None."""
    text = text[:SCAN_LIMIT]
    if getattr(protocol, "kind", "text") == "menu":
        for action in protocol.options(state):  # the option's own text, e.g. "COMBINE 2 + 3 = 5"
            if protocol.describe(state, action) in text:
                return protocol.reply(state, action)
        match = _LETTER.search(text)
        return match.group(1) if match else None
    if protocol.env.name == "mad":
        notes = getattr(protocol.env, "decorative_actions", 0)
        kind, match = _first(_MAD + ([_MAD_NOTE] if notes else []), text)
        if kind == "cell":
            return f"{match.group(1).lower()} {int(match.group(2))}"
        if kind == "note":
            return f"note {int(match.group(1))}"
        return "submit" if kind == "submit" else None
    kind, match = _first(_ARITHMETIC, text)
    if kind == "combine":
        a, b = int(match.group(1)), int(match.group(3))
        op = OP_SPELLINGS.get(match.group(2).lower(), 2)
        result = apply_op(a, op, b)
        return f"<ACT>COMBINE {a} {'+-*/'[op]} {b} = {result if result is not None else 0}</ACT>"
    if kind == "final":
        return f"<FINAL>{int(match.group(1))}</FINAL>"
    return "<ACT>UNDO</ACT>" if kind == "undo" else None


def categorize(protocol, reply: str, refusal: Refusal, state) -> tuple[str, int | None]:
    """`(category, intended action id or None)` of a refused `reply` in `state` (see the module)."""
    canonical = _canonical(protocol, reply, state) if isinstance(reply, str) else None
    intended = protocol.parse(canonical, state) if canonical is not None else None
    intended = None if intended is None or isinstance(intended, Refusal) else int(intended)
    if not refusal.reason.startswith("malformed"):
        return "illegal", intended
    return ("misformatted" if canonical is not None else "unparseable"), intended
