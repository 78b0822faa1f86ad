"""Where a suite stands, read from its directory alone: `jaxcredit status SUITE`.

A full suite runs for many hours; this reads what it has written (never writing, never taking a
lock) and says whether it is running, how long its runs took so far (`timing.json`), and per
experiment: finished, waiting for its learnability gate, or how far it is (a label experiment's
seeds labelled; a learning experiment's settings, each a sweep, with its runs finished and
running and the time left of its current phase, from `jaxcredit.train.status`).
"""

from __future__ import annotations

import os

from jaxcredit.rundir_io import lock_held, read_json
from jaxcredit.suite.experiments import gate_reason, get_suite
from jaxcredit.timing import read_timing
from jaxcredit.train.status import minutes_text, phase_seconds_left, sweep_status


def _setting_status(path: str, name: str) -> dict:
    """`{"setting", "finished", "running", "runs", "left_seconds"}` of one learning setting's sweep."""
    if not os.path.isfile(os.path.join(path, "sweep_spec.json")):
        return {"setting": name, "finished": 0, "running": 0, "runs": None, "left_seconds": None}
    phases = sweep_status(path)["phases"]
    runs = [r for p in phases for r in p["runs"]]
    current = next((p["runs"] for p in phases if any(r.state != "finished" for r in p["runs"])), [])
    return {"setting": name, "finished": sum(r.state == "finished" for r in runs),
            "running": sum(r.state == "running" for r in runs), "runs": len(runs),
            "left_seconds": phase_seconds_left(current)}


def suite_status(out: str) -> dict:
    """`{"suite", "arms", "running", "runs", "wall_seconds", "experiments": [...]}` for the suite
    directory `out`. Each experiment: `{"name", "kind", "state"}` with `state` one of `finished`,
    `not-run` (with `reason`: waiting for its gate), `started`, `not started`; a started label
    experiment has `seeds_done` of `seeds`, a learning one `settings` (`_setting_status`).
    Raises `FileNotFoundError` when `out` holds no suite."""
    spec_path = os.path.join(out, "suite.json")
    if not os.path.isfile(spec_path):
        raise FileNotFoundError(f"{out} holds no suite (no suite.json)")
    spec = read_json(spec_path, expect=dict)
    defined = {e.name: e for e in get_suite(spec["suite"])}
    timing = read_timing(out)
    experiments = []
    for name in spec["experiments"]:
        experiment, folder = defined.get(name), os.path.join(out, name)
        entry = {"name": name, "kind": experiment.kind if experiment else "unknown"}
        if os.path.exists(os.path.join(folder, "result.json")):
            entry["state"] = "finished"
        elif experiment is not None and gate_reason(experiment) is not None:
            entry.update(state="not-run", reason=gate_reason(experiment))
        elif not os.path.isdir(folder) or experiment is None:
            entry["state"] = "not started"
        elif experiment.kind == "labels":
            done = sum(os.path.exists(os.path.join(folder, f"seed-{s}.json")) for s in range(experiment.seeds))
            entry.update(state="started" if done else "not started", seeds_done=done, seeds=experiment.seeds)
        else:
            settings = [_setting_status(os.path.join(folder, experiment.setting_name(i)), experiment.setting_name(i))
                        for i in range(len(experiment.settings))]
            entry.update(state="started" if any(s["runs"] for s in settings) else "not started", settings=settings)
        experiments.append(entry)
    return {"suite": spec["suite"], "arms": len(spec.get("arms", {})), "running": lock_held(out),
            "runs": len(timing), "wall_seconds": round(sum(float(r["wall_seconds"]) for r in timing), 1),
            "experiments": experiments}


def format_suite_status(status: dict) -> str:
    """The text `jaxcredit status SUITE` prints: a heading line, then one line per experiment."""
    done = sum(e["state"] == "finished" for e in status["experiments"])
    runs = status["runs"]
    recorded = (f"{minutes_text(status['wall_seconds'])} recorded over {runs} run{'s' if runs != 1 else ''}"
                if runs else "no time recorded yet")
    lines = [f"suite {status['suite']}: {status['arms']} arms, {done} of {len(status['experiments'])} experiments "
             f"finished, {'running' if status['running'] else 'not running'}; {recorded}"]
    for e in status["experiments"]:
        text = e["state"]
        if e["state"] == "not-run":
            text = f"not run: {e['reason']}"
        elif "seeds_done" in e:
            text += f", {e['seeds_done']} of {e['seeds']} seeds labelled"
        elif "settings" in e and e["state"] == "started":
            parts = []
            for s in e["settings"]:
                if s["runs"] is None:
                    parts.append(f"{s['setting']} not started")
                    continue
                part = f"{s['setting']} {s['finished']} of {s['runs']} runs finished"
                if s["running"]:
                    part += f", {s['running']} running"
                if s["left_seconds"] is not None:
                    part += f" (about {minutes_text(s['left_seconds'])} left in its phase)"
                parts.append(part)
            text += ": " + "; ".join(parts)
        lines.append(f"  {e['name']} ({e['kind']}): {text}")
    return "\n".join(lines)
