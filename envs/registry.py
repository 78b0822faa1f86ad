"""`make(name, **overrides)`: build an environment by name, with clear errors for bad input."""

from __future__ import annotations

import dataclasses

from jaxcredit.env import Environment
from jaxcredit.envs.arithmetic import Arithmetic
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.mad import MadSelectiveCopy
from jaxcredit.envs.mad_reference import MadReference

ENVIRONMENTS: dict[str, type[Environment]] = {"mad": MadSelectiveCopy, "arithmetic": Arithmetic}
REFERENCES: dict[str, type] = {"mad": MadReference, "arithmetic": ArithmeticReference}


def _lookup(table: dict, name: str):
    if name not in table:
        raise ValueError(f"unknown environment {name!r}; choices: {', '.join(sorted(table))}")
    return table[name]


def make(name: str, **overrides) -> Environment:
    """The environment `name` with its default configuration updated by `overrides`.

    Raises `ValueError` naming an unknown environment or field (with the choices) or a value
    out of range.
    """
    cls = _lookup(ENVIRONMENTS, name)
    fields = sorted(f.name for f in dataclasses.fields(cls) if f.name != "name")
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(f"unknown {name} config field(s) {unknown}; fields: {', '.join(fields)}")
    return cls(**overrides)


def make_reference(env: Environment):
    """The plain-Python reference implementation configured like `env` (for tests, benchmarks)."""
    cls = _lookup(REFERENCES, env.name)
    config = {f.name: getattr(env, f.name) for f in dataclasses.fields(env) if f.name != "name"}
    return cls(**config)
