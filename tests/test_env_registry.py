"""An open environment registry: `jaxcredit.register_environment` from user code, and a `--plugin` file
outside the package whose environment passes the conformance check and trains like a built-in one.

The plugin is `docs/examples/corridor.py` (the example `docs/extending.md` works through), copied to a
temporary directory so that nothing of it is part of the package. Its environment is removed from the
registry when this module's tests end, so later tests see the built-in environments only.
"""

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import jaxcredit
from jaxcredit.conformance import check_environment
from jaxcredit.envs import (
    ENVIRONMENT_IDS,
    ENVIRONMENTS,
    REFERENCE_IMPLEMENTATIONS,
    MadReference,
    MadSelectiveCopy,
    make,
    make_reference,
)
from jaxcredit.plugins import load_plugin

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "corridor.py"
TINY_NETWORK = {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}


def _forget(name: str) -> None:
    ENVIRONMENTS.pop(name, None)
    REFERENCE_IMPLEMENTATIONS.pop(name, None)
    for env_id in [i for i, n in ENVIRONMENT_IDS.items() if n == name]:
        del ENVIRONMENT_IDS[env_id]


@pytest.fixture(scope="module")
def corridor_file(tmp_path_factory):
    """The example plugin, copied outside the package; unregistered afterwards."""
    path = tmp_path_factory.mktemp("user") / "corridor.py"
    shutil.copy(EXAMPLE, path)
    before = set(sys.modules)
    yield path
    _forget("corridor")
    for name in set(sys.modules) - before:
        if name.startswith("jaxcredit_plugin_"):
            del sys.modules[name]


def test_the_built_ins_register_themselves_in_order():
    assert list(ENVIRONMENTS) == ["mad", "arithmetic", "routine", "umbrella"]
    assert ENVIRONMENT_IDS == {"MAD-v0": "mad", "Arithmetic-v0": "arithmetic", "Routine-v0": "routine",
                               "Umbrella-v0": "umbrella"}
    assert ENVIRONMENTS["mad"] is MadSelectiveCopy and REFERENCE_IMPLEMENTATIONS["mad"] is MadReference
    assert jaxcredit.envs.environment_class("MAD-v0") is MadSelectiveCopy
    assert jaxcredit.envs.environment_class("nope") is None


def test_a_plugin_environment_registers_and_passes_the_conformance_check(corridor_file):
    module = load_plugin(str(corridor_file))
    assert "corridor" in jaxcredit.envs.environment_names() and ENVIRONMENT_IDS["Corridor-v0"] == "corridor"
    env = make("Corridor-v0", length=4)
    assert type(env) is module.Corridor and env == make("corridor", length=4) and env.max_turns == 8
    assert isinstance(make_reference(env), module.CorridorReference)
    check_environment(env, reference=make_reference(env), num_episodes=64)
    # what every environment gets from the base class: no text protocol, no gate, one family
    assert env.text_protocol() is None and not env.has_learnability_gate
    assert env.evaluation_families(()) == ("default",)
    with pytest.raises(ValueError, match="corridor.length must be in \\[2, 64\\], got 1"):
        make("corridor", length=1)
    # a reference that disagrees with the environment is caught: the oracle is real
    class Wrong(module.CorridorReference):
        def _apply(self, action):
            reward, terminated = super()._apply(action)
            return reward, terminated and self.goal != 3
    with pytest.raises(AssertionError, match="corridor episode"):
        check_environment(env, reference=Wrong(length=4, max_turns=8), num_episodes=64)


def test_a_plugin_environment_trains_through_the_command_line(corridor_file, tmp_path):
    """`jaxcredit train --plugin FILE --env corridor` in a fresh process: one iteration (8 problems x 4
    attempts), exit 0, a run directory with its config and summary."""
    run = tmp_path / "run"
    sets = {**TINY_NETWORK, "problems_per_iteration": 8, "attempts_per_problem": 4, "budget": 32, "num_seeds": 1,
            "num_evals": 1, "eval_problems": 8, "holdout_fraction": 0.0, "env_overrides": {"length": 4}}
    argv = [sys.executable, "-m", "jaxcredit.cli", "train", "--plugin", str(corridor_file), "--env", "corridor",
            "--out", str(run), "--no-progress"]
    argv += [arg for k, v in sets.items() for arg in ("--set", f"{k}={json.dumps(v)}")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("outcome on corridor: final greedy success ")
    config = json.loads((run / "config.json").read_text())
    assert config["env"] == "corridor" and config["env_overrides"] == {"length": 4}
    seeds = json.loads((run / "summary.json").read_text())["seeds"]
    assert len(seeds) == 1 and seeds[0]["main_episodes"] == 32 and seeds[0]["iterations"] == 1
    assert seeds[0]["total_env_steps"] >= 32  # every episode takes at least one step
    without = subprocess.run([*argv[:4], "--env", "corridor", "--out", str(tmp_path / "none")],
                             capture_output=True, text=True, timeout=300)
    assert without.returncode == 2 and "unknown value 'corridor'" in without.stderr
    assert "needs --plugin" in without.stderr and not (tmp_path / "none").exists()


@dataclasses.dataclass(frozen=True)
class _Tiny(MadSelectiveCopy):
    name: ClassVar[str] = "tiny-mad"


@dataclasses.dataclass
class _Mutable(jaxcredit.Environment):
    name: ClassVar[str] = "mutable"
    max_turns: int = 4


@dataclasses.dataclass(frozen=True)
class _Unnamed(MadSelectiveCopy):
    pass


@dataclasses.dataclass(frozen=True)
class _Abstract(jaxcredit.Environment):
    name: ClassVar[str] = "abstract"
    max_turns: int = 4


@pytest.mark.parametrize("env_class, options, message", [
    (MadSelectiveCopy, {}, "environment 'mad' is already registered; registered: mad, arithmetic"),
    (_Tiny, {"ids": ("MAD-v0",)}, "environment 'tiny-mad': id 'MAD-v0' is already taken"),
    (_Tiny, {"ids": ("mad",)}, "id 'mad' is already taken"),
    (_Tiny, {"ids": ("no spaces",)}, "id 'no spaces' must be 1-64 letters"),
    (_Tiny, {"reference": "MadReference"}, "reference must be a class or function"),
    (_Mutable, {}, "_Mutable must be a frozen dataclass"),
    (_Unnamed, {}, "_Unnamed needs its own name"),
    (_Abstract, {}, "_Abstract does not define _init, _legal_action_mask"),
    (MadReference, {}, "register_environment takes a subclass of jaxcredit.Environment"),
])
def test_register_refuses_duplicates_and_malformed_environments(env_class, options, message):
    tables = (dict(ENVIRONMENTS), dict(ENVIRONMENT_IDS), dict(REFERENCE_IMPLEMENTATIONS))
    with pytest.raises(ValueError, match=message):
        jaxcredit.register_environment(env_class, **{"reference": MadReference, **options})
    assert (ENVIRONMENTS, ENVIRONMENT_IDS, REFERENCE_IMPLEMENTATIONS) == tables  # nothing registered


def test_the_extending_page_shows_the_example_file_as_it_is():
    page = (ROOT / "docs" / "extending.md").read_text()
    assert f"```python\n{EXAMPLE.read_text()}```" in page
