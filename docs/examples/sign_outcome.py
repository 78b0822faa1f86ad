"""A credit arm in one file: the sign of the outcome advantage, times a scale.

Every action of an episode gets `scale * sign(A)`, with A the episode's return normalised within
its group of attempts (GRPO): which side of its group's mean an episode fell on, not how far.
Load it with `--plugin sign_outcome.py`, train it with `--credit sign-outcome`.
"""

import dataclasses

import jax.numpy as jnp

import jaxcredit


@dataclasses.dataclass(frozen=True)
class SignOptions(jaxcredit.ArmOptions):
    """The arm's options: one line each, checked when the config is read."""

    arm = "sign-outcome"
    scale: float = jaxcredit.option(1.0, low=0.0, doc="the size of every action's credit")


def sign_outcome(context, trajectory, problems, key):
    """`scale * sign(A)` `[B, T]`, A the GRPO episode advantage (0 on steps that are not live)."""
    advantage = jaxcredit.outcome_advantage(trajectory, group_size=context.config.attempts_per_problem)
    return jaxcredit.CreditResult(context.options.scale * jnp.sign(advantage), None, {})


def card(options, config):
    """What the CA-ID card of a run of this arm says."""
    return jaxcredit.CardText(
        estimand=f"every action of an episode gets {options.scale} × the sign of its group-normalised return",
        effective_state="none: one value per episode, compared within the group of attempts on one problem",
        provenance="none (observed outcomes of the main attempts; no intervention)",
        downstream="the main attempts themselves under the current policy, to the end of the episode")


jaxcredit.register_credit_arm(jaxcredit.CreditArm(
    name="sign-outcome", account=None, enumerates=False,
    description="the sign of the group-normalised episode return, times a scale",
    compute=sign_outcome, options=SignOptions, card=card))
