"""The break-even label price: the price per unit of label work at which outcome-only training,
given the arm's whole cost at that price, ties the arm.

At price p an arm's total is `main + p * label` (env steps or policy evaluations). Outcome's
success at that total is read from its own learning curve (one long run per seed, read by linear
interpolation between evaluations). The gap `arm − outcome(total)` falls as p rises; `p*` is where
it crosses 0, read in log p between the grid's prices, with the crossings of the gap's Student-t
band as its interval. See docs/analysis.md#the-break-even-label-price-analysispricepy.

Shape letters: N seeds, E outcome evaluations, P prices.
"""
from __future__ import annotations

import math

import numpy as np

from jaxcredit.stats import t_interval

# 1/64 .. 1 by factors of 2: seven prices
PRICE_GRID = tuple(2.0 ** -k for k in range(6, -1, -1))


def outcome_at(totals, success, budgets) -> np.ndarray:
    """Outcome's success at the given totals, by linear interpolation along each seed's curve.

    Args:
      totals: float `[N, E]`, the cost spent at each evaluation, increasing along E.
      success: float `[N, E]`, the success measured there.
      budgets: float `[N, P]`, the totals to read each seed's curve at.

    Returns float `[N, P]`. A budget beyond a seed's last evaluation is refused: its curve does not
    reach it, and extrapolating would decide `p*` by assumption.
    """
    totals, success, budgets = (np.asarray(x, np.float64) for x in (totals, success, budgets))
    if totals.shape != success.shape or totals.ndim != 2 or budgets.ndim != 2 or len(budgets) != len(totals):
        raise ValueError(f"outcome_at needs totals and success [N, E] and budgets [N, P]; got {totals.shape}, "
                         f"{success.shape} and {budgets.shape}")
    if np.any(np.diff(totals, axis=1) <= 0):
        raise ValueError("outcome's evaluation totals must increase along each seed's curve")
    short = budgets.max(axis=1) > totals[:, -1]
    if short.any():
        seed = int(np.argmax(short))
        raise ValueError(f"outcome's curve for seed {seed} ends at {totals[seed, -1]:,.0f}, but a price needs "
                         f"{budgets[seed].max():,.0f}: run outcome longer or measure fewer prices")
    return np.stack([np.interp(b, t, s) for t, s, b in zip(totals, success, budgets)])


def price_gaps(arm_score, main_cost, label_cost, outcome_totals, outcome_success, prices=PRICE_GRID) -> np.ndarray:
    """The arm's lead over outcome given the arm's total at each price, seed by seed.

    Args:
      arm_score: float `[N]`, the arm's success (final, or the average over training).
      main_cost, label_cost: float `[N]`, the arm's main and label work in one currency.
      outcome_totals, outcome_success: float `[N, E]`, outcome's curve in that currency (seeds paired).
      prices: `[P]` positive prices, increasing.

    Returns float `[N, P]`: `arm_score − outcome(main + p * label)`.
    """
    prices = np.asarray(prices, np.float64)
    if prices.ndim != 1 or len(prices) < 2 or np.any(prices <= 0) or np.any(np.diff(prices) <= 0):
        raise ValueError(f"prices must be at least two positive, increasing values; got {prices.tolist()}")
    arm_score, main_cost, label_cost = (np.asarray(x, np.float64) for x in (arm_score, main_cost, label_cost))
    budgets = main_cost[:, None] + prices[None, :] * label_cost[:, None]
    return arm_score[:, None] - outcome_at(outcome_totals, outcome_success, budgets)


def _crossing(values: np.ndarray, prices: np.ndarray) -> float:
    """The first price where `values` falls to 0 or below, interpolated in log price: −inf when it is
    at or below 0 at the lowest price, +inf when it stays above 0 at every price."""
    below = np.flatnonzero(values <= 0)
    if len(below) == 0:
        return math.inf
    i = int(below[0])
    if i == 0:
        return -math.inf
    lo, hi = math.log(prices[i - 1]), math.log(prices[i])
    fraction = values[i - 1] / (values[i - 1] - values[i])
    return math.exp(lo + fraction * (hi - lo))


def price_text(p: float, prices) -> str:
    """`p*` as a page shows it: the value, or `< p_min` / `> p_max` outside the measured range."""
    if p == -math.inf:
        return f"< {min(prices):.3g}"
    if p == math.inf:
        return f"> {max(prices):.3g}"
    return f"{p:.3g}"


def break_even_price(gaps, prices=PRICE_GRID, *, confidence: float = 0.95) -> dict:
    """`p*` from the per-seed gaps of `price_gaps`.

    Args:
      gaps: float `[N, P]`, the arm's lead over outcome at each price, seed by seed.
      prices: `[P]`, the prices the gaps were measured at, increasing.

    Returns `{"p_star", "low", "high", "text", "interval_text", "mean_gap", "gap_low", "gap_high",
    "prices", "num_seeds"}`: `p*` where the mean gap crosses 0, its interval where the band's lower
    and upper edges cross 0 (each ±inf outside the range), and the gap's mean and band per price.
    """
    gaps, prices = np.asarray(gaps, np.float64), np.asarray(prices, np.float64)
    if gaps.ndim != 2 or gaps.shape[1] != len(prices):
        raise ValueError(f"gaps must be [N seeds, P prices] with P = {len(prices)}; got shape {gaps.shape}")
    if gaps.shape[0] < 2:
        raise ValueError("break_even_price needs at least 2 paired seeds: one seed has no interval")
    mean, low, high = t_interval(gaps.T, confidence=confidence)
    p_star, p_low, p_high = (_crossing(v, prices) for v in (mean, low, high))
    return {"p_star": p_star, "low": p_low, "high": p_high, "text": price_text(p_star, prices),
            "interval_text": f"[{price_text(p_low, prices)}, {price_text(p_high, prices)}]",
            "mean_gap": mean.tolist(), "gap_low": low.tolist(), "gap_high": high.tolist(),
            "prices": prices.tolist(), "num_seeds": int(gaps.shape[0])}
