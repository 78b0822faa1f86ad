"""An environment in one file: a corridor, its plain-Python reference, and its registration.

The agent starts in cell 0 of a corridor of `length` cells and walks left or right; a problem is
the goal cell, drawn in `[1, length)`. Reaching the goal pays 1 and ends the episode. The
observation is two tokens, the agent's cell and the goal's. Load it with `--plugin corridor.py`,
train on it with `--env corridor`.
"""

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

import jaxcredit
from jaxcredit.envs.reference_base import ReferenceEpisode

LEFT, RIGHT = 0, 1


@dataclasses.dataclass(frozen=True)
class Corridor(jaxcredit.Environment):
    """A corridor of `length` cells; positions are the agent's cell (S = length)."""

    name: ClassVar[str] = "corridor"
    length: int = 5
    max_turns: int = 8

    def __post_init__(self):
        jaxcredit.require_int("corridor.length", self.length, 2, 64)
        jaxcredit.require_int("corridor.max_turns", self.max_turns, 1, 1024)

    # the sizes every environment declares: A actions, L observation tokens, V token ids, S positions
    num_actions = property(lambda self: 2)
    observation_length = property(lambda self: 2)
    vocab_size = property(lambda self: self.length)
    num_positions = property(lambda self: self.length)

    def sample_problem(self, key):
        return jax.random.randint(key, (), 1, self.length).astype(jnp.int32)  # the goal cell

    def _init(self, problem):
        return jnp.zeros((), jnp.int32)  # the agent's cell

    def _step(self, problem, cell, action):
        cell = jnp.where(action == RIGHT, cell + 1, cell - 1)
        return cell, (cell == problem).astype(jnp.float32), cell == problem

    def _observe(self, problem, cell, turn):
        return jnp.stack([cell, problem])

    def _legal_action_mask(self, problem, cell):
        return jnp.stack([cell > 0, cell < self.length - 1])

    def _position(self, problem, index):
        return index, (index >= 0) & (index < self.length)

    def _position_index(self, problem, cell):
        return cell

    def action_name(self, action: int) -> str:
        return ("left", "right")[action]

    def render(self, state) -> str:
        cell, goal = int(state.env_state), int(state.problem)
        return "".join("A" if i == cell else "G" if i == goal else "." for i in range(self.length))


class CorridorReference(ReferenceEpisode):
    """The corridor in plain Python, written from the rules above: the conformance test's oracle."""

    def __init__(self, *, length: int, max_turns: int):
        self.length, self.max_turns = length, max_turns

    def reset(self, problem):
        self.goal, self.cell = int(problem), 0
        self._start()
        return self

    def is_legal(self, action: int) -> bool:
        live = not (self.terminated or self.truncated)
        return live and ((action == LEFT and self.cell > 0) or (action == RIGHT and self.cell < self.length - 1))

    def _apply(self, action: int) -> tuple[float, bool]:
        self.cell += 1 if action == RIGHT else -1
        return float(self.cell == self.goal), self.cell == self.goal

    @property
    def legal_action_mask(self) -> list[bool]:
        return [self.is_legal(a) for a in (LEFT, RIGHT)]

    @property
    def observation(self) -> list[int]:
        return [self.cell, self.goal]

    def position_index(self) -> int:
        return self.cell


jaxcredit.register_environment(Corridor, reference=CorridorReference, ids=("Corridor-v0",))
