"""The `outcome` credit arm: every action of an episode gets the episode's return, normalised
within its group of attempts on the same problem (GRPO, RLOO or the plain mean); no label work.

Shape letters: B episodes, T turns.
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
from jaxcredit.arms.shared import OUTCOME_BASELINES, require_group
from jaxcredit.credit import outcome_advantage
from jaxcredit.rollout import Trajectory


@dataclasses.dataclass(frozen=True)
class OutcomeOptions(ArmOptions):
    """The outcome arm's options."""

    arm = "outcome"
    baseline: str = option("grpo", choices=OUTCOME_BASELINES, legacy="outcome_baseline",
                           doc="the baseline within each problem's group of attempts: `grpo` (mean and standard "
                               "deviation), `rloo` (leave-one-out mean; needs 2 attempts) or `mean`")


def outcome_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Outcome credit (`credit.outcome_advantage` with the `baseline` option); no label work."""
    advantage = outcome_advantage(trajectory, group_size=context.config.attempts_per_problem,
                                  baseline=context.options.baseline)
    return CreditResult(advantage, None, {})


def check(options: OutcomeOptions, config) -> None:
    """`rloo` needs at least 2 attempts per problem."""
    require_group(options.baseline, config)


def card(options: OutcomeOptions, config: dict) -> CardText:
    """What the CA-ID card of an outcome run says."""
    group = config.get("attempts_per_problem", 4)
    return CardText(f"every action of an episode gets its episode return, group-normalised ({options.baseline} "
                    f"over the {group} attempts of the same problem)",
                    "none: one value per episode, compared within the group of attempts on one problem",
                    "none (observed outcomes of the main attempts; no intervention)",
                    "the main attempts themselves under the current policy, to the end of the episode; reward: "
                    "the environment's success reward")


ARM = register_credit_arm(CreditArm(
    "outcome", None, False, "episode return normalised within its group of attempts", outcome_arm,
    options=OutcomeOptions, check=check, card=card))
