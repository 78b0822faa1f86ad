"""Any jaxcredit environment as a `gymnax` environment, for JAX RL pipelines written against gymnax.

`GymnaxAdapter(env)` (or `make_gymnax("MAD-v0", **overrides)`, like `gymnax.make`) is a
`gymnax.environments.environment.Environment` with a `Discrete(A)` action space and an encoded
observation (`jaxcredit.envs.encodings`), optionally with the legal-action mask in it
(`action_mask_in_observation`) or the afterstates an afterstate policy reads
(`observation="afterstate"`). `step` resets an ended episode from a pool of problems in the params
(`reset_pool`) and keeps the ended episode in `info` (`final_observation`, `terminated`,
`truncated`, `rejected`, `legal_action_mask`, `discount`, `afterstate_env_steps`);
`five_value_step=True` gives the five-value `step` of older trainers (rejax 0.1.x, purejaxrl).
See docs/environments.md#use-the-environments-in-your-own-pipeline: conventions, encodings, the
two forms of `step`, the fast reset and a published trainer run unmodified.

This is the only module that imports gymnax (the optional extra `jaxcredit[gymnax]`).
Shape letters: A actions, L observation length, V vocabulary size, P pool size, W afterstate tokens.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment as gymnax_environment
from gymnax.environments import spaces

from jaxcredit.afterstate import afterstate_inputs, afterstate_vocab_size, afterstate_width, check_afterstate_lookahead
from jaxcredit.env import Environment, State
from jaxcredit.envs.encodings import check_encoding, encode, encoded_spec

DEFAULT_RESET_POOL = 65_536
OBSERVATIONS = ("state", "afterstate")  # what the adapter observes: the state, or every action's afterstate
_POOL_CHUNK = 4_096  # the pool is drawn in chunks of this many problems (bounded memory)


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
    """gymnax `EnvParams`.

    Attributes:
      max_steps_in_episode: the environment's turn limit (informational: the dynamics are the
        jaxcredit environment's).
      reset_pool: the problem pytree with leaves `[P, ...]` that automatic resets draw from, or
        None for a fresh draw at every reset.
    """

    max_steps_in_episode: int = 1
    reset_pool: Any = None


def pool_index(key: jax.Array, pool_size: int) -> jax.Array:
    """int32 `[]` in `[0, pool_size)` (a power of two): the key's bits mixed by the murmur3
    finaliser, masked to the pool size.

    Not a threefry draw: under `vmap` that is one block per episode per step, and it cost about a
    fifth of the raw step's throughput on MAD. The step keys a trainer passes come from
    `jax.random.split`, so their bits are already uniform and the index is uniform; the finaliser
    (a bijection of uint32) also spreads hand-made keys such as `key(0), key(1), ...` (tested).
    """
    words = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    words = words.reshape(-1).astype(jnp.uint32)
    mixed = words[0]
    for i in range(1, words.shape[0]):
        mixed = (mixed * jnp.uint32(0x9E3779B1)) ^ words[i]
    mixed = (mixed ^ (mixed >> 16)) * jnp.uint32(0x85EBCA6B)
    mixed = (mixed ^ (mixed >> 13)) * jnp.uint32(0xC2B2AE35)
    mixed = mixed ^ (mixed >> 16)
    return (mixed & jnp.uint32(pool_size - 1)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class GymnaxAdapter(gymnax_environment.Environment):
    """A jaxcredit `Environment` seen as a gymnax environment (see the module docstring).

    Hashable (a frozen dataclass of the hashable jaxcredit environment and flags), so it is the
    static argument of its own jitted `reset`/`step`, as gymnax-consuming trainers require.
    """

    env: Environment
    encoding: str | None = None  # None: "one_hot" for the state, "tokens" for afterstates
    action_mask_in_observation: bool = False
    five_value_step: bool = False
    reset_pool: int = DEFAULT_RESET_POOL
    observation: str = "state"
    afterstate_lookahead: int = 0

    def __post_init__(self):
        if not isinstance(self.env, Environment):
            raise ValueError(f"GymnaxAdapter needs a jaxcredit Environment, got {type(self.env).__name__}")
        if not isinstance(self.observation, str) or self.observation not in OBSERVATIONS:
            raise ValueError(f"GymnaxAdapter.observation: unknown value {self.observation!r}; "
                             f"choices: {', '.join(OBSERVATIONS)}")
        policy_input = "afterstate" if self.observation == "afterstate" else "tokens"
        check_afterstate_lookahead("GymnaxAdapter.afterstate_lookahead", self.afterstate_lookahead, policy_input)
        if self.encoding is None:
            object.__setattr__(self, "encoding", "tokens" if self.observation == "afterstate" else "one_hot")
        check_encoding(self.encoding)
        if self.observation == "afterstate" and self.encoding != "tokens":
            raise ValueError(f"GymnaxAdapter: observation 'afterstate' is int32 tokens [A * W] (encoding 'tokens'), "
                             f"got encoding {self.encoding!r}")
        for flag in ("action_mask_in_observation", "five_value_step"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"GymnaxAdapter.{flag} must be True or False, got {getattr(self, flag)!r}")
        pool = self.reset_pool
        if not isinstance(pool, int) or isinstance(pool, bool) or pool < 0 or pool & (pool - 1):
            raise ValueError(f"GymnaxAdapter.reset_pool must be 0 (fresh draws) or a power of two, got {pool!r}")

    # ----- sizes, spaces, params -----
    @property
    def name(self) -> str:
        return f"jaxcredit-{self.env.name}"

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @functools.cached_property
    def default_params(self) -> GymnaxParams:
        """Params with the reset pool drawn from `jax.random.key(0)`: drawn on first use and kept
        by this adapter (a constant: drawing it again would give the same pool)."""
        return self.make_params(jax.random.key(0))

    def make_params(self, key: jax.Array) -> GymnaxParams:
        """Params whose reset pool is drawn from `key` (e.g. one pool per training seed)."""
        pool = None
        if self.reset_pool:
            pool = _draw_pool(self.env, key, self.reset_pool)
        return GymnaxParams(max_steps_in_episode=self.env.max_turns, reset_pool=pool)

    def action_space(self, params: Any = None) -> spaces.Discrete:
        """`Discrete(A)`: action ids as the jaxcredit environment numbers them."""
        return spaces.Discrete(self.env.num_actions)

    def observation_space(self, params: Any = None) -> spaces.Box | spaces.Dict:
        """The encoded observation's `Box`; with the mask, `Dict(observation, action_mask)`."""
        if self.observation == "afterstate":
            env, lookahead = self.env, self.afterstate_lookahead
            width = afterstate_width(env.observation_length, lookahead)
            vocab = afterstate_vocab_size(env.vocab_size, num_actions=env.num_actions, lookahead=lookahead)
            shape, dtype, low, high = (env.num_actions * width,), jnp.int32, 0, vocab - 1
        else:
            shape, dtype, low, high = encoded_spec(self.env, self.encoding)
        box = spaces.Box(low, high, shape, dtype)
        if not self.action_mask_in_observation:
            return box
        return spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (self.env.num_actions,), jnp.bool_)})

    def legal_action_mask(self, state: Any) -> jax.Array:
        """bool `[A]`: the legal actions of the current episode; `state` may be wrapped (e.g. by
        gymnax's `LogWrapper`): its `env_state` fields are followed down to the adapter's state."""
        while not isinstance(state, GymnaxState):
            state = state.env_state
        return state.state.legal_action_mask

    def observe(self, state: State) -> Any:
        """The adapter's observation of a jaxcredit `State` (encoded, with the mask if asked)."""
        return self._observe_and_cost(state)[0]

    def _observe_and_cost(self, state: State) -> tuple[Any, jax.Array]:
        """`(observation, afterstate_env_steps int32 [])`: `observe(state)` and the environment steps
        computing it cost (0 for the state's own observation)."""
        if self.observation == "afterstate":
            one = jax.tree_util.tree_map(lambda x: x[None], state)
            observation, steps = afterstate_inputs(self.env, one, lookahead=self.afterstate_lookahead)
            observation, steps = observation[0], steps[0]
        else:
            observation, steps = encode(self.env, state.observation, self.encoding), jnp.zeros((), jnp.int32)
        if self.action_mask_in_observation:
            return {"observation": observation, "action_mask": state.legal_action_mask}, steps
        return observation, steps

    # ----- dynamics -----
    def reset_env(self, key: jax.Array, params: Any = None) -> tuple[Any, GymnaxState]:
        """Start an episode on a fresh problem; consumes `key`."""
        state = self.env.init(key)
        return self.observe(state), GymnaxState(state=state, time=state.turn)

    @functools.partial(jax.jit, static_argnames=("self",))
    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, GymnaxState]:
        """gymnax `reset`: `(observation, state)` on a fresh problem; consumes `key`."""
        return self.reset_env(key, params)

    def step_env(self, key: jax.Array, state: GymnaxState, action: Any, params: Any = None):
        """One step without reset: `(observation, state, reward, terminated, info)`."""
        stepped = self.env.step(state.state, jnp.asarray(action, jnp.int32).reshape(()))
        info = {"rejected": stepped.rejected, "truncated": stepped.truncated}
        return self.observe(stepped), GymnaxState(state=stepped, time=stepped.turn), stepped.reward, \
            stepped.terminated, info

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(self, key: jax.Array, state: GymnaxState, action: Any, params: Any = None):
        """Take `action` (int `[]`) and restart if the episode ended; consumes `key`.

        Returns `(observation, state, reward, terminated, truncated, info)`, or with
        `five_value_step` `(observation, state, reward, done, info)`. See the module docstring
        for `info` and for where the restart's problem comes from.
        """
        action = jnp.asarray(action, jnp.int32).reshape(())
        pool = None if params is None else params.reset_pool
        if pool is None:
            stepped = self.env.step(state.state, action)
            fresh = self.env.init(key)
            next_state = jax.tree_util.tree_map(lambda r, s: jnp.where(stepped.done, r, s), fresh, stepped)
        else:
            pool_size = jax.tree_util.tree_leaves(pool)[0].shape[0]
            if pool_size < 1 or pool_size & (pool_size - 1):
                raise ValueError(f"params.reset_pool must hold a power-of-two number of problems, got {pool_size}")
            index = pool_index(key, pool_size)
            problem = jax.tree_util.tree_map(lambda leaf: leaf[index], pool)
            stepped, next_state = self.env.step_or_restart(state.state, action, problem)
        terminated, truncated = stepped.terminated, stepped.truncated
        observation, observation_steps = self._observe_and_cost(next_state)
        info = {
            "final_observation": self.observe(stepped),
            "terminated": terminated,
            "truncated": truncated,
            "rejected": stepped.rejected,
            "legal_action_mask": next_state.legal_action_mask,
            "discount": jnp.where(terminated, 0.0, 1.0).astype(jnp.float32),
        }
        if self.observation == "afterstate":
            info["afterstate_env_steps"] = observation_steps
        gymnax_state = GymnaxState(state=next_state, time=next_state.turn)
        if self.five_value_step:
            return observation, gymnax_state, stepped.reward, terminated | truncated, info
        return observation, gymnax_state, stepped.reward, terminated, truncated, info

    def is_terminated(self, state: GymnaxState, params: Any = None) -> jax.Array:
        return state.state.terminated

    def is_truncated(self, state: GymnaxState, params: Any = None) -> jax.Array:
        return state.state.truncated


@functools.partial(jax.jit, static_argnums=(0, 2))
def _draw_pool(env: Environment, key: jax.Array, size: int) -> Any:
    """The problem pytree `[size, ...]`: `size` independent `env.sample_problem` draws."""
    keys = jax.random.split(key, size)
    return jax.lax.map(env.sample_problem, keys, batch_size=min(size, _POOL_CHUNK))


def make_gymnax(name: str, *, encoding: str | None = None, action_mask_in_observation: bool = False,
                five_value_step: bool = False, reset_pool: int = DEFAULT_RESET_POOL, observation: str = "state",
                afterstate_lookahead: int = 0, **overrides) -> tuple[GymnaxAdapter, GymnaxParams]:
    """`(adapter, params)` for the jaxcredit environment `name` (`"MAD-v0"`, `"mad"`, ...), like
    `gymnax.make`. `overrides` configure the environment (`make(name, **overrides)`); the other
    keywords configure the adapter (see `GymnaxAdapter`; `observation="afterstate"` observes every
    action's afterstate, int32 `[A * W]`). Raises `ValueError` for an unknown environment, field,
    encoding, observation, lookahead or a bad pool size.
    """
    from jaxcredit.envs.registry import make

    adapter = GymnaxAdapter(make(name, **overrides), encoding=encoding,
                            action_mask_in_observation=action_mask_in_observation,
                            five_value_step=five_value_step, reset_pool=reset_pool, observation=observation,
                            afterstate_lookahead=afterstate_lookahead)
    return adapter, adapter.default_params
