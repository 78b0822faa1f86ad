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

from jaxcredit.envs.text_protocol import Refusal

CATEGORIES = ("unparseable", "misformatted", "illegal")
SCAN_LIMIT = 2000
_LETTER = re.compile(r"(?<![A-Za-z])([A-Z]{1,3})(?![A-Za-z])")


def _canonical(protocol, text: str, state) -> str | None:
    """The reply in the protocol's exact grammar that `text` most likely meant, or None."""
    text = text[:SCAN_LIMIT]
    if getattr(protocol, "kind", "text") == "menu":
        for action in protocol.options(state):  # the option's own text, e.g. "COMBINE 2 + 3 = 5"
            if protocol.describe(state, action) in text:
                return protocol.reply(state, action)
        match = _LETTER.search(text)
        return match.group(1) if match else None
    return protocol.lenient_reply(text, state)  # the text protocol's own lenient reading


def categorize(protocol, reply: str, refusal: Refusal, state) -> tuple[str, int | None]:
    """`(category, intended action id or None)` of a refused `reply` in `state` (see the module)."""
    canonical = _canonical(protocol, reply, state) if isinstance(reply, str) else None
    intended = protocol.parse(canonical, state) if canonical is not None else None
    intended = None if intended is None or isinstance(intended, Refusal) else int(intended)
    if not refusal.reason.startswith("malformed"):
        return "illegal", intended
    return ("misformatted" if canonical is not None else "unparseable"), intended
