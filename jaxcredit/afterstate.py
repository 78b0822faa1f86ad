"""Afterstates: the state each legal action leads to, encoded as an afterstate policy's input.

An afterstate policy (`jaxcredit.policy_fn.AfterstatePolicy`) reads, for every action, the state
that action leads to (the environment's own `step`, one `jax.vmap` over the actions) and scores
each with one network; the softmax over the legal actions is the policy. It works on any
`Environment`. One afterstate's encoding is `W = L + 2` int32 tokens: the next state's
observation, then whether the step terminated and its reward's sign; a terminated afterstate shows
only those two tokens, an illegal action's encoding is all 0. Lookahead (`lookahead=1`) adds
three tokens summarizing each afterstate's legal successors (`W = L + 5`). Each legal action
costs one environment step, counted in `Counts.afterstate_env_steps`. See
docs/training.md#policy-input-tokens-or-afterstates-policy_input.

Shape letters: N states, A actions, L observation length, W afterstate tokens (`L + 2`, or
`L + 5` with lookahead).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.env import Environment, State
from jaxcredit.policy_fn import PolicyFn, afterstate_lookahead_of, policy_input_of
from jaxcredit.validation import require_int

POLICY_INPUTS = ("tokens", "afterstate")
AFTERSTATE_LOOKAHEADS = (0, 1)
OUTCOME_TOKENS = 2  # terminated, reward sign
EXTRA_VOCAB = 5  # V + {0, 1} terminated, V + {2, 3, 4} reward sign zero / positive / negative
LOOKAHEAD_TOKENS = 3  # legal successors, any winning end, any other end


def afterstate_width(observation_length: int, lookahead: int = 0) -> int:
    """W: the tokens of one afterstate encoding (`L` observation tokens, the two outcome tokens and,
    with `lookahead` 1, the three summary tokens)."""
    return observation_length + OUTCOME_TOKENS + LOOKAHEAD_TOKENS * lookahead


def afterstate_vocab_size(vocab_size: int, *, num_actions: int = 0, lookahead: int = 0) -> int:
    """The vocabulary of afterstate encodings: the environment's `V` and the five outcome tokens;
    with `lookahead` 1 also the `A + 5` summary tokens (`num_actions` is `A`)."""
    return vocab_size + EXTRA_VOCAB + ((num_actions + 5) if lookahead else 0)


def reward_sign(reward: jax.Array) -> jax.Array:
    """int32 `[...]`: 0 for a zero reward, 1 positive, 2 negative (the reward token's offset)."""
    return jnp.where(reward > 0, 1, jnp.where(reward < 0, 2, 0)).astype(jnp.int32)


def encode_afterstate(observation: jax.Array, terminated: jax.Array, reward: jax.Array, *,
                      vocab_size: int) -> jax.Array:
    """int32 `[..., L + 2]`: afterstate encodings of next observations int32 `[..., L]`, whether the step
    terminated (bool `[...]`) and its reward (float32 `[...]`), both broadcast to `[...]`;
    `vocab_size` is the environment's V."""
    terminated = jnp.broadcast_to(terminated, observation.shape[:-1])
    reward = jnp.broadcast_to(reward, observation.shape[:-1])
    tokens = jnp.where(terminated[..., None], 0, observation).astype(jnp.int32)
    ended = (vocab_size + terminated.astype(jnp.int32))[..., None]
    sign = (vocab_size + 2 + reward_sign(reward))[..., None]
    return jnp.concatenate([tokens, ended, sign], axis=-1)


def lookahead_summary(legal: jax.Array, terminated: jax.Array, reward: jax.Array) -> tuple[jax.Array, ...]:
    """`(count int32 [...], win bool [...], other bool [...])` of an afterstate's successors, from
    bool `legal` `[..., A]` (its legal actions), bool `terminated` `[..., A]` and float32 `reward`
    `[..., A]` (what stepping each action gives): the legal successors, whether any terminates with
    a positive reward, whether any terminates with a zero or negative one."""
    ends = legal & terminated
    return (jnp.sum(legal, axis=-1, dtype=jnp.int32), jnp.any(ends & (reward > 0), axis=-1),
            jnp.any(ends & (reward <= 0), axis=-1))


def encode_lookahead(count: jax.Array, win: jax.Array, other: jax.Array, *, vocab_size: int,
                     num_actions: int) -> jax.Array:
    """int32 `[..., 3]`: the summary tokens of `lookahead_summary`'s `(count, win, other)` (each `[...]`);
    `vocab_size` is the environment's V, `num_actions` its A."""
    base = vocab_size + EXTRA_VOCAB
    return jnp.stack([base + count.astype(jnp.int32), base + num_actions + 1 + win.astype(jnp.int32),
                      base + num_actions + 3 + other.astype(jnp.int32)], axis=-1)


def _encodings_and_steps(env: Environment, state: State, lookahead: int) -> tuple[jax.Array, jax.Array]:
    """`(encodings int32 [A, W], env_steps int32 [])` of one (unbatched) `state`."""
    actions = jnp.arange(env.num_actions, dtype=jnp.int32)
    stepped = jax.vmap(env.step, in_axes=(None, 0))(state, actions)
    encoded = encode_afterstate(stepped.observation, stepped.terminated, stepped.reward, vocab_size=env.vocab_size)
    legal = state.legal_action_mask
    steps = jnp.sum(legal, dtype=jnp.int32)
    if lookahead:
        successors = jax.vmap(jax.vmap(env.step, in_axes=(None, 0)), in_axes=(0, None))(stepped, actions)  # [A, A]
        count, win, other = lookahead_summary(stepped.legal_action_mask, successors.terminated, successors.reward)
        count = jnp.where(legal, count, 0)  # an illegal action's "afterstate" is the refused state: not stepped
        encoded = jnp.concatenate([encoded, encode_lookahead(count, win, other, vocab_size=env.vocab_size,
                                                             num_actions=env.num_actions)], axis=-1)
        steps = steps + jnp.sum(count, dtype=jnp.int32)
    return jnp.where(legal[:, None], encoded, 0), steps


def afterstate_encodings(env: Environment, state: State, *, lookahead: int = 0) -> jax.Array:
    """int32 `[A, W]`: the encoding of the state every action of one (unbatched) `state` leads to.

    Steps `env.step(state, a)` for every `a` (one `vmap`; with `lookahead` 1, a second over every
    afterstate's actions); illegal actions (all of them once the episode has ended) get all-0 rows.
    """
    return _encodings_and_steps(env, state, lookahead)[0]


def afterstate_inputs(env: Environment, states: State, *, lookahead: int = 0) -> tuple[jax.Array, jax.Array]:
    """`(observation int32 [N, A * W], env_steps int32 [N])`: `afterstate_encodings` of each of `states`
    (leaves `[N, ...]`), flattened, and the environment steps each state's encodings cost (one per
    legal action, plus with `lookahead` one per legal successor of each legal afterstate)."""
    encoded, steps = jax.vmap(lambda s: _encodings_and_steps(env, s, lookahead))(states)
    return encoded.reshape(encoded.shape[0], -1), steps


def afterstate_observations(env: Environment, states: State, *, lookahead: int = 0) -> jax.Array:
    """int32 `[N, A * W]`: `afterstate_encodings` of each of `states` (leaves `[N, ...]`), flattened:
    what an `AfterstatePolicy` (of that `lookahead`) reads as its `observation`."""
    return afterstate_inputs(env, states, lookahead=lookahead)[0]


def afterstate_env_steps(states: State) -> jax.Array:
    """int32 `[]`: the environment steps computing the afterstates of `states` (leaves `[N, ...]`)
    costs without lookahead: one per legal action (an ended state has none, so it costs nothing)."""
    return jnp.sum(states.legal_action_mask, dtype=jnp.int32)


def policy_inputs(env: Environment, policy_fn: PolicyFn, states: State) -> tuple[jax.Array, jax.Array]:
    """`(observation int32 [N, P], env_steps int32 [N])`: what `policy_fn` reads at `states` (leaves
    `[N, ...]`) and the environment steps computing it cost per state: the observation tokens
    (`P = L`, no steps), or for an `AfterstatePolicy` its afterstate encodings (`P = A * W`;
    `afterstate_inputs` with the policy's lookahead)."""
    if policy_input_of(policy_fn) == "afterstate":
        return afterstate_inputs(env, states, lookahead=afterstate_lookahead_of(policy_fn))
    return states.observation, jnp.zeros(states.turn.shape, jnp.int32)


def policy_observations(env: Environment, policy_fn: PolicyFn, states: State) -> jax.Array:
    """int32 `[N, P]`: what `policy_fn` reads at `states` (leaves `[N, ...]`): the observation tokens
    (`P = L`), or for an `AfterstatePolicy` the afterstate encodings (`P = A * W`)."""
    return policy_inputs(env, policy_fn, states)[0]


def input_steps_per_state(env: Environment, policy_fn: PolicyFn, states: State) -> jax.Array:
    """int32 `[...]`: the environment steps `policy_observations` spends at each of `states` (leaves
    `[..., ...]`, any leading axes): 0 for tokens; for an afterstate policy its legal actions, plus
    with lookahead the legal successors of each legal afterstate (then stepped here)."""
    if policy_input_of(policy_fn) != "afterstate":
        return jnp.zeros(states.turn.shape, jnp.int32)
    if not afterstate_lookahead_of(policy_fn):
        return jnp.sum(states.legal_action_mask, axis=-1, dtype=jnp.int32)
    shape = states.turn.shape
    flat = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[len(shape):]), states)
    return afterstate_inputs(env, flat, lookahead=1)[1].reshape(shape)


def input_env_steps(env: Environment, policy_fn: PolicyFn, states: State) -> jax.Array:
    """int32 `[]`: the environment steps `policy_observations` spends at `states` (0 for tokens)."""
    return jnp.sum(input_steps_per_state(env, policy_fn, states), dtype=jnp.int32)


def check_policy_input(name: str, value: Any) -> str:
    """`value` if it is one of `POLICY_INPUTS`; else `ValueError` naming the field `name`."""
    if not isinstance(value, str) or value not in POLICY_INPUTS:
        raise ValueError(f"{name}: unknown value {value!r}; choices: {', '.join(POLICY_INPUTS)}")
    return value


def check_afterstate_lookahead(name: str, value: Any, policy_input: str) -> int:
    """`value` as an int if it is one of `AFTERSTATE_LOOKAHEADS` (the steps looked ahead past each
    afterstate) and fits `policy_input`; else `ValueError` naming the field `name` (a lookahead
    needs `policy_input="afterstate"`)."""
    value = require_int(name, value, min(AFTERSTATE_LOOKAHEADS), max(AFTERSTATE_LOOKAHEADS))
    if value and policy_input != "afterstate":
        raise ValueError(f"{name}={value} needs policy_input 'afterstate', got {policy_input!r}: a token policy "
                         f"reads no afterstates to look ahead from")
    return value
