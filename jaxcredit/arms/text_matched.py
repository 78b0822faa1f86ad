"""The `text-matched` credit arm: credit estimated as a pipeline that cannot restore an environment
estimates it. Each step is matched by its observation to the logged steps of this batch and of a
replay window of earlier batches, and gets `Q̂(o, a) − V̂(o)` from their returns-to-go. No label
work: it reads logged main attempts only. The window is the arm's memory, carried from iteration to
iteration in the train state (and its checkpoints).

Shape letters: B episodes, T turns, L observation tokens, W window batches.
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
    Preparation,
    option,
    register_credit_arm,
)
from jaxcredit.credit import text_matched_advantage
from jaxcredit.rollout import Trajectory


@dataclasses.dataclass(frozen=True)
class TextMatchedOptions(ArmOptions):
    """The text-matched arm's options."""

    arm = "text-matched"
    window: int = option(4, low=0, high=64, doc="W, earlier batches kept for matching (0: this batch alone)")
    discount: float = option(1.0, low=0.0, high=1.0, doc="the discount of the returns-to-go")


def _batch_shape(context: CreditContext) -> tuple[int, int]:
    c = context.config
    return c.problems_per_iteration * c.attempts_per_problem * context.env.max_turns, context.env.observation_length


def text_matched_prepare(context: CreditContext, key: jax.Array, draw_problem, validation_problems=None):
    """An empty window: `W * B * T` logged steps, none valid yet. No work."""
    steps, length = _batch_shape(context)
    size = context.options.window * steps
    memory = {"observation": jnp.zeros((size, length), jnp.int32), "action": jnp.zeros((size,), jnp.int32),
              "to_go": jnp.zeros((size,), jnp.float32), "valid": jnp.zeros((size,), bool)}
    return Preparation(memory, {})


def text_matched_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`credit.text_matched_advantage` over this batch and the window (`context.prepared`), which it
    returns with this batch in place of its oldest."""
    memory = context.prepared if context.options.window else None
    advantage, memory = text_matched_advantage(trajectory, memory, discount=context.options.discount)
    return CreditResult(advantage, None, {}, prepared=memory)


def card(options: TextMatchedOptions, config: dict) -> CardText:
    """What the CA-ID card of a text-matched run says."""
    window = f"this batch and the {options.window} before it" if options.window else "this batch"
    return CardText(f"per action: Q̂(o_t, a_t) − V̂(o_t), mean returns-to-go (discount {options.discount:g}) of the "
                    f"logged steps of {window} whose observation equals o_t (with the same action, and all), "
                    "estimating Q^π − V^π where the observation determines the state",
                    "the policy's token observation alone (text-only matching: states that render alike are "
                    "pooled, whatever they hide)",
                    "none (logged main attempts matched by observation; no environment is restored)",
                    "the main attempts of the current and recent policies, to the end of the episode; reward: "
                    "the environment's success reward")


ARM = register_credit_arm(CreditArm(
    "text-matched", None, False, "Q̂ − V̂ from logged steps matched by their observation (text-only credit)",
    text_matched_arm, options=TextMatchedOptions, prepare=text_matched_prepare, card=card))
