"""The `mc` credit arm (VinePPO): Monte Carlo action credit from K branch continuations under the
current policy, `td` (`r_t + V̂(s_{t+1}) - V̂(s_t)`) or `q` (`Q̂(s_t, a_t) - V̂(s_t)`), charged to
`label`. Its `replacement` option picks the baseline (`jaxcredit.arms.shared`).

Shape letters: B episodes, T turns, A actions, K continuations.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

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
    with_replacement,
)
from jaxcredit.credit import branch_action_values, branch_null_values, branch_state_values, mc_advantage
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

    def __post_init__(self):
        null_replacement(self)
        super().__post_init__()


def mc_td_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`r_t + V̂(s_{t+1}) - V̂(s_t)` from `continuations` continuations of every state; consumes `key`.
    With the `replacement` option `null`, `V̂(s_t)` is replaced by `Q̂(s_t, null)` from as many
    continuations after the null action (`credit.branch_null_values`), charged too."""
    replacement = checked_replacement(context)
    k = context.options.continuations
    if replacement == "on-policy":
        values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, key,
                                             num_continuations=k, sharding=context.sharding)
        return CreditResult(mc_advantage(trajectory, state_values=values), None, {"label": counts})
    value_key, null_key = jax.random.split(key)
    values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, value_key,
                                         num_continuations=k, sharding=context.sharding)
    null_values, null_counts = branch_null_values(context.env, context.policy_fn, context.params, trajectory,
                                                  null_key, num_continuations=k, sharding=context.sharding)
    advantage = mc_advantage(trajectory, state_values=values, baseline=null_values)
    return CreditResult(advantage, None, {"label": counts + null_counts})


def mc_q_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)` (unbiased from the same continuations,
    no second batch), `continuations` per legal action; consumes `key`. The `replacement` option
    picks the baseline from the same `Q̂` (`uniform`: their mean; `null`: the null action's)."""
    replacement = checked_replacement(context)
    q_hat, counts = branch_action_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=context.options.continuations,
                                         sharding=context.sharding)
    return CreditResult(q_advantage(context, trajectory, q_hat, replacement=replacement), None, {"label": counts})


def mc_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Monte Carlo credit, the `variant` option's (`td` or `q`)."""
    variant = mc_q_arm if context.options.variant == "q" else mc_td_arm
    return variant(context, trajectory, problems, key)


def card(options: McOptions, config: dict) -> CardText:
    """What the CA-ID card of an mc run says."""
    k, variant = options.continuations, options.variant
    formula = "r_t + V̂(s_{t+1}) − V̂(s_t)" if variant == "td" else "Q̂(s_t, a_t) − V̂(s_t), V̂ = Σ π Q̂"
    return CardText(with_replacement(f"per action: {formula}, estimating Q^π(s_t, a_t) − V^π(s_t) of the current "
                                     "policy", options),
                    OBSERVED_STATE, f"continuation (K={k} per state{', per action' if variant == 'q' else ''})",
                    "continuations under the current policy from the branched state to the episode's end "
                    "(at most max_turns); reward: the environment's success reward")


ARM = register_credit_arm(CreditArm(
    "mc", "label", False, "Monte Carlo action credit from K branch continuations (VinePPO)", mc_arm,
    options=McOptions, check=check_replacement_config, check_environment=check_replacement_environment, card=card))
