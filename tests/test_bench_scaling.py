"""The scaling curves of `jaxcredit bench` and `bench all`: tiny sizes, values checked against their own
definitions (positions, memory from shapes, the budget), plots written, and `all` merging every suite's ratios."""

import argparse

import pytest

from jaxcredit import solver_batch
from jaxcredit.benchmarks import SUITES, run_all, save_plots
from jaxcredit.benchmarks import scaling as bench_scaling
from jaxcredit.cli import main
from jaxcredit.envs import make


@pytest.fixture(scope="module")
def solver_curves():
    return bench_scaling.solver_scaling(quick=True, repeats=1, memory_budget=10_000)


def test_solver_scaling_memory_and_budget(solver_curves):
    mad = {r["length"]: r for r in solver_curves["mad"]}
    assert set(mad) == set(bench_scaling.QUICK_MAD_LENGTHS)
    for length, row in mad.items():
        assert row["positions"] == 2**length
        memory = solver_batch.memory_per_problem(make("mad", length=length, max_useful=min(4, length)))
        assert row["bytes_per_problem"] == memory["graph_bytes"] + memory["values_bytes"]
        assert (row["status"] == "ok") == (row["bytes_per_problem"] <= 10_000)
    assert any(r["status"] == "ok" and r["seconds_per_problem"] > 0 for r in mad.values())
    arithmetic = solver_curves["arithmetic"][0]  # count 3: 217 positions, ~270 kB: over the tiny budget
    assert arithmetic["positions"] == 217 and arithmetic["status"].startswith("not run: over")


def test_all_merges_every_suite_and_plots(monkeypatch, tmp_path, solver_curves):
    fake = {
        "envs": {"suite": "envs", "ratios": {"mad:jax_vs_numpy@8": 5.0},
                 "scaling": {"batch": {"mad": [{"batch": 8, "steps_per_second": 1e6},
                                               {"batch": 16, "steps_per_second": 2e6}]}}},
        "solver": {"suite": "solver", "ratios": {"solver:jax_vs_python@mad": 99.0}, "scaling": solver_curves},
        "train": {"suite": "train", "ratios": {"train:outcome_vs_bound": 2.0},
                  "scaling": {"episodes_per_iteration": [{"episodes": 4, "seconds": 0.1},
                                                         {"episodes": 16, "seconds": 0.2}]}},
    }
    monkeypatch.setattr("jaxcredit.benchmarks.SUITES", {**{k: (lambda args, k=k: fake[k]) for k in fake},
                                                        "all": run_all})
    result = run_all(argparse.Namespace(quick=True))
    assert set(result["suites"]) == set(fake)
    assert result["ratios"] == {"mad:jax_vs_numpy@8": 5.0, "solver:jax_vs_python@mad": 99.0,
                                "train:outcome_vs_bound": 2.0}
    written = save_plots(result, str(tmp_path / "plots"))
    names = sorted(p.rsplit("/", 1)[1] for p in written)
    assert names == ["env_steps_vs_batch.png", "solver_mad_vs_length.png", "train_time_vs_episodes.png"]
    assert all(open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n" for p in written)


def test_all_is_a_suite_and_plot_dir_is_checked(tmp_path, capsys):
    assert "all" in SUITES
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["bench", "envs", "--plot", str(blocker)]) == 2
    assert "--plot" in capsys.readouterr().err
