"""The tuner's rules as pure functions of scores: ties within a standard error, successive-halving
cuts, and the grid extensions that move an edge-chosen point inside its grid.

A point's score is a list of per-seed values (one per tuning seed). Two points *tie* when their
means differ by at most the standard error of the difference of two means,
`sqrt(se_a**2 + se_b**2)`, each `se = std(ddof=1) / sqrt(n)` (0 for one seed): identical scores
always tie. A choice is made on the primary score; every point tied with the best is a candidate,
and the candidates are separated by the other score's mean, then by the primary mean; the grid
order decides only between points whose two means are both identical, and the record says so.
See docs/training.md#equal-tuning-tune.
"""

from __future__ import annotations

import math

import numpy as np

OTHER_SCORE = {"final": "area", "area": "final"}
GRID_ORDER = "grid order (identical scores)"


def mean_se(scores) -> tuple[float, float]:
    """`(mean, standard error of the mean)` of per-seed `scores` (the error is 0 for one seed)."""
    values = np.asarray(scores, np.float64)
    if values.size == 0:
        raise ValueError("a score needs at least one seed")
    se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
    return float(values.mean()), se


def tied(a, b) -> bool:
    """Whether the per-seed scores `a` and `b` tie: their means differ by at most the standard
    error of the difference (`sqrt(se_a**2 + se_b**2)`); identical means always tie."""
    (mean_a, se_a), (mean_b, se_b) = mean_se(a), mean_se(b)
    return abs(mean_a - mean_b) <= math.hypot(se_a, se_b) + 1e-12


def choose(primary: list, other: list) -> dict:
    """Choose one point. `primary[k]` and `other[k]`: point k's per-seed scores on the tuning score
    and on the other one.

    Returns `{"chosen": k, "tied": [k, ...], "broken_by": str | None}`: `tied` lists every point
    tied with the best primary mean (the best included, in grid order); with more than one,
    `broken_by` names what separated them: the other score, the primary mean (the other score's
    means identical), or `GRID_ORDER` (both means identical)."""
    if not primary or len(primary) != len(other) or any(len(s) == 0 for s in primary):
        raise ValueError("choose needs at least one point, each with at least one score on both scores")
    means = [mean_se(s)[0] for s in primary]
    best = means.index(max(means))
    candidates = [k for k in range(len(primary)) if tied(primary[k], primary[best])]
    if len(candidates) == 1:
        return {"chosen": best, "tied": candidates, "broken_by": None}
    others = {k: mean_se(other[k])[0] for k in candidates}
    top_other = max(others.values())
    by_other = [k for k in candidates if others[k] == top_other]
    if len(by_other) == 1:
        return {"chosen": by_other[0], "tied": candidates, "broken_by": "other score"}
    top_primary = max(means[k] for k in by_other)
    by_primary = [k for k in by_other if means[k] == top_primary]
    return {"chosen": by_primary[0], "tied": candidates,
            "broken_by": "primary mean" if len(by_primary) == 1 else GRID_ORDER}


def rung_evals(num_evals: int, *, eta: int, rungs: int) -> list[int]:
    """The evaluation index each rung ends at: rung r of R ends at `round(num_evals / eta**(R-1-r))`,
    at least 1, the last at `num_evals`; raises `ValueError` when two rungs would share one."""
    ends = [max(1, round(num_evals / eta ** (rungs - 1 - r))) for r in range(rungs)]
    if any(b <= a for a, b in zip(ends, ends[1:])):
        raise ValueError(f"tune: {rungs} rungs with eta {eta} need more evaluations than num_evals = {num_evals} "
                         f"(rungs would end at evaluations {ends}); raise num_evals or lower rungs")
    return ends


def halving_keep(scores: list, *, eta: int) -> list[int]:
    """The points that continue past a rung: the best `ceil(n / eta)` by mean, and every point tied
    with the last of them (the cut line), so a rung never cuts by ties; a rung where every point
    scores the same cuts nothing. `scores[k]`: point k's per-seed scores at the rung. Returns the
    kept indices in grid order."""
    if not scores:
        return []
    means = [mean_se(s)[0] for s in scores]
    order = sorted(range(len(scores)), key=lambda k: -means[k])  # stable: grid order among equal means
    line = order[math.ceil(len(scores) / eta) - 1]
    return [k for k in range(len(scores)) if means[k] >= means[line] or tied(scores[k], scores[line])]


def is_numeric(values) -> bool:
    """Whether an axis is numeric, so the tuner extends it: every value an int or a float (not a
    bool), none negative."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values)


def extension_value(values, side: str):
    """The value one step outward from a numeric axis's `side` (`"low"` or `"high"`): x3 at the
    high end, /3 at the low end, floats rounded to one significant figure (3e-3 -> 9e-3, 3e-4 ->
    1e-4); at a low end of 0 (an entropy bonus), a third of the smallest positive value (0 and
    0.01 -> 0.003). None where there is no new value (an integer axis at 1, an axis of zeros)."""
    ordered = sorted(values)
    integer = all(isinstance(v, int) for v in values)
    if side == "high":
        value = ordered[-1] * 3 if integer else float(f"{ordered[-1] * 3:.1g}")
    else:
        positive = [v for v in ordered if v > 0]
        if not positive:
            return None
        value = positive[0] // 3 if integer else float(f"{positive[0] / 3:.1g}")
        if integer and value < 1:
            return None
    return None if value in values or (side == "high" and value <= ordered[-1]) else value


def edge_sides(values, chosen) -> list[str]:
    """The sides (`"low"`, `"high"`) of the axis `values` the `chosen` value sits on (none for an
    interior value, both for a one-value axis)."""
    sides = []
    if chosen == min(values):
        sides.append("low")
    if chosen == max(values):
        sides.append("high")
    return sides
