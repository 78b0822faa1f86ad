"""The one policy contract every consumer uses (rollouts, branches, the solver, training).

A policy is `policy_fn(params, observation, legal_action_mask) -> logits`, batched over any
leading axes: `observation` int32 `[..., L]`, `legal_action_mask` bool `[..., A]`, logits
float32 `[..., A]`. Illegal actions are masked by `masked_logits` / `action_probabilities`,
never by the policy itself, so the uniform policy and a network are interchangeable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

PolicyFn = Callable[[Any, jax.Array, jax.Array], jax.Array]

_MASKED = -1e9  # finite, so no NaN appears even when every action is masked


def uniform_policy_fn(params: Any, observation: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """The uniform reference policy: equal logits for every action (`params` is ignored)."""
    del params, observation
    return jnp.zeros(legal_action_mask.shape, jnp.float32)


def masked_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: logits with illegal actions pushed to a large negative value.

    A row with no legal action (an ended episode) keeps its logits unmasked, so sampling and
    probabilities stay finite; what is sampled there is ignored by the absorbing end.
    """
    any_legal = legal_action_mask.any(axis=-1, keepdims=True)
    keep = legal_action_mask | ~any_legal
    return jnp.where(keep, logits, _MASKED).astype(jnp.float32)


def action_probabilities(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: softmax over legal actions; exactly 0 on illegal ones (if any legal)."""
    any_legal = legal_action_mask.any(axis=-1, keepdims=True)
    probs = jax.nn.softmax(masked_logits(logits, legal_action_mask), axis=-1)
    return jnp.where(legal_action_mask | ~any_legal, probs, 0.0)


def log_probabilities(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: log-softmax over legal actions (finite everywhere)."""
    return jax.nn.log_softmax(masked_logits(logits, legal_action_mask), axis=-1)
