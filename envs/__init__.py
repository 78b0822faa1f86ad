"""jaxcredit environments: MAD selective copy, interactive arithmetic, their references, problem
families, text protocols and `make()`."""

from jaxcredit.envs.arithmetic import Arithmetic, ArithmeticState
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.mad import BLANK, MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.envs.problems import FAMILIES, ArithmeticProblem, Family, problems, solve
from jaxcredit.envs.registry import ENVIRONMENTS, REFERENCES, make, make_reference

__all__ = [
    "BLANK", "ENVIRONMENTS", "FAMILIES", "REFERENCES", "Arithmetic", "ArithmeticProblem", "ArithmeticReference",
    "ArithmeticState", "Family", "MadReference", "MadSelectiveCopy", "make", "make_reference", "problems", "solve",
]
