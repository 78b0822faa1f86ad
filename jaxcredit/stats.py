"""Intervals over seeds, on the host (NumPy and SciPy): what every table, card and plot prints.

Arms that share a seed share their initial parameters and problem streams, so two arms are
compared seed by seed. With `d_i = arm_i - baseline_i` over `n` seeds, the interval is the paired
Student-t interval `mean(d) ± t(n - 1, (1 + confidence) / 2) · sd(d) / sqrt(n)`, and the p-value
the two-sided paired t-test's: exact when the per-seed differences are normal, for any `n >= 2`,
but wide with few seeds, so every table warns below `MIN_RELIABLE_SEEDS`. `paired_bootstrap`
gives a percentile bootstrap beside it (it covers far less than it claims below about 20 seeds),
`sign_flip_p` the paired sign-flip permutation test (no normality assumed), and `holm` Holm's
step-down adjustment when one reference is compared with several arms. See
docs/analysis.md#how-intervals-are-computed.
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


EXACT_SIGN_FLIPS = 20  # up to this many seeds the sign-flip test enumerates all 2**n flips
SAMPLED_SIGN_FLIPS = 2**18  # above it: this many random flips (a fixed key), plus the observed one


def sign_flip_p(diff) -> dict:
    """The paired sign-flip permutation test of `mean(diff) == 0`, two-sided.

    Args:
      diff: float `[N]`, per-seed differences `arm - baseline`.

    Under the null each difference is as likely negative as positive, so the p-value is the share
    of the `2**N` sign patterns whose `|sum|` is at least the observed one (exact enumeration up to
    `EXACT_SIGN_FLIPS` seeds; above, `SAMPLED_SIGN_FLIPS` random patterns with a fixed seed, the
    observed one counted once more). It assumes no normality; its smallest possible value is
    `2 / 2**N` (n = 5: 0.0625). Returns `{"p_value", "num_seeds", "flips", "exact"}`.
    """
    diff = np.asarray(diff, np.float64)
    if diff.ndim != 1 or diff.size == 0:
        raise ValueError(f"sign_flip_p needs a 1-D array of at least one difference, got shape {diff.shape}")
    n = diff.size
    observed = abs(diff.sum())
    tolerance = 1e-12 * max(1.0, float(np.abs(diff).sum()))
    if n <= EXACT_SIGN_FLIPS:  # every signed sum, as the sums of the two halves' signed sums
        first, second = _signed_sums(diff[: n // 2]), _signed_sums(diff[n // 2:])
        sums = np.abs(first[:, None] + second[None, :])
        return {"p_value": float((sums >= observed - tolerance).mean()), "num_seeds": n, "flips": 2**n,
                "exact": True}
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(SAMPLED_SIGN_FLIPS, n))
    hits = int((np.abs(signs @ diff) >= observed - tolerance).sum())
    return {"p_value": (hits + 1) / (SAMPLED_SIGN_FLIPS + 1), "num_seeds": n, "flips": SAMPLED_SIGN_FLIPS,
            "exact": False}


def _signed_sums(values: np.ndarray) -> np.ndarray:
    """float `[2**K]`: `sum_j ±values[j]` for every sign pattern of the `K` values."""
    patterns = (np.arange(2 ** values.size)[:, None] >> np.arange(values.size)[None, :]) & 1
    return ((1 - 2 * patterns) * values).sum(axis=1)


def paired_bootstrap(diff, *, confidence: float = 0.95, num_resamples: int = 20_000, seed: int = 0) -> dict:
    """The percentile bootstrap interval of `mean(diff)`: seeds resampled with replacement
    `num_resamples` times (a fixed `seed`), the interval between the `(1 - confidence) / 2` and
    `(1 + confidence) / 2` quantiles of the resampled means. Below about 20 seeds it covers less
    than it claims (over 2 seeds it is the two differences' range): it is shown beside the t
    interval, never instead of it. Returns `{"low", "high", "num_resamples", "confidence"}`."""
    diff = np.asarray(diff, np.float64)
    if diff.ndim != 1 or diff.size == 0:
        raise ValueError(f"paired_bootstrap needs a 1-D array of at least one difference, got shape {diff.shape}")
    _check_confidence(confidence)
    index = np.random.default_rng(seed).integers(0, diff.size, size=(num_resamples, diff.size))
    means = diff[index].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return {"low": float(low), "high": float(high), "num_resamples": num_resamples, "confidence": confidence}


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
