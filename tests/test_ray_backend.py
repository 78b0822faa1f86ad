"""The Ray sweep backend: a local Ray with 2 workers runs a sweep's cells, and a matched-regime cell,
exactly as the local backend does, shows its progress and reports a failed cell. (The two phases'
order is the backend-agnostic `run_sweep`'s, tested with the local backend in `test_sweep.py`; a
label arm here would double this test's compile time in every worker.)"""

import os

import pytest

from jaxcredit.train import SweepSpec, run_cells, run_sweep
from jaxcredit.train.backends import Cell, cell_progress, progress_line
from jaxcredit.train.rundir import read_jsonl, write_jsonl_atomic

ray = pytest.importorskip("ray")

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
SPEC = SweepSpec(
    name="ray-test", description="two tiny cells",
    base={"env": "mad", "env_overrides": TINY_MAD, "d_model": 16, "num_layers": 1, "num_heads": 2, "mlp_dim": 32,
          "problems_per_iteration": 4, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 32,
          "num_seeds": 2, "num_evals": 2, "credit": "outcome", "holdout_fraction": 0.0},
    arms={"outcome": {}}, budgets={"attempts": 96, "fixed-steps": 400},
)
TARGETS = {"x": [150, 260], "y": [220, 180]}  # as if two label arms had spent these per seed


def rows(path):
    metrics = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in metrics]


def matched_cell(out):
    config = SPEC.arm_config("outcome")
    return Cell(("matched", "outcome"), config, str(out / "matched" / "outcome"), False, "matched/outcome", TARGETS)


def test_ray_backend_matches_local(tmp_path, capsys):
    local = run_sweep(SPEC, str(tmp_path / "local"), progress=False)
    local_views = run_cells([matched_cell(tmp_path / "local")], progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_sweep(SPEC, str(tmp_path / "ray"), progress=True, backend="ray")
        assert ray.is_initialized()  # a Ray the caller started is left running
        shown = capsys.readouterr().err.splitlines()
        assert shown[-1].endswith("] ray sweep: 2/2 cells done, 0 running, 0 waiting, 0 failed"), shown
        remote_views = run_cells([matched_cell(tmp_path / "ray")], backend="ray", progress=False)
        # a failed cell is counted and named, the others still finish, and its error is raised
        finished = Cell(("fixed-steps", "outcome"), SPEC.cell_configs()[("fixed-steps", "outcome")],
                        str(tmp_path / "ray" / "fixed-steps" / "outcome"), True, "fixed-steps/outcome")
        missing = finished._replace(key=("nowhere",), out=str(tmp_path / "nowhere"), label="nowhere")
        with pytest.raises(FileNotFoundError, match="nothing to resume"):
            run_cells([finished, missing], backend="ray")
        shown = capsys.readouterr().err.splitlines()
        assert shown[-2].endswith("ray sweep: 1/2 cells done, 0 running, 0 waiting, 1 failed"), shown
        assert shown[-1] == "ray sweep: 1 cell(s) failed: nowhere"
    finally:
        ray.shutdown()
    assert remote == local and remote_views == local_views
    assert list(remote["regimes"]) == ["attempts", "fixed-steps"]  # no label arm: nothing to match
    for cell in ("attempts/outcome", "fixed-steps/outcome", "matched/outcome/to-x", "matched/outcome/to-y"):
        ray_rows = rows(tmp_path / "ray" / cell)
        assert ray_rows == rows(tmp_path / "local" / cell)
        assert len(ray_rows) == 2 * 3
    assert rows(tmp_path / "ray" / "attempts" / "outcome")[-1]["main_episodes"] >= 96
    assert os.path.exists(tmp_path / "ray" / "table.md")



def test_progress_line_reads_each_running_cell(tmp_path):
    """Counts, then per running cell its slowest seed's budget fraction and its last evaluation."""
    configs = SPEC.cell_configs()
    cells = [Cell(key, configs[key], str(tmp_path / "/".join(key)), False, "/".join(key)) for key in sorted(configs)]
    os.makedirs(cells[1].out)
    write_jsonl_atomic(os.path.join(cells[1].out, "metrics.jsonl"), [
        {"eval_index": 0, "seed_index": 0, "total_env_steps": 0, "success_greedy": 0.0},
        {"eval_index": 1, "seed_index": 0, "total_env_steps": 250, "success_greedy": 0.5},
        {"eval_index": 1, "seed_index": 1, "total_env_steps": 200, "success_greedy": 0.25},
    ])
    assert cells[1].label == "fixed-steps/outcome" and cells[1].config.budget == 400
    assert cell_progress(cells[1]) == "fixed-steps/outcome 50% (eval 1/2, success 0.38)"
    assert cell_progress(cells[0]) == "attempts/outcome starting"
    line = progress_line(cells, {}, {}, ["fixed-steps/outcome"])
    assert line == ("ray sweep: 0/2 cells done, 1 running, 1 waiting, 0 failed"
                    " | fixed-steps/outcome 50% (eval 1/2, success 0.38)")


def test_ray_workers_import_the_drivers_jaxcredit(tmp_path, monkeypatch):
    """Ray puts the driver's working directory first on its workers' path: started from a directory
    holding another `jaxcredit`, the backend still gives its workers the driver's package."""
    from jaxcredit.program import program_record
    from jaxcredit.train.backends import backend_session

    decoy = tmp_path / "checkout"
    (decoy / "jaxcredit").mkdir(parents=True)
    (decoy / "jaxcredit" / "__init__.py").write_text("raise ImportError('the decoy jaxcredit was imported')\n")
    monkeypatch.chdir(decoy)

    def imported():
        import jaxcredit
        from jaxcredit.program import program_record
        return jaxcredit.__file__, program_record()

    assert not ray.is_initialized()
    with backend_session("ray"):
        assert os.getcwd() == str(decoy)  # the driver's own working directory is left as it was
        path, program = ray.get(ray.remote(num_cpus=1)(imported).remote())
    import jaxcredit
    assert path == jaxcredit.__file__ and program == program_record()
