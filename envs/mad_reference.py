"""Plain-Python MAD selective copy: the test oracle and the benchmark baseline.

Written independently of the JAX version (no JAX, no NumPy) from the rules in `mad.py`'s
docstring, one episode at a time. Field names mirror `jaxcredit.env.State`.
"""

from __future__ import annotations

from jaxcredit.envs.reference_base import ReferenceEpisode

BLANK = -1


class MadReference(ReferenceEpisode):
    """One MAD episode in plain Python. `reset(tape)` then `step(action)` repeatedly."""

    def __init__(self, *, length: int = 8, num_tokens: int = 12, max_turns: int = 12, decorative_actions: int = 0,
                 **_ignored):
        self.length = length
        self.num_tokens = num_tokens
        self.max_turns = max_turns
        self.num_actions = 2 * length + 1 + decorative_actions  # after submit: the decorative notes

    def reset(self, tape) -> MadReference:
        self.tape = [int(t) for t in tape]
        self.selected = [False] * self.length
        self._start()
        return self

    def is_legal(self, action: int) -> bool:
        if self.terminated or self.truncated or not 0 <= action < self.num_actions:
            return False
        if action < self.length:
            return not self.selected[action]
        if action < 2 * self.length:
            return self.selected[action - self.length]
        return True  # submit, and every note

    @property
    def legal_action_mask(self) -> list[bool]:
        return [self.is_legal(a) for a in range(self.num_actions)]

    @property
    def observation(self) -> list[int]:
        tokens = []
        for token, sel in zip(self.tape, self.selected):
            base = 0 if token == BLANK else 2 + 2 * token
            tokens.append(base + (1 if sel else 0))
        return tokens + [2 + 2 * self.num_tokens]

    def _apply(self, action: int) -> tuple[float, bool]:
        if action < self.length:
            self.selected[action] = True
        elif action < 2 * self.length:
            self.selected[action - self.length] = False
        elif action > 2 * self.length:  # a note: nothing changes
            return 0.0, False
        elif self.selected == [t != BLANK for t in self.tape]:
            return 1.0, True
        return 0.0, False

    def position_index(self) -> int:
        return sum(1 << i for i, sel in enumerate(self.selected) if sel)
