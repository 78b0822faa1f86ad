"""Intervals over seeds, on the host (NumPy and SciPy): what every table, card and plot prints.

Arms that share a seed share their initial parameters and problem streams, so two arms are
compared seed by seed. With `d_i = arm_i - baseline_i` over `n` seeds, the interval is the paired
Student-t interval `mean(d) ± t(n - 1, (1 + confidence) / 2) · sd(d) / sqrt(n)` (`sd` with
`n - 1` in the denominator), and the p-value is the two-sided paired t-test's. It is exact when
the per-seed differences are normal, for any `n >= 2` (a test simulates paired experiments at
n = 2, 5 and 20 and finds 95% coverage); what it cannot fix is that with few seeds it is wide and
leans on that normality, so every table warns below `MIN_RELIABLE_SEEDS`. A percentile bootstrap
over seeds is not used: over 2 seeds it is the [min, max] of the two differences, and below
about 20 seeds it covers far less than it claims. When one reference is compared with several
arms, `holm` adjusts the p-values (Holm's step-down: the family-wise error stays below alpha).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as scipy_stats

INTERVAL_METHOD = "paired Student-t"
MIN_RELIABLE_SEEDS = 5


def t_interval(values, *, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Student-t interval of the mean over the last axis: `(mean, low, high)`, each `[...]`.

    Args:
      values: float `[..., N]` (e.g. per-seed differences, or per-seed values of one arm).
      confidence: the interval's coverage.

    With `N == 1` there is no spread to measure: `low` and `high` are NaN.
    """
    values = np.asarray(values, np.float64)
    if values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError(f"t_interval needs at least one value on the last axis, got shape {values.shape}")
    _check_confidence(confidence)
    n = values.shape[-1]
    mean = values.mean(axis=-1)
    if n < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy()
    half = scipy_stats.t.ppf((1 + confidence) / 2, n - 1) * values.std(axis=-1, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def paired_t(arm, baseline, *, confidence: float = 0.95) -> dict:
    """Compare two arms seed by seed.

    Args:
      arm: float `[N]`, one value per seed (e.g. final success).
      baseline: float `[N]`, the same seeds' values of the arm compared against.
      confidence: the interval's coverage.

    Returns:
      `{"mean_diff", "low", "high", "sd", "df", "t", "p_value", "num_seeds", "arm_wins",
      "baseline_wins", "ties", "method", "confidence"}`: the mean of `arm - baseline`, its paired
      Student-t interval, the two-sided paired t-test (`t` with `df = N - 1` degrees of freedom;
      all differences equal: `p_value` 1 when they are 0, else 0 with `t` None), and seed win
      counts. With one seed `low`, `high`, `sd`, `t` and `p_value` are None (nothing to estimate a
      spread from). Every value is JSON-safe (no NaN or infinity).
    """
    arm = np.asarray(arm, np.float64)
    baseline = np.asarray(baseline, np.float64)
    if arm.shape != baseline.shape or arm.ndim != 1 or arm.size == 0:
        raise ValueError(f"paired_t needs two equal-length 1-D arrays, got {arm.shape} and {baseline.shape}")
    diff = arm - baseline
    n = diff.size
    mean, low, high = t_interval(diff, confidence=confidence)
    out = {"mean_diff": float(mean), "low": None, "high": None, "sd": None, "df": n - 1, "t": None,
           "p_value": None, "num_seeds": n, "arm_wins": int((diff > 0).sum()),
           "baseline_wins": int((diff < 0).sum()), "ties": int((diff == 0).sum()),
           "method": INTERVAL_METHOD, "confidence": confidence}
    if n >= 2:
        sd = float(diff.std(ddof=1))
        if sd > 0:
            t = float(mean) / (sd / np.sqrt(n))
            p = float(2 * scipy_stats.t.sf(abs(t), n - 1))
        else:  # every seed gave the same difference: no spread, the test's limit (t is unbounded: None)
            t, p = (0.0, 1.0) if mean == 0 else (None, 0.0)
        out.update(low=float(low), high=float(high), sd=sd, t=t, p_value=p)
    return out


def holm(p_values) -> list:
    """Holm's step-down adjustment of a family of p-values (None entries are skipped and kept).

    The i-th smallest of m p-values becomes `max_{j <= i} min(1, (m - j + 1) p_(j))`. Returns the
    adjusted values in the input's order.
    """
    indexed = [(p, i) for i, p in enumerate(p_values) if p is not None]
    m = len(indexed)
    adjusted: list = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(indexed)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def interval_description(num_seeds: int, *, confidence: float = 0.95, method: str = INTERVAL_METHOD) -> str:
    """One line naming the interval method and n, with a warning when n is below `MIN_RELIABLE_SEEDS`."""
    text = (f"{confidence:.0%} {method} interval over n = {num_seeds} seed(s) "
            f"({max(num_seeds - 1, 0)} d.f.)")
    if num_seeds < 2:
        return text + "; WARNING: one seed, no interval can be computed"
    if num_seeds < MIN_RELIABLE_SEEDS:
        return (text + f"; WARNING: n < {MIN_RELIABLE_SEEDS}: the interval is wide and rests on the per-seed "
                "differences being close to normal, treat it as indicative")
    return text


def wilson_interval(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval `(low, high)` of a proportion `successes / trials` (NaN, NaN
    without trials): `(p + z²/2n ± z sqrt(p(1 − p)/n + z²/4n²)) / (1 + z²/n)`, `z` the normal
    quantile of `(1 + confidence) / 2`. Unlike `p ± z sqrt(p(1 − p)/n)` it stays in [0, 1] and
    is not empty at 0 or n successes."""
    _check_confidence(confidence)
    if not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval needs 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return float("nan"), float("nan")
    z = float(scipy_stats.norm.ppf((1 + confidence) / 2))
    p, n = successes / trials, trials
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, center - half)), float(min(1.0, center + half))


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
