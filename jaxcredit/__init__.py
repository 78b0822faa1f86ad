"""jaxcredit: a JAX-native simulator and trainer for credit-assignment research."""

from jaxcredit.env import Environment, State, require_in_range, tree_select
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
    "BatchSolution",
    "Environment",
    "Graph",
    "State",
    "Values",
    "build_graph",
    "evaluate_policy",
    "network_policy_probs",
    "optimal_values",
    "reachable",
    "require_in_range",
    "solve_batch",
    "tree_select",
    "uniform_policy",
]
__version__ = "0.1.0"
