"""`jaxcredit status SWEEP`: a sweep's state read from its directory (the committed tiny sweep, with
one cell made running and one stopped by hand); nothing is written, no training."""

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from jaxcredit.cli import main
from jaxcredit.rundir_io import LOCK_NAME
from jaxcredit.train.status import format_status, phase_seconds_left, sweep_status

DATA = Path(__file__).parent / "data"


def _tree(path):
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(Path(path).rglob("*")) if f.is_file()}


@pytest.fixture
def sweep(tmp_path):
    """The tiny sweep with `attempts/mc` running (its lock names this live process) and
    `fixed-steps/mc` stopped, each after its first of 3 evaluations; `fixed-steps/outcome` not started."""
    out = tmp_path / "tiny-sweep"
    shutil.copytree(DATA / "tiny-sweep", out)
    for cell in ("attempts/mc", "fixed-steps/mc"):
        os.remove(out / cell / "summary.json")
        rows = [json.loads(line) for line in (out / cell / "metrics.jsonl").read_text().splitlines()]
        kept = [r for r in rows if r["eval_index"] <= 1]
        (out / cell / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    shutil.rmtree(out / "fixed-steps" / "outcome")
    owner = {"pid": os.getpid(), "host": socket.gethostname()}  # this process: alive
    (out / "attempts/mc" / LOCK_NAME).write_text(json.dumps(owner))
    (out / "fixed-steps/mc" / LOCK_NAME).write_text(json.dumps({**owner, "host": "elsewhere"}))  # not ours: stopped
    return out


def test_status_counts_every_phase_and_reads_the_running_cell(sweep):
    before = _tree(sweep)
    status = sweep_status(str(sweep))
    assert status["name"] == "tiny-sweep" and [p["phase"] for p in status["phases"]] == ["cells", "matched"]
    cells = {r.label: r for r in status["phases"][0]["runs"]}
    assert [cells[k].state for k in ("attempts/outcome", "attempts/mc", "fixed-steps/outcome", "fixed-steps/mc")] == [
        "finished", "running", "not started", "stopped"]
    running = cells["attempts/mc"]
    config = json.loads((sweep / "attempts/mc/config.json").read_text())
    rows = [json.loads(line) for line in (sweep / "attempts/mc/metrics.jsonl").read_text().splitlines()]
    at_one = [r for r in rows if r["eval_index"] == 1]
    counter = config["budget_counter"]
    assert running.last_eval == 1 and running.num_evals == config["num_evals"] == 3
    assert running.fraction == pytest.approx(min(r[counter] for r in at_one) / config["budget"])
    assert running.success == pytest.approx(sum(r["success_greedy"] for r in at_one) / len(at_one))
    seconds = at_one[0]["segment_seconds"]  # one segment so far: its pace gives the rest
    assert running.remaining_seconds == pytest.approx(seconds * (1 - running.fraction) / running.fraction)
    assert cells["fixed-steps/mc"].remaining_seconds is None  # stopped: no pace to extrapolate
    finished = json.loads((sweep / "attempts/outcome/timing.json").read_text())["sessions"]
    took = sum(s["wall_seconds"] for s in finished)
    # one running (its own estimate) and two to do (stopped, not started) at the finished run's time, one at a time
    assert phase_seconds_left(list(cells.values())) == pytest.approx(running.remaining_seconds + 2 * took)
    text = format_status(status)
    assert text.splitlines()[1].startswith("cells: 4 runs: 1 finished, 1 running, 1 stopped, 1 not started")
    assert "  attempts/mc: running, " in text and "eval 1/3" in text and "left" in text
    assert "matched: 1 run: 1 finished" in text
    assert _tree(sweep) == before  # read only


def test_status_command_and_its_errors(sweep, tmp_path, capsys):
    assert main(["status", str(sweep), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["phases"][0]["runs"][1]["state"] == "running"
    assert main(["status", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"jaxcredit: error: {tmp_path} holds no sweep (no sweep_spec.json)"


def test_phase_estimate_by_hand():
    from jaxcredit.train.status import RunStatus

    done = [RunStatus("a", "finished", wall_seconds=100.0), RunStatus("b", "finished", wall_seconds=300.0)]
    running = [RunStatus("c", "running", remaining_seconds=50.0), RunStatus("d", "running")]  # d: no evaluation yet
    todo = [RunStatus("e", "not started"), RunStatus("f", "stopped")]
    # (50 + 200 for d, + 2 x 200 to do) / 2 running at a time
    assert phase_seconds_left(done + running + todo) == pytest.approx((50 + 200 + 2 * 200) / 2)
    assert phase_seconds_left(done + todo) is None  # nothing runs: no pace
    assert phase_seconds_left(running + todo) is None  # nothing finished: no run time to go by


def test_status_lists_the_matched_cells_of_every_currency(sweep):
    spec = json.loads((sweep / "sweep_spec.json").read_text())
    (sweep / "sweep_spec.json").write_text(json.dumps({**spec, "match_on": ["env_steps", "policy_evals"]}))
    shutil.copytree(sweep / "matched", sweep / "matched-policy-evals")
    matched = sweep_status(str(sweep))["phases"][-1]
    assert [r.label for r in matched["runs"]] == ["matched/outcome", "matched-policy-evals/outcome"]
    assert "matched: 2 runs: 2 finished" in format_status(sweep_status(str(sweep)))


def test_a_grid_listed_out_of_sorted_order_keeps_its_points_numbering(tmp_path):
    """JSON files are written with sorted keys: `tune_order` keeps the axes' order that numbers the
    points, and a record written without it takes the order its tuning runs were trained in."""
    from jaxcredit.overrides import apply_overrides
    from jaxcredit.train.presets import PRESETS
    from jaxcredit.train.sweep import spec_from_record, spec_record
    from jaxcredit.train.tuning import tune_points

    spec = PRESETS["mad-study"]
    assert list(spec.tune["grid"]) != sorted(spec.tune["grid"])  # learning_rate before entropy_coef
    record = json.loads(json.dumps(spec_record(spec, None), sort_keys=True))  # as sweep_spec.json holds it
    assert record["tune_order"] == {"grid": list(spec.tune["grid"])}
    points = {arm: tune_points(spec.tune, arm) for arm in spec.arms}
    assert {arm: tune_points(spec_from_record(record).tune, arm) for arm in spec.arms} == points
    del record["tune_order"]  # written before the order was kept: sorted, the points are misnumbered
    assert tune_points(spec_from_record(record).tune, "exact") != points["exact"]
    for arm in spec.arms:
        for index, overrides in enumerate(points[arm]):
            run = tmp_path / "tune" / arm / f"p{index:02d}"
            run.mkdir(parents=True)
            (run / "config.json").write_text(json.dumps(apply_overrides({}, overrides)))
    inferred = spec_from_record(record, str(tmp_path)).tune
    assert {arm: tune_points(inferred, arm) for arm in spec.arms} == points
