"""Guards before and during training: an arm's credit traced on the run's shapes before anything is
written, and a run stopped at its first non-finite iteration, marked failed, its last finite
checkpoint kept, refused by `report` and `report --page`.

Plugin arms are written to files in a temporary directory outside the package and loaded with
`--plugin`; they are removed from the registry when this module's tests end.
"""

import json
import os
import sys
import textwrap

import jax
import numpy as np
import pytest

from jaxcredit.arm_registry import CREDIT_ARMS
from jaxcredit.cli import main
from jaxcredit.rundir_io import FAILED_FILE
from jaxcredit.train import RunDir, SweepSpec, config_from_dict, run_sweep, run_training
from jaxcredit.train import driver as driver_module
from jaxcredit.train.guards import TrainingFailed, checkpointed
from tests.conftest import TINY_TRAIN

B, T = 8 * 4, 5  # TINY_TRAIN's episodes per iteration and TINY_MAD's turns

PLUGIN = '''
import jax.numpy as jnp
import jaxcredit

def compute(context, trajectory, problems, key):
    live = trajectory.live
    return jaxcredit.CreditResult({advantage}, None, {{}})

jaxcredit.register_credit_arm(jaxcredit.CreditArm(
    name="{name}", account=None, enumerates=False, description="a test arm", compute=compute))
'''


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    """`plugins(name, advantage) -> path`: a plugin file registering arm `name` whose `compute` returns
    the expression `advantage` (of `live`, bool `[B, T]`); its arms unregistered afterwards."""
    where, names = tmp_path_factory.mktemp("user"), []
    before = set(sys.modules)

    def write(name: str, advantage: str) -> str:
        path = where / f"{name.replace('-', '_')}.py"
        path.write_text(textwrap.dedent(PLUGIN.format(name=name, advantage=advantage)))
        names.append(name)
        return str(path)

    yield write
    for name in names:
        CREDIT_ARMS.pop(name, None)
    for module in set(sys.modules) - before:
        if module.startswith("jaxcredit_plugin_"):
            del sys.modules[module]


def _sets(fields: dict) -> list:
    return [arg for k, v in fields.items() for arg in ("--set", f"{k}={json.dumps(v)}")]


def _train_argv(plugin, credit, out, **fields):
    return ["train", "--plugin", plugin, "--credit", credit, "--out", str(out), "--no-progress",
            *_sets({**TINY_TRAIN, **fields})]


@pytest.mark.parametrize("name, advantage, actual", [
    ("short-credit", "jnp.zeros(live.shape[:1])", "float32[32]"),
    ("turn-short-credit", "jnp.zeros((live.shape[0], live.shape[1] - 1))", "float32[32, 4]"),
    ("integer-credit", "live.astype(jnp.int32)", "int32[32, 5]"),
])
def test_a_wrong_shape_advantage_is_refused_in_one_line_and_nothing_is_written(plugins, tmp_path, capsys, name,
                                                                               advantage, actual):
    out = tmp_path / "run"
    assert main(_train_argv(plugins(name, advantage), name, out)) == 2
    err = capsys.readouterr().err
    assert err == (f"jaxcredit: error: credit arm {name!r}: its advantage must be float[{B}, {T}] [B, T] ({B} "
                   f"episodes per iteration, {T} turns), got {actual}\n")
    assert not out.exists()


def test_a_compute_that_fails_on_the_run_s_shapes_is_one_line_naming_the_arm(plugins, tmp_path, capsys):
    out = tmp_path / "given"
    out.mkdir()  # an empty directory given as --out stays empty
    assert main(_train_argv(plugins("broken-credit", "live @ live"), "broken-credit", out)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxcredit: error: credit arm 'broken-credit': compute fails on the run's shapes "
                          f"(advantage [B, T] = [{B}, {T}]): TypeError: ") and err.count("\n") == 1
    assert os.listdir(out) == []


def test_nan_credit_stops_at_its_iteration_marks_the_run_failed_and_keeps_the_finite_checkpoint(
        plugins, tmp_path, capsys):
    """The arm's credit is NaN from the first iteration: the run stops there, exit 2 with one line
    naming the arm and the iteration; the initial checkpoint stays `latest`; the directory is marked
    failed, and resuming it, training into it again and reporting it are refused."""
    out = tmp_path / "run"
    argv = _train_argv(plugins("nan-credit", "jnp.where(live, jnp.nan, 0.0)"), "nan-credit", out)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxcredit: error: credit arm 'nan-credit': non-finite credit at iteration 1 (seed 0); "
                          "the run stopped, its last finite checkpoint (evaluation 0) is kept") and err.count("\n") == 1
    failed = json.loads((out / FAILED_FILE).read_text())
    assert failed["credit"] == "nan-credit" and failed["iteration"] == 1 and failed["nonfinite"] == "credit"
    assert [s["seed_index"] for s in failed["seeds"]] == [0, 1] and failed["checkpoint"] == "latest-0"
    run = RunDir(str(out))
    assert run.status() == "failed" and not (out / "summary.json").exists()
    assert run.checkpoint_info("latest")["eval_index"] == 0
    assert sorted(os.listdir(out / "checkpoints")) == ["latest-0", "latest.json"]
    assert {r["eval_index"] for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())} == {0}

    for again in (argv, [*argv, "--resume"]):
        assert main(again) == 2
        assert f"{out} holds a failed run (credit arm 'nan-credit': non-finite credit at iteration 1" in \
            capsys.readouterr().err
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxcredit: error: report refuses a failed run: {out} stopped at a non-finite iteration")
    assert not (out / "report.md").exists()


def test_a_non_finite_loss_mid_run_keeps_the_last_finite_checkpoint_and_report_page_refuses_it(tmp_path, capsys):
    """A built-in arm (outcome) with an absurd learning rate: the first update makes the parameters
    huge but finite, a later iteration's gradient is not. The run stops at that iteration, its
    latest checkpoint is the last evaluation before it (finite), and the sweep holding it is refused
    by `report --page` and `report`, and shown as failed by `status`."""
    spec = SweepSpec(name="guarded", description="test", base={**TINY_TRAIN, "budget": 96, "num_evals": 3,
                                                               "learning_rate": 1e38},
                     arms={"outcome": {"credit": "outcome"}}, budgets={"attempts": 96}, regimes=("attempts",))
    out = tmp_path / "sweep"
    with pytest.raises(TrainingFailed, match=r"^credit arm 'outcome': non-finite (gradient|parameters) at iteration "
                                             r"[2-9] \(seed [01]\); the run stopped, its last finite checkpoint "
                                             r"\(evaluation [1-9]\) is kept"):
        run_sweep(spec, str(out), progress=False)
    cell = out / "attempts" / "outcome"
    failed = json.loads((cell / FAILED_FILE).read_text())
    run = RunDir(str(cell))
    latest = run.checkpoint_info("latest")
    assert failed["checkpoint"] == latest["directory"] and 1 <= latest["eval_index"] < failed["iteration"]
    config = config_from_dict({**spec.base, "credit": "outcome"})
    init, _, _ = driver_module.compiled_programs(config)
    fresh = driver_module._replicated(init(np.arange(2, dtype=np.int32)), 1)
    restored, _ = run.restore_checkpoint("latest", checkpointed(fresh))
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(restored.params)]
    assert all(np.isfinite(x).all() for x in leaves) and max(np.abs(x).max() for x in leaves) > 1e30  # moved, finite
    rows = [json.loads(line) for line in (cell / "metrics.jsonl").read_text().splitlines()]
    assert max(r["eval_index"] for r in rows) == latest["eval_index"]
    assert max(r["iteration"] for r in rows) < failed["iteration"]

    page = tmp_path / "page.md"
    assert main(["report", str(out), "--page", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxcredit: error: report --page refuses a failed run: {cell} stopped at a non-finite "
                          "iteration (credit arm 'outcome': non-finite") and err.count("\n") == 1
    assert not page.exists() and not (tmp_path / "page").exists()
    assert main(["report", str(out)]) == 2 and "report refuses a failed run" in capsys.readouterr().err
    assert main(["status", str(out)]) == 0
    assert "cells: 1 run: 1 failed" in capsys.readouterr().out


def test_a_run_that_fails_before_its_first_iteration_leaves_no_directory(tmp_path, monkeypatch):
    config = config_from_dict(TINY_TRAIN)
    init, segment, evaluate = driver_module.compiled_programs(config)

    def failing_init(seeds):
        raise ValueError("no memory for the first state")

    monkeypatch.setattr(driver_module, "compiled_programs", lambda c: (failing_init, segment, evaluate))
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="no memory for the first state"):
        run_training(config, str(out), progress=False)
    assert not out.exists()
    given = tmp_path / "given"
    given.mkdir()  # a directory given empty stays, empty
    with pytest.raises(ValueError, match="no memory for the first state"):
        run_training(config, str(given), progress=False)
    assert given.is_dir() and os.listdir(given) == []
    monkeypatch.undo()
    assert run_training(config, str(given), progress=False)["seeds"][0]["iterations"] == 8  # nothing blocks it
