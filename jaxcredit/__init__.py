"""jaxcredit: a JAX-native simulator and trainer for credit-assignment research."""

from jaxcredit.env import Environment, State, require_in_range, tree_select

__all__ = ["Environment", "State", "require_in_range", "tree_select"]
__version__ = "0.1.0"
