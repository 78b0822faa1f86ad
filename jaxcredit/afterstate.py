"""Afterstates: the state each legal action leads to, encoded as an afterstate policy's input.

A token policy reads the observation and picks one of `A` slot-indexed actions from one head. An
afterstate policy (`jaxcredit.policy_fn.AfterstatePolicy`) reads, for every action, the state
that action leads to -- computed with the environment's own pure `step`, one `jax.vmap` over
the actions -- and scores each with one network; the softmax over the legal actions is the
policy. It works on any `Environment`: nothing here knows an environment by name.

One afterstate's encoding is `W = L + 2` int32 tokens: the next state's observation (with the
turns left when the environment shows them), then two outcome tokens above the environment's
vocabulary `V`: `V + terminated` (the step ended the episode by its rules), then the sign of the
step's reward (`V + 2` zero, `V + 3` positive, `V + 4` negative). A terminated afterstate shows
only its outcome tokens (observation part 0): it has no future, and its encoding is then the same
wherever it comes from, which is what lets the solver score it from the graph
(`jaxcredit.solver_values`). A truncated step is not marked: the clock shows only where the
observation shows it. An illegal action's encoding is all 0 (its logit is masked anyway).

Cost: one environment step per legal action of every state the policy is evaluated on,
`afterstate_env_steps(states)`; rollouts and branch continuations report it in
`Counts.afterstate_env_steps`, which the ledger keeps in its own counter (`jaxcredit.ledger`).

Shape letters: N states, A actions, L observation length, W = L + 2 afterstate tokens.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.env import Environment, State
from jaxcredit.policy_fn import PolicyFn, policy_input_of

POLICY_INPUTS = ("tokens", "afterstate")
OUTCOME_TOKENS = 2  # terminated, reward sign
EXTRA_VOCAB = 5  # V + {0, 1} terminated, V + {2, 3, 4} reward sign zero / positive / negative


def afterstate_width(observation_length: int) -> int:
    """W: the tokens of one afterstate encoding (`L` observation tokens and the two outcome tokens)."""
    return observation_length + OUTCOME_TOKENS


def afterstate_vocab_size(vocab_size: int) -> int:
    """The vocabulary of afterstate encodings: the environment's `V` and the five outcome tokens."""
    return vocab_size + EXTRA_VOCAB


def reward_sign(reward: jax.Array) -> jax.Array:
    """int32 `[...]`: 0 for a zero reward, 1 positive, 2 negative (the reward token's offset)."""
    return jnp.where(reward > 0, 1, jnp.where(reward < 0, 2, 0)).astype(jnp.int32)


def encode_afterstate(observation: jax.Array, terminated: jax.Array, reward: jax.Array, *,
                      vocab_size: int) -> jax.Array:
    """int32 `[..., W]`: afterstate encodings of next observations int32 `[..., L]`, whether the step
    terminated (bool `[...]`) and its reward (float32 `[...]`), both broadcast to `[...]`;
    `vocab_size` is the environment's V."""
    terminated = jnp.broadcast_to(terminated, observation.shape[:-1])
    reward = jnp.broadcast_to(reward, observation.shape[:-1])
    tokens = jnp.where(terminated[..., None], 0, observation).astype(jnp.int32)
    ended = (vocab_size + terminated.astype(jnp.int32))[..., None]
    sign = (vocab_size + 2 + reward_sign(reward))[..., None]
    return jnp.concatenate([tokens, ended, sign], axis=-1)


def afterstate_encodings(env: Environment, state: State) -> jax.Array:
    """int32 `[A, W]`: the encoding of the state every action of one (unbatched) `state` leads to.

    Steps `env.step(state, a)` for every `a` (one `vmap`); illegal actions (all of them once the
    episode has ended) get all-0 rows.
    """
    actions = jnp.arange(env.num_actions, dtype=jnp.int32)
    stepped = jax.vmap(env.step, in_axes=(None, 0))(state, actions)
    encoded = encode_afterstate(stepped.observation, stepped.terminated, stepped.reward, vocab_size=env.vocab_size)
    return jnp.where(state.legal_action_mask[:, None], encoded, 0)


def afterstate_observations(env: Environment, states: State) -> jax.Array:
    """int32 `[N, A * W]`: `afterstate_encodings` of each of `states` (leaves `[N, ...]`), flattened:
    what an `AfterstatePolicy` reads as its `observation`."""
    encoded = jax.vmap(lambda s: afterstate_encodings(env, s))(states)
    return encoded.reshape(encoded.shape[0], -1)


def afterstate_env_steps(states: State) -> jax.Array:
    """int32 `[]`: the environment steps computing the afterstates of `states` (leaves `[N, ...]`)
    costs: one per legal action (an ended state has none, so it costs nothing)."""
    return jnp.sum(states.legal_action_mask, dtype=jnp.int32)


def policy_observations(env: Environment, policy_fn: PolicyFn, states: State) -> jax.Array:
    """int32 `[N, P]`: what `policy_fn` reads at `states` (leaves `[N, ...]`): the observation tokens
    (`P = L`), or for an `AfterstatePolicy` the afterstate encodings (`P = A * W`)."""
    if policy_input_of(policy_fn) == "afterstate":
        return afterstate_observations(env, states)
    return states.observation


def input_env_steps(policy_fn: PolicyFn, states: State) -> jax.Array:
    """int32 `[]`: the environment steps `policy_observations` spends at `states` (0 for tokens)."""
    if policy_input_of(policy_fn) == "afterstate":
        return afterstate_env_steps(states)
    return jnp.zeros((), jnp.int32)


def input_steps_per_state(policy_fn: PolicyFn, legal_action_mask: jax.Array) -> jax.Array:
    """int32 `[...]`: `input_env_steps` per state from bool `legal_action_mask` `[..., A]` (its legal
    actions for an afterstate policy, 0 for tokens)."""
    if policy_input_of(policy_fn) == "afterstate":
        return jnp.sum(legal_action_mask, axis=-1, dtype=jnp.int32)
    return jnp.zeros(legal_action_mask.shape[:-1], jnp.int32)


def check_policy_input(name: str, value: Any) -> str:
    """`value` if it is one of `POLICY_INPUTS`; else `ValueError` naming the field `name`."""
    if not isinstance(value, str) or value not in POLICY_INPUTS:
        raise ValueError(f"{name}: unknown value {value!r}; choices: {', '.join(POLICY_INPUTS)}")
    return value
