"""Where a sweep stands, read from its directory alone: `jaxcredit status SWEEP`.

A long sweep runs in the background for hours; this reads what it has written (never writing,
never taking a lock) and says, phase by phase (tuning, the budgeted cells, the matched cells), how
many runs are finished, failed, running, stopped part-way or not started, how long the finished ones took,
and for each unfinished run its budget fraction, its last evaluation and, while it runs, an
estimate of its remaining wall time from its own pace. A run counts as running while the process
named in its lock file is alive on this host.
"""

from __future__ import annotations

import dataclasses
import os

from jaxcredit.rundir_io import FAILED_FILE, is_matched, lock_held, read_json, table_regimes
from jaxcredit.train.rundir import evaluation_progress
from jaxcredit.train.sweep import SweepSpec, spec_from_record
from jaxcredit.train.tuning import point_parts, tune_rungs

STATES = ("finished", "failed", "running", "stopped", "cut", "not started")  # cut: a tuning run halving stopped at
# a rung; failed: stopped at a non-finite iteration (its failed.json)


@dataclasses.dataclass(frozen=True)
class RunStatus:
    """One run directory's state. `fraction`: the slowest seed's share of its budget (None before
    its first evaluation, or for a matched run, whose budget is a per-seed schedule); `wall_seconds`:
    summed over its timing sessions; `remaining_seconds`: while it runs, its training segments' seconds
    so far scaled to the rest of its budget."""

    label: str
    state: str
    fraction: float | None = None
    last_eval: int | None = None
    num_evals: int | None = None
    success: float | None = None
    wall_seconds: float | None = None
    remaining_seconds: float | None = None


def _spec(out: str) -> SweepSpec:
    path = os.path.join(out, "sweep_spec.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{out} holds no sweep (no sweep_spec.json)")
    return spec_from_record(read_json(path), out)


def _wall_seconds(path: str) -> float | None:
    try:
        sessions = read_json(os.path.join(path, "timing.json")).get("sessions", [])
    except (OSError, ValueError):
        return None
    seconds = [s.get("wall_seconds") for s in sessions if isinstance(s.get("wall_seconds"), (int, float))]
    return float(sum(seconds)) if seconds else None


def run_status(path: str, label: str, config=None) -> RunStatus:
    """The state of the run directory `path` (its `TrainConfig` `config` gives the budget; None: no fraction)."""
    if not os.path.isdir(path):
        return RunStatus(label, "not started")
    wall = _wall_seconds(path)
    if os.path.exists(os.path.join(path, FAILED_FILE)):
        return RunStatus(label, "failed", wall_seconds=wall)
    if os.path.exists(os.path.join(path, "summary.json")):
        return RunStatus(label, "finished", fraction=1.0, wall_seconds=wall)
    state = "running" if lock_held(path) else "stopped"
    progress = evaluation_progress(path, config)
    if progress is None:
        return RunStatus(label, state, wall_seconds=wall)
    remaining = None
    if state == "running" and progress.fraction and progress.seconds:  # the pace as of the same evaluation
        remaining = progress.seconds * (1.0 - progress.fraction) / progress.fraction
    return RunStatus(label, state, progress.fraction, progress.last_eval, None if config is None else config.num_evals,
                     progress.success, wall, remaining)


def _tuning_phase(spec: SweepSpec, out: str) -> dict:
    """The tuning phase: every point the plan knows (extensions included), a paused run that the plan
    no longer needs marked `cut`, and with halving, per arm the points that reached each rung."""
    plan = spec.tuning_plan(out)
    pending = {(run.arm, run.run) for run in plan.pending}
    runs, rungs = [], {}
    for arm, points in plan.points.items():
        config = spec.tuning_config(arm, points[0][1])
        ends = tune_rungs(spec.tune, config.num_evals)
        reached = []
        for name, overrides in points:
            parts = []
            for run, first, count in point_parts(out, arm, name, spec.tune):
                status = run_status(os.path.join(out, "tune", arm, run), f"tune/{arm}/{run}",
                                    spec.tuning_config(arm, overrides, seed=first, num_seeds=count))
                if status.state == "stopped" and (arm, run) not in pending:
                    status = dataclasses.replace(status, state="cut")
                runs.append(status)
                parts.append(config.num_evals if status.state == "finished"
                             else -1 if status.last_eval is None else status.last_eval)
            reached.append(min(parts))
        if len(ends) > 1:
            rungs[arm] = [{"evals": end, "reached": sum(r >= end for r in reached)} for end in ends]
    return {"phase": "tuning", "runs": runs, **({"rungs": rungs} if rungs else {})}


def sweep_status(out: str) -> dict:
    """`{"name", "phases": [{"phase", "runs": [RunStatus, ...]}, ...]}` for the sweep directory `out`:
    the tuning runs (where the sweep tunes), the budgeted cells, and the matched cells found so far.
    Raises `FileNotFoundError` when `out` holds no sweep."""
    spec = _spec(out)
    phases = []
    if spec.tune is not None:
        phases.append(_tuning_phase(spec, out))
    phases.append({"phase": "cells", "runs": [
        run_status(os.path.join(out, regime, arm), f"{regime}/{arm}", config)
        for (regime, arm), config in spec.cell_configs().items()]})
    matched = [regime for regime in table_regimes(spec.regimes, spec.match_on) if is_matched(regime)]
    if matched:
        runs = []
        for regime in matched:  # one directory per currency the cells are matched in
            root = os.path.join(out, regime)
            names = sorted(os.listdir(root)) if os.path.isdir(root) else []
            runs += [run_status(os.path.join(root, name), f"{regime}/{name}")
                     for name in names if os.path.isdir(os.path.join(root, name))]
        phases.append({"phase": "matched", "runs": runs})
    return {"name": spec.name, "phases": phases}


def phase_seconds_left(runs: list[RunStatus]) -> float | None:
    """A rough wall-time estimate for a phase's unfinished runs: the running runs' own estimates (the
    mean finished run's time for one without an evaluation yet) plus that mean for each run not
    started or stopped, shared by as many runs at a time as are running now. None while nothing
    runs or no run has finished."""
    running = [r for r in runs if r.state == "running"]
    took = [r.wall_seconds for r in runs if r.state == "finished" and r.wall_seconds]
    if not running or not took:
        return None
    mean = sum(took) / len(took)
    waiting = sum(r.state in ("not started", "stopped") for r in runs)
    own = sum(mean if r.remaining_seconds is None else r.remaining_seconds for r in running)
    return (own + waiting * mean) / len(running)


def minutes_text(seconds: float) -> str:
    """`"42 min"`, or `"3.2 h"` from 90 minutes on."""
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def format_status(status: dict) -> str:
    """The text `jaxcredit status` prints: one line per phase, then one per unfinished run that has started."""
    lines = [f"sweep {status['name']}"]
    for phase in status["phases"]:
        runs = phase["runs"]
        counts = {state: sum(r.state == state for r in runs) for state in STATES}
        text = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        if phase["phase"] == "matched" and not runs:
            text = "not started (it starts once the attempts cells are finished)"
        took = [r.wall_seconds for r in runs if r.state == "finished" and r.wall_seconds]
        if took:
            text += f"; finished runs took {minutes_text(sum(took) / len(took))} each on average"
        left = phase_seconds_left(runs)
        if left is not None:
            text += f"; about {minutes_text(left)} left in this phase at {counts['running']} at a time"
        count = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
        lines.append(f"{phase['phase']}: {count}: {text}" if runs else f"{phase['phase']}: {text}")
        for arm, rungs in phase.get("rungs", {}).items():
            lines.append(f"  tune/{arm} rungs: " + ", ".join(f"eval {r['evals']}: {r['reached']} reached"
                                                             for r in rungs))
        for run in runs:
            if run.state == "failed":
                lines.append(f"  {run.label}: failed at a non-finite iteration (its {FAILED_FILE} says where)")
            if run.state in ("running", "stopped") and (run.last_eval is not None or run.state == "running"):
                parts = [run.state]
                if run.fraction is not None:
                    parts.append(f"{run.fraction:.0%} of its budget")
                if run.last_eval is not None:
                    of = f"/{run.num_evals}" if run.num_evals else ""
                    parts.append(f"eval {run.last_eval}{of}, greedy success {run.success:.2f}")
                if run.remaining_seconds is not None:
                    parts.append(f"about {minutes_text(run.remaining_seconds)} left")
                lines.append(f"  {run.label}: " + ", ".join(parts))
    return "\n".join(lines)
