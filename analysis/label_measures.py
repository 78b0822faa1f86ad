"""How well a set of per-step labels matches exact counterfactual credit: sign agreement, rank
correlation and normalised error, one pure function on flat arrays.

Used by the suite's label-quality experiment (`jaxcredit.suite.labels`) and the ranking study
(`jaxcredit.analysis.ranking`). Shape letters: n steps.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def label_measures(label: np.ndarray, exact: np.ndarray, tolerance_mask: np.ndarray) -> dict:
    """The measures of one arm's labels on a set of steps.

    `label`, `exact`: float `[n]` (the arm's credit and `Δ` on the chosen steps); `tolerance_mask`:
    bool `[n]`, the steps whose exact label is not decorative (where a sign means something).
    Returns `steps`, `sign_agreement` (None without a non-decorative step; a label of exactly 0
    counts as half agreement), `rank_correlation` (Spearman's ρ; None when either side is
    constant), `normalised_error` (`1 − max(0, cos(label, Δ))²`; None when `Δ` is 0 everywhere).
    """
    label = np.asarray(label, np.float64)
    exact = np.asarray(exact, np.float64)
    signed = np.asarray(tolerance_mask, bool)
    out = {"steps": int(label.size), "sign_agreement": None, "rank_correlation": None, "normalised_error": None}
    if signed.any():
        agree = np.where(label[signed] == 0, 0.5, (np.sign(label[signed]) == np.sign(exact[signed])).astype(float))
        out["sign_agreement"] = float(agree.mean())
    if label.size > 1 and np.ptp(label) > 0 and np.ptp(exact) > 0:
        out["rank_correlation"] = float(stats.spearmanr(label, exact).statistic)
    exact_norm = float(np.dot(exact, exact))
    if exact_norm > 0:
        label_norm = float(np.dot(label, label))
        cosine = float(np.dot(label, exact)) / np.sqrt(label_norm * exact_norm) if label_norm > 0 else 0.0
        out["normalised_error"] = float(1.0 - max(0.0, cosine) ** 2)
    return out


__all__ = ["label_measures"]
