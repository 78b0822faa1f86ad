"""An open credit-arm registry: arms own their options, `register_credit_arm` from user code, and
`--plugin` files outside the package trained, swept and reported like a built-in arm.

The plugin is `docs/examples/sign_outcome.py` (the example `docs/extending.md` works through),
copied to a temporary directory so that nothing of it is part of the package. Its arm is removed
from the registry when this module's tests end, so later tests see the built-in arms only.
"""

import dataclasses
import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxcredit
from jaxcredit.arm_registry import CREDIT_ARMS, legacy_field_names
from jaxcredit.cli import main
from jaxcredit.credit_arms import McOptions, OutcomeOptions, SolverOptions
from jaxcredit.train import SweepSpec, TrainConfig, config_from_dict, run_sweep
from jaxcredit.train.config import FIELDS
from tests.conftest import TINY_TRAIN

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "sign_outcome.py"
BUILT_IN = ("outcome", "mc", "exact", "solver", "anchor", "critic", "predictor", "progress-soft", "progress-hard",
            "progress-model")


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The example plugin, copied outside the package; unregistered afterwards."""
    path = tmp_path_factory.mktemp("user") / "sign_outcome.py"
    shutil.copy(EXAMPLE, path)
    before = set(sys.modules)
    yield str(path)
    CREDIT_ARMS.pop("sign-outcome", None)
    for name in set(sys.modules) - before:
        if name.startswith("jaxcredit_plugin_"):
            del sys.modules[name]


def _sets(fields: dict) -> list:
    return [arg for k, v in fields.items() for arg in ("--set", f"{k}={json.dumps(v)}")]


def test_train_config_has_no_arm_prefixed_fields():
    prefixes = tuple(f"{part}_" for name in BUILT_IN for part in {name, name.split("-")[0]})
    assert [f for f in FIELDS if f.startswith(prefixes)] == []
    assert not set(FIELDS) & legacy_field_names()
    # the arm-specific settings of every built-in arm are options, their old flat names read as legacy
    arm_specific = {"outcome_baseline", "solver_tie_break", "solver_tie_break_discount", "replacement",
                    "progress_continuations", "critic_coef"}
    assert "credit_options" in FIELDS and arm_specific <= legacy_field_names() and not arm_specific & set(FIELDS)
    assert {"exact", "solver", "mc"} == {n for n, arm in CREDIT_ARMS.items() if "replacement" in arm.option_names}


def test_options_are_checked_where_the_arm_defines_them():
    assert TrainConfig(credit="mc").credit_options == McOptions(variant="td", continuations=4)
    with pytest.raises(ValueError, match=re.escape("credit_options.variant of credit 'mc': unknown value 'qq'; "
                                                   "choices: td, q")):
        McOptions(variant="qq")
    with pytest.raises(ValueError, match=re.escape("credit_options.temperature of credit 'solver' must be a finite "
                                                   "number > 0, got 0.0")):
        config_from_dict({"credit": "solver", "credit_options.temperature": 0.0})
    with pytest.raises(ValueError, match=re.escape("credit 'outcome' has no option(s) ['continuations']; its "
                                                   "options: baseline")):
        config_from_dict({"credit": "outcome", "credit_options": {"continuations": 2}})
    with pytest.raises(ValueError, match="are SolverOptions, not the options of credit 'mc'"):
        TrainConfig(credit="mc", credit_options=SolverOptions())


def test_options_by_dotted_name_over_the_base_arm_and_defaults_for_another():
    base = config_from_dict({"credit": "solver", "credit_options": {"policy": "soft", "weight": 0.5}})
    same = config_from_dict({"credit_options.weight": 2.0}, base=base)
    assert same.credit_options == SolverOptions(policy="soft", weight=2.0)
    other = config_from_dict({"credit": "outcome", "credit_options.baseline": "mean"}, base=base)
    assert other.credit_options == OutcomeOptions(baseline="mean")


def test_an_old_config_json_reads_round_trips_and_names_the_new_spelling():
    old = json.loads((ROOT / "tests/data/tiny-sweep/attempts/mc/config.json").read_text())
    assert old["mc_continuations"] == 2 and "credit_options" not in old  # written with the flat fields
    config = config_from_dict(old)
    assert config.credit_options == McOptions(variant=old["mc_variant"], continuations=2)
    written = config.to_dict()
    assert not set(written) & legacy_field_names() and written["credit_options"] == {
        "variant": "td", "continuations": 2, "replacement": "on-policy", "branch_fraction": 1.0,
        "common_random_numbers": False}
    assert config_from_dict(json.loads(json.dumps(written))) == config
    with pytest.raises(ValueError, match=re.escape("mc_continuations -> credit_options.continuations (credit 'mc')")):
        config_from_dict({"credit": "mc", "mc_continuations": 2}, legacy=False)


class _Loose(jaxcredit.ArmOptions):  # not a dataclass of its own
    pass


@dataclasses.dataclass(frozen=True)
class _NoDefault(jaxcredit.ArmOptions):
    arm = "x"
    k: int


def _arm(name="new-arm", **fields):
    return jaxcredit.CreditArm(**{"name": name, "account": None, "enumerates": False, "description": "test",
                                  "compute": lambda *a: None, **fields})


@pytest.mark.parametrize("arm, message", [
    (_arm("mc"), "credit arm 'mc' is already registered"),
    (_arm("Bad Name"), "credit arm name 'Bad Name': use 1-64 lowercase letters"),
    (_arm(account="labels"), "account 'labels' is not a ledger account"),
    (_arm(options=dict), "options must be a frozen dataclass subclassing jaxcredit.ArmOptions"),
    (_arm(options=_NoDefault), "every option needs a default"),
    (_arm(card="text"), "card must be a function"),
    ("mc", "register_credit_arm takes a jaxcredit.CreditArm, got str"),
])
def test_register_refuses_duplicates_and_malformed_arms(arm, message):
    names = tuple(CREDIT_ARMS)
    with pytest.raises(ValueError, match=re.escape(message)):
        jaxcredit.register_credit_arm(arm)
    assert tuple(CREDIT_ARMS) == names


def test_a_missing_plugin_is_one_line(tmp_path, capsys):
    assert main(["train", "--plugin", str(tmp_path / "nope.py"), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == f"jaxcredit: error: plugin {tmp_path / 'nope.py'}: no such file\n"
    assert main(["train", "--plugin", "no_such_module_xyz", "--out", str(tmp_path / "run")]) == 2
    assert "plugin no_such_module_xyz: no module named 'no_such_module_xyz'" in capsys.readouterr().err


def test_a_plugin_arm_trains_sweeps_and_reports_like_a_built_in(plugin, tmp_path, capsys):
    """The example's arm from a file outside the package: a choice of `--credit` once loaded, its
    option checked, trained by the CLI into a run directory; swept beside outcome, its plugin
    recorded in `sweep_spec.json`; the report's card is the arm's own."""
    run = tmp_path / "run"
    argv = ["train", "--plugin", plugin, "--credit", "sign-outcome", "--out", str(run), "--no-progress",
            *_sets({**TINY_TRAIN, "budget": 64, "credit_options.scale": 0.5})]
    assert main(argv) == 0, capsys.readouterr().err
    assert "sign-outcome" in jaxcredit.credit_names()
    config = json.loads((run / "config.json").read_text())
    assert config["credit"] == "sign-outcome" and config["credit_options"] == {"scale": 0.5}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["seeds"][0]["main_episodes"] == 64 and summary["seeds"][0]["total_env_steps"] > 64
    capsys.readouterr()
    assert main([*argv[:-2], "--out", str(tmp_path / "bad"), "--set", "credit_options.scale=-1"]) == 2
    assert "credit_options.scale of credit 'sign-outcome' must be >= 0.0, got -1" in capsys.readouterr().err

    spec = SweepSpec(name="plugin-sweep", description="test", base={**TINY_TRAIN, "budget": 64},
                     arms={"outcome": {"credit": "outcome"},
                           "sign": {"credit": "sign-outcome", "credit_options.scale": 0.5}},
                     budgets={"attempts": 64}, regimes=("attempts",))
    out = tmp_path / "sweep"
    table = run_sweep(spec, str(out), progress=False, plugins=(plugin,))
    recorded = json.loads((out / "sweep_spec.json").read_text())
    assert recorded["plugins"] == [os.path.abspath(plugin)]
    # the same config as the CLI's run: the same seeds, the same numbers
    cell = json.loads((out / "attempts" / "sign" / "summary.json").read_text())
    assert np.allclose([s["final_success"] for s in cell["seeds"]], [s["final_success"] for s in summary["seeds"]])
    assert table["regimes"]["attempts"]["sign"]["reference"] == "outcome"
    from jaxcredit.analysis import write_report

    report = Path(write_report(str(out))).read_text()
    assert "every action of an episode gets 0.5 × the sign of its group-normalised return" in report
    assert run_sweep(spec, str(out), resume=True, progress=False) == table  # resumes with its recorded plugin


def test_the_extending_page_shows_the_example_file_as_it_is():
    page = (ROOT / "docs" / "extending.md").read_text()
    assert f"```python\n{EXAMPLE.read_text()}```" in page
