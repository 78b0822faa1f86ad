"""Plugins: user code that registers credit arms (`jaxcredit.register_credit_arm`) or environments
(`jaxcredit.register_environment`) before a run.

A plugin is a Python file (`path/to/arms.py`) or an importable module (`package.module`); importing
it runs its `register_credit_arm(...)` and `register_environment(...)` calls. `train` and `sweep` take
`--plugin` (repeatable) and import every plugin before the config is validated, so a registered arm
is a choice of `--credit` and of a sweep's arms, and a registered environment a choice of `--env` and
of a sweep's `env`, like a built-in one. A sweep records its plugins in `sweep_spec.json`
(`plugins`, a file as its absolute path) and imports them again when it resumes, reports or runs a
cell in another process (`jaxcredit.train.backends`).

A file is imported once per process under a name fixed by its absolute path, so importing it
again registers nothing twice and its classes pickle by the same name in every process.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from types import ModuleType


def plugin_source(spec: str) -> str:
    """The canonical form of a plugin spec: a file's absolute path, or the module name as given."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"--plugin needs a Python file or a module name, got {spec!r}")
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        return os.path.abspath(spec)
    return spec


def _module_name(path: str) -> str:
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    return f"jaxcredit_plugin_{stem}_{hashlib.sha1(path.encode()).hexdigest()[:10]}"


def load_plugin(spec: str) -> ModuleType:
    """Import the plugin `spec` (a `.py` file or a module name) once; returns the module.

    Raises `ValueError` naming the plugin when the file is missing, the module cannot be found, or
    the plugin's own code raises (e.g. `register_credit_arm` refusing a duplicate name)."""
    source = plugin_source(spec)
    if source.endswith(".py") or os.path.isabs(source):
        name = _module_name(source)
        if name in sys.modules:
            return sys.modules[name]
        if not os.path.isfile(source):
            raise ValueError(f"plugin {spec}: no such file")
        module_spec = importlib.util.spec_from_file_location(name, source)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[name]
            raise ValueError(f"plugin {spec}: {type(error).__name__}: {error}") from error
        return module
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as error:
        if error.name and source.startswith(error.name):
            raise ValueError(f"plugin {spec}: no module named {error.name!r} (a file needs its .py)") from None
        raise ValueError(f"plugin {spec}: {type(error).__name__}: {error}") from error
    except Exception as error:
        raise ValueError(f"plugin {spec}: {type(error).__name__}: {error}") from error


def load_plugins(specs) -> tuple[str, ...]:
    """Import every plugin of `specs` (an iterable of specs, or None), in order; returns their
    canonical forms (`plugin_source`), what a sweep records."""
    sources = tuple(plugin_source(spec) for spec in specs or ())
    for source in sources:
        load_plugin(source)
    return sources
