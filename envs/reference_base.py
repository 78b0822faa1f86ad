"""The shared rules in plain Python, for the reference implementations (the test oracles).

Mirrors what `jaxcredit.env.Environment.step` enforces, written independently: an ended
episode stays as it is with reward 0; an illegal or out-of-range action uses a turn and changes
nothing else; reaching `max_turns` without terminating truncates. A reference writes only
`is_legal(action)` and `_apply(action) -> (reward, terminated)` for a legal action.
"""

from __future__ import annotations


class ReferenceEpisode:
    """One episode in plain Python: `reset(problem)` (in the subclass) then `step(action)`."""

    max_turns: int

    def _start(self) -> None:
        self.turn = 0
        self.reward = 0.0
        self.terminated = False
        self.truncated = False
        self.rejected = False

    def is_legal(self, action: int) -> bool:
        raise NotImplementedError

    def _apply(self, action: int) -> tuple[float, bool]:
        raise NotImplementedError

    def step(self, action: int):
        action = int(action)
        if self.terminated or self.truncated:
            self.reward = 0.0
            return self
        self.turn += 1
        self.reward = 0.0
        self.rejected = not self.is_legal(action)
        if not self.rejected:
            self.reward, self.terminated = self._apply(action)
        if not self.terminated and self.turn >= self.max_turns:
            self.truncated = True
        return self
