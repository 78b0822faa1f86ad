"""The environment registry: the environments `jaxcredit.envs.make` knows, filled by `register_environment`.

One call registers an environment: its class (a frozen dataclass subclassing `jaxcredit.Environment`,
known by its `name`), its plain-Python reference (the test oracle and benchmark baseline, built with
the environment's `config()`) and its versioned ids (`"MAD-v0"`). The built-in environments
register themselves when `jaxcredit.envs` is imported, each at the end of its own module; user
code registers its own from any module (a `--plugin` file or package, `jaxcredit.plugins`), the
way a credit arm registers with `jaxcredit.register_credit_arm`. Everything that lists or builds environments (`make`,
`make_reference`, `TrainConfig`'s validation, the gradient-SNR study's choice) reads these tables
when it runs, never a copy taken at import.

What differs between environments beyond their dynamics (text protocols, transcript problems,
evaluation sets, what the gate and the SNR study accept) is an `Environment` method with a
default, so registering is all a new environment needs. See docs/environments.md.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable

from jaxcredit.env import Environment

ENVIRONMENTS: dict[str, type[Environment]] = {}  # name -> class, in registration order
ENVIRONMENT_IDS: dict[str, str] = {}  # versioned id -> name
REFERENCE_IMPLEMENTATIONS: dict[str, Callable] = {}  # name -> plain-Python reference, called with **env.config()

_ENV_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")  # a name is also part of run-directory records and CLI values
_ENV_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def register_environment(env_class: type[Environment], *, reference: Callable,
                         ids: tuple[str, ...] = ()) -> type[Environment]:
    """Register `env_class` under its `name`, with its plain-Python `reference` and its versioned
    `ids`; returns `env_class`.

    `reference(**env.config())` builds the reference episode of a configured environment (any
    object `jaxcredit.conformance.check_environment` can step: `reset(problem)`, `step(action)`).
    Raises `ValueError`, registering nothing, for a class that is not a concrete frozen dataclass
    subclassing `Environment`, a name or id that is malformed or already taken, or a reference
    that cannot be called."""
    if not isinstance(env_class, type) or not issubclass(env_class, Environment):
        raise ValueError(f"register_environment takes a subclass of jaxcredit.Environment, got {env_class!r}")
    name = env_class.__dict__.get("name")
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise ValueError(f"environment class {env_class.__name__} needs its own name (a class variable of 1-64 "
                         f"lowercase letters, digits, '-' or '_', starting with a letter), got {name!r}")
    if not dataclasses.is_dataclass(env_class) or not env_class.__dataclass_params__.frozen:
        raise ValueError(f"environment {name!r}: {env_class.__name__} must be a frozen dataclass "
                         "(@dataclasses.dataclass(frozen=True)): environments are static, hashable configuration")
    if inspect.isabstract(env_class):
        missing = ", ".join(sorted(env_class.__abstractmethods__))
        raise ValueError(f"environment {name!r}: {env_class.__name__} does not define {missing}")
    if name in ENVIRONMENTS or name in ENVIRONMENT_IDS:
        raise ValueError(f"environment {name!r} is already registered; registered: {', '.join(ENVIRONMENTS)}")
    if not callable(reference):
        raise ValueError(f"environment {name!r}: reference must be a class or function building the plain-Python "
                         f"reference from the environment's config, got {reference!r}")
    ids = (ids,) if isinstance(ids, str) else tuple(ids)
    for env_id in ids:
        if not isinstance(env_id, str) or not _ENV_ID.fullmatch(env_id):
            raise ValueError(f"environment {name!r}: id {env_id!r} must be 1-64 letters, digits, '.', '-' or '_' "
                             "starting with a letter (e.g. 'Corridor-v0')")
        if env_id in ENVIRONMENT_IDS or env_id in ENVIRONMENTS or env_id == name or ids.count(env_id) > 1:
            raise ValueError(f"environment {name!r}: id {env_id!r} is already taken")
    ENVIRONMENTS[name] = env_class
    REFERENCE_IMPLEMENTATIONS[name] = reference
    ENVIRONMENT_IDS.update(dict.fromkeys(ids, name))
    return env_class


def environment_names() -> tuple[str, ...]:
    """The registered environments' names, in registration order (the built-ins first)."""
    return tuple(ENVIRONMENTS)


def environment_class(name: str) -> type[Environment] | None:
    """The class registered as `name` or under the versioned id `name`; None when neither is."""
    return ENVIRONMENTS.get(ENVIRONMENT_IDS.get(name, name)) if isinstance(name, str) else None
