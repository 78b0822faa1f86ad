"""The Math-Shepherd progress arms, `progress-soft` and `progress-hard`: `Φ(h_{t+1}) - Φ(h_t)`, Φ
from N continuations of every state under the current policy (soft: the fraction that succeed;
hard: whether any does), charged to `label`. One factory makes both; they differ only in `kind`.

Shape letters: B episodes, T turns, N continuations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
from jaxcredit.arms.shared import OBSERVED_STATE
from jaxcredit.credit import branch_state_progress, progress_advantage
from jaxcredit.rollout import Trajectory


@dataclasses.dataclass(frozen=True)
class _ProgressOptions(ArmOptions):
    continuations: int = option(4, low=1, legacy="progress_continuations",
                                doc="N, continuations per state under the current policy that estimate Φ")


@dataclasses.dataclass(frozen=True)
class ProgressSoftOptions(_ProgressOptions):
    """The progress-soft arm's options."""

    arm = "progress-soft"


@dataclasses.dataclass(frozen=True)
class ProgressHardOptions(_ProgressOptions):
    """The progress-hard arm's options."""

    arm = "progress-hard"


def _progress_arm(kind: str) -> Callable[[CreditContext, Trajectory, Any, jax.Array], CreditResult]:
    def progress_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
        progress, counts = branch_state_progress(context.env, context.policy_fn, context.params, trajectory, key,
                                                 num_continuations=context.options.continuations,
                                                 kind=kind, sharding=context.sharding)
        return CreditResult(progress_advantage(trajectory, progress=progress), None, {"label": counts})

    progress_arm.__doc__ = (f"Math-Shepherd's {kind} progress credit `Φ(h_{{t+1}}) - Φ(h_t)` "
                            f"(`credit.progress_advantage`), `Φ` from the `continuations` option's continuations "
                            f"of every state under the current policy (`credit.branch_state_progress`, "
                            f"kind {kind!r}); consumes `key`; the continuations are charged to `label`.")
    progress_arm.__name__ = progress_arm.__qualname__ = f"progress_{kind}_arm"
    return progress_arm


progress_soft_arm = _progress_arm("soft")
progress_hard_arm = _progress_arm("hard")


def _progress_card(kind: str) -> Callable[[_ProgressOptions, dict], CardText]:
    phi = ("the fraction of N continuations that succeed" if kind == "soft"
           else "1 when any of N continuations succeeds, else 0")

    def card(options: _ProgressOptions, config: dict) -> CardText:
        return CardText(f"per action: Φ(h_{{t+1}}) − Φ(h_t), Φ = {phi} (Math-Shepherd {kind} labels): where the "
                        "step leads, not what it did", OBSERVED_STATE,
                        f"continuation (N={options.continuations} per state)",
                        "continuations under the current policy from each state to the episode's end; reward: the "
                        "environment's success reward")

    return card


SOFT_ARM = register_credit_arm(CreditArm(
    "progress-soft", "label", False,
    "progress Φ(h') - Φ(h), Φ the fraction of N continuations that succeed (Math-Shepherd soft)",
    progress_soft_arm, options=ProgressSoftOptions, card=_progress_card("soft")))
HARD_ARM = register_credit_arm(CreditArm(
    "progress-hard", "label", False,
    "progress Φ(h') - Φ(h), Φ whether any of N continuations succeeds (Math-Shepherd hard)",
    progress_hard_arm, options=ProgressHardOptions, card=_progress_card("hard")))
