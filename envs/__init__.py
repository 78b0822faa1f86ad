"""jaxcredit environments: MAD selective copy, interactive arithmetic, Routine (decision density),
Umbrella (bsuite's umbrella chain), their references, problem families, problems and actions
written by hand (`parse_problem`), text protocols, `make()` by name or versioned id, and adapters
in gymnax's and jumanji's shapes (`make_gymnax`, `make_jumanji`).

Each environment module registers its environment (`jaxcredit.register_environment`) when it is
imported; importing this package registers the built-ins in this order: `mad`, `arithmetic`,
`routine`, `umbrella`."""

# isort: off
# Each module registers its environment when it is imported: this line's order is the registry's.
from jaxcredit.envs import mad, arithmetic, routine, umbrella
# isort: on
from jaxcredit.envs.arithmetic import Arithmetic, ArithmeticState
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.encodings import ENCODINGS
from jaxcredit.envs.jumanji_adapter import JumanjiAdapter
from jaxcredit.envs.mad import BLANK, MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.envs.problem_text import (
    PROBLEM_ENVIRONMENTS,
    action_by_name,
    parse_problem,
    replay_action_names,
)
from jaxcredit.envs.problems import FAMILIES, ArithmeticProblem, Family, find_solution, problem_set
from jaxcredit.envs.registry import (
    ENVIRONMENT_IDS,
    ENVIRONMENTS,
    REFERENCE_IMPLEMENTATIONS,
    environment_class,
    environment_names,
    make,
    make_gymnax,
    make_jumanji,
    make_reference,
)
from jaxcredit.envs.routine import Routine, RoutineProblem
from jaxcredit.envs.routine_reference import RoutineReference
from jaxcredit.envs.umbrella import Umbrella, UmbrellaProblem
from jaxcredit.envs.umbrella_reference import UmbrellaReference

BUILT_IN_MODULES = (mad, arithmetic, routine, umbrella)

__all__ = [
    "BLANK", "BUILT_IN_MODULES", "ENCODINGS", "ENVIRONMENT_IDS", "ENVIRONMENTS", "FAMILIES", "PROBLEM_ENVIRONMENTS",
    "REFERENCE_IMPLEMENTATIONS", "Arithmetic", "ArithmeticProblem", "ArithmeticReference", "ArithmeticState",
    "Family", "JumanjiAdapter", "MadReference", "MadSelectiveCopy", "Routine", "RoutineProblem", "RoutineReference",
    "Umbrella", "UmbrellaProblem", "UmbrellaReference", "action_by_name", "environment_class",
    "environment_names", "find_solution", "make",
    "make_gymnax", "make_jumanji", "make_reference", "parse_problem", "problem_set", "replay_action_names",
]
