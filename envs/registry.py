"""`make(name, **overrides)`: build a registered environment by name or versioned id, with clear
errors for bad input; `make_gymnax` and `make_jumanji` wrap it for trainers written against those APIs.

The tables are `jaxcredit.env_registry`'s, filled by `jaxcredit.register_environment` calls: the
built-in environments register themselves when `jaxcredit.envs` is imported (`"mad"`, `"arithmetic"`,
`"routine"` and `"umbrella"`, the names configs and run directories use, with the versioned ids
`"MAD-v0"`, `"Arithmetic-v0"`, `"Routine-v0"` and `"Umbrella-v0"`), and a `--plugin` file registers
its own the same way. An id names fixed rules and defaults: a change to either gets a new version,
while the plain names always mean the current code.
"""

from __future__ import annotations

import dataclasses

from jaxcredit.env import Environment
from jaxcredit.env_registry import (
    ENVIRONMENT_IDS,
    ENVIRONMENTS,
    REFERENCE_IMPLEMENTATIONS,
    environment_class,
    environment_names,
)

__all__ = ["ENVIRONMENTS", "ENVIRONMENT_IDS", "REFERENCE_IMPLEMENTATIONS", "environment_class", "environment_names",
           "make", "make_gymnax", "make_jumanji", "make_reference"]


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
        raise ValueError(f"unknown environment {name!r}; choices: {choices} (an environment of a plugin needs "
                         "--plugin)")
    cls = ENVIRONMENTS[name]
    fields = sorted(f.name for f in dataclasses.fields(cls))
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise ValueError(f"unknown {name} config field(s) {unknown}; fields: {', '.join(fields)}")
    return cls(**overrides)


def make_reference(env: Environment):
    """The plain-Python reference implementation configured like `env` (for tests, benchmarks)."""
    if env.name not in REFERENCE_IMPLEMENTATIONS:
        raise ValueError(f"unknown environment {env.name!r}; choices: {', '.join(sorted(REFERENCE_IMPLEMENTATIONS))}")
    return REFERENCE_IMPLEMENTATIONS[env.name](**env.config())


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
