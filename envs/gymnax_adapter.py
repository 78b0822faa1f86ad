"""Any jaxcredit environment as a `gymnax` environment, for JAX RL pipelines written against gymnax.

`GymnaxAdapter(env)` is a `gymnax.environments.environment.Environment` with a `Discrete(A)`
action space and an int32 `Box` observation space (`[L]` tokens in `[0, vocab_size)`). `step`
resets an ended episode automatically (a new problem drawn from the step's key), as gymnax
environments do, and keeps what the ended episode looked like in `info`:

- `info["final_observation"]` int32 `[L]`: the observation right after the step, before any
  reset (the terminal observation when the episode ended);
- `info["terminated"]`, `info["truncated"]`, `info["rejected"]` bool `[]`: how the step went
  (`rejected`: the action was illegal or out of range and was refused -- it used a turn and
  changed nothing else, the shared rule, so trainers that do not mask actions are well defined);
- `info["legal_action_mask"]` bool `[A]`: the legal actions of the returned state (after a
  reset: of the new episode), for trainers that mask; also `adapter.legal_action_mask(state)`;
- `info["discount"]` float32 `[]`: 0 when the episode terminated, else 1.

Two forms of `step`: gymnax 1.x returns six values `(observation, state, reward, terminated,
truncated, info)`; many trainers are written against the older five-value form `(observation,
state, reward, done, info)` with `done = terminated | truncated`: build the adapter with
`five_value_step=True` (or `make_gymnax(..., five_value_step=True)`) for those.

The jaxcredit environment keeps its own static configuration (turn limit included); gymnax's
`EnvParams` carries only `max_steps_in_episode` (equal to `env.max_turns`, read by evaluation
helpers) and does not change the dynamics.

This is the only module that imports gymnax (the optional extra `jaxcredit[gymnax]`).
Shape letters: A actions, L observation length.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment as gymnax_environment
from gymnax.environments import spaces

from jaxcredit.env import Environment, State


@struct.dataclass
class GymnaxState:
    """The gymnax-side state: the jaxcredit `State` of the current episode and its step count.

    Attributes:
      state: the jaxcredit `State` (never ended: an ended episode is replaced by a new one).
      time: int32 `[]`, steps taken in the current episode (gymnax's `EnvState.time`).
    """

    state: State
    time: jax.Array


@struct.dataclass
class GymnaxParams:
    """gymnax `EnvParams`: informational only (the dynamics are the jaxcredit environment's)."""

    max_steps_in_episode: int = 1


@dataclasses.dataclass(frozen=True)
class GymnaxAdapter(gymnax_environment.Environment):
    """A jaxcredit `Environment` seen as a gymnax environment (see the module docstring).

    Hashable (a frozen dataclass of the hashable jaxcredit environment), so it can be a static
    argument of `jax.jit`, as gymnax-consuming trainers require.
    """

    env: Environment
    five_value_step: bool = False

    def __post_init__(self):
        if not isinstance(self.env, Environment):
            raise ValueError(f"GymnaxAdapter needs a jaxcredit Environment, got {type(self.env).__name__}")

    # ----- sizes and spaces -----
    @property
    def name(self) -> str:
        return f"jaxcredit-{self.env.name}"

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def default_params(self) -> GymnaxParams:
        return GymnaxParams(max_steps_in_episode=self.env.max_turns)

    def action_space(self, params: Any = None) -> spaces.Discrete:
        """`Discrete(A)`: action ids as the jaxcredit environment numbers them."""
        return spaces.Discrete(self.env.num_actions)

    def observation_space(self, params: Any = None) -> spaces.Box:
        """int32 `Box` of shape `[L]` with tokens in `[0, vocab_size - 1]`."""
        return spaces.Box(0, self.env.vocab_size - 1, (self.env.observation_length,), jnp.int32)

    def legal_action_mask(self, state: GymnaxState) -> jax.Array:
        """bool `[A]`: the legal actions of the current episode's state."""
        return state.state.legal_action_mask

    # ----- dynamics -----
    def reset_env(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, GymnaxState]:
        """Start an episode on a fresh problem; consumes `key`. Returns `(observation [L], state)`."""
        state = self.env.init(key)
        return state.observation, GymnaxState(state=state, time=jnp.zeros((), jnp.int32))

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, GymnaxState]:
        """gymnax `reset`: `(observation [L], state)`; consumes `key`."""
        return self.reset_env(key, params)

    def step_env(self, key: jax.Array, state: GymnaxState, action: Any, params: Any = None):
        """One step without reset: `(observation [L], state, reward, terminated, info)`."""
        stepped = self.env.step(state.state, jnp.asarray(action, jnp.int32).reshape(()))
        info = {"rejected": stepped.rejected, "truncated": stepped.truncated}
        return stepped.observation, GymnaxState(state=stepped, time=state.time + 1), stepped.reward, \
            stepped.terminated, info

    def step(self, key: jax.Array, state: GymnaxState, action: Any, params: Any = None):
        """Take `action` (int `[]`) and reset automatically if the episode ended; consumes `key`.

        Returns `(observation, state, reward, terminated, truncated, info)`, or with
        `five_value_step` `(observation, state, reward, done, info)`. See the module docstring
        for `info`.
        """
        observation, stepped, reward, terminated, step_info = self.step_env(key, state, action, params)
        truncated = step_info["truncated"]
        done = terminated | truncated
        reset_observation, reset_state = self.reset_env(key, params)
        next_state = jax.tree_util.tree_map(lambda r, s: jnp.where(done, r, s), reset_state, stepped)
        info = {
            "final_observation": observation,
            "terminated": terminated,
            "truncated": truncated,
            "rejected": step_info["rejected"],
            "legal_action_mask": next_state.state.legal_action_mask,
            "discount": jnp.where(terminated, 0.0, 1.0).astype(jnp.float32),
        }
        next_observation = jnp.where(done, reset_observation, observation)
        if self.five_value_step:
            return next_observation, next_state, reward, done, info
        return next_observation, next_state, reward, terminated, truncated, info

    def is_terminated(self, state: GymnaxState, params: Any = None) -> jax.Array:
        return state.state.terminated

    def is_truncated(self, state: GymnaxState, params: Any = None) -> jax.Array:
        return state.state.truncated


def make_gymnax(name: str, *, five_value_step: bool = False, **overrides) -> tuple[GymnaxAdapter, GymnaxParams]:
    """`(adapter, params)` for the jaxcredit environment `name` (like `gymnax.make`).

    `overrides` configure the environment (`make(name, **overrides)`); raises `ValueError` for
    an unknown environment or field.
    """
    from jaxcredit.envs.registry import make

    adapter = GymnaxAdapter(make(name, **overrides), five_value_step=five_value_step)
    return adapter, adapter.default_params
