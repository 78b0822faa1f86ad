"""Closed forms of the gradient SNR on Routine for the tabular policy at uniform init.

The derivation is in docs/density.md ("The predicted ratio"): with a table of logits indexed by
the observation, every turn reads its own row, so the scores of different turns are orthogonal and
the return is a martingale-difference sum of the per-turn exact advantages. What follows gives,
for one batch of P problems x G attempts (the batch gradient `g = (1/(P G)) Σ A ∇ log π` that
`jaxcredit.analysis.snr` measures), the trace of its covariance and the squared norm of its mean
for the outcome estimator with the rloo (or mean) baseline, exact credit, and mc credit with K
forced-action continuations per action; the SNR is their ratio. GRPO divides by the group's
standard deviation, which has no closed form here.

Shape letters: H turns, D decisions.
"""

from __future__ import annotations

from math import comb

import numpy as np

from jaxcredit.envs.routine import Routine


def decision_turn_probabilities(*, horizon: int, num_decisions: int, placement: str) -> np.ndarray:
    """float64 `[H, D]`: P(turn k is the j-th decision) over layouts (`random`: a uniform D-subset
    of the H turns; `fixed`: 0 or 1 at `floor((2j + 1) H / (2D))`)."""
    H, D = horizon, num_decisions
    p = np.zeros((H, D))
    for j in range(D):
        if placement == "fixed":
            p[((2 * j + 1) * H) // (2 * D), j] = 1.0
        else:
            for k in range(H):
                p[k, j] = comb(k, j) * comb(H - 1 - k, D - 1 - j) / comb(H, D)
    return p


def _later_decision_probabilities(*, horizon: int, num_decisions: int, placement: str) -> np.ndarray:
    """float64 `[H, D + 1]`: P(exactly m decisions come after turn k)."""
    H, D = horizon, num_decisions
    out = np.zeros((H, D + 1))
    if placement == "fixed":
        spots = np.array([((2 * j + 1) * H) // (2 * D) for j in range(D)])
        for k in range(H):
            out[k, int(np.sum(spots > k))] = 1.0
        return out
    for k in range(H):
        for m in range(D + 1):
            out[k, m] = comb(H - 1 - k, m) * comb(k + 1, D - m) / comb(H, D)
    return out


def trace_terms(*, horizon: int, num_decisions: int, num_choices: int, failure: str, survival: float,
                group_size: int, placement: str, cue: str = "right", mc_continuations: int = 0) -> dict:
    """One group's gradient sum `X = Σ_i Σ_t A_{i,t} s_{i,t}` (G attempts of one random problem):
    `{"mean_sq": ||E X||² / G², "outcome": tr Cov X (rloo), "exact": ..., "mc": ...}` (mc only when
    `mc_continuations` K > 0). docs/density.md derives each term."""
    H, D, C, G, K = horizon, num_decisions, num_choices, group_size, mc_continuations
    s = 0.0 if failure == "fatal" else survival
    f, g = (1 + (C - 1) * s) / C, (1 + (C - 1) * s**2) / C  # E[success factor], E[factor²] per decision
    sigma2 = 1 - 1 / C  # ||∇ log π||² per turn
    var_r = g**D - f ** (2 * D)
    kappa2 = ((1 - s) * f ** (D - 1) / C) ** 2
    m2 = D * kappa2 * sigma2  # E ||m(problem)||²
    if cue == "right":  # the row (turn, cue = right) is a given decision with probability P(k) / C
        p_turn = decision_turn_probabilities(horizon=H, num_decisions=D, placement=placement).sum(axis=1)
        m1 = kappa2 * sigma2 * float(np.sum(p_turn**2)) / C
    else:  # the row (turn, cue = j) always asks for the same fixed answer
        p = decision_turn_probabilities(horizon=H, num_decisions=D, placement=placement)
        m1 = kappa2 * sigma2 * float(np.sum(p**2))  # ||E m(problem)||²
    shared = G * (G - 1) * m2 - G**2 * m1
    out = {"mean_sq": m1,
           "outcome": G**2 * H * sigma2 * var_r / (G - 1) + G * (G - 1) * (1 + 1 / (G - 1) ** 2) * m2 - G**2 * m1,
           "exact": G * sigma2 * var_r + shared}
    if K:
        later = _later_decision_probabilities(horizon=H, num_decisions=D, placement=placement)  # [H, D + 1]
        m = np.arange(D + 1)
        branch_var = g**D - g ** (D - m) * f ** (2 * m)  # E_w Var(R | state, forced action), averaged over actions
        noise = (1 - 1 / C) / K * float(np.sum(later * branch_var))  # Σ_t E[(Q̂ - Q)(a_t) - Σ_a π (Q̂ - Q)]²
        out["mc"] = out["exact"] + G * sigma2 * noise
    return out


def predicted_snr(env: Routine, *, problems_per_batch: int, group_size: int, mc_continuations: int = 0) -> dict:
    """`{estimator: SNR}` of one batch's gradient (P problems x G attempts) on `env` for the tabular
    policy at uniform init, outcome with the rloo or mean baseline: `SNR = P G² ||E X||²/G² / tr Cov X`."""
    terms = trace_terms(horizon=env.horizon, num_decisions=env.num_decisions, num_choices=env.num_choices,
                        failure=env.failure, survival=env.survival, group_size=group_size,
                        placement=env.placement, cue=env.cue, mc_continuations=mc_continuations)
    P, G = problems_per_batch, group_size
    return {name: P * G**2 * terms["mean_sq"] / terms[name] for name in ("outcome", "exact", "mc") if name in terms}
