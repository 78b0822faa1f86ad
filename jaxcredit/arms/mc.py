"""The `mc` credit arm (VinePPO): Monte Carlo action credit from K branch continuations under the
current policy, `td` (`r_t + V̂(s_{t+1}) - V̂(s_t)`) or `q` (`Q̂(s_t, a_t) - V̂(s_t)`), charged to
`label`. Its `replacement` option picks the baseline (`jaxcredit.arms.shared`).

Shape letters: B episodes, T turns, A actions, K continuations.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.arm_registry import (
    ArmOptions,
    CardText,
    CreditArm,
    CreditContext,
    CreditResult,
    option,
    register_credit_arm,
)
from jaxcredit.arms.shared import (
    OBSERVED_STATE,
    check_replacement_config,
    check_replacement_environment,
    checked_replacement,
    null_replacement,
    q_advantage,
    replacement_option,
    require_group,
    with_replacement,
)
from jaxcredit.credit import (
    branch_action_values,
    branch_null_values,
    branch_state_values,
    highest_entropy_steps,
    mc_advantage,
    outcome_advantage,
)
from jaxcredit.policy_fn import log_probabilities
from jaxcredit.rollout import Trajectory

MC_VARIANTS = ("td", "q")


@dataclasses.dataclass(frozen=True)
class McOptions(ArmOptions):
    """The Monte Carlo arm's options."""

    arm = "mc"
    variant: str = option("td", choices=MC_VARIANTS, legacy="mc_variant",
                          doc="`td` (`r_t + V(s_{t+1}) - V(s_t)`) or `q` (`Q(s_t, a_t) - V(s_t)`)")
    continuations: int = option(4, low=1, legacy="mc_continuations",
                                doc="K, continuations per state (`td`) or per legal action (`q`)")
    replacement: str = replacement_option()
    branch_fraction: float = option(1.0, low=0.0, high=1.0,
                                    doc="q, selective branching: continuations only at the fraction q of each "
                                        "episode's live steps where the policy's entropy is highest; the other "
                                        "steps get the outcome label (rloo, in return units); 1: every step")
    common_random_numbers: bool = option(False, doc="the continuations of an episode's states (and of their forced "
                                                    "actions and null steps) share their random keys by "
                                                    "continuation and turn, so branched values cancel where "
                                                    "their continuations meet")

    def __post_init__(self):
        null_replacement(self)
        super().__post_init__()


def _selection(context: CreditContext, trajectory: Trajectory) -> jax.Array | None:
    """bool `[B, T]`: the steps selective branching labels by continuation (None: every step). The
    entropy is that of the policy that sampled the trajectory, recomputed from its observations (the
    rollout's own forward pass has it, so it is not charged)."""
    fraction = context.options.branch_fraction
    if fraction >= 1.0:
        return None
    logits = context.policy_fn(context.params, trajectory.observation, trajectory.legal_action_mask)
    log_probs = log_probabilities(logits, trajectory.legal_action_mask)
    entropy = -jnp.sum(jnp.where(trajectory.legal_action_mask, jnp.exp(log_probs) * log_probs, 0.0), axis=-1)
    return highest_entropy_steps(trajectory, entropy, fraction)


def _combined(context: CreditContext, trajectory: Trajectory, selected, branched: jax.Array) -> jax.Array:
    """The branched label at the selected steps, the outcome arm's rloo label (`R_i` minus the mean of
    the other attempts at its problem, in the same return units as `Q̂ - V̂`) at the others."""
    if selected is None:
        return branched
    outcome = outcome_advantage(trajectory, group_size=context.config.attempts_per_problem, baseline="rloo")
    return jnp.where(selected, branched, outcome)


def _before(selected: jax.Array) -> jax.Array:
    """bool `[B, T+1]`: the state before each selected step (the final state never)."""
    return jnp.concatenate([selected, jnp.zeros_like(selected[:, :1])], axis=1)


def _after(selected: jax.Array) -> jax.Array:
    """bool `[B, T+1]`: the state after each selected step."""
    return jnp.concatenate([jnp.zeros_like(selected[:, :1]), selected], axis=1)


def mc_td_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`r_t + V̂(s_{t+1}) - V̂(s_t)` from `continuations` continuations of every state; consumes `key`.
    With the `replacement` option `null`, `V̂(s_t)` is replaced by `Q̂(s_t, null)` from as many
    continuations after the null action (`credit.branch_null_values`), charged too. With
    `branch_fraction` q < 1 only the selected steps' states and their next states are branched;
    with `common_random_numbers` every branch shares the episode's keys."""
    replacement = checked_replacement(context)
    options = context.options
    if options.branch_fraction == 0.0:  # no step branched: the outcome label everywhere, no label work
        return CreditResult(_combined(context, trajectory, jnp.zeros_like(trajectory.live), trajectory.reward),
                            None, {})
    selected = _selection(context, trajectory)
    active = None if selected is None else _before(selected) | _after(selected)  # s_t and s_{t+1} of each chosen t
    branch = dict(num_continuations=options.continuations, sharding=context.sharding,
                  common_random_numbers=options.common_random_numbers)
    if replacement == "on-policy":
        values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, key,
                                             active=active, **branch)
        return CreditResult(_combined(context, trajectory, selected, mc_advantage(trajectory, state_values=values)),
                            None, {"label": counts})
    value_key, null_key = (key, key) if options.common_random_numbers else jax.random.split(key)
    if selected is not None:  # the null baseline needs V̂(s_{t+1}) only
        active = _after(selected)
    values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, value_key,
                                         active=active, **branch)
    null_values, null_counts = branch_null_values(context.env, context.policy_fn, context.params, trajectory,
                                                  null_key, active=selected, **branch)
    advantage = mc_advantage(trajectory, state_values=values, baseline=null_values)
    return CreditResult(_combined(context, trajectory, selected, advantage), None, {"label": counts + null_counts})


def mc_q_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)` (unbiased from the same continuations,
    no second batch), `continuations` per legal action; consumes `key`. The `replacement` option
    picks the baseline from the same `Q̂` (`uniform`: their mean; `null`: the null action's). With
    `branch_fraction` q < 1 only the selected steps' states are branched."""
    replacement = checked_replacement(context)
    options = context.options
    if options.branch_fraction == 0.0:  # no step branched: the outcome label everywhere, no label work
        return CreditResult(_combined(context, trajectory, jnp.zeros_like(trajectory.live), trajectory.reward),
                            None, {})
    selected = _selection(context, trajectory)
    q_hat, counts = branch_action_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=options.continuations, sharding=context.sharding,
                                         common_random_numbers=options.common_random_numbers, active=selected)
    advantage = q_advantage(context, trajectory, q_hat, replacement=replacement)
    return CreditResult(_combined(context, trajectory, selected, advantage), None, {"label": counts})


def mc_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Monte Carlo credit, the `variant` option's (`td` or `q`)."""
    variant = mc_q_arm if context.options.variant == "q" else mc_td_arm
    return variant(context, trajectory, problems, key)


def check(options: McOptions, config) -> None:
    """The replacement's needs (`check_replacement_config`); selective branching's other steps take
    the rloo outcome label, which needs 2 attempts per problem."""
    check_replacement_config(options, config)
    if options.branch_fraction < 1.0:
        require_group("rloo", config)


def card(options: McOptions, config: dict) -> CardText:
    """What the CA-ID card of an mc run says."""
    k, variant = options.continuations, options.variant
    formula = "r_t + V̂(s_{t+1}) − V̂(s_t)" if variant == "td" else "Q̂(s_t, a_t) − V̂(s_t), V̂ = Σ π Q̂"
    estimand = with_replacement(f"per action: {formula}, estimating Q^π(s_t, a_t) − V^π(s_t) of the current "
                                "policy", options)
    if options.branch_fraction < 1.0:
        estimand += (f", at the {options.branch_fraction:g} of each episode's steps with the highest policy entropy; "
                     "the others get the rloo outcome label")
    keys = ", common random numbers" if options.common_random_numbers else ""
    return CardText(estimand,
                    OBSERVED_STATE, f"continuation (K={k} per state{', per action' if variant == 'q' else ''}{keys})",
                    "continuations under the current policy from the branched state to the episode's end "
                    "(at most max_turns); reward: the environment's success reward")


ARM = register_credit_arm(CreditArm(
    "mc", "label", False, "Monte Carlo action credit from K branch continuations (VinePPO)", mc_arm,
    options=McOptions, check=check, check_environment=check_replacement_environment, card=card))
