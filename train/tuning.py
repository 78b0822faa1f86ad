"""Equal tuning: every arm's settings chosen on the validation set from one grid, at equal attempts.

A sweep's `tune` is a JSON object:

- `grid`: `{override name: [values]}`, the same for every arm; names are config fields or dotted
  names (`jaxcredit.overrides.apply_overrides`: `learning_rate`, `env_overrides.length`,
  `credit_options.baseline`), the mechanism `jaxcredit train --set` uses for plain fields;
- `arm_grid` (optional): `{arm: {override name: [values]}}`, extra axes crossed with the grid for
  that arm alone (outcome's baseline `grpo` / `rloo`);
- `num_seeds` (default 3) and `seed` (default 1000): the tuning runs' seeds, `seed .. seed +
  num_seeds - 1`, by default apart from the study's (`0 .. N - 1`), so that no setting is chosen on
  the seeds the study then reports; the same for every arm and grid point;
- `budget` (default: the sweep's `attempts` budget): main attempts per tuning run;
- `score` (default `final`): what a point is scored on, per tuning seed: `final`, the greedy
  validation success at its last evaluation; or `area`, its mean over the evaluations after the
  first (the area under the validation curve; the first evaluation, of the untrained network, is
  the same at every point of an arm), for studies where every point ends at the ceiling and the
  question is how fast an arm gets there.

An arm's grid points are the Cartesian product of the grid's axes, then its own, each axis in
the order written: the first axis varies slowest. Every point is one run directory,
`OUT/tune/<arm>/p<k>` (k from 0), at the attempts budget (`budget_counter="main_episodes"`),
run through the sweep's backend like any cell (resumed, timed, with progress). The score of a
point is the mean over the tuning seeds of the greedy success on the held-out validation set at
its last evaluation (`validation_success_greedy`; or over its evaluations, `score: area`); the
chosen point is the one with the highest score, ties to the earlier point (`choose_point`). The
sweep's cells then run every arm at its chosen point (matched-regime partners at their own), and
`OUT/tuning.json` records every point's overrides, per-seed scores, n and the chosen point per
arm (`tuning_record`).
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from jaxcredit.rundir_io import read_json
from jaxcredit.train.rundir import read_jsonl

TUNE_FIELDS = ("grid", "arm_grid", "num_seeds", "seed", "budget", "score")
DEFAULT_TUNE_SEEDS, DEFAULT_TUNE_SEED = 3, 1000
TUNE_METRIC = "validation_success_greedy"  # at each seed's last evaluation, mean over the tuning seeds
# `tune.score` -> the rule `tuning.json` states for it.
TUNE_RULES = {
    "final": ("the highest mean over the tuning seeds of the final greedy validation success; ties to the earlier "
              "grid point"),
    "area": ("the highest mean over the tuning seeds of the greedy validation success averaged over the "
             "evaluations after the first (the area under the validation curve); ties to the earlier grid point"),
}
TUNE_SCORES = tuple(TUNE_RULES)


def check_tune(tune: dict, arms) -> None:
    """Raise `ValueError` naming what is wrong with a sweep's `tune` (see the module docstring)."""
    if not isinstance(tune, dict):
        raise ValueError(f"tune must be an object with {', '.join(TUNE_FIELDS)}, got {tune!r}")
    unknown = sorted(set(tune) - set(TUNE_FIELDS))
    if unknown:
        raise ValueError(f"tune: unknown field(s) {unknown}; fields: {', '.join(TUNE_FIELDS)}")
    _check_axes("tune.grid", tune.get("grid"))
    arm_grid = tune.get("arm_grid", {})
    if not isinstance(arm_grid, dict):
        raise ValueError(f"tune.arm_grid must be an object {{arm: {{field: [values]}}}}, got {arm_grid!r}")
    for arm, axes in arm_grid.items():
        if arm not in arms:
            raise ValueError(f"tune.arm_grid: unknown arm {arm!r}; arms: {', '.join(arms)}")
        _check_axes(f"tune.arm_grid.{arm}", axes)
        shared = sorted(set(axes) & set(tune["grid"]))
        if shared:
            raise ValueError(f"tune.arm_grid.{arm}: {shared} already in tune.grid")
    _check_score(tune.get("score", "final"))
    for field, low in (("num_seeds", 1), ("seed", 0), ("budget", 1)):
        value = tune.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"tune.{field} must be an integer >= {low}, got {value!r}")


def _check_score(score) -> None:
    if score not in TUNE_RULES:
        raise ValueError(f"tune.score must be one of {', '.join(TUNE_SCORES)}, got {score!r}")


def _check_axes(where: str, axes) -> None:
    if not isinstance(axes, dict) or not axes:
        raise ValueError(f"{where} must be a non-empty object {{field: [values]}}, got {axes!r}")
    for name, values in axes.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"{where}.{name} must be a non-empty list of values, got {values!r}")
        if len({repr(v) for v in values}) != len(values):
            raise ValueError(f"{where}.{name} lists a value twice: {list(values)}")


def tune_points(tune: dict, arm: str) -> list[dict]:
    """`[overrides]`: `arm`'s grid points in order (the grid's axes, then the arm's own; the first
    axis varies slowest)."""
    axes = {**tune["grid"], **tune.get("arm_grid", {}).get(arm, {})}
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def point_name(index: int) -> str:
    """`"p03"`: the run directory (under `tune/<arm>/`) of grid point `index`."""
    return f"p{index:02d}"


def tune_seeds(tune: dict) -> tuple[int, int]:
    """`(num_seeds, first seed)` of the tuning runs."""
    return int(tune.get("num_seeds", DEFAULT_TUNE_SEEDS)), int(tune.get("seed", DEFAULT_TUNE_SEED))


def validation_scores(rows: list, score: str = "final") -> list[float]:
    """Per seed (sorted by index), `TUNE_METRIC` at the seed's last evaluation in a run's metrics
    rows (`score="final"`), or its mean over the seed's evaluations after the first (`"area"`)."""
    _check_score(score)
    per_seed: dict = {}
    for row in rows:
        per_seed.setdefault(row["seed_index"], []).append(row)
    out = []
    for seed in sorted(per_seed):
        mine = sorted(per_seed[seed], key=lambda r: r["eval_index"])
        values = [float(r[TUNE_METRIC]) for r in mine]
        out.append(values[-1] if score == "final" else float(np.mean(values[1:] or values)))
    return out


def _config_value(config: dict, field: str):
    """`config`'s value of a tuned field (`credit_options.NAME` reads the arm's options)."""
    for part in field.split("."):
        config = config.get(part) if isinstance(config, dict) else None
    return config


def _check_point_config(run: str, overrides: dict) -> None:
    """Raise `ValueError` when the run directory `run` was trained with other values than the grid
    point's `overrides` (its `config.json`, where it has one): a grid whose axes are listed in
    another order numbers its points otherwise, and its scores would go to the wrong settings."""
    path = os.path.join(run, "config.json")
    if not os.path.exists(path):
        return
    config = read_json(path)
    wrong = {f: (v, _config_value(config, f)) for f, v in overrides.items() if _config_value(config, f) != v}
    if wrong:
        raise ValueError(f"{run} is not the grid point it is named for: "
                         + ", ".join(f"{f} is {got!r} there, {want!r} in the grid" for f, (want, got) in wrong.items())
                         + " (the grid's axes in another order number the points otherwise)")


def choose_point(scores: list) -> int:
    """The index of the chosen point: the highest mean of its per-seed `scores` (one list per
    point), the earliest on a tie."""
    if not scores or any(len(s) == 0 for s in scores):
        raise ValueError("choose_point needs at least one point, each with at least one score")
    means = [float(np.mean(s)) for s in scores]
    return means.index(max(means))


def tuning_record(tune: dict, arms, out: str, *, budget: int) -> dict:
    """The `tuning.json` of a sweep whose tuning runs in `out/tune/` have finished: per arm, every
    point's overrides, per-seed scores, mean and n, and the chosen point (`choose_point`)."""
    num_seeds, seed = tune_seeds(tune)
    score = tune.get("score", "final")
    record = {"metric": TUNE_METRIC, "rule": TUNE_RULES[score], "budget": budget,
              "budget_counter": "main_episodes", "num_seeds": num_seeds, "seeds": list(range(seed, seed + num_seeds)),
              **({"score": score} if score != "final" else {}), "arms": {}}
    for arm in arms:
        points = []
        for k, overrides in enumerate(tune_points(tune, arm)):
            run = os.path.join(out, "tune", arm, point_name(k))
            _check_point_config(run, overrides)
            scores = validation_scores(read_jsonl(os.path.join(run, "metrics.jsonl")), score)
            points.append({"point": point_name(k), "overrides": overrides, "scores": scores,
                           "mean": float(np.mean(scores)), "n": len(scores)})
        chosen = choose_point([p["scores"] for p in points])
        record["arms"][arm] = {"points": points, "chosen": point_name(chosen), "overrides": points[chosen]["overrides"]}
    return record
