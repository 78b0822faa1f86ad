"""Plain-Python Routine: the test oracle, written from the rules in `routine.py`'s docstring.

No JAX, no NumPy; one episode at a time. Field names mirror `jaxcredit.env.State`. The final
reward is rounded to float32 (`struct`), as the JAX version stores it.
"""

from __future__ import annotations

import struct

from jaxcredit.envs.reference_base import ReferenceEpisode


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


class RoutineReference(ReferenceEpisode):
    """One Routine episode in plain Python. `reset(problem)` then `step(action)` repeatedly."""

    def __init__(self, *, horizon: int = 16, num_choices: int = 2, failure: str = "fatal", survival: float = 0.5,
                 cue: str = "right", vocab_horizon: int = 0, **_ignored):
        self.horizon = horizon
        self.cue = cue
        self.token_horizon = vocab_horizon or horizon
        self.max_turns = horizon
        self.num_actions = num_choices
        self.fatal = failure == "fatal"
        self.survival = survival
        self.max_wrong = 1 if self.fatal else horizon

    def reset(self, problem) -> RoutineReference:
        self.decision = [bool(d) for d in problem.decision]
        self.right = [int(r) for r in problem.right]
        self.progress = 0
        self.wrong = 0
        self._start()
        return self

    def is_legal(self, action: int) -> bool:
        return not (self.terminated or self.truncated) and 0 <= action < self.num_actions

    @property
    def legal_action_mask(self) -> list[bool]:
        return [self.is_legal(a) for a in range(self.num_actions)]

    @property
    def observation(self) -> list[int]:
        k = self.progress
        if k < self.horizon and self.decision[k]:
            shown = self.right[k] if self.cue == "right" else sum(self.decision[:k])  # the decision's ordinal
            return [k, self.token_horizon + 2 + shown]
        return [k, self.token_horizon + 1]

    def _apply(self, action: int) -> tuple[float, bool]:
        if self.decision[self.progress] and action != self.right[self.progress]:
            self.wrong = min(self.wrong + 1, self.max_wrong)
        self.progress += 1
        if self.progress < self.horizon:
            return 0.0, False
        if self.fatal:
            return (1.0 if self.wrong == 0 else 0.0), True
        return _float32(self.survival**self.wrong), True

    def position_index(self) -> int:
        return min(self.progress, self.horizon - 1) * (self.max_wrong + 1) + self.wrong
