"""Which program computed a run: the jaxcredit version and a fingerprint of its source.

A study keeps one program for all its cells (`studies/README.md`): two installs of jaxcredit can
compute different numbers from the same config and seed. `program_record()` names the install
this process imports, and the sweep records it with every cell's sessions (`jaxcredit.timing`);
the Ray backend refuses a worker whose install differs from the driver's
(`jaxcredit.train.backends`).

The fingerprint hashes the relative path and bytes of every `.py` file of the package and its
subpackages, in sorted order, so it is the same for the same source wherever it is installed
(a wheel, an editable checkout) and changes with any edit.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os

import jaxcredit

# the subpackages of the distribution (pyproject.toml's `packages`)
SUBPACKAGES = ("envs", "train", "analysis", "agents", "benchmarks", "suite")
FINGERPRINT_CHARS = 12


def package_dirs() -> dict:
    """`{package name: directory}` of the installed `jaxcredit` and its subpackages (found without
    importing them; a subpackage that is not installed is left out)."""
    dirs = {"jaxcredit": os.path.dirname(os.path.abspath(jaxcredit.__file__))}
    for name in SUBPACKAGES:
        spec = importlib.util.find_spec(f"jaxcredit.{name}")
        if spec is not None and spec.submodule_search_locations:
            dirs[f"jaxcredit.{name}"] = os.path.abspath(list(spec.submodule_search_locations)[0])
    return dirs


def source_fingerprint(dirs: dict) -> str:
    """The first `FINGERPRINT_CHARS` hex digits of a SHA-256 over every `.py` file under the
    directories `dirs` (`{name: directory}`): each file's package name, path relative to its
    directory and bytes, in sorted order. Subdirectories that are other packages of `dirs`, and
    `__pycache__`, are skipped."""
    digest = hashlib.sha256()
    owned = set(dirs.values())
    for name in sorted(dirs):
        root = dirs[name]
        files = []
        for here, subdirs, names in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs
                                if d != "__pycache__" and os.path.join(here, d) not in owned)
            files += [os.path.join(here, n) for n in names if n.endswith(".py")]
        for path in sorted(files):
            digest.update(f"{name}:{os.path.relpath(path, root)}\0".encode())
            with open(path, "rb") as f:
                digest.update(f.read())
            digest.update(b"\0")
    return digest.hexdigest()[:FINGERPRINT_CHARS]


@functools.lru_cache(maxsize=1)
def program_record() -> dict:
    """`{"version", "source", "location"}` of the jaxcredit this process imports: its version, the
    fingerprint of its source (`source_fingerprint`) and the directory holding the package. Read
    once per process (the source of a running program does not change under it)."""
    dirs = package_dirs()
    return {"version": jaxcredit.__version__, "source": source_fingerprint(dirs),
            "location": os.path.dirname(dirs["jaxcredit"])}
