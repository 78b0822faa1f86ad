"""The `solver` credit arm (CAST-style): `weight x (Q^μ - V^μ)` of a fixed reference policy μ
(uniform, optimal with its tie-break, or soft-optimal), solved over each problem's complete graph,
optionally plus the outcome advantage; charged the enumeration to `label`. It also returns every
legal action's exact value under μ.

Shape letters: P problems, B episodes, T turns, A actions.
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
    OUTCOME_BASELINES,
    check_replacement_environment,
    check_replacement_option,
    checked_replacement,
    null_replacement,
    problem_graphs,
    replacement_option,
    require_group,
    with_replacement,
)
from jaxcredit.credit import solver_advantage, solver_menu_values
from jaxcredit.rollout import Trajectory
from jaxcredit.solver import DEFAULT_TIE_BREAK_DISCOUNT, TIE_BREAKS
from jaxcredit.solver_values import reference_values

SOLVER_POLICIES = ("uniform", "optimal", "soft")


@dataclasses.dataclass(frozen=True)
class SolverOptions(ArmOptions):
    """The solver arm's options."""

    arm = "solver"
    policy: str = option("uniform", choices=SOLVER_POLICIES, legacy="solver_policy",
                         doc="the reference policy μ: `uniform`, `optimal` (hard max) or `soft`")
    weight: float = option(1.0, low=0.0, legacy="solver_weight",
                           doc="the factor the `Q^μ - V^μ` advantage is multiplied by")
    temperature: float = option(0.3, positive=True, legacy="solver_temperature",
                                doc="the Boltzmann temperature of `policy` `soft`, in success probability")
    add_outcome: bool = option(False, legacy="solver_add_outcome", doc="add the outcome advantage to the arm's own")
    baseline: str = option("grpo", choices=OUTCOME_BASELINES, legacy="outcome_baseline",
                           doc="the added outcome advantage's baseline (with `add_outcome`)")
    tie_break: str = option("none", choices=TIE_BREAKS, legacy="solver_tie_break",
                            doc="how the optimal reference breaks ties (`solver.TIE_BREAKS`): `none`, `fastest` "
                                "(toward the action whose value needs the fewest turns) or `discount` (toward the "
                                "best value discounted by `tie_break_discount` per turn); needs `policy` `optimal`")
    tie_break_discount: float = option(DEFAULT_TIE_BREAK_DISCOUNT, low=0.0, high=1.0,
                                       legacy="solver_tie_break_discount",
                                       doc="γ in (0, 1) of `tie_break` `discount`")
    replacement: str = replacement_option()

    def __post_init__(self):
        null_replacement(self)
        super().__post_init__()
        if self.tie_break_discount in (0.0, 1.0):
            raise ValueError(f"credit_options.tie_break_discount of credit 'solver' must be in (0, 1), "
                             f"got {self.tie_break_discount!r}")
        if self.tie_break != "none" and self.policy != "optimal":
            raise ValueError(f"credit_options.tie_break {self.tie_break!r} of credit 'solver' breaks ties of the "
                             f"optimal reference: it needs credit_options.policy 'optimal', got {self.policy!r}")


def solver_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`weight x (Q^μ - V^μ)` under the fixed `policy` μ (its ties broken by `tie_break`; plus the
    outcome advantage with `add_outcome`, its `baseline`), charged the enumeration. The
    `replacement` option picks the baseline in place of `V^μ`."""
    env, c, o = context.env, context.config, context.options
    replacement = checked_replacement(context)
    graphs, _, counts = problem_graphs(env, problems)
    def values_of(problem, graph):
        return reference_values(env, problem, policy=o.policy, graph=graph, temperature=o.temperature,
                                tie_break=o.tie_break, tie_break_discount=o.tie_break_discount)[0]

    values = jax.vmap(values_of)(problems, graphs)
    outcome = o.baseline if o.add_outcome else None
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem, weight=o.weight,
                                 outcome=outcome, replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def check(options: SolverOptions, config) -> None:
    """The replacement's check; `add_outcome` needs a group for its baseline and the `pg` objective."""
    check_replacement_option(options, config)
    if options.add_outcome:
        require_group(options.baseline, config)
        if config.objective != "pg":
            raise ValueError(f"credit_options.add_outcome of credit 'solver' adds to the advantage, which objective "
                             f"{config.objective!r} does not use; set it false")


def card(options: SolverOptions, config: dict) -> CardText:
    """What the CA-ID card of a solver run says."""
    policy = options.policy
    if policy == "soft":
        policy = f"soft-optimal (Boltzmann, τ={options.temperature})"
    added = " plus the outcome advantage" if options.add_outcome else ""
    return CardText(with_replacement(f"per action: {options.weight} × (Q^μ − V^μ){added}, μ = the {policy} policy "
                                     "(fixed, not the learner)", options), OBSERVED_STATE,
                    f"exact under fixed reference/optimal policy ({policy}), solver over complete graph",
                    f"the fixed {policy} policy in expectation, for the turns left; reward: the environment's "
                    "success reward")


ARM = register_credit_arm(CreditArm(
    "solver", "label", True, "exact Q - V of a fixed reference or optimal policy (CAST-style)", solver_arm,
    options=SolverOptions, check=check, check_environment=check_replacement_environment, card=card))
