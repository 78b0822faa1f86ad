"""Paired comparisons across seeds, and learning curves with interval bands, from run directories.

Arms of a sweep that share a seed share their initial parameters and problem stream, so two
arms are compared seed by seed (`jaxcredit.stats.paired_bootstrap`): the mean difference, a 95%
percentile-bootstrap interval over seeds and the number of seeds each arm wins, for the final
greedy success and for the success averaged over training (a learning-speed measure).
"""

from __future__ import annotations

import os

import numpy as np

from jaxcredit.analysis.rundirs import read_json, read_jsonl, seed_measures, sweep_cells
from jaxcredit.stats import paired_bootstrap

MEASURES = ("final_success", "average_success")


def paired_comparison(arm_rows: list[dict], baseline_rows: list[dict], *, confidence: float = 0.95,
                      num_resamples: int = 10_000) -> dict:
    """Compare two runs' metric rows seed by seed: `{measure: paired_bootstrap(...)}` for each of
    `MEASURES`, plus each side's mean. Raises `ValueError` when the seeds differ."""
    ours, theirs = seed_measures(arm_rows), seed_measures(baseline_rows)
    if ours["seeds"] != theirs["seeds"]:
        raise ValueError(f"the runs have different seeds ({ours['seeds']} vs {theirs['seeds']}); "
                         "paired comparison needs the same seeds")
    out = {}
    for measure in MEASURES:
        result = paired_bootstrap(ours[measure], theirs[measure], confidence=confidence,
                                  num_resamples=num_resamples)
        out[measure] = {**result, "arm_mean": float(ours[measure].mean()),
                        "baseline_mean": float(theirs[measure].mean())}
    return out


def compare_arms(sweep_dir: str, arm: str, baseline: str, regime: str) -> dict:
    """The paired comparison of `arm` against `baseline` in `regime` of the sweep at `sweep_dir`."""
    cells = sweep_cells(sweep_dir)
    if regime not in cells:
        raise ValueError(f"sweep {sweep_dir} has no regime {regime!r}; choices: {', '.join(cells)}")
    for name in (arm, baseline):
        if name not in cells[regime]:
            raise ValueError(f"sweep {sweep_dir} has no arm {name!r} in regime {regime}; "
                             f"choices: {', '.join(cells[regime])}")
    return {"regime": regime, "arm": arm, "baseline": baseline,
            **paired_comparison(read_jsonl(os.path.join(cells[regime][arm], "metrics.jsonl")),
                                read_jsonl(os.path.join(cells[regime][baseline], "metrics.jsonl")))}


def compare_sweep(sweep_dir: str) -> dict:
    """Every arm against the sweep's reference arm, in every regime: `{regime: {arm: comparison}}`
    (the reference arm's entry holds only its means)."""
    spec = read_json(os.path.join(sweep_dir, "sweep_spec.json"))
    reference = spec.get("reference_arm", "outcome")
    out = {}
    for regime, arms in sweep_cells(sweep_dir).items():
        for arm, run in arms.items():
            measures = seed_measures(read_jsonl(os.path.join(run, "metrics.jsonl")))
            entry = {m: float(measures[m].mean()) for m in MEASURES}
            entry["num_seeds"] = len(measures["seeds"])
            if arm != reference and reference in arms:
                entry["vs_reference"] = compare_arms(sweep_dir, arm, reference, regime)
            out.setdefault(regime, {})[arm] = entry
    return {"reference_arm": reference, "regimes": out}


def learning_curve(rows: list[dict], *, x: str = "total_env_steps", y: str = "success_greedy",
                   confidence: float = 0.95, num_resamples: int = 2_000, seed: int = 0) -> dict:
    """Per evaluation index: the mean over seeds of `x` and of `y`, and a percentile-bootstrap
    interval over seeds of the mean of `y` (`low`, `high`; the mean itself with one seed).
    Returns float arrays `[E]` under `x`, `mean`, `low`, `high`."""
    evals = sorted({r["eval_index"] for r in rows})
    rng = np.random.default_rng(seed)
    xs, mean, low, high = [], [], [], []
    tail = (1 - confidence) / 2
    for e in evals:
        here = [r for r in rows if r["eval_index"] == e]
        values = np.array([r[y] for r in here], np.float64)
        xs.append(float(np.mean([r[x] for r in here])))
        mean.append(values.mean())
        if values.size > 1:
            means = values[rng.integers(0, values.size, (num_resamples, values.size))].mean(axis=1)
            low.append(np.quantile(means, tail))
            high.append(np.quantile(means, 1 - tail))
        else:
            low.append(values.mean())
            high.append(values.mean())
    return {"x": np.array(xs), "mean": np.array(mean), "low": np.array(low), "high": np.array(high)}


def format_comparison_table(comparison: dict) -> str:
    """Markdown: per regime, each arm's means and its paired difference to the reference arm."""
    reference = comparison["reference_arm"]
    lines = []
    for regime, arms in comparison["regimes"].items():
        meaning = {"attempts": "equal main attempts", "steps": "equal total env steps"}.get(regime, regime)
        lines += [f"#### Regime: {regime} ({meaning})", "",
                  "| arm | seeds | final success | average success | Δ final vs "
                  f"{reference} [95% CI] (wins/ties/losses) | Δ average vs {reference} [95% CI] (wins/ties/losses) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for arm, e in arms.items():
            cells = []
            for measure in MEASURES:
                d = e.get("vs_reference", {}).get(measure)
                cells.append("reference" if d is None else
                             f"{d['mean_diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] "
                             f"({d['arm_wins']}/{d['ties']}/{d['baseline_wins']})")
            lines.append(f"| {arm} | {e['num_seeds']} | {e['final_success']:.3f} | {e['average_success']:.3f} | "
                         f"{cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)
