"""The `anchor` credit arm (GiGPO): the GRPO episode advantage plus ω times a step advantage, the
discounted return-to-go normalised among the group's steps taken in the same position; no label work.

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
from jaxcredit.credit import anchor_advantage
from jaxcredit.rollout import Trajectory


@dataclasses.dataclass(frozen=True)
class AnchorOptions(ArmOptions):
    """The anchor (GiGPO) arm's options."""

    arm = "anchor"
    weight: float = option(1.0, low=0.0, legacy="anchor_weight",
                           doc="the weight of the advantage within identical positions")
    discount: float = option(0.95, low=0.0, high=1.0, legacy="anchor_discount",
                             doc="the discount of step returns (GiGPO's 0.95)")


def anchor_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Anchor-state credit (`credit.anchor_advantage` with the `weight` and `discount` options); no label work."""
    o = context.options
    advantage = anchor_advantage(trajectory, group_size=context.config.attempts_per_problem, step_weight=o.weight,
                                 discount=o.discount)
    return CreditResult(advantage, None, {})


def card(options: AnchorOptions, config: dict) -> CardText:
    """What the CA-ID card of an anchor run says."""
    return CardText(f"per action: the GRPO episode advantage + {options.weight} × the return-to-go (discount "
                    f"{options.discount}) normalised among the group's steps taken in the same position (GiGPO)",
                    "identical positions (anchor states) within the group of attempts on one problem",
                    "none (observed returns-to-go of the main attempts grouped by anchor state)",
                    "the main attempts under the current policy, to the end of the episode")


ARM = register_credit_arm(CreditArm(
    "anchor", None, False, "GRPO plus a step advantage among same-position steps (GiGPO)", anchor_arm,
    options=AnchorOptions, card=card))
