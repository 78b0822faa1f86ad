"""The `progress-model` credit arm, a learned process reward model: `Φ_θ(h_{t+1}) - Φ_θ(h_t)`, Φ_θ
the network's value head fitted on the policy's own episodes' outcomes. Nothing is charged: its
targets are the main attempts' own returns to go.

Shape letters: B episodes, T turns, M = B * T critic batch states.
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
from jaxcredit.arms.shared import critic_values
from jaxcredit.credit import progress_advantage
from jaxcredit.rollout import Trajectory
from jaxcredit.value_fit import fit_value_head


@dataclasses.dataclass(frozen=True)
class ProgressModelOptions(ArmOptions):
    """The progress-model arm's options."""

    arm = "progress-model"
    coef: float = option(1.0, low=0.0, legacy="critic_coef",
                         doc="the weight of the value head's squared error in the loss")


def progress_model_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Learned progress: `r_t + Φ_θ(s_{t+1}) - Φ_θ(s_t)` (`credit.progress_advantage`), `Φ_θ` the network's
    value head fitted, as a process reward model is, on the policy's own episodes: every live state's
    target is its return to go (the episode's outcome, in environments that reward only the end).
    The critic batch is every step of the trajectory (`M = B * T`, valid where live); nothing is
    charged: the targets are the main attempts' own outcomes, already counted. `key` is unused."""
    values = jax.lax.stop_gradient(critic_values(context, trajectory))
    advantage = progress_advantage(trajectory, progress=values)
    to_go = jnp.cumsum(trajectory.reward[:, ::-1], axis=1)[:, ::-1]

    def flat(x):
        return x.reshape(-1, *x.shape[2:])

    critic_batch = (flat(trajectory.observation), flat(trajectory.legal_action_mask), flat(to_go),
                    flat(trajectory.live))
    return CreditResult(advantage, critic_batch, {}, critic_coef=context.options.coef)


def card(options: ProgressModelOptions, config: dict) -> CardText:
    """What the CA-ID card of a progress-model run says."""
    return CardText("per action: Φ_θ(h_{t+1}) − Φ_θ(h_t), Φ_θ the network's value head fitted on the policy's own "
                    "episodes' outcomes (a learned process reward model)",
                    "the network's observation (what the value head reads)",
                    "learned value (trained on the main attempts' returns to go; no continuations)",
                    "the main attempts themselves under the current policy, to the end of the episode",
                    f"; plus the value head's squared error × {options.coef}")


ARM = register_credit_arm(CreditArm(
    "progress-model", None, False,
    "progress Φ(h') - Φ(h), Φ a value head fitted on the policy's own episodes' outcomes (a learned PRM)",
    progress_model_arm, options=ProgressModelOptions, fit_for_labels=fit_value_head, card=card))
