"""Fitting an arm's learned value head on a fixed policy's own episodes, before labelling with it.

An arm with a learned value head (critic, progress-model) trains that head as training goes.
Measured without training (the suite's label quality), the head would be whatever the fixed
policy's parameters hold, not the arm's estimate at that policy. `fit_value_head` is the arm's
`fit_for_labels` hook (`jaxcredit.arm_registry.CreditArm`): for `steps` updates it plays a fresh
batch of the fixed policy π's episodes, calls the arm's own `compute` on them and takes one Adam
step on the critic batch's squared error, on a copy of π's parameters: π itself never changes.
The fitting episodes are charged to `main`, the arm's own label work to its account, as training
charges them. See docs/suite.md#label-quality-no-training.

Shape letters: P problems, B episodes, M critic label states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxcredit.arm_registry import CreditContext, LabelFit, credit_arm
from jaxcredit.rollout import rollout
from jaxcredit.validation import require_int


def critic_loss(value_fn, value_params, critic_batch, coef) -> jax.Array:
    """The critic loss (float32 `[]`) the trainer, this fit and the ranking study's fit all use:
    `coef` x the mean squared error of `value_fn(value_params, observation, legal)` against `target`
    over the valid label states; `critic_batch` is `(observation [M, ...], legal [M, A], target [M],
    valid bool [M])`."""
    observation, legal, target, valid = critic_batch
    error = jnp.where(valid, value_fn(value_params, observation, legal) - target, 0.0)
    return coef * jnp.sum(error**2) / jnp.maximum(valid.sum(), 1)


def full_batch_adam(loss: Callable[[Any], jax.Array], params: Any, *, steps: int, learning_rate: float,
                    max_grad_norm: float) -> tuple[Any, jax.Array]:
    """`(params, losses float32 [steps])`: `steps` Adam steps (gradients clipped to global norm
    `max_grad_norm`) on the scalar `loss(params)` from `params`, each step's loss taken before its
    update. The predictor's and the ranking study's fits of a model on a fixed dataset."""
    optimizer = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate))

    def step(carry, _):
        p, opt_state = carry
        value, grads = jax.value_and_grad(loss)(p)
        updates, opt_state = optimizer.update(grads, opt_state, p)
        return (optax.apply_updates(p, updates), opt_state), value

    (params, _), losses = jax.lax.scan(step, (params, optimizer.init(params)), None, length=steps)
    return params, losses


def fit_value_head(context: CreditContext, key: jax.Array, draw_episodes: Callable[[jax.Array], Any], *,
                   steps: int) -> LabelFit:
    """The value head of `context.config.credit`'s arm fitted on π's (`context.policy_fn`,
    `context.params`) own episodes: `steps` times, `draw_episodes(key) -> (problems [P], starts
    [B])` fresh problems, one rollout of π to the end, the arm's `compute` with the head fitted
    so far, one Adam step (the run's `learning_rate`, `max_grad_norm`) on its critic batch
    (weighted by its `critic_coef`). Deterministic given `key` (consumed). Returns the fitted
    parameters and the charge: the episodes under `main`, `compute`'s own charge per account.
    Raises `ValueError` for `steps` < 1 or an arm whose `compute` returns no critic batch."""
    require_int("fit_value_head steps", steps, 1)
    arm = credit_arm(context.config.credit)
    config, value_fn = context.config, context.value_fn
    optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))

    def step(carry, step_key):
        value_params, opt_state = carry
        episode_key, action_key, label_key = jax.random.split(step_key, 3)
        problems, starts = draw_episodes(episode_key)
        trajectory, main_counts = rollout(context.env, context.policy_fn, context.params, starts, action_key,
                                          num_turns=context.env.max_turns)
        result = arm.compute(LabelFit(value_params, {}).labelling_context(context), trajectory, problems, label_key)
        if result.critic_batch is None:
            raise ValueError(f"credit arm {arm.name!r} returns no critic batch: fit_value_head has no value head "
                             "to fit (leave its fit_for_labels unset)")
        grads = jax.grad(lambda p: critic_loss(value_fn, p, result.critic_batch, result.critic_coef))(value_params)
        updates, opt_state = optimizer.update(grads, opt_state, value_params)
        charge = dict(result.charge)
        charge["main"] = main_counts + charge["main"] if "main" in charge else main_counts
        return (optax.apply_updates(value_params, updates), opt_state), charge

    (value_params, _), charges = jax.lax.scan(step, (context.params, optimizer.init(context.params)),
                                              jax.random.split(key, steps))
    return LabelFit(value_params, jax.tree_util.tree_map(lambda x: jnp.sum(x, axis=0, dtype=jnp.int32), charges))


__all__ = ["critic_loss", "fit_value_head"]
