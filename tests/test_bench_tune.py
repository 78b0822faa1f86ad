"""`jaxcredit bench tune`: the grid it times, how a population's members are laid out, and how the
separate side is scaled and compared. The training sides are replaced by fakes with known times
(tests/test_population.py shows that a population computes what separate runs compute)."""

import json

import pytest

from jaxcredit.benchmarks import tune
from jaxcredit.cli import main


def test_layout_and_grid():
    assert tune.layout(1) == (1, 1) and tune.layout(4) == (2, 2) and tune.layout(12) == (6, 2)
    assert tune.grid_points(2) == [{"learning_rate": 1e-3, "entropy_coef": 0.0},
                                   {"learning_rate": 1e-3, "entropy_coef": 0.01}]
    six = tune.grid_points(6)
    assert [p["learning_rate"] for p in six] == [3e-4, 3e-4, 0.0017, 0.0017, 0.01, 0.01]
    assert [p["entropy_coef"] for p in six] == [0.0, 0.01] * 3


def _fake_sides(monkeypatch, *, agree=True):
    """Separate: 10 s wall, 8 s CPU, 6 s compile per point trained; population: 5, 4, 2 in all."""
    calls = []

    def fake(side, configs, runs):
        calls.append((side, len(configs), runs))
        if side == "separate":
            return {"wall_seconds": 10.0 * runs, "cpu_seconds": 8.0 * runs, "compile_seconds": 6.0 * runs,
                    "xla_compiles": 3 * runs, "final_success": [[0.5, 0.25]] * runs}
        finals = [[0.5, 0.25 if agree else 0.75]] * len(configs)
        return {"wall_seconds": 5.0, "cpu_seconds": 4.0, "compile_seconds": 2.0, "xla_compiles": 3,
                "final_success": finals}

    monkeypatch.setattr(tune, "_time_side", fake)
    return calls


def test_separate_runs_are_scaled_to_every_point_and_compared(monkeypatch):
    calls = _fake_sides(monkeypatch)
    base = tune.config_from_dict({"env": "mad", "credit": "outcome", **tune.QUICK_FIELDS})
    row = tune.measure(base, 12, rounds=2, max_separate_runs=2, deadline=float("inf"))
    assert calls == [("separate", 6, 2), ("population", 6, 2)] * 2  # the sides alternate
    assert (row["members"], row["points"], row["seeds"]) == (12, 6, 2)
    assert row["separate"]["wall_seconds"] == 60.0 and row["separate"]["extrapolated_from_runs"] == 2
    assert row["separate_vs_population"] == {"wall": 12.0, "cpu": 12.0, "compile": 18.0}
    assert row["same_final_success"] is True
    _fake_sides(monkeypatch, agree=False)
    assert tune.measure(base, 4, rounds=1, max_separate_runs=8, deadline=float("inf"))["same_final_success"] is False


def test_the_command_writes_every_size_and_skips_past_the_cap(monkeypatch, tmp_path, capsys):
    _fake_sides(monkeypatch)
    out = tmp_path / "tune.json"
    assert main(["bench", "tune", "--quick", "--sizes", "4,12", "--out", str(out), "--time-cap", "3600"]) == 0
    result = json.loads(out.read_text())
    assert [row["members"] for row in result["sizes"]] == [4, 12] and result["skipped_sizes"] == []
    assert result["ratios"]["tune:separate_vs_population_wall@12"] == pytest.approx(12.0)
    assert "separate / population" in capsys.readouterr().err  # tables go to stderr
    clock = iter([0.0, 0.0, 100.0, 100.0, 100.0])  # start, first size's check, then past a 1 s cap
    monkeypatch.setattr(tune.time, "monotonic", lambda: next(clock, 100.0))
    assert main(["bench", "tune", "--quick", "--sizes", "4,12", "--out", str(out), "--time-cap", "1"]) == 0
    result = json.loads(out.read_text())
    assert [row["members"] for row in result["sizes"]] == [4] and result["skipped_sizes"] == [12]
