"""Packaging: one version string, and optional dependencies that stay optional."""

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

import jaxcredit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_one_version_string():
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "jaxcredit.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", jaxcredit.__version__)
    assert importlib.metadata.version("jaxcredit") == jaxcredit.__version__


def test_optional_dependencies_are_extras_and_never_imported_by_the_main_job():
    """ray, rejax, gymnax, the trackers and bsuite (a test dependency) are extras; importing everything
    `jaxcredit sweep` uses (the CLI, the trainer, the analysis that draws the report's plots) loads none of
    them. matplotlib is in the base install because the sweep's report draws plots."""
    project = _pyproject()["project"]
    base = {re.split(r"[<>=\[ ]", d)[0] for d in project["dependencies"]}
    assert "matplotlib" in base and not base & {"ray", "rejax", "gymnax", "tensorboardX", "mlflow-skinny", "bsuite"}
    extras = project["optional-dependencies"]
    assert {"ray", "rejax", "gymnax", "tracking"} <= set(extras) and any(d.startswith("rejax") for d in extras["rejax"])
    optional = ("ray", "rejax", "gymnax", "tensorboardX", "mlflow", "bsuite")
    code = ("import sys, jaxcredit, jaxcredit.cli, jaxcredit.envs, jaxcredit.train, jaxcredit.analysis; "
            f"print(sorted(m for m in {optional!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
