"""The `critic` credit arm: GAE over the network's learned value head, the head trained on Monte
Carlo value labels of a few states per iteration (their continuations charged to `critic`).

Shape letters: B episodes, T turns, M labelled states, P what the policy reads, A actions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.afterstate import policy_inputs
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
from jaxcredit.credit import gae_advantage
from jaxcredit.rollout import Trajectory, branch_returns
from jaxcredit.value_fit import fit_value_head


@dataclasses.dataclass(frozen=True)
class CriticOptions(ArmOptions):
    """The critic arm's options."""

    arm = "critic"
    label_states: int = option(32, low=1, legacy="critic_label_states",
                               doc="states per iteration labelled with Monte Carlo returns")
    continuations: int = option(4, low=1, legacy="critic_continuations",
                                doc="Monte Carlo continuations per labelled state")
    coef: float = option(1.0, low=0.0, legacy="critic_coef", doc="the weight of the critic's squared error in the loss")
    gae_lambda: float = option(0.95, low=0.0, high=1.0, legacy="critic_lambda",
                               doc="GAE's λ (PPO's 0.95; 0: the one-step TD advantage)")


def critic_labels(context: CreditContext, trajectory: Trajectory, key: jax.Array):
    """`(critic_batch, counts)`: Monte Carlo value labels (`continuations` continuations) for
    `label_states` states drawn from the live steps; consumes `key`. The batch is
    `(observation [M, P], legal [M, A], target [M], valid [M])`."""
    o = context.options
    select_key, branch_key = jax.random.split(key)
    flat_live = trajectory.live.reshape(-1)
    num = min(o.label_states, flat_live.shape[0])
    chosen = jax.random.choice(select_key, flat_live.shape[0], (num,), replace=False,
                               p=flat_live / jnp.maximum(flat_live.sum(), 1))
    states = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:])[chosen], trajectory.states)
    result = branch_returns(context.env, context.policy_fn, context.params, states, branch_key,
                            num_continuations=o.continuations, sharding=context.sharding)
    observation, input_steps = policy_inputs(context.env, context.policy_fn, states)  # what the value head reads
    counts = result.counts.replace(afterstate_env_steps=result.counts.afterstate_env_steps
                                   + jnp.sum(input_steps, dtype=jnp.int32))
    return (observation, states.legal_action_mask, result.mean, result.valid), counts


def critic_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """GAE (`gae_lambda`) over the learned value head; its labels are charged to `critic`."""
    values = jax.lax.stop_gradient(critic_values(context, trajectory))
    advantage = gae_advantage(trajectory, state_values=values, lam=context.options.gae_lambda)
    critic_batch, counts = critic_labels(context, trajectory, key)
    return CreditResult(advantage, critic_batch, {"critic": counts}, critic_coef=context.options.coef)


def card(options: CriticOptions, config: dict) -> CardText:
    """What the CA-ID card of a critic run says."""
    return CardText(f"per action: GAE (λ={options.gae_lambda}) over δ_t = r_t + V_φ(s_{{t+1}}) − V_φ(s_t), V_φ the "
                    "network's value head",
                    "the network's observation (what the value head reads)",
                    f"learned value (trained on continuation labels: {options.label_states} states × "
                    f"K={options.continuations} per iteration)",
                    "continuations under the current policy for the value head's labels, to the episode's end",
                    f"; plus the value head's squared error × {options.coef}")


ARM = register_credit_arm(CreditArm(
    "critic", "critic", False, "GAE over a learned value head trained on continuation labels", critic_arm,
    options=CriticOptions, fit_for_labels=fit_value_head, card=card))
