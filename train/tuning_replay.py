"""Tuning rules replayed on a finished full-grid tuning phase, with no new training.

A tuned sweep's `tune/<arm>/<point>` runs hold every point's whole validation curve and the
seconds each evaluation's segment took, so any rule that reads curves can be replayed on them:
the rule the study ran (`as run`: its `tuning.json`), the area score with ties (`area`), and
successive halving on the area score (`halving`: a point cut at a rung is charged only the
segments up to that rung). Each pick is compared with the full grid's pick (the area rule on
every point at the whole budget): the regret is the full grid's pick's mean score minus the
pick's, in the area and in the final score. Extensions need new points, so a replay reports
where a pick sits on the edge of its grid instead. docs/training.md#replayed-tuning-rules shows
the four studies' replay.
"""

from __future__ import annotations

import os

import numpy as np

from jaxcredit.rundir_io import read_json
from jaxcredit.train.rundir import read_jsonl
from jaxcredit.train.tuning import arm_plan, validation_scores

REPLAY_RULES = {
    "area": {"score": "area", "extend": 0},
    "halving": {"score": "area", "extend": 0, "rule": "halving", "eta": 3, "rungs": 3},
}


def _wall_seconds(run: str) -> float:
    sessions = read_json(os.path.join(run, "timing.json")).get("sessions", [])
    return float(sum(s.get("wall_seconds", 0.0) for s in sessions))


def _segment_seconds(rows: list) -> dict:
    """`{eval index: seconds}`: each evaluation's training segment (rows of one evaluation share it)."""
    return {r["eval_index"]: float(r["segment_seconds"]) for r in rows if isinstance(r.get("segment_seconds"),
                                                                                   (int, float))}


def point_seconds(run: str, rows: list, upto: int, num_evals: int) -> float:
    """The wall seconds a point's run spends to reach evaluation `upto`: everything outside the
    training segments (start, compile of evaluation, saving) plus the segments up to `upto`
    (without segment records: the wall time in proportion to the evaluations reached)."""
    wall = _wall_seconds(run)
    segments = _segment_seconds(rows)
    if len(segments) < num_evals:
        return wall * upto / num_evals
    return wall - sum(segments.values()) + sum(v for j, v in segments.items() if j <= upto)


def replay_arm(tune: dict, entry: dict, tune_dir: str, *, num_evals: int) -> dict:
    """One arm of a finished full-grid tuning (`entry`: its `tuning.json` entry; `tune_dir`: its
    `tune/<arm>/` folder): every rule's pick, its regret against the full grid's, the CPU seconds
    it would have used, and, for halving, how many points reached each rung."""
    points = [(p["point"], p["overrides"]) for p in entry["points"]]
    rows = {name: read_jsonl(os.path.join(tune_dir, name, "metrics.jsonl")) for name, _ in points}
    scores = {score: {name: float(np.mean(validation_scores(rows[name], score))) for name, _ in points}
              for score in ("area", "final")}
    full_grid = sum(point_seconds(os.path.join(tune_dir, n), rows[n], num_evals, num_evals) for n, _ in points)
    picks = {"as run": {"chosen": entry["chosen"], "seconds": full_grid}}
    for rule, fields in REPLAY_RULES.items():
        grid = {**{k: v for k, v in tune.items() if k in ("num_seeds", "seed", "grid", "arm_grid")}, **fields}
        _, _, record = arm_plan(grid, "arm", lambda name, p: rows[name], num_evals=num_evals, points=points)
        pick = {"chosen": record["chosen"], "edge": record["edge"], **({"tie": record["tie"]} if "tie" in record
                                                                       else {})}
        if rule == "halving":
            reached = {p["point"]: p["rungs"][-1]["evals"] for p in record["points"]}
            pick["seconds"] = sum(point_seconds(os.path.join(tune_dir, n), rows[n], reached[n], num_evals)
                                  for n, _ in points)
            ends = [r["evals"] for r in max((p["rungs"] for p in record["points"]), key=len)]
            pick["rungs"] = [{"evals": end, "points": sum(end in [r["evals"] for r in p["rungs"]]
                                                          for p in record["points"])} for end in ends]
        else:
            pick["seconds"] = full_grid
        picks[rule] = pick
    best = picks["area"]["chosen"]
    for pick in picks.values():
        pick["overrides"] = dict(points)[pick["chosen"]]
        pick["regret"] = {score: scores[score][best] - scores[score][pick["chosen"]] for score in scores}
    return {"full_grid": best, "points": len(points), "scores": scores, "rules": picks}


def replay_study(sweep_dir: str) -> dict:
    """`{arm: replay_arm(...)}` for every arm of the finished tuned sweep (or results record) at
    `sweep_dir`, in the order of its `tuning.json`."""
    spec, tuning = read_json(os.path.join(sweep_dir, "sweep_spec.json")), read_json(os.path.join(sweep_dir,
                                                                                                  "tuning.json"))
    out = {}
    for arm, entry in tuning["arms"].items():
        tune_dir = os.path.join(sweep_dir, "tune", arm)
        num_evals = int(read_json(os.path.join(tune_dir, entry["points"][0]["point"], "config.json"))["num_evals"])
        out[arm] = replay_arm(spec["tune"], entry, tune_dir, num_evals=num_evals)
    return out


def _overrides_text(overrides: dict) -> str:
    short = {"learning_rate": "lr", "entropy_coef": "ent", "credit_options.baseline": ""}
    return ", ".join(f"{short.get(k, k)} {v:g}".strip() if isinstance(v, float) else f"{v}"
                     for k, v in overrides.items())


def replay_markdown(studies: dict) -> str:
    """A Markdown table of `{study: replay_study(...)}`: per study and arm, each rule's pick (its
    overrides; `edge` where it sits at an end of its grid; `tie` where a tie was broken), the regret
    in area / final, and the CPU hours each rule uses, with halving's share of the full grid."""
    lines = ["| study | arm | as run: pick, regret | area: pick, regret | halving: pick, regret | full grid CPU | "
             "halving CPU (share) | halving points per rung |",
             "| --- | --- | --- | --- | --- | ---: | ---: | --- |"]
    for study, arms in studies.items():
        for arm, replay in arms.items():
            cells = []
            for rule in ("as run", "area", "halving"):
                pick = replay["rules"][rule]
                marks = (" (edge)" if pick.get("edge") else "") + (" (tie)" if pick.get("tie") else "")
                regret = pick["regret"]
                cells.append(f"{_overrides_text(pick['overrides'])}{marks}; "
                             f"{regret['area']:+.3f} / {regret['final']:+.3f}")
            full, halving = replay["rules"]["as run"]["seconds"], replay["rules"]["halving"]["seconds"]
            rungs = " → ".join(str(r["points"]) for r in replay["rules"]["halving"]["rungs"])
            lines.append(f"| {study} | {arm} | " + " | ".join(cells)
                         + f" | {full / 3600:.2f} h | {halving / 3600:.2f} h ({halving / full:.0%}) | {rungs} |")
        full, halving = (sum(r["rules"][rule]["seconds"] for r in arms.values()) for rule in ("as run", "halving"))
        same = sum(r["rules"]["halving"]["chosen"] == r["full_grid"] for r in arms.values())
        lines.append(f"| **{study}** | all {len(arms)} arms | | | halving picks the full grid's point for {same} of "
                     f"{len(arms)} | **{full / 3600:.2f} h** | **{halving / 3600:.2f} h ({halving / full:.0%})** | |")
    return "\n".join(lines) + "\n"
