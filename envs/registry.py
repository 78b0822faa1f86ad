"""`make(name, **overrides)`: build an environment by name or versioned id, with clear errors for
bad input; `make_gymnax` and `make_jumanji` wrap it for trainers written against those APIs.

Names: `"mad"`, `"arithmetic"`, `"routine"` and `"umbrella"` (the environments' own names, used in configs
and run directories) and the versioned ids `"MAD-v0"`, `"Arithmetic-v0"`, `"Routine-v0"` and `"Umbrella-v0"`
(as gymnax, pgx and jumanji users make environments). An id names fixed rules and defaults: a change to
either gets a new version, while the plain names always mean the current code.
"""

from __future__ import annotations

import dataclasses

from jaxcredit.env import Environment
from jaxcredit.envs.arithmetic import Arithmetic
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.mad import MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.envs.routine import Routine
from jaxcredit.envs.routine_reference import RoutineReference
from jaxcredit.envs.umbrella import Umbrella
from jaxcredit.envs.umbrella_reference import UmbrellaReference

ENVIRONMENTS: dict[str, type[Environment]] = {"mad": MadSelectiveCopy, "arithmetic": Arithmetic, "routine": Routine,
                                             "umbrella": Umbrella}
ENVIRONMENT_IDS: dict[str, str] = {"MAD-v0": "mad", "Arithmetic-v0": "arithmetic", "Routine-v0": "routine",
                                   "Umbrella-v0": "umbrella"}
# the plain-Python implementations of each environment (tests and benchmarks compare against them)
REFERENCE_IMPLEMENTATIONS: dict[str, type] = {"mad": MadReference, "arithmetic": ArithmeticReference,
                                             "routine": RoutineReference, "umbrella": UmbrellaReference}


def _lookup(table: dict, name: str):
    if name not in table:
        raise ValueError(f"unknown environment {name!r}; choices: {', '.join(sorted(table))}")
    return table[name]


def make(name: str, **overrides) -> Environment:
    """The environment `name` (a name or a versioned id) with its default configuration updated
    by `overrides`.

    Raises `ValueError` naming an unknown environment or field (with the choices) or a value
    out of range.
    """
    if name in ENVIRONMENT_IDS:
        name = ENVIRONMENT_IDS[name]
    elif name not in ENVIRONMENTS:
        choices = ", ".join([*ENVIRONMENT_IDS, *ENVIRONMENTS])
        raise ValueError(f"unknown environment {name!r}; choices: {choices}")
    cls = ENVIRONMENTS[name]
    fields = sorted(f.name for f in dataclasses.fields(cls))
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(f"unknown {name} config field(s) {unknown}; fields: {', '.join(fields)}")
    return cls(**overrides)


def make_reference(env: Environment):
    """The plain-Python reference implementation configured like `env` (for tests, benchmarks)."""
    return _lookup(REFERENCE_IMPLEMENTATIONS, env.name)(**env.config())


def make_gymnax(name: str, **options):
    """`(adapter, params)` like `gymnax.make`: see `jaxcredit.envs.gymnax_adapter.make_gymnax`
    (needs the optional extra `jaxcredit[gymnax]`; raises `ValueError` without it)."""
    try:
        from jaxcredit.envs.gymnax_adapter import make_gymnax as make_adapter
    except ImportError:
        raise ValueError("make_gymnax needs gymnax: pip install -e '.[gymnax]'") from None
    return make_adapter(name, **options)


def make_jumanji(name: str, **options):
    """A jumanji-style environment: see `jaxcredit.envs.jumanji_adapter.make_jumanji`."""
    from jaxcredit.envs.jumanji_adapter import make_jumanji as make_adapter

    return make_adapter(name, **options)
