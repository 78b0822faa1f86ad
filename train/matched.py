"""The matched regime's runs: an arm without label work given exactly a label arm's total spend.

For each label arm X (its `attempts` run, seed i, ended at `T[X][i]` total env steps, or policy
evaluations with `match_on` `policy_evals`), a label-free arm Y gets a budget of exactly `T[X][i]`
on seed i, evaluated `num_evals` times evenly over it, as X was over its own attempts budget. All
of Y's matched budgets are served by ONE run of Y per seed, long enough for the largest X, that
stops to evaluate at the union of every X's evaluation points (`run_matched`); it gives exactly
the numbers separate runs would (tested). `matched/Y/` holds the shared run; `matched/Y/to-X/`
holds the view a separate run matched to X would have written (numbers only), written as soon as
the shared run has evaluated its last point on every seed. See
docs/training.md#how-budgets-are-matched.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from jaxcredit.rundir_io import MATCH_CURRENCIES
from jaxcredit.train.config import MAX_BUDGET, TrainConfig
from jaxcredit.train.driver import run_training, summarize
from jaxcredit.train.rundir import read_json, read_jsonl, write_json_atomic, write_jsonl_atomic


def _counter(match_on: str) -> str:
    """The budget counter of a matched run in currency `match_on`; raises `ValueError` on another."""
    if match_on not in MATCH_CURRENCIES:
        raise ValueError(f"match_on: unknown currency {match_on!r}; choices: {', '.join(MATCH_CURRENCIES)}")
    return f"total_{match_on}"


def matched_config(config: TrainConfig, targets: dict, *, match_on: str = "env_steps") -> TrainConfig:
    """The shared run's config: `config` counted in total env steps (`match_on="policy_evals"`:
    total policy evaluations), up to the largest target, evaluated at every label arm's
    `num_evals` points (`len(targets) * num_evals` in all)."""
    largest = max(max(seeds) for seeds in targets.values())
    return dataclasses.replace(config, budget_counter=_counter(match_on), budget=int(min(largest, MAX_BUDGET)),
                               num_evals=config.num_evals * len(targets))


def view_config(config: TrainConfig, seeds_target: list, *, match_on: str = "env_steps") -> TrainConfig:
    """The config of a separate run matched to one label arm (its per-seed budgets in `matched.json`)."""
    return dataclasses.replace(config, budget_counter=_counter(match_on), budget=int(max(seeds_target)))


def matched_schedule(targets: dict, *, num_seeds: int, num_evals: int) -> tuple[np.ndarray, list]:
    """`(schedule int [N, len(targets) * num_evals], stops)`: each seed's evaluation points, sorted,
    and `stops[i][k] = (label_arm, j)`, which label arm's j-th evaluation point (1-based) stop k is.

    `targets`: `{label_arm: [total env steps of seed i]}`; raises `ValueError` on a wrong length
    or a target below `num_evals`.
    """
    for arm, seeds in targets.items():
        if len(seeds) != num_seeds or min(seeds) < num_evals:
            raise ValueError(f"matched targets of {arm!r} must be {num_seeds} totals >= {num_evals}, got {seeds}")
    schedule, stops = [], []
    for i in range(num_seeds):
        points = sorted((int(seeds[i]) * j // num_evals, order, j, arm)
                        for order, (arm, seeds) in enumerate(targets.items()) for j in range(1, num_evals + 1))
        schedule.append([p[0] for p in points])
        stops.append([(p[3], p[2]) for p in points])
    return np.asarray(schedule, np.int64), stops


def view_rows(rows: list, stops: list, label_arm: str) -> list:
    """The shared run's metrics rows a separate run matched to `label_arm` would have written:
    the start, then that arm's evaluation points, renumbered `eval_index` 1..num_evals."""
    out = []
    for row in rows:
        k, seed = row["eval_index"], row["seed_index"]
        if k == 0:
            out.append(dict(row))
        elif stops[seed][k - 1][0] == label_arm:
            out.append({**row, "eval_index": stops[seed][k - 1][1]})
    return sorted(out, key=lambda r: (r["eval_index"], r["seed_index"]))


def view_complete(rows: list, stops: list, label_arm: str) -> bool:
    """Whether `rows` (the shared run's metrics so far) hold `label_arm`'s last evaluation point on
    every seed, so its view is final."""
    done = {}
    for row in rows:
        done[row["seed_index"]] = max(done.get(row["seed_index"], 0), row["eval_index"])
    num_evals = max(j for arm, j in stops[0] if arm == label_arm)
    return all(done.get(seed, 0) >= seed_stops.index((label_arm, num_evals)) + 1
               for seed, seed_stops in enumerate(stops))


def _currency(match_on: str) -> dict:
    """What `matched.json` says of the currency: nothing for `env_steps` (as records always read)."""
    return {} if match_on == "env_steps" else {"match_on": match_on}


def write_views(config: TrainConfig, out: str, targets: dict, rows: list, *, skip=(),
                match_on: str = "env_steps") -> dict:
    """Write `out/to-<arm>/` for every label arm whose points `rows` (the shared run's metrics so
    far) have all evaluated, except those in `skip`; returns `{arm: summary}` of the views written.
    `config` is the label-free arm's own config (not the shared run's). The view's `summary.json`
    is written last; its `matched.json` names the currency when it is not env steps."""
    _, stops = matched_schedule(targets, num_seeds=config.num_seeds, num_evals=config.num_evals)
    written = {}
    for arm, seeds in targets.items():
        if arm in skip or not view_complete(rows, stops, arm):
            continue
        mine = view_rows(rows, stops, arm)
        view = os.path.join(out, f"to-{arm}")
        os.makedirs(view, exist_ok=True)
        write_json_atomic(os.path.join(view, "config.json"), view_config(config, seeds, match_on=match_on).to_dict())
        write_json_atomic(os.path.join(view, "matched.json"),
                          {"matched_to": arm, "targets": [int(t) for t in seeds], "shared_run": "..",
                           "schedule": [[int(t) * j // config.num_evals for j in range(1, config.num_evals + 1)]
                                        for t in seeds], **_currency(match_on)})
        write_jsonl_atomic(os.path.join(view, "metrics.jsonl"), mine)
        written[arm] = summarize(mine, config.num_seeds)
        write_json_atomic(os.path.join(view, "summary.json"), written[arm])
    return written


def run_matched(config: TrainConfig, out: str, *, targets: dict, resume: bool = False, progress: bool = True,
                label: str | None = None, stop_after_evals: int | None = None, log=(),
                match_on: str = "env_steps") -> dict:
    """Run (or resume) label-free `config` matched to every label arm in `targets` into `out`.

    `targets`: `{label_arm: [total of each seed's equal-attempts run]}`, in env steps or, with
    `match_on="policy_evals"`, in policy evaluations (recorded in `matched.json`). Returns
    `{label_arm: summary}`, each the summary of the view `out/to-<label_arm>/`; each view is
    written once its points are all evaluated, during the run. `stop_after_evals` (tests) stops
    the shared run early, as `run_training`'s does, and returns `{"stopped_after": n}`.
    """
    schedule, stops = matched_schedule(targets, num_seeds=config.num_seeds, num_evals=config.num_evals)
    shared = matched_config(config, targets, match_on=match_on)
    matched_path = os.path.join(out, "matched.json")
    record = {"targets": {arm: [int(t) for t in seeds] for arm, seeds in targets.items()},
              "num_evals_per_target": config.num_evals, "stops": [[list(s) for s in seed] for seed in stops],
              **_currency(match_on)}
    started = os.path.exists(os.path.join(out, "config.json"))
    if resume and started and os.path.exists(matched_path) and read_json(matched_path) != record:
        raise ValueError(f"cannot resume {out}: it was matched to other totals than the label arms' runs now give")
    if not started or resume:
        os.makedirs(out, exist_ok=True)
        write_json_atomic(matched_path, record)
    written = set()

    def on_evaluation(rows: list) -> None:
        written.update(write_views(config, out, targets, rows, skip=written, match_on=match_on))

    result = run_training(shared, out, resume=resume and started, progress=progress, label=label, schedule=schedule,
                          stop_after_evals=stop_after_evals, on_evaluation=on_evaluation, log=log)
    if stop_after_evals is not None and "stopped_after" in result:
        return result
    # finished: every view (re)written from the final rows
    return write_views(config, out, targets, read_jsonl(os.path.join(out, "metrics.jsonl")), match_on=match_on)
