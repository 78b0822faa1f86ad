"""What several built-in credit arms share: the `replacement` option of the counterfactual arms
(`mc`, `exact`, `solver`) and its one check, the action-value advantage under the policy (`mc`,
`predictor`), the value head read along a trajectory (`critic`, `progress-model`), and the
graph enumeration of the arms that solve each problem (`exact`, `solver`).

The arms and their estimators: `docs/training.md` (Credit estimators).
Shape letters: P problems, B episodes, T turns, A actions.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit import solver
from jaxcredit.afterstate import policy_observations
from jaxcredit.arm_registry import CreditContext, option
from jaxcredit.credit import REPLACEMENTS, check_replacement, mc_advantage, replacement_value
from jaxcredit.env import Environment
from jaxcredit.ledger import Counts
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.rollout import Trajectory
from jaxcredit.validation import require_int

OUTCOME_BASELINES = ("grpo", "rloo", "mean")
MAX_ENUMERATED = 4_000_000  # positions x actions per problem an exact computation may enumerate
OBSERVED_STATE = ("the full environment state: the position (MAD: tape and selection; arithmetic: the live "
                  "numbers and history) and the turns left, which the values depend on even where the "
                  "network's observation does not show them")


def zero_count() -> jax.Array:
    """int32 `[]` 0: a `Counts` field of work not done."""
    return jnp.zeros((), jnp.int32)


def require_group(baseline: str, config) -> None:
    """`rloo` leaves one attempt out of each group: it needs `attempts_per_problem >= 2`."""
    require_int("config.attempts_per_problem", config.attempts_per_problem, 2 if baseline == "rloo" else 1)


# ----- the counterfactual arms' replacement (mc, exact, solver) ---------------------------------
def replacement_option():
    """The `replacement` field of a counterfactual arm's options."""
    return option("on-policy", choices=REPLACEMENTS, legacy="replacement",
                  doc="what replaces the action in `Q(s, a_t) - E_{a' ~ ρ}[Q(s, a')]` (`credit.REPLACEMENTS`): "
                      "`on-policy` (the baseline is V), `uniform` (over the legal actions) or `null` (the "
                      "environment's null action; JSON null reads as `\"null\"`)")


def null_replacement(options) -> None:
    """JSON null (`--set credit_options.replacement=null`) names the null replacement."""
    if options.replacement is None:
        object.__setattr__(options, "replacement", "null")


def check_replacement_option(options, config=None, env: Environment | None = None) -> None:
    """The one check of the `replacement` option of `exact`, `solver` and `mc` (`credit.REPLACEMENTS`):
    raises `ValueError` naming the problem. `on-policy` (the default) suits every config; another
    replacement needs the policy-gradient objective (value-target objectives use no advantage),
    `uniform` under `mc` needs every legal action's value (`variant` `q`), and `null` needs an
    environment with a null action (checked once `env` is given)."""
    replacement, arm = options.replacement, options.arm
    name = f"credit_options.replacement of credit {arm!r}"
    try:
        check_replacement(replacement, env)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if replacement == "on-policy":
        return
    if getattr(options, "variant", None) == "td" and replacement == "uniform":  # mc's td has no Q̂ per action
        raise ValueError(f"{name} 'uniform' needs the value of every legal action: set credit_options.variant 'q'")
    objective = getattr(config, "objective", "pg")
    if objective != "pg":
        raise ValueError(f"{name} {replacement!r} changes the advantage, which objective {objective!r} does not use; "
                         "leave it 'on-policy'")


def check_replacement_config(options, config) -> None:
    """A counterfactual arm's `check` hook: `check_replacement_option` with the config."""
    check_replacement_option(options, config)


def check_replacement_environment(options, env: Environment) -> None:
    """A counterfactual arm's `check_environment` hook: `check_replacement_option` with the environment."""
    check_replacement_option(options, None, env)


def checked_replacement(context: CreditContext) -> str:
    """The arm's `replacement` option, checked against the run's config and environment."""
    check_replacement_option(context.options, context.config, context.env)
    return context.options.replacement


def with_replacement(estimand: str, options) -> str:
    """The estimand of a counterfactual arm with its `replacement` in place of V."""
    replacement = options.replacement
    if replacement == "on-policy":
        return estimand
    return estimand + f", with E_{{a' ~ {replacement}}}[Q(s_t, a')] in place of V (the {replacement} replacement)"


# ----- values along a trajectory -----------------------------------------------------------------
def q_advantage(context: CreditContext, trajectory: Trajectory, q_hat: jax.Array, params: Any = None,
                replacement: str = "on-policy") -> jax.Array:
    """float32 `[B, T]`: `Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)`, π the policy network
    with `params` (None: the current `context.params`), from action values `q_hat` `[B, T, A]`
    (`credit.mc_advantage`). Another `replacement` subtracts `E_{a' ~ ρ}[Q̂(s_t, a')]` instead
    (`credit.replacement_value`); a refused `a_t` is still valued `r_t + V̂(s_{t+1})`."""
    params = context.params if params is None else params
    logits = context.policy_fn(params, trajectory.observation, trajectory.legal_action_mask)
    v_now = jnp.sum(action_probabilities(logits, trajectory.legal_action_mask) * q_hat, axis=-1)
    v_hat = jnp.concatenate([v_now, jnp.zeros_like(v_now[:, :1])], axis=1)
    baseline = None if replacement == "on-policy" else replacement_value(
        trajectory, q_hat, replacement=replacement, on_policy_value=v_now, null_action=context.env.null_action)
    return mc_advantage(trajectory, state_values=v_hat, action_values=q_hat, baseline=baseline)


def critic_values(context: CreditContext, trajectory: Trajectory) -> jax.Array:
    """float32 `[B, T+1]`: the value head at every state before an action and at the final states."""
    final = trajectory.final_state
    v_steps = context.value_fn(context.params, trajectory.observation, trajectory.legal_action_mask)
    v_final = context.value_fn(context.params, policy_observations(context.env, context.policy_fn, final),
                               final.legal_action_mask)
    return jnp.concatenate([v_steps, v_final[:, None]], axis=1)


def problem_graphs(env: Environment, problems: Any):
    """`(graphs [P], starts [P], enumeration Counts)`: every problem's graph, its start position and
    what enumerating it costs: one env step per legal move of a position reached from the start
    (refusals cost nothing)."""
    graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
    starts = jax.vmap(lambda p: solver.start_position(env, p))(problems)
    steps = jnp.sum(jax.vmap(solver.enumeration_env_steps)(graphs, starts), dtype=jnp.int32)
    return graphs, starts, Counts(steps, zero_count(), zero_count())
