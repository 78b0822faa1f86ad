"""Plain-Python interactive arithmetic: the test oracle and the benchmark baseline.

Written independently of the JAX version (no JAX, no NumPy) from the rules in
`arithmetic.py`'s docstring, one episode at a time. Field names mirror `jaxcredit.env.State`.
"""

from __future__ import annotations

from jaxcredit.envs.problems import FAMILIES, apply_op
from jaxcredit.envs.reference_base import ReferenceEpisode

BLANK, TARGET, LIVE, DEAD, ACT, TURNS_LEFT = 10, 11, 12, 13, 14, 15


class ArithmeticReference(ReferenceEpisode):
    """One arithmetic episode in plain Python. `reset(problem)` then `step(action)` repeatedly."""

    def __init__(self, *, count: int = 4, max_turns: int = 7, require_all_used: bool = True,
                 include_turns_left: bool = False, family: str = "default", max_number: int | None = None,
                 **_ignored):
        self.count = count
        self.max_turns = max_turns
        self.require_all_used = require_all_used
        self.include_turns_left = include_turns_left
        limit = FAMILIES[family].number_high if max_number is None else max_number
        self.digits = len(str(max(2, limit) ** count))
        self.pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
        self.undo_action = 4 * len(self.pairs)
        self.num_actions = self.undo_action + 1 + count

    def reset(self, problem) -> ArithmeticReference:
        self.numbers = [int(x) for x in problem.numbers]
        self.target = int(problem.target)
        self.values = list(self.numbers)
        self.live = [True] * self.count
        self.history: list[tuple[int, int, int, int]] = []  # (i, op, j, value of slot i before)
        self._start()
        return self

    apply = staticmethod(apply_op)

    def is_legal(self, action: int) -> bool:
        if self.terminated or self.truncated or not 0 <= action < self.num_actions:
            return False
        if action < self.undo_action:
            i, j = self.pairs[action // 4]
            return self.live[i] and self.live[j] and self.apply(self.values[i], action % 4, self.values[j]) is not None
        if action == self.undo_action:
            return bool(self.history)
        return self.live[action - self.undo_action - 1]

    @property
    def legal_action_mask(self) -> list[bool]:
        return [self.is_legal(a) for a in range(self.num_actions)]

    def _digits(self, value: int) -> list[int]:
        text = str(value).rjust(self.digits, "0")
        return [int(c) for c in text]

    @property
    def observation(self) -> list[int]:
        tokens = [TARGET] + self._digits(self.target)
        for value, alive in zip(self.values, self.live):
            tokens += [LIVE] + self._digits(value) if alive else [DEAD] + [BLANK] * self.digits
        if self.include_turns_left:
            tokens.append(TURNS_LEFT + max(0, self.max_turns - self.turn))
        return tokens + [ACT]

    def _apply(self, action: int) -> tuple[float, bool]:
        if action < self.undo_action:
            i, j = self.pairs[action // 4]
            op = action % 4
            self.history.append((i, op, j, self.values[i]))
            self.values[i] = self.apply(self.values[i], op, self.values[j])
            self.live[j] = False
        elif action == self.undo_action:
            i, _, j, before = self.history.pop()
            self.values[i] = before
            self.live[j] = True
        else:
            slot = action - self.undo_action - 1
            all_used = sum(self.live) == 1 or not self.require_all_used
            if self.values[slot] == self.target and all_used:
                return 1.0, True
        return 0.0, False

    def position_index(self) -> int:
        """The path of combinations, ranked as in `arithmetic.py`'s docstring."""
        radices = [4 * (self.count - k) * (self.count - k - 1) for k in range(self.count - 1)]
        index, size = 0, 1
        for depth in range(len(self.history)):
            index += size
            size *= radices[depth]
        live = [True] * self.count
        local = 0
        for k, (i, op, j, _) in enumerate(self.history):
            live_slots = [s for s in range(self.count) if live[s]]
            others = [s for s in live_slots if s != i]
            local = local * radices[k] + (live_slots.index(i) * len(others) + others.index(j)) * 4 + op
            live[j] = False
        return index + local
