"""jaxcredit: a JAX-native simulator and trainer for credit-assignment research."""

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
from jaxcredit.rollout import BranchResult, Trajectory, branch_returns, rollout

__all__ = [
    "ACCOUNTS",
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
    "ledger_to_dict",
    "make_policy",
    "make_policy_from_sizes",
    "record",
    "require_in_range",
    "rollout",
    "task_sizes",
    "tree_select",
]
__version__ = "0.1.0"
