"""`jaxcredit bench accelerator`: the time cap (stage skips, the watchdog), failures and out-of-memory
recorded instead of crashing, one JSON file, and the envs and solver stages stopping cleanly where
memory runs out (CPU, tiny sizes). The mad-study cell is tested in tests/test_train.py (it shares the
trainer tests' compiled programs)."""

import json
import threading
import time

import jax
import pytest

from jaxcredit.benchmarks import SUITES, accelerator, run_all
from jaxcredit.benchmarks import accelerator_stages as stages
from jaxcredit.cli import main


def _stage(name, fn, budget=5.0):
    return accelerator.Stage(name, fn, budget, 0.0, quick_budget_seconds=budget)


def test_stages_past_the_cap_are_skipped_and_errors_recorded(tmp_path):
    calls = []

    def slow(context):
        calls.append("slow")
        time.sleep(0.4)
        return {"deadline_left": context.deadline - time.monotonic()}

    def boom(context):
        raise ValueError("bad input\nsecond line")

    def oom(context):
        raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1 bytes.")

    def late(context):
        calls.append("late")
        return {}

    out = tmp_path / "acc.json"
    fakes = (_stage("boom", boom), _stage("oom", oom), _stage("slow", slow, budget=0.25), _stage("late", late))
    result = accelerator.run_accelerator(str(out), time_cap=0.3, stages=fakes, watchdog=False)
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    s = result["stages"]
    assert s["boom"]["status"] == "failed" and s["boom"]["error"] == "ValueError: bad input"
    assert s["oom"]["status"] == "out of memory" and "RESOURCE_EXHAUSTED" in s["oom"]["error"]
    assert s["slow"]["status"] == "ok" and s["slow"]["budget_seconds"] <= 0.25
    assert s["slow"]["deadline_left"] < 0 and s["slow"]["seconds"] >= 0.4  # it overran its budget ...
    assert s["late"]["status"] == "skipped: time cap" and calls == ["slow"]  # ... so the next stage never ran
    assert result["status"] == "complete" and result["stage_order"] == ["boom", "oom", "slow", "late"]
    assert result["machine"]["device_platform"] == "cpu" and result["time_cap_seconds"] == 0.3


def test_watchdog_writes_the_file_and_ends_the_process_at_the_cap(tmp_path, monkeypatch):
    out = tmp_path / "acc.json"
    release, seen = threading.Event(), {}

    def fake_exit(code):  # the watchdog thread's os._exit: read what it wrote, then let the stage end
        seen["code"], seen["file"] = code, json.loads(out.read_text())
        release.set()

    monkeypatch.setattr(accelerator.os, "_exit", fake_exit)
    def stuck(context):
        context.record["points"] = [{"batch": 1, "status": "ok"}]  # measured before the cap
        return {"woke": release.wait(10)}

    fakes = (_stage("first", lambda c: {"n": 1}), _stage("stuck", stuck), _stage("after", lambda c: {}))
    accelerator.run_accelerator(str(out), time_cap=0.5, stages=fakes, watchdog=True)
    assert seen["code"] == accelerator.EXIT_AT_CAP
    written = seen["file"]
    assert written["status"] == "stopped at the time cap" and written["wall_seconds"] >= 0.5
    assert written["stages"]["first"] == {**written["stages"]["first"], "status": "ok", "n": 1}
    stopped = written["stages"]["stuck"]  # its points so far are kept
    assert stopped["status"] == "stopped: the time cap was reached mid-stage" and 0 < stopped["budget_seconds"] <= 0.5
    assert stopped["points"] == [{"batch": 1, "status": "ok"}]
    assert written["stages"]["after"] == {"status": "skipped: time cap"}


def test_env_curves_stop_cleanly_where_memory_runs_out():
    limit = 18_000  # bytes: MAD's 64-episode rollout fits, its 256-episode one and arithmetic's do not
    result = stages.envs_stage(stages.StageContext(quick=True, deadline=time.monotonic() + 1e6, memory_limit=limit))
    statuses = []
    for name, rows in result["curves"].items():
        assert [r["point"] for r in rows] == list(stages.QUICK_ENV_BATCHES)
        ended = False
        for r in rows:
            statuses.append(r["status"])
            if ended:
                assert r["status"] == stages.NOT_RUN, (name, r)
            elif r["program_bytes"] > limit:
                assert r["status"] == "out of memory" and "seconds_per_call" not in r, (name, r)
                assert r["error"] == f"predicted: the program needs {r['program_bytes']} bytes, {limit} are free"
                ended = True
            else:
                turns = 12 if name == "mad" else 7
                assert r["status"] == "ok" and r["steps_per_second"] == r["batch"] * turns / r["seconds_per_call"]
    assert "ok" in statuses and "out of memory" in statuses and stages.NOT_RUN in statuses, statuses


def test_solver_points_over_the_memory_budget_are_not_run():
    from jaxcredit.benchmarks.scaling import QUICK_ARITHMETIC_COUNTS, QUICK_MAD_LENGTHS

    result = stages.solver_stage(stages.StageContext(quick=True, deadline=time.monotonic() + 1e6,
                                                     memory_limit=32 * 1000))
    assert result["memory_budget_bytes_per_problem"] == 1000  # the free memory over 32
    for name, sizes, positions in (("mad", QUICK_MAD_LENGTHS, 2**QUICK_MAD_LENGTHS[0]),
                                   ("arithmetic", QUICK_ARITHMETIC_COUNTS, 217)):
        rows = [r for r in result["points"] if r["point"][0] == name]
        assert [r["point"][1] for r in rows] == list(sizes)
        first = rows[0]
        assert first["status"] == "out of memory" and first["positions"] == positions, first
        assert first["bytes_per_problem"] > 1000 and first["error"].startswith("not run: over the")
        assert all(r["status"] == stages.NOT_RUN for r in rows[1:])


def test_cli_needs_out_and_accelerator_is_not_in_all(tmp_path, capsys):
    assert SUITES["accelerator"] is accelerator.run
    assert main(["bench", "accelerator", "--quick"]) == 2
    assert "bench accelerator needs --out FILE" in capsys.readouterr().err
    assert main(["bench", "envs", "--out", str(tmp_path / "x.json")]) == 2
    assert "--out and --time-cap are options of bench accelerator and bench tune only" in capsys.readouterr().err
    assert main(["bench", "accelerator", "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    ran = []
    fake = {"envs": lambda args: ran.append("envs") or {"ratios": {}}, "all": run_all,
            "accelerator": lambda args: ran.append("accelerator")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("jaxcredit.benchmarks.SUITES", fake)
        run_all(None)
    assert ran == ["envs"]
