"""Paired comparisons across seeds, and learning curves with interval bands, from run directories.

Arms of a sweep that share a seed share their initial parameters and problem stream, so two
arms are compared seed by seed (`jaxcredit.stats.paired_t`): the mean difference, a paired
Student-t interval over seeds, the paired t-test's p-value and the seeds each arm wins, for the
final greedy success and for the success averaged over training (a learning-speed measure).
The sweep table is built by `jaxcredit.comparison`, the same code the trainer's `table.md` uses.
"""

from __future__ import annotations

import os

import numpy as np

from jaxcredit.analysis.rundirs import (
    policy_eval_flops_of,
    read_json,
    read_jsonl,
    read_sweep_spec,
    seed_measures,
    sweep_credits,
    sweep_regimes,
)
from jaxcredit.comparison import (
    MEASURES,
    arm_environments,
    comparison_pairs,
    format_paired_table,
    label_arms,
    paired_table,
)
from jaxcredit.rundir_io import is_finished, is_matched, matched_cell
from jaxcredit.stats import INTERVAL_METHOD, paired_t, t_interval


def paired_comparison(arm_rows: list[dict], baseline_rows: list[dict], *, confidence: float = 0.95) -> dict:
    """Compare two runs' metric rows seed by seed: `{measure: paired_t(...)}` for each of
    `MEASURES`, plus each side's mean. Raises `ValueError` when the seeds differ."""
    ours, theirs = seed_measures(arm_rows), seed_measures(baseline_rows)
    if ours["seeds"] != theirs["seeds"]:
        raise ValueError(f"the runs have different seeds ({ours['seeds']} vs {theirs['seeds']}); "
                         "paired comparison needs the same seeds")
    out = {}
    for measure in MEASURES:
        result = paired_t(ours[measure], theirs[measure], confidence=confidence)
        out[measure] = {**result, "arm_mean": float(ours[measure].mean()),
                        "baseline_mean": float(theirs[measure].mean())}
    return out


def _cell_dir(sweep_dir: str, cell: tuple) -> str:
    return os.path.join(sweep_dir, *cell)


def _has_run(path: str, *, finished_only: bool = False) -> bool:
    """Whether `path` holds a run (`finished_only`: a finished one); a torn `summary.json` raises
    either way (`jaxcredit.rundir_io.is_finished`), so it is never read as a finished cell."""
    finished = is_finished(path)
    return finished if finished_only else os.path.exists(os.path.join(path, "metrics.jsonl"))


def compare_arms(sweep_dir: str, arm: str, baseline: str, regime: str) -> dict:
    """The paired comparison of `arm` against `baseline` in `regime` of the sweep at `sweep_dir`.

    In `matched`, `arm` is a label arm (its `attempts` run) and `baseline` an arm without label
    work (its run given exactly `arm`'s total env steps).
    """
    spec = read_sweep_spec(sweep_dir)
    regimes = sweep_regimes(spec)
    if regime not in regimes:
        raise ValueError(f"sweep {sweep_dir} has no regime {regime!r}; choices: {', '.join(regimes)}")
    if is_matched(regime):
        choices = label_arms(sweep_credits(spec))
        if arm not in choices:
            raise ValueError(f"in regime {regime}, --arm must be a label arm of sweep {sweep_dir}; "
                             f"choices: {', '.join(choices) or 'none'}")
        cells = (("attempts", arm), (regime, matched_cell(baseline, arm)))
    else:
        cells = ((regime, arm), (regime, baseline))
    for name, cell in zip((arm, baseline), cells):
        if not _has_run(_cell_dir(sweep_dir, cell)):
            raise ValueError(f"sweep {sweep_dir} has no run of {name!r} for regime {regime} "
                             f"(looked in {'/'.join(cell)}); arms: {', '.join(spec.get('arms', {}))}")
    arm_rows, baseline_rows = (read_jsonl(os.path.join(_cell_dir(sweep_dir, c), "metrics.jsonl")) for c in cells)
    return {"regime": regime, "arm": arm, "baseline": baseline, **paired_comparison(arm_rows, baseline_rows)}


def cell_measures(run_dir: str) -> dict:
    """A run directory's `seed_measures`, with `policy_eval_flops` from its `config.json` (None without one)."""
    measures = seed_measures(read_jsonl(os.path.join(run_dir, "metrics.jsonl")))
    config_path = os.path.join(run_dir, "config.json")
    has_config = os.path.exists(config_path)
    measures["policy_eval_flops"] = policy_eval_flops_of(read_json(config_path)) if has_config else None
    return measures


def compare_sweep(sweep_dir: str, *, confidence: float = 0.95, finished_only: bool = False) -> dict:
    """The sweep's comparison table (`jaxcredit.comparison.paired_table`) from its run directories:
    `{"method", "confidence", "reference_arm", "regimes": {regime: {row: entry}}, "notes"}`.
    `finished_only`: leave out cells still running (no `summary.json`)."""
    spec = read_sweep_spec(sweep_dir)
    reference = spec.get("reference_arm", "outcome")
    pairs = comparison_pairs(sweep_regimes(spec), sweep_credits(spec), reference,
                             environments=arm_environments(spec.get("base", {}), spec.get("arms", {})))
    measures = {}
    for pair in pairs:
        for cell in (pair.arm_cell, pair.reference_cell):
            if (cell is not None and cell not in measures
                    and _has_run(_cell_dir(sweep_dir, cell), finished_only=finished_only)):
                measures[cell] = cell_measures(_cell_dir(sweep_dir, cell))
    return paired_table(pairs, measures, budgets=spec.get("budgets", {}), reference_arm=reference,
                        confidence=confidence)


def learning_curve(rows: list[dict], *, x: str = "total_env_steps", y: str = "success_greedy",
                   confidence: float = 0.95) -> dict:
    """Per evaluation index: the mean over seeds of `x` and of `y`, and the Student-t interval over
    seeds of the mean of `y` (`low`, `high`; NaN with one seed). Returns float arrays `[E]` under
    `x`, `mean`, `low`, `high`, and `num_seeds`, `method`, `confidence`."""
    evals = sorted({r["eval_index"] for r in rows})
    xs, mean, low, high = [], [], [], []
    for e in evals:
        here = [r for r in rows if r["eval_index"] == e]
        xs.append(float(np.mean([r[x] for r in here])))
        m, lo, hi = t_interval(np.array([r[y] for r in here], np.float64), confidence=confidence)
        mean.append(m)
        low.append(lo)
        high.append(hi)
    return {"x": np.array(xs), "mean": np.array(mean), "low": np.array(low), "high": np.array(high),
            "num_seeds": len({r["seed_index"] for r in rows}), "method": "Student-t", "confidence": confidence}


def format_comparison_table(comparison: dict) -> str:
    """Markdown: per regime, the interval method and n, and every row's paired difference
    (`jaxcredit.comparison.format_paired_table`)."""
    return format_paired_table(comparison, heading="####")


__all__ = ["INTERVAL_METHOD", "MEASURES", "compare_arms", "compare_sweep", "format_comparison_table",
           "learning_curve", "paired_comparison"]
