"""Value-target objectives: supervised losses on the legal-action menu with exact action values.

A training run's `objective` is `pg` (the policy gradient on each taken action's advantage,
`train.loop.Trainer.loss`) or one of the value-target objectives here, which use the exact value
`Q(s, a)` of EVERY legal action `a` at each visited state `s` (the `exact` and `solver` credit
arms' value tables, gathered by `credit.solver_menu_values`), not only the taken one: `dense`
(cross-entropy to the softmax of the values), `pairwise` (a RankNet-style logistic loss over the
ordered legal pairs) and `hard` (cross-entropy with the best legal actions as the label; values
within `TIE_TOLERANCE` are ties). Sums, maxima and `log π` run over legal actions only; `Q` is a
constant. Every function returns the per-state loss and whether the state counts. The formulas:
see docs/training.md#objectives-objective.

Shape letters: A actions; `...` any leading axes (e.g. `[B, T]`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

OBJECTIVES = ("pg", "dense", "pairwise", "hard")
VALUE_OBJECTIVES = OBJECTIVES[1:]  # the objectives that need exact values of every legal action
TIE_TOLERANCE = 1e-6  # values closer than this (in success probability) are tied
_MASKED = -1e9  # finite: a row with no legal action stays finite


def dense_loss(log_probs: jax.Array, q: jax.Array, legal: jax.Array, *,
               temperature: float) -> tuple[jax.Array, jax.Array]:
    """`(loss [...], counted [...])`: `-Σ_a softmax(Q/τ)(a) log π(a|s)` over legal actions.

    `log_probs`, `q` float32 `[..., A]`, `legal` bool `[..., A]`; `temperature` τ > 0. A state
    counts when it has a legal action.
    """
    target = jax.nn.softmax(jnp.where(legal, q / temperature, _MASKED), axis=-1)
    target = jax.lax.stop_gradient(jnp.where(legal, target, 0.0))
    loss = -jnp.sum(jnp.where(legal, target * log_probs, 0.0), axis=-1)
    return loss, legal.any(axis=-1)


def pairwise_loss(log_probs: jax.Array, q: jax.Array, legal: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(loss [...], counted [...])`: the mean of `softplus(z_j - z_i)` over the legal pairs with
    `Q_i > Q_j + TIE_TOLERANCE`; a state counts when it has at least one such pair.

    `log_probs`, `q` float32 `[..., A]`, `legal` bool `[..., A]`. The pairs are `[..., A, A]`.
    """
    q = jax.lax.stop_gradient(q)
    pair = legal[..., :, None] & legal[..., None, :] & (q[..., :, None] > q[..., None, :] + TIE_TOLERANCE)
    margin = log_probs[..., :, None] - log_probs[..., None, :]  # z_i - z_j
    pairs = jnp.sum(pair, axis=(-2, -1))
    total = jnp.sum(jnp.where(pair, jax.nn.softplus(-margin), 0.0), axis=(-2, -1))
    return total / jnp.maximum(pairs, 1), pairs > 0


def hard_loss(log_probs: jax.Array, q: jax.Array, legal: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(loss [...], counted [...])`: `-mean_{a in B(s)} log π(a|s)`, `B(s)` the legal actions within
    `TIE_TOLERANCE` of the best legal value; a state counts when it has a legal action.

    `log_probs`, `q` float32 `[..., A]`, `legal` bool `[..., A]`.
    """
    q = jax.lax.stop_gradient(q)
    best = jnp.max(jnp.where(legal, q, -jnp.inf), axis=-1, keepdims=True)
    top = legal & (q >= best - TIE_TOLERANCE)
    loss = -jnp.sum(jnp.where(top, log_probs, 0.0), axis=-1) / jnp.maximum(jnp.sum(top, axis=-1), 1)
    return loss, legal.any(axis=-1)


def objective_loss(objective: str, log_probs: jax.Array, q: jax.Array, legal: jax.Array, *,
                   temperature: float) -> tuple[jax.Array, jax.Array]:
    """`(loss [...], counted [...])` of the value-target `objective` (one of `VALUE_OBJECTIVES`).

    `log_probs` float32 `[..., A]` (log-softmax over legal actions), `q` float32 `[..., A]` the
    exact values of every action, `legal` bool `[..., A]`; `temperature` is used by `dense` only.
    """
    q = jnp.where(legal, q, 0.0)
    if objective == "dense":
        return dense_loss(log_probs, q, legal, temperature=temperature)
    if objective == "pairwise":
        return pairwise_loss(log_probs, q, legal)
    if objective == "hard":
        return hard_loss(log_probs, q, legal)
    raise ValueError(f"unknown value objective {objective!r}; choices: {', '.join(VALUE_OBJECTIVES)}")
