"""jaxcredit: a JAX-native simulator and trainer for credit-assignment research."""

from jaxcredit.checkpoint import load_policy, save_policy
from jaxcredit.credit import (
    ESTIMATORS,
    REQUIRED_INPUTS,
    anchor_advantage,
    branch_action_values,
    branch_state_values,
    exact_advantage,
    get_estimator,
    mc_advantage,
    outcome_advantage,
    solver_action_advantage,
    solver_advantage,
)
from jaxcredit.env import Environment, State, require_in_range, tree_select
from jaxcredit.ledger import ACCOUNTS, MAX_COUNT, Counts, Ledger, init_ledger, ledger_to_dict, record
from jaxcredit.policy import (
    PolicyConfig,
    PolicyNetwork,
    TaskSizes,
    count_parameters,
    make_policy,
    make_policy_from_sizes,
    task_sizes,
)
from jaxcredit.rollout import BranchResult, Trajectory, branch_returns, replay, rollout
from jaxcredit.solver import (
    Graph,
    Values,
    build_graph,
    evaluate_policy,
    network_policy_probs,
    optimal_values,
    reachable,
    uniform_policy,
)
from jaxcredit.solver_batch import BatchSolution, solve_batch

__all__ = [
    "ACCOUNTS",
    "ESTIMATORS",
    "MAX_COUNT",
    "REQUIRED_INPUTS",
    "anchor_advantage",
    "BatchSolution",
    "branch_action_values",
    "branch_returns",
    "branch_state_values",
    "BranchResult",
    "build_graph",
    "count_parameters",
    "Counts",
    "Environment",
    "evaluate_policy",
    "exact_advantage",
    "get_estimator",
    "Graph",
    "init_ledger",
    "Ledger",
    "ledger_to_dict",
    "load_policy",
    "make_policy",
    "make_policy_from_sizes",
    "mc_advantage",
    "network_policy_probs",
    "optimal_values",
    "outcome_advantage",
    "PolicyConfig",
    "PolicyNetwork",
    "reachable",
    "record",
    "replay",
    "require_in_range",
    "rollout",
    "save_policy",
    "solve_batch",
    "solver_action_advantage",
    "solver_advantage",
    "State",
    "task_sizes",
    "TaskSizes",
    "Trajectory",
    "tree_select",
    "uniform_policy",
    "Values",
]
__version__ = '0.1.0'
