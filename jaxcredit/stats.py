"""Paired statistics across seeds, on the host (NumPy): what a sweep table and a report print.

Arms that share a seed share initial parameters and problem streams, so they are compared
seed by seed: the difference per seed, its mean, a percentile bootstrap interval over seeds,
and the number of seeds each arm wins.
"""

from __future__ import annotations

import numpy as np


def paired_bootstrap(arm: np.ndarray, baseline: np.ndarray, *, confidence: float = 0.95,
                     num_resamples: int = 10_000, seed: int = 0) -> dict:
    """Compare two arms seed by seed.

    Args:
      arm: float `[N]`, one value per seed (e.g. final success).
      baseline: float `[N]`, the same seeds' values for the arm compared against.
      confidence: the interval's coverage.
      num_resamples: bootstrap resamples of the seeds (with replacement).
      seed: seed of the resampling, so the interval is reproducible.

    Returns:
      `{"mean_diff", "low", "high", "num_seeds", "arm_wins", "baseline_wins", "ties"}`: the mean
      of `arm - baseline`, the percentile bootstrap interval of that mean, and win counts.
    """
    arm = np.asarray(arm, np.float64)
    baseline = np.asarray(baseline, np.float64)
    if arm.shape != baseline.shape or arm.ndim != 1 or arm.size == 0:
        raise ValueError(f"paired_bootstrap needs two equal-length 1-D arrays, got {arm.shape} and {baseline.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    diff = arm - baseline
    rng = np.random.default_rng(seed)
    resampled = rng.integers(0, diff.size, size=(num_resamples, diff.size))
    means = diff[resampled].mean(axis=1)
    tail = (1 - confidence) / 2
    return {
        "mean_diff": float(diff.mean()),
        "low": float(np.quantile(means, tail)),
        "high": float(np.quantile(means, 1 - tail)),
        "num_seeds": int(diff.size),
        "arm_wins": int((diff > 0).sum()),
        "baseline_wins": int((diff < 0).sum()),
        "ties": int((diff == 0).sum()),
    }
