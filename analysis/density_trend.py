"""How a time-to-threshold gap changes with decision density, from a `density-fixed` sweep.

The claim "the training-step gap widens as ρ → 0" is a statement about a trend across densities,
which the results page's per-density tables do not test on their own. Per seed (seeds are paired
across cells: the same initial parameters and problems), the gap at density ρ is the reference
arm's cost to its first evaluation at greedy success `threshold` minus the arm's cost to its own;
a line is fitted to each seed's gaps against log2 ρ, and the slope's interval is the Student-t
interval over the seeds' slopes. A negative slope means the gap grows as ρ falls (each halving of
ρ adds `-slope` to the gap).

Cells are named `{credit}-rho{ρ:g}` in `SWEEP/{regime}/` (the `density-fixed` preset's arms).
"""

from __future__ import annotations

import math
import os

import numpy as np

from jaxcredit.analysis.page import first_reach
from jaxcredit.rundir_io import read_jsonl
from jaxcredit.stats import t_interval

COSTS = ("main_episodes", "total_env_steps")


def _reach(sweep_dir: str, regime: str, credit: str, density: float, threshold: float) -> dict:
    path = os.path.join(sweep_dir, regime, f"{credit}-rho{density:g}", "metrics.jsonl")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"density trend: no metrics for cell {regime}/{credit}-rho{density:g} ({path})")
    return first_reach(read_jsonl(path), threshold)


def density_gap_trend(sweep_dir: str, *, regime: str, credit: str, reference: str = "outcome",
                      densities=(1, 0.5, 0.25, 0.125, 0.0625), cost: str = "main_episodes",
                      threshold: float = 0.9) -> dict:
    """The gap `reference − credit` in `cost` to the first evaluation at `threshold`, per density,
    and its slope against log2 ρ.

    Returns `{"densities" [R], "gap_mean", "gap_low", "gap_high" [R] (95% t over the seeds that
    reached the threshold in both cells), "gaps" [N][R] per seed (NaN where either cell did not
    reach it), "slope": {"mean", "low", "high", "n"} (over the seeds with at least 3 densities
    reached), "cost", "threshold"}`.
    """
    if cost not in COSTS:
        raise ValueError(f"density trend: cost must be one of {', '.join(COSTS)}, got {cost!r}")
    if len(densities) < 3:
        raise ValueError(f"density trend: a slope needs at least 3 densities, got {list(densities)}")
    gaps = []
    for density in densities:
        ref, arm = (_reach(sweep_dir, regime, c, density, threshold) for c in (reference, credit))
        if ref["seeds"] != arm["seeds"]:
            raise ValueError(f"density trend: cells at ρ = {density:g} have different seeds "
                             f"({ref['seeds']} vs {arm['seeds']}), so they are not paired")
        gaps.append(np.asarray(ref[cost]) - np.asarray(arm[cost]))
    per_seed = np.stack(gaps, axis=1)  # [N, R]
    means, lows, highs = [], [], []
    for column in per_seed.T:
        ok = column[~np.isnan(column)]
        mean, low, high = t_interval(ok) if len(ok) else (math.nan, math.nan, math.nan)
        means.append(float(mean)), lows.append(float(low)), highs.append(float(high))
    x = np.log2(np.asarray(densities, np.float64))
    slopes = [np.polyfit(x[~np.isnan(row)], row[~np.isnan(row)], 1)[0] for row in per_seed
              if (~np.isnan(row)).sum() >= 3]
    if slopes:
        mean, low, high = (float(v) for v in t_interval(slopes))
    else:
        mean = low = high = math.nan
    return {"densities": list(densities), "cost": cost, "threshold": threshold, "gap_mean": means,
            "gap_low": lows, "gap_high": highs, "gaps": per_seed.tolist(),
            "slope": {"mean": mean, "low": low, "high": high, "n": len(slopes)}}
