"""Equal tuning: every arm's settings chosen on the validation set from one grid, at equal attempts.

A sweep's `tune` is a JSON object (fields in `TUNE_FIELDS`): the `grid` shared by every arm (dotted
names as `jaxcredit.overrides.apply_overrides` takes them), `arm_grid` (extra axes for one arm),
tuning seeds of their own, a `budget` of main attempts, the `score` (`area` or `final`), the `rule`
(`grid` or successive `halving`), `extend` (how often an axis may be extended outward) and
`population` (an arm's pending points that share one program train as one population).
`tuning_plan` is a pure function of the spec and the tuning runs recorded under `OUT/tune/`
(`tune/<arm>/p<k>`): which runs must reach which evaluation next, or, once none must, the record
`tuning.json` holds. A sweep runs the plan's runs, then asks again, so a tuning phase resumes from
whatever its runs hold. The rules (ties, cuts, extensions) are `jaxcredit.train.tuning_rules`;
docs/training.md#equal-tuning-tune explains them.
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import numpy as np

from jaxcredit.rundir_io import read_json
from jaxcredit.train.rundir import read_jsonl
from jaxcredit.train.tuning_rules import (
    OTHER_SCORE,
    choose,
    edge_sides,
    extension_value,
    halving_keep,
    is_numeric,
    mean_se,
    rung_evals,
)

TUNE_FIELDS = ("grid", "arm_grid", "num_seeds", "seed", "budget", "score", "rule", "eta", "rungs", "extend",
               "population")
RUN_FIELDS = ("population",)  # how the tuning runs are run, not what they compute: resuming may change them
DEFAULT_TUNE_SEEDS, DEFAULT_TUNE_SEED = 3, 1000
DEFAULT_SCORE, DEFAULT_ETA, DEFAULT_RUNGS, DEFAULT_EXTEND = "area", 3, 3, 3
TUNE_METRIC = "validation_success_greedy"
TUNE_SCORE_MEANINGS = {
    "final": "the final greedy validation success",
    "area": "the greedy validation success averaged over the evaluations after the first (the area under the "
            "validation curve)",
}
TUNE_SCORES = tuple(TUNE_SCORE_MEANINGS)
TUNE_RULE_NAMES = ("grid", "halving")


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
    _check_score(tune.get("score", DEFAULT_SCORE))
    if tune.get("rule", "grid") not in TUNE_RULE_NAMES:
        raise ValueError(f"tune.rule must be one of {', '.join(TUNE_RULE_NAMES)}, got {tune.get('rule')!r}")
    for field, low in (("num_seeds", 1), ("seed", 0), ("budget", 1), ("eta", 2), ("rungs", 1), ("extend", 0)):
        value = tune.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise ValueError(f"tune.{field} must be an integer >= {low}, got {value!r}")
    if not isinstance(tune.get("population", False), bool):
        raise ValueError(f"tune.population must be true or false, got {tune['population']!r}")
    if tune.get("rule", "grid") != "halving" and ("eta" in tune or "rungs" in tune):
        raise ValueError("tune.eta and tune.rungs belong to rule 'halving'")


def _check_score(score) -> None:
    if score not in TUNE_SCORE_MEANINGS:
        raise ValueError(f"tune.score must be one of {', '.join(TUNE_SCORES)}, got {score!r}")


def _check_axes(where: str, axes) -> None:
    if not isinstance(axes, dict) or not axes:
        raise ValueError(f"{where} must be a non-empty object {{field: [values]}}, got {axes!r}")
    for name, values in axes.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"{where}.{name} must be a non-empty list of values, got {values!r}")
        if len({repr(v) for v in values}) != len(values):
            raise ValueError(f"{where}.{name} lists a value twice: {list(values)}")


def tune_axes(tune: dict, arm: str) -> dict:
    """`{override: [values]}`: `arm`'s axes as written (the grid's, then the arm's own)."""
    return {name: list(values) for name, values in {**tune["grid"], **tune.get("arm_grid", {}).get(arm, {})}.items()}


def tune_points(tune: dict, arm: str) -> list[dict]:
    """`[overrides]`: `arm`'s grid points as written, in order (the grid's axes, then the arm's own;
    the first axis varies slowest). Extensions add points after these (`tuning_plan`)."""
    axes = tune_axes(tune, arm)
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def point_name(index: int) -> str:
    """`"p03"`: the run directory (under `tune/<arm>/`) of grid point `index`."""
    return f"p{index:02d}"


def tune_seeds(tune: dict) -> tuple[int, int]:
    """`(num_seeds, first seed)` of the tuning runs."""
    return int(tune.get("num_seeds", DEFAULT_TUNE_SEEDS)), int(tune.get("seed", DEFAULT_TUNE_SEED))


def tune_score(tune: dict) -> str:
    return tune.get("score", DEFAULT_SCORE)


def tune_rungs(tune: dict, num_evals: int) -> list[int]:
    """The evaluation index each rung ends at (`grid`: one rung, the last evaluation)."""
    if tune.get("rule", "grid") != "halving":
        return [num_evals]
    return rung_evals(num_evals, eta=int(tune.get("eta", DEFAULT_ETA)), rungs=int(tune.get("rungs", DEFAULT_RUNGS)))


def validation_scores(rows: list, score: str = DEFAULT_SCORE, upto: int | None = None) -> list[float]:
    """Per seed (sorted by index), from a run's metrics rows: `TUNE_METRIC` at the seed's last
    evaluation (`score="final"`), or its mean over the evaluations after the first (`"area"`);
    with `upto`, only the evaluations with index <= `upto` count."""
    _check_score(score)
    per_seed: dict = {}
    for row in rows:
        if upto is None or row["eval_index"] <= upto:
            per_seed.setdefault(row["seed_index"], []).append(row)
    out = []
    for seed in sorted(per_seed):
        mine = sorted(per_seed[seed], key=lambda r: r["eval_index"])
        values = [float(r[TUNE_METRIC]) for r in mine]
        out.append(values[-1] if score == "final" else float(np.mean(values[1:] or values)))
    return out


def evaluations_reached(rows: list, num_seeds: int) -> int:
    """The last evaluation index every one of `num_seeds` seeds has in `rows` (-1: none)."""
    last: dict = {}
    for row in rows:
        last[row["seed_index"]] = max(last.get(row["seed_index"], -1), row["eval_index"])
    return min(last.values()) if len(last) == num_seeds else -1


def _config_value(config: dict, field: str):
    """`config`'s value of a tuned field (`credit_options.NAME` reads the arm's options)."""
    for part in field.split("."):
        config = config.get(part) if isinstance(config, dict) else None
    return config


def _point_mismatch(run: str, overrides: dict) -> dict:
    """`{field: (grid value, run's value)}` where the run directory `run` was trained with other values
    than the grid point's `overrides` (its `config.json`; none: `{}`)."""
    path = os.path.join(run, "config.json")
    if not os.path.exists(path):
        return {}
    config = read_json(path)
    return {f: (v, _config_value(config, f)) for f, v in overrides.items() if _config_value(config, f) != v}


def points_match(tune: dict, arm: str, out: str) -> bool:
    """Whether every grid point of `arm` that has a run directory under `out/tune/<arm>/` was trained
    at that point's values (its axes in the order `tune` lists them)."""
    return not any(_point_mismatch(os.path.join(out, "tune", arm, point_name(i)), overrides)
                   for i, overrides in enumerate(tune_points(tune, arm)))


def _check_point_config(run: str, overrides: dict) -> None:
    """Raise `ValueError` when the run directory `run` was trained with other values than the grid
    point's `overrides` (its `config.json`, where it has one): a grid whose axes are listed in
    another order numbers its points otherwise, and its scores would go to the wrong settings."""
    wrong = _point_mismatch(run, overrides)
    if wrong:
        raise ValueError(f"{run} is not the grid point it is named for: "
                         + ", ".join(f"{f} is {got!r} there, {want!r} in the grid" for f, (want, got) in wrong.items())
                         + " (the grid's axes in another order number the points otherwise)")


@dataclasses.dataclass(frozen=True)
class TuningRun:
    """A tuning run the plan needs: `arm`, its point name and overrides, and the evaluation index
    it must reach (`evals`; the run's last evaluation finishes it). `run`: its directory under
    `tune/<arm>/` (the point's name, or `<point>-s<seed>` for seeds added to a point recorded with
    fewer), holding `num_seeds` seeds from `seed` (None: the tuning's own)."""

    arm: str
    point: str
    overrides: dict
    evals: int
    run: str | None = None
    seed: int | None = None
    num_seeds: int | None = None


@dataclasses.dataclass(frozen=True)
class TuningPlan:
    """`pending`: the runs to run next (empty once tuning is done); `points`: per arm, every point
    known so far (`[(name, overrides)]`: the grid's, then those extensions add); `record`: the
    `tuning.json` dict, once `pending` is empty (else None)."""

    pending: tuple
    points: dict
    record: dict | None


def point_parts(out: str, arm: str, name: str, tune: dict) -> list[tuple[str, int, int]]:
    """`[(run directory name, first seed, number of seeds)]` a point's tuning seeds live in: its own
    directory, and where that was recorded with fewer seeds than the tuning asks for (a study that
    raised `num_seeds`), `<point>-s<seed>` for the rest, so no recorded run is trained again."""
    num_seeds, seed = tune_seeds(tune)
    path = os.path.join(out, "tune", arm, name, "config.json")
    if not os.path.exists(path):
        return [(name, seed, num_seeds)]
    config = read_json(path)
    first, count = int(config.get("seed", seed)), int(config.get("num_seeds", num_seeds))
    if first != seed or count > num_seeds:
        raise ValueError(f"tune/{arm}/{name} holds seeds {first}..{first + count - 1}; the tuning asks for "
                         f"{seed}..{seed + num_seeds - 1}")
    return [(name, seed, count)] + ([(f"{name}-s{seed + count}", seed + count, num_seeds - count)]
                                    if count < num_seeds else [])


def _part_rows(out: str, arm: str, run: str, overrides: dict, offset: int) -> list:
    path = os.path.join(out, "tune", arm, run)
    _check_point_config(path, overrides)
    metrics = os.path.join(path, "metrics.jsonl")
    rows = read_jsonl(metrics) if os.path.exists(metrics) else []
    return [{**row, "seed_index": row["seed_index"] + offset} for row in rows] if offset else rows


def _point_rows(out: str, arm: str, name: str, overrides: dict, tune: dict) -> list:
    """A point's metrics rows over every tuning seed (`point_parts`), `seed_index` counted from the
    tuning's first seed."""
    _, seed = tune_seeds(tune)
    return [row for run, first, _ in point_parts(out, arm, name, tune)
            for row in _part_rows(out, arm, run, overrides, first - seed)]


def _short_parts(out: str, tune: dict, run: TuningRun) -> list:
    """The runs of `run`'s point (`point_parts`) that have not reached evaluation `run.evals`."""
    _, seed = tune_seeds(tune)
    short = []
    for part, first, count in point_parts(out, run.arm, run.point, tune):
        rows = _part_rows(out, run.arm, part, run.overrides, 0)
        if evaluations_reached(rows, count) < run.evals:
            short.append(dataclasses.replace(run, run=part, seed=first, num_seeds=count))
    return short


def arm_plan(tune: dict, arm: str, rows_of, *, num_evals: int, points: list | None = None) -> tuple:
    """One arm's part of `tuning_plan`: `(pending runs, [(name, overrides)], its record entry or None)`.
    `rows_of(name, overrides)`: the metrics rows recorded for a point so far; `points`: the grid's
    `[(name, overrides)]` (default: `tune_points`, named `p00`, `p01`, ...)."""
    num_seeds, _ = tune_seeds(tune)
    score, other = tune_score(tune), OTHER_SCORE[tune_score(tune)]
    rungs = tune_rungs(tune, num_evals)
    eta, limit = int(tune.get("eta", DEFAULT_ETA)), int(tune.get("extend", DEFAULT_EXTEND))
    if points is None:
        points = [(point_name(k), p) for k, p in enumerate(tune_points(tune, arm))]
    points, extensions = list(points), []
    while True:
        overrides = dict(points)
        rows = {name: rows_of(name, p) for name, p in points}
        reached = {name: evaluations_reached(rows[name], num_seeds) for name, _ in points}
        alive, history = [name for name, _ in points], {name: [] for name, _ in points}
        for r, end in enumerate(rungs):
            short = [name for name in alive if reached[name] < end]
            if short:
                return [TuningRun(arm, name, overrides[name], end) for name in short], points, None
            at_rung = [validation_scores(rows[name], score, upto=end) for name in alive]
            kept = set(halving_keep(at_rung, eta=eta)) if r < len(rungs) - 1 else set(range(len(alive)))
            for i, name in enumerate(alive):
                mean, se = mean_se(at_rung[i])
                history[name].append({"evals": end, "mean": mean, "se": se, "continued": i in kept})
            alive = [name for i, name in enumerate(alive) if i in kept]
        choice = choose([validation_scores(rows[name], score, upto=rungs[-1]) for name in alive],
                        [validation_scores(rows[name], other, upto=rungs[-1]) for name in alive])
        chosen = alive[choice["chosen"]]
        grow, edge = _extensions([p for _, p in points], overrides[chosen], extensions, limit)
        if not grow:
            break
        next_round = 1 + max((e["round"] for e in extensions), default=0)
        for axis, side, value, new in grow:
            name = point_name(len(points))
            points.append((name, {**overrides[chosen], axis: value}))
            extensions.append({"axis": axis, "side": side, "value": value, "new": new, "round": next_round,
                               "from": chosen, "point": name})
    added_in = {e["point"]: e["round"] for e in extensions}
    entries = []
    for name, p in points:
        entry = {"point": name, "overrides": p, "extension": added_in.get(name, 0)}
        if name in alive:
            mine, theirs = (validation_scores(rows[name], s, upto=rungs[-1]) for s in (score, other))
            (mean, se), (other_mean, other_se) = mean_se(mine), mean_se(theirs)
            entry.update({"scores": mine, "mean": mean, "se": se, "n": len(mine),
                          "other": {"scores": theirs, "mean": other_mean, "se": other_se}})
        if len(rungs) > 1:
            entry["rungs"] = history[name]
        entries.append(entry)
    record = {"points": entries, "chosen": chosen, "overrides": overrides[chosen], "extensions": extensions,
              "edge": edge}
    if len(choice["tied"]) > 1:
        record["tie"] = {"points": [alive[i] for i in choice["tied"]], "broken_by": choice["broken_by"]}
    return [], points, record


def _extensions(points: list, chosen: dict, extensions: list, limit: int) -> tuple[list, list]:
    """`([(axis, side, value, new)] to add, [edges left])` for the `chosen` point among `points`.

    On each numeric axis, the chosen point's line is the points equal to it on every other axis.
    Where it sits at an end of its line, the point one step outward along the line is added: the
    axis's next value beyond that end where the grid has one (`new` False), else a new value one
    step beyond the axis (`new` True; x3 or /3, `tuning_rules.extension_value`), at most `limit`
    new values per axis. An end that can grow no further is left, and reported."""
    grow, edge = [], []
    for axis in chosen:
        line = [p[axis] for p in points if all(p[k] == v for k, v in chosen.items() if k != axis)]
        if not is_numeric(line):
            continue
        values = sorted({p[axis] for p in points})
        grown = sum(e["axis"] == axis and e["new"] for e in extensions)
        for side in edge_sides(line, chosen[axis]):
            beyond = [v for v in values if (v < min(line) if side == "low" else v > max(line))]
            if beyond:
                grow.append((axis, side, max(beyond) if side == "low" else min(beyond), False))
                continue
            value = extension_value(values, side)
            if value is None or grown >= limit:
                edge.append({"axis": axis, "side": side, "value": chosen[axis], "extensions": grown})
            else:
                grow.append((axis, side, value, True))
    return grow, edge


def tuning_rule_text(tune: dict) -> str:
    """The rule `tuning.json` states, in words."""
    score, other = tune_score(tune), OTHER_SCORE[tune_score(tune)]
    text = (f"the highest mean over the tuning seeds of {TUNE_SCORE_MEANINGS[score]}; points within the standard "
            f"error of the difference of the best mean are a tie, broken by the {other} score, then by the "
            f"{score} mean (grid order only between identical scores)")
    if tune.get("rule", "grid") == "halving":
        eta, rungs = tune.get("eta", DEFAULT_ETA), tune.get("rungs", DEFAULT_RUNGS)
        text += (f"; successive halving (eta {eta}, {rungs} rungs): "
                 f"at each rung the best 1/eta by the {score} score so far continue, with every point tied with "
                 "the cut line")
    return text + (f"; an axis whose edge is chosen is extended outward (x3 or /3), at most "
                   f"{tune.get('extend', DEFAULT_EXTEND)} times")


def tuning_plan(tune: dict, arms, out: str, *, num_evals: dict, budget: int) -> TuningPlan:
    """The tuning phase's next step (see `TuningPlan`), from the runs recorded under `out/tune/`.
    `num_evals`: `{arm: its tuning runs' num_evals}`; `budget`: main attempts per tuning run."""
    pending, points, entries = [], {}, {}
    for arm in arms:
        runs, points[arm], entry = arm_plan(tune, arm, lambda name, p, arm=arm: _point_rows(out, arm, name, p, tune),
                                            num_evals=num_evals[arm])
        pending += [part for run in runs for part in _short_parts(out, tune, run)]
        if entry is not None:
            entries[arm] = entry
    if pending:
        return TuningPlan(tuple(pending), points, None)
    num_seeds, seed = tune_seeds(tune)
    record = {"metric": TUNE_METRIC, "score": tune_score(tune), "other_score": OTHER_SCORE[tune_score(tune)],
              "rule": tuning_rule_text(tune), "rule_name": tune.get("rule", "grid"), "budget": budget,
              "budget_counter": "main_episodes", "num_seeds": num_seeds, "seeds": list(range(seed, seed + num_seeds)),
              "arms": entries}
    if tune.get("rule", "grid") == "halving":
        record["halving"] = {"eta": int(tune.get("eta", DEFAULT_ETA)), "rungs": int(tune.get("rungs", DEFAULT_RUNGS)),
                             "rung_evals": {arm: tune_rungs(tune, num_evals[arm]) for arm in arms}}
    return TuningPlan((), points, record)


def tuning_record(tune: dict, arms, out: str, *, budget: int, num_evals: dict | None = None) -> dict:
    """The `tuning.json` of a sweep whose tuning runs in `out/tune/` have finished (`tuning_plan`'s
    record); raises `ValueError` naming a run that still has evaluations to reach. Without
    `num_evals`, each arm's is read from its first point's `config.json`."""
    if num_evals is None:
        num_evals = {arm: int(read_json(os.path.join(out, "tune", arm, point_name(0), "config.json"))["num_evals"])
                     for arm in arms}
    plan = tuning_plan(tune, arms, out, num_evals=num_evals, budget=budget)
    if plan.pending:
        run = plan.pending[0]
        raise ValueError(f"tuning is not finished: tune/{run.arm}/{run.point} must reach evaluation {run.evals} "
                         f"({len(plan.pending)} run(s) pending)")
    return plan.record
