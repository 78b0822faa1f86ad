"""The Ray sweep backend: a local Ray with 2 workers runs a 2-cell sweep exactly as the local backend does."""

import os

import pytest

from jaxcredit.cli import main
from jaxcredit.train import SweepSpec, run_sweep
from jaxcredit.train.rundir import read_jsonl

ray = pytest.importorskip("ray")

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
SPEC = SweepSpec(
    name="ray-test", description="two tiny cells",
    base={"env": "mad", "env_overrides": TINY_MAD, "d_model": 16, "num_layers": 1, "num_heads": 2, "mlp_dim": 32,
          "problems_per_iteration": 4, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 32,
          "num_seeds": 2, "num_evals": 2, "credit": "outcome", "holdout_fraction": 0.0},
    arms={"outcome": {}}, budgets={"attempts": 96, "steps": 400},
)


def rows(path):
    metrics = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in metrics]


def test_ray_backend_matches_local(tmp_path):
    local = run_sweep(SPEC, str(tmp_path / "local"), progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_sweep(SPEC, str(tmp_path / "ray"), progress=False, backend="ray")
        assert ray.is_initialized()  # a Ray the caller started is left running
    finally:
        ray.shutdown()
    assert remote == local
    for regime in ("attempts", "steps"):
        ray_rows = rows(tmp_path / "ray" / regime / "outcome")
        assert ray_rows == rows(tmp_path / "local" / regime / "outcome")
        assert len(ray_rows) == 2 * 3 and ray_rows[-1]["main_episodes"] >= 96
    assert os.path.exists(tmp_path / "ray" / "table.md")


def test_unknown_backend_is_one_line_error(tmp_path, capsys):
    assert main(["sweep", "--preset", "quick", "--out", str(tmp_path / "s"), "--backend", "dask"]) == 2
    assert "unknown sweep backend 'dask'; choices: local, ray" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "s")
