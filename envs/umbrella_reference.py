"""Plain-Python Umbrella: the test oracle, written from the rules in `umbrella.py`'s docstring.

No JAX, no NumPy; one episode at a time. Field names mirror `jaxcredit.env.State`.
"""

from __future__ import annotations

from jaxcredit.envs.reference_base import ReferenceEpisode


class UmbrellaReference(ReferenceEpisode):
    """One Umbrella episode in plain Python. `reset(problem)` then `step(action)` repeatedly."""

    def __init__(self, *, chain_length: int = 20, n_distractor: int = 0, **_ignored):
        self.chain_length = chain_length
        self.max_turns = chain_length
        self.n_distractor = n_distractor
        self.num_actions = 2

    def reset(self, problem) -> UmbrellaReference:
        self.need = bool(problem.need_umbrella)
        self.noise_positive = [bool(x) for x in problem.noise_positive]
        self.distractors = [[int(bool(b)) for b in row][: self.n_distractor] for row in problem.distractors]
        self.progress = 0
        self.umbrella = bool(problem.start_umbrella)
        self._start()
        return self

    def is_legal(self, action: int) -> bool:
        return not (self.terminated or self.truncated) and action in (0, 1)

    @property
    def legal_action_mask(self) -> list[bool]:
        return [self.is_legal(a) for a in range(self.num_actions)]

    @property
    def observation(self) -> list[int]:
        time_to_live = self.chain_length - self.progress
        return [int(self.need), int(self.umbrella), 2 + time_to_live, *self.distractors[self.progress]]

    def _apply(self, action: int) -> tuple[float, bool]:
        if self.progress == 0:  # only the first action matters: take the umbrella (1) or leave it (0)
            self.umbrella = action == 1
        self.progress += 1
        if self.progress == self.chain_length:
            return (1.0 if self.umbrella == self.need else -1.0), True
        return (1.0 if self.noise_positive[self.progress - 1] else -1.0), False

    def position_index(self) -> int:
        return 2 * min(self.progress, self.chain_length - 1) + int(self.umbrella)
