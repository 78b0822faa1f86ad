"""The `exact` credit arm: `Q^π - V^π` of the current network, solved over each problem's complete
graph (`jaxcredit.solver_values`), charged the enumeration and the network evaluations to `label`.
It also returns every legal action's exact value, what the value-target objectives train on.

Shape letters: P problems, B episodes, T turns, A actions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from jaxcredit.arm_registry import ArmOptions, CardText, CreditArm, CreditContext, CreditResult, register_credit_arm
from jaxcredit.arms.shared import (
    OBSERVED_STATE,
    check_replacement_config,
    check_replacement_environment,
    checked_replacement,
    null_replacement,
    problem_graphs,
    replacement_option,
    with_replacement,
)
from jaxcredit.credit import solver_advantage, solver_menu_values
from jaxcredit.rollout import Trajectory
from jaxcredit.solver_values import network_values_batch


@dataclasses.dataclass(frozen=True)
class ExactOptions(ArmOptions):
    """The exact arm's options."""

    arm = "exact"
    replacement: str = replacement_option()

    def __post_init__(self):
        null_replacement(self)
        super().__post_init__()


def exact_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q^π - V^π` of the current network from the solver (the values `reference_values(policy="network")`
    gives, all problems' network rows in shared chunks), charged the enumeration and the network
    evaluations done (reached, distinct rows). The `replacement` option picks the baseline in place of `V^π`."""
    env, c = context.env, context.config
    replacement = checked_replacement(context)
    graphs, starts, counts = problem_graphs(env, problems)
    # the problems' distinct rows share the network's chunks (what reference_values does one problem at a time)
    values, evals = network_values_batch(env, problems, graphs, context.policy_fn, context.params,
                                         horizon=env.max_turns, starts=starts)
    counts = counts.replace(policy_evals=evals)
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem,
                                 replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def card(options: ExactOptions, config: dict) -> CardText:
    """What the CA-ID card of an exact run says."""
    return CardText(with_replacement("per action: Q^π(s_t, a_t) − V^π(s_t) of the current policy", options),
                    OBSERVED_STATE,
                    "exact, solver over the graph of positions reached from the start (the current network at "
                    "each distinct observation)",
                    "the current policy in expectation over the complete graph, for the turns left; reward: the "
                    "environment's success reward")


ARM = register_credit_arm(CreditArm(
    "exact", "label", True, "exact Q - V of the current network, from the solver", exact_arm,
    options=ExactOptions, check=check_replacement_config, check_environment=check_replacement_environment,
    card=card))
