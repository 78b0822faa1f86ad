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

__all__ = [
    "ACCOUNTS",
    "ESTIMATORS",
    "REQUIRED_INPUTS",
    "anchor_advantage",
    "branch_action_values",
    "branch_state_values",
    "exact_advantage",
    "get_estimator",
    "mc_advantage",
    "outcome_advantage",
    "solver_action_advantage",
    "solver_advantage",
    "MAX_COUNT",
    "BranchResult",
    "Counts",
    "Environment",
    "Ledger",
    "PolicyConfig",
    "PolicyNetwork",
    "State",
    "TaskSizes",
    "Trajectory",
    "branch_returns",
    "count_parameters",
    "init_ledger",
    "load_policy",
    "ledger_to_dict",
    "make_policy",
    "make_policy_from_sizes",
    "record",
    "require_in_range",
    "replay",
    "rollout",
    "save_policy",
    "task_sizes",
    "tree_select",
]
__version__ = "0.1.0"
