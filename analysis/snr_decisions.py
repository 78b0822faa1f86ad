"""Gradient SNR at a fixed number of decisions: routine turns inserted, the horizon growing.

The decision-density claim is about this path: D consequential decisions stay fixed while the
horizon `H = D / ρ` grows, so only routine turns are added. `measure_fixed_decisions` measures,
for one policy and N seeds, every estimator's SNR at every density of a grid: one environment per
density (`Routine(decisions=D, density=ρ)`, all with one token layout so the same parameters read
every horizon), each compiled once with the seeds `lax.map`ped. `fit_over_seeds` fits
`log y = a + b log ρ` seed by seed and reports the mean slope, its 95% interval over seeds and
the R², in **power** units (the SNR measured here) and **amplitude** units (its square root, half
the slope). See docs/density.md#at-a-fixed-number-of-decisions---decisions-d.

Shape letters: N seeds, R densities, E estimators, J blocks, D parameters.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as scipy_stats

from jaxcredit.analysis.snr import (
    TURN_LEVEL,
    SnrConfig,
    _snr,
    aligned_rows,
    fit_loglog,
    outcome_baseline,
    seeded_moments,
    tabular_policy,
)
from jaxcredit.analysis.snr_theory import predicted_snr
from jaxcredit.envs.routine import Routine


def fixed_decision_envs(*, decisions: int, densities, **env_config) -> list[Routine]:
    """One `Routine(decisions=D, density=ρ)` per density, sharing the token layout of the largest
    horizon (`vocab_horizon`). Raises `ValueError` for a density whose horizon is out of range or
    two densities with the same horizon."""
    env_config = {k: v for k, v in env_config.items() if k not in ("horizon", "density", "decisions")}
    vocab = env_config.pop("vocab_horizon", 0) or 0
    horizons = [Routine(decisions=decisions, density=d, **env_config).horizon for d in densities]  # validates
    if len(set(horizons)) != len(horizons):
        raise ValueError(f"densities {list(densities)} give repeated horizons {horizons} at {decisions} decisions")
    vocab = max(vocab, max(horizons))
    return [Routine(decisions=decisions, density=d, vocab_horizon=vocab, **env_config) for d in densities]


def fit_over_seeds(x: np.ndarray, y: np.ndarray) -> dict | None:
    """The log-log fit of `y` `[N, R]` on `x` `[R]` seed by seed (seeds with a non-positive value
    are left out): `{"power": {slope, low, high, r2}, "amplitude": {...}, "seed_slopes", "num_seeds"}`,
    or None when fewer than two seeds fit."""
    keep = np.all(np.isfinite(y) & (y > 0), axis=1)
    if keep.sum() < 2:
        return None
    slopes = np.array([fit_loglog(x, row)[0] for row in y[keep]])
    mean_curve = np.exp(np.mean(np.log(y[keep]), axis=0))
    _, intercept, r2 = fit_loglog(x, mean_curve)
    n = int(keep.sum())
    half = float(scipy_stats.t.ppf(0.975, n - 1) * slopes.std(ddof=1) / np.sqrt(n))
    slope = float(slopes.mean())
    power = {"slope": slope, "low": slope - half, "high": slope + half, "r2": r2, "intercept": intercept}
    amplitude = {"slope": slope / 2, "low": (slope - half) / 2, "high": (slope + half) / 2, "r2": r2}
    return {"power": power, "amplitude": amplitude, "seed_slopes": slopes.tolist(), "num_seeds": n}


def measure_fixed_decisions(envs: list[Routine], policy_fn, params: Any, config: SnrConfig, *,
                            seeds: list[int]) -> dict:
    """Every estimator's SNR on each environment of `envs` (one density each, same D and token
    layout) for each seed: `params` stacked `[N, ...]` on a seed axis. Returns the per-seed SNR
    `[N, R]` per estimator, the ratios to outcome, and `fit_over_seeds` of each."""
    densities = np.array([env.realised_density for env in envs])
    snr = np.zeros((len(seeds), len(envs), len(config.estimators)))
    for r, env in enumerate(envs):
        keys = jnp.stack([jax.random.fold_in(jax.random.key(seed), env.horizon) for seed in seeds])
        sums, squares = jax.device_get(seeded_moments(env, policy_fn, params, keys, config=config))
        sums, squares = np.asarray(sums, np.float64), np.asarray(squares, np.float64)
        snr[:, r] = _snr(sums.sum(1), squares.sum(1), config.num_batches)[0]
    names = list(config.estimators)
    out = {"design": "fixed-decisions", "num_decisions": envs[0].num_decisions,
           "horizons": [env.horizon for env in envs], "densities": densities.tolist(), "seeds": list(seeds),
           "estimators": names, "snr": {}, "ratio": {}, "fit": {}}
    for e, name in enumerate(names):
        out["snr"][name] = snr[:, :, e].tolist()
        out["fit"][name] = fit_over_seeds(densities, snr[:, :, e])
    for e, name in enumerate(names):  # every other estimator against every outcome baseline
        for o, reference in enumerate(names):
            if outcome_baseline(name) is None and outcome_baseline(reference) is not None:
                ratio = snr[:, :, e] / snr[:, :, o]
                out["ratio"][f"{name}/{reference}"] = ratio.tolist()
                out["fit"][f"{name}/{reference}"] = fit_over_seeds(densities, ratio)
    return out


def predicted_fixed_decisions(envs: list[Routine], config: SnrConfig) -> dict:
    """The tabular closed form (`snr_theory.predicted_snr`, rloo/mean baseline) at every density:
    `{estimator: [R]}`, the ratios, and each one's log-log slope in power and amplitude units."""
    densities = np.array([env.realised_density for env in envs])
    per = [predicted_snr(env, problems_per_batch=config.problems_per_batch, group_size=config.group_size,
                         mc_continuations=config.mc_continuations if "mc" in config.estimators else 0)
           for env in envs]
    outcome = "outcome" if config.baseline in ("rloo", "mean") else "outcome-rloo"
    out = {"model": "tabular policy at uniform init, rloo/mean baseline (docs/density.md)", "outcome": outcome,
           "snr": {}, "ratio": {}, "slope": {}}
    for name in ("outcome", *TURN_LEVEL):
        if name in per[0] and (name in config.estimators or name == "outcome"):
            key = outcome if name == "outcome" else name
            out["snr"][key] = [p[name] for p in per]
            out["slope"][key] = fit_loglog(densities, np.array(out["snr"][key]))[0]
    for name in TURN_LEVEL:
        if name in out["snr"]:
            ratio = np.array(out["snr"][name]) / np.array(out["snr"][outcome])
            out["ratio"][f"{name}/{outcome}"] = ratio.tolist()
            out["slope"][f"{name}/{outcome}"] = fit_loglog(densities, ratio)[0]
    return out


def run_fixed_decisions(envs: list[Routine], config: SnrConfig, *, seeds: list[int], policy: str,
                        policy_fn=None, params: Any = None, init_fn=None) -> dict:
    """`measure_fixed_decisions` for `policy`: `"tabular"` (uniform table), `"network"` (`init_fn`
    at each seed's key: independent initialisations) or `"checkpoint"` (`params`, the same for
    every seed); plus the closed form for the tabular policy with the rloo or mean baseline, the
    configuration and the wall time."""
    start = time.perf_counter()
    if policy == "tabular":
        init_fn, policy_fn = tabular_policy(envs[0])
    if policy in ("tabular", "network"):
        per_seed = [init_fn(jax.random.key(seed)) for seed in seeds]
        params = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *per_seed)
    else:
        params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (len(seeds), *jnp.shape(x))), params)
    summary = measure_fixed_decisions(envs, policy_fn, params, config, seeds=seeds)
    if policy == "tabular" and (config.baseline in ("rloo", "mean") or "outcome-rloo" in config.estimators):
        summary["predicted"] = predicted_fixed_decisions(envs, config)
    summary["seconds"] = round(time.perf_counter() - start, 2)
    summary["config"] = {**dataclasses.asdict(config), "policy": policy,
                         "env": {k: v for k, v in envs[0].config().items() if k not in ("density", "horizon")}}
    return summary


def format_fixed_decisions(summary: dict) -> str:
    """Host: per-density geometric-mean SNR over seeds, then each fit in both units."""
    names = summary["estimators"]
    head = ["H", "rho"] + [f"SNR {n}" for n in names] + list(summary["ratio"])
    rows = [head]
    for r, (horizon, rho) in enumerate(zip(summary["horizons"], summary["densities"])):
        row = [str(horizon), f"{rho:.4g}"]
        for values in [summary["snr"][n] for n in names] + list(summary["ratio"].values()):
            column = np.array(values)[:, r]
            row.append(f"{np.exp(np.mean(np.log(column))):.4g}" if (column > 0).all() else "n/a")
        rows.append(row)
    lines = aligned_rows(rows)
    for name, fit in summary["fit"].items():
        if fit is None:
            lines.append(f"{name}: no fit (non-positive SNR in all but one seed)")
            continue
        p, a = fit["power"], fit["amplitude"]
        lines.append(f"{name}: slope in power {p['slope']:.3f} [{p['low']:.3f}, {p['high']:.3f}], amplitude "
                     f"{a['slope']:.3f} [{a['low']:.3f}, {a['high']:.3f}], R² {p['r2']:.3f} ({fit['num_seeds']} seeds)")
    if summary.get("predicted"):
        lines.append("predicted slopes (power): " + ", ".join(f"{k} {v:.3f}" for k, v in
                                                              summary["predicted"]["slope"].items()))
    return "\n".join(lines)
