"""jaxcredit environments: MAD selective copy, interactive arithmetic, Routine (decision density),
their references, problem families, text protocols, `make()` by name or versioned id, and adapters
in gymnax's and jumanji's shapes (`make_gymnax`, `make_jumanji`)."""

from jaxcredit.envs.arithmetic import Arithmetic, ArithmeticState
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.encodings import ENCODINGS
from jaxcredit.envs.jumanji_adapter import JumanjiAdapter
from jaxcredit.envs.mad import BLANK, MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.envs.problems import FAMILIES, ArithmeticProblem, Family, problems, solve
from jaxcredit.envs.registry import (
    ENVIRONMENT_IDS,
    ENVIRONMENTS,
    REFERENCES,
    make,
    make_gymnax,
    make_jumanji,
    make_reference,
)
from jaxcredit.envs.routine import Routine, RoutineProblem
from jaxcredit.envs.routine_reference import RoutineReference

__all__ = [
    "BLANK", "ENCODINGS", "ENVIRONMENT_IDS", "ENVIRONMENTS", "FAMILIES", "REFERENCES", "Arithmetic",
    "ArithmeticProblem", "ArithmeticReference", "ArithmeticState", "Family", "JumanjiAdapter", "MadReference",
    "MadSelectiveCopy", "Routine", "RoutineProblem", "RoutineReference", "make", "make_gymnax", "make_jumanji",
    "make_reference", "problems", "solve",
]
