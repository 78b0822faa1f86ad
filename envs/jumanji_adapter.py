"""Any jaxcredit environment in jumanji's shape: `reset(key) -> (state, timestep)`, `step(state,
action) -> (state, timestep)`, the legal actions as `observation.action_mask`.

Duck-typed, not a subclass of `jumanji.Environment`: jumanji is not a dependency (it pulls in a
large stack), and its contract is small enough to meet directly. `TimeStep`s have jumanji's
`step_type` (FIRST, MID, LAST) and `discount` (0 on termination, 1 on truncation); the observation
is encoded as in the gymnax adapter (`jaxcredit.envs.encodings`) beside the `action_mask`; the
state carries a `key` for jumanji's `AutoResetWrapper`, with no automatic reset here. It differs
from jumanji where jaxcredit's rules do: no `specs` objects (`num_actions`, `observation_shape`),
refused actions (`extras["rejected"]`), and an absorbing end after LAST. See
docs/environments.md#conventions-gymnax-pgx-jumanji.

Shape letters: A actions, L observation length, V vocabulary size.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxcredit.env import Environment, State
from jaxcredit.envs.encodings import check_encoding, encode, encoded_spec

FIRST, MID, LAST = 0, 1, 2  # dm_env / jumanji `StepType` values


class Observation(NamedTuple):
    """What the agent sees: the encoded observation and the legal actions, bool `[A]`."""

    observation: jax.Array
    action_mask: jax.Array


class TimeStep(NamedTuple):
    """jumanji's `TimeStep`: `step_type` int8 `[]` (FIRST 0, MID 1, LAST 2), `reward` and
    `discount` float32 `[]`, `observation`, `extras` (`rejected`, `terminated`, `truncated`)."""

    step_type: jax.Array
    reward: jax.Array
    discount: jax.Array
    observation: Observation
    extras: dict

    def first(self) -> jax.Array:
        return self.step_type == FIRST

    def mid(self) -> jax.Array:
        return self.step_type == MID

    def last(self) -> jax.Array:
        return self.step_type == LAST


@struct.dataclass
class JumanjiState:
    """The jaxcredit `State` of the episode and a key (jumanji's wrappers reset from `state.key`)."""

    state: State
    key: jax.Array


@dataclasses.dataclass(frozen=True)
class JumanjiAdapter:
    """A jaxcredit `Environment` in jumanji's shape (see the module docstring). Hashable."""

    env: Environment
    encoding: str = "one_hot"

    def __post_init__(self):
        if not isinstance(self.env, Environment):
            raise ValueError(f"JumanjiAdapter needs a jaxcredit Environment, got {type(self.env).__name__}")
        check_encoding(self.encoding)

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def observation_shape(self) -> tuple[int, ...]:
        """The shape of `observation.observation` (see `jaxcredit.envs.encodings`)."""
        return encoded_spec(self.env, self.encoding)[0]

    def _timestep(self, state: State, step_type: jax.Array, discount: jax.Array) -> TimeStep:
        observation = Observation(encode(self.env, state.observation, self.encoding), state.legal_action_mask)
        extras = {"rejected": state.rejected, "terminated": state.terminated, "truncated": state.truncated}
        return TimeStep(jnp.asarray(step_type, jnp.int8), state.reward, jnp.asarray(discount, jnp.float32),
                        observation, extras)

    @functools.partial(jax.jit, static_argnames=("self",))
    def reset(self, key: jax.Array) -> tuple[JumanjiState, TimeStep]:
        """Start an episode on a fresh problem; consumes `key` (a fresh key is kept in the state)."""
        problem_key, state_key = jax.random.split(key)
        state = self.env.init(problem_key)
        return JumanjiState(state=state, key=state_key), self._timestep(state, FIRST, 1.0)

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(self, state: JumanjiState, action: Any) -> tuple[JumanjiState, TimeStep]:
        """Take `action` (int `[]`); no key, the dynamics are deterministic."""
        stepped = self.env.step(state.state, jnp.asarray(action, jnp.int32).reshape(()))
        step_type = jnp.where(stepped.done, LAST, MID)
        discount = jnp.where(stepped.terminated, 0.0, 1.0)
        return state.replace(state=stepped), self._timestep(stepped, step_type, discount)


def make_jumanji(name: str, *, encoding: str = "one_hot", **overrides) -> JumanjiAdapter:
    """The jaxcredit environment `name` (`"MAD-v0"`, `"mad"`, ...) in jumanji's shape; `overrides`
    configure the environment. Raises `ValueError` for an unknown environment, field or encoding."""
    from jaxcredit.envs.registry import make

    return JumanjiAdapter(make(name, **overrides), encoding=encoding)
