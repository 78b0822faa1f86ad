"""Gradient signal-to-noise ratio of credit estimators across decision densities (Routine).

For one policy (a network, untrained or from a checkpoint, or a tabular policy) and each density
ρ of a grid, `gradient_moments` draws `N` independent batches, computes every estimator's
policy-gradient vector of each batch, and keeps per-block sums of `g` and `g²` (J blocks), in one
jitted program. The estimators are registered credit arms, looked up by name (`outcome`,
`outcome-rloo`, `exact`, `mc`, and plugin arms that need no one-time work). `snr_summary` gives,
per density and estimator, the SNR `(||ḡ||² - tr Σ̂ / N) / tr Σ̂` and its ratio to outcome's,
then the log-log fit of the ratio against ρ with a jackknife interval for the slope;
`predicted_ratio` is the tabular closed form. See docs/density.md#measuring-the-gradient-snr.

Shape letters: R densities, J blocks, E estimators, N batches, P problems, G attempts, B = P G,
T turns, D parameters, C choices.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import stats as scipy_stats

from jaxcredit.analysis.snr_theory import trace_terms
from jaxcredit.arm_registry import CREDIT_ARMS, CreditContext, credit_arm, options_from_dict
from jaxcredit.credit import BASELINES
from jaxcredit.envs.routine import Routine, decision_layout, num_decisions_of
from jaxcredit.policy_fn import log_probabilities
from jaxcredit.rollout import rollout
from jaxcredit.validation import require_int

ESTIMATORS = ("outcome", "exact", "mc", "outcome-grpo", "outcome-rloo", "outcome-mean")
TURN_LEVEL = ("exact", "mc")  # the estimators whose SNR is compared with the outcome ones'
DEFAULT_DENSITIES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)


@dataclasses.dataclass(frozen=True)
class SnrConfig:
    """What `gradient_moments` measures. `num_batches` N must be a multiple of `num_blocks` J."""

    densities: tuple[float, ...] = DEFAULT_DENSITIES
    estimators: tuple[str, ...] = ("outcome", "exact", "mc")
    num_batches: int = 256
    num_blocks: int = 8
    problems_per_batch: int = 8
    group_size: int = 4
    baseline: str = "grpo"
    mc_continuations: int = 4
    seed: int = 0

    def __post_init__(self):
        require_int("snr.num_blocks", self.num_blocks, 2)
        require_int("snr.num_batches", self.num_batches, 2 * self.num_blocks)
        if self.num_batches % self.num_blocks:
            raise ValueError(f"snr.num_batches ({self.num_batches}) must be a multiple of num_blocks "
                             f"({self.num_blocks})")
        require_int("snr.problems_per_batch", self.problems_per_batch, 1)
        require_int("snr.group_size", self.group_size, 2)
        require_int("snr.mc_continuations", self.mc_continuations, 1)
        choices = (*ESTIMATORS, *(name for name in measurable_arms() if name not in ESTIMATORS))
        unknown = sorted(set(self.estimators) - set(choices))
        if unknown or "outcome" not in self.estimators or len(set(self.estimators)) != len(self.estimators):
            raise ValueError(f"snr.estimators must include outcome, without repeats, from {', '.join(choices)} "
                             "(outcome-X: the outcome estimator with baseline X); "
                             f"got {', '.join(self.estimators)}")
        if self.baseline not in BASELINES:
            raise ValueError(f"unknown outcome baseline {self.baseline!r}; choices: {', '.join(BASELINES)}")
        if len(self.densities) < 2 or any(not 0 < d <= 1 for d in self.densities):
            raise ValueError(f"snr needs at least two densities in (0, 1], got {list(self.densities)}")


def tabular_policy(env: Routine):
    """`(init_fn, policy_fn)` of a table of logits `[V + 1, X + 1, C]` indexed by the observation
    (progress, cue), V the token horizon and X the decision cues (C or D): every turn of an episode
    reads its own row (what the derivation assumes). `init_fn(key)` returns zeros: the uniform policy."""
    num_cues = env.vocab_size - env.token_horizon - 1
    shape = (env.token_horizon + 1, num_cues, env.num_choices)

    def init_fn(key):
        del key
        return {"table": jnp.zeros(shape, jnp.float32)}

    def policy_fn(params, observation, legal_action_mask):
        del legal_action_mask
        return params["table"][observation[..., 0], observation[..., 1] - (env.token_horizon + 1)]

    return init_fn, policy_fn


def measurable_arms() -> tuple[str, ...]:
    """The registered arms the study can measure: those without one-time work or a fitted value
    head (`prepare`, `fit_for_labels`), which it does not do."""
    return tuple(name for name, arm in CREDIT_ARMS.items() if arm.prepare is None and arm.fit_for_labels is None)


def outcome_baseline(name: str) -> str | None:
    """The outcome baseline of estimator `name` (`outcome-rloo` -> `rloo`), None when `name` is
    not an outcome estimator (a registered arm's name is that arm, whatever its spelling)."""
    if name == "outcome":
        return ""
    prefix, _, baseline = name.partition("-")
    return baseline if prefix == "outcome" and baseline in BASELINES and name not in CREDIT_ARMS else None


class ArmConfig(NamedTuple):
    """What the study's arms read of a run's config (`CreditContext.config`): the group size,
    their options, and the policy-gradient objective."""

    attempts_per_problem: int
    credit_options: Any
    objective: str = "pg"


def estimator_arm(name: str, config: SnrConfig):
    """`(arm, options)` of estimator `name`: `outcome` and `outcome-X` the outcome arm with
    baseline `config.baseline` or X; `mc` the mc arm's `q` variant with `config.mc_continuations`
    continuations per action; any other registered arm with its default options."""
    baseline = outcome_baseline(name)
    if baseline is not None:
        arm, fields = credit_arm("outcome"), {"baseline": baseline or config.baseline}
    else:
        arm, fields = credit_arm(name), _study_options(config).get(name, {})
    return arm, options_from_dict(arm, fields)


def _study_options(config: SnrConfig) -> dict:
    """`{arm: options}` the study sets on the built-in arms it measures (the others keep their defaults)."""
    return {"mc": {"variant": "q", "continuations": config.mc_continuations}}


def _advantages(env, policy_fn, params, trajectory, problems, key, *, config: SnrConfig):
    """float32 `[E, B, T]`: every configured estimator's advantages on one batch, each its arm's
    `compute` (`problems` `[P]`, the trajectory's groups of G; every arm reads the same `key`)."""
    out = []
    for name in config.estimators:
        arm, options = estimator_arm(name, config)
        arm_config = ArmConfig(config.group_size, options)
        if arm.check is not None:
            arm.check(options, arm_config)
        if arm.check_environment is not None:
            arm.check_environment(options, env)
        context = CreditContext(env, policy_fn, params, arm_config)
        out.append(arm.compute(context, trajectory, problems, key).advantage)
    return jnp.stack(out)


def _density_moments(env: Routine, policy_fn, params: Any, key: jax.Array, count: jax.Array, *, config: SnrConfig):
    """`(sums, sums_of_squares)`, float32 `[J, E, D]`, at one decision count (int `[]`). Consumes `key`."""
    flat, unravel = ravel_pytree(params)
    P, G = config.problems_per_batch, config.group_size
    per_block = config.num_batches // config.num_blocks
    answers = env.answers()

    def batch_gradients(key, count):
        problem_key, action_key, label_key = jax.random.split(key, 3)
        problems = jax.vmap(lambda k: decision_layout(k, horizon=env.horizon, num_decisions=count,
                                                      placement=env.placement, num_choices=env.num_choices,
                                                      answers=answers))(jax.random.split(problem_key, P))
        repeated = jax.tree_util.tree_map(lambda x: jnp.repeat(x, G, axis=0), problems)
        trajectory, _ = rollout(env, policy_fn, params, jax.vmap(env.init_problem)(repeated), action_key,
                                num_turns=env.max_turns)
        advantages = _advantages(env, policy_fn, params, trajectory, problems, label_key, config=config)

        def surrogate(theta, advantage):
            logits = policy_fn(unravel(theta), trajectory.observation, trajectory.legal_action_mask)
            log_prob = log_probabilities(logits, trajectory.legal_action_mask)
            taken = jnp.take_along_axis(log_prob, trajectory.action[..., None], axis=-1)[..., 0]
            return jnp.sum(jnp.where(trajectory.live, jax.lax.stop_gradient(advantage) * taken, 0.0)) / (P * G)

        return jax.vmap(jax.grad(surrogate), in_axes=(None, 0))(flat, advantages)  # [E, D]

    def block(key):
        grads = jax.vmap(batch_gradients, in_axes=(0, None))(jax.random.split(key, per_block), count)
        return jnp.sum(grads, axis=0), jnp.sum(grads**2, axis=0)

    return jax.lax.map(block, jax.random.split(key, config.num_blocks))


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "config"))
def gradient_moments(env: Routine, policy_fn, params: Any, num_decisions: jax.Array, *, config: SnrConfig):
    """`(sums, sums_of_squares)`, float32 `[R, J, E, D]`: per density (int32 `[R]` decision counts),
    block and estimator, the sum over the block's batches of the flattened gradient and of its square."""
    keys = jax.random.split(jax.random.key(config.seed), num_decisions.shape[0])
    return jax.lax.map(lambda args: _density_moments(env, policy_fn, params, *args, config=config),
                       (keys, num_decisions.astype(jnp.int32)))


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "config"))
def seeded_moments(env: Routine, policy_fn, params: Any, keys: jax.Array, *, config: SnrConfig):
    """`(sums, sums_of_squares)`, float32 `[N, J, E, D]` on `env` at its own decision count, one
    row per seed: `params` stacked on a leading seed axis `[N, ...]`, `keys` `[N]` (consumed)."""
    count = jnp.asarray(env.num_decisions, jnp.int32)
    return jax.lax.map(lambda args: _density_moments(env, policy_fn, args[0], args[1], count, config=config),
                       (params, keys))


def _snr(s1: np.ndarray, s2: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`(snr [...], median per-parameter snr [...])` from sums `[..., D]` over n batches."""
    mean = s1 / n
    var = np.maximum(s2 - n * mean**2, 0.0) / (n - 1)
    trace = var.sum(-1)
    snr = (np.sum(mean**2, -1) - trace / n) / np.where(trace > 0, trace, np.nan)
    moving = var > 0
    per = np.where(moving, (mean**2 - var / n) / np.where(moving, var, 1.0), np.nan)
    return snr, np.nanmedian(np.where(moving.any(-1, keepdims=True), per, 0.0), axis=-1)


def fit_loglog(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """`(slope, intercept, R²)` of the least-squares line of `log y` on `log x` (finite, positive y)."""
    lx, ly = np.log(x), np.log(y)
    slope, intercept = np.polyfit(lx, ly, 1)
    residual = ly - (slope * lx + intercept)
    total = np.sum((ly - ly.mean()) ** 2)
    return float(slope), float(intercept), float(1 - residual @ residual / total) if total > 0 else 1.0


def snr_summary(sums: np.ndarray, squares: np.ndarray, *, config: SnrConfig, densities: np.ndarray) -> dict:
    """The table and fits of `gradient_moments`' output (host, float64). See the module docstring."""
    sums, squares = np.asarray(sums, np.float64), np.asarray(squares, np.float64)
    J, N = config.num_blocks, config.num_batches
    snr, median = _snr(sums.sum(1), squares.sum(1), N)  # [R, E]
    leave_out = [_snr(sums.sum(1) - sums[:, j], squares.sum(1) - squares[:, j], N - N // J)[0] for j in range(J)]
    names = list(config.estimators)
    out = {"densities": densities.tolist(), "estimators": names, "snr": {}, "median_parameter_snr": {}, "ratio": {},
           "fit": {}}
    for e, name in enumerate(names):
        out["snr"][name] = snr[:, e].tolist()
        out["median_parameter_snr"][name] = median[:, e].tolist()
    t = scipy_stats.t.ppf(0.975, J - 1)
    o = names.index("outcome")
    for e, name in enumerate(names):
        if name.startswith("outcome"):
            continue
        ratio = snr[:, e] / snr[:, o]
        out["ratio"][f"{name}/outcome"] = ratio.tolist()
        if not (np.isfinite(ratio).all() and (ratio > 0).all()):
            out["fit"][f"{name}/outcome"] = None  # a non-positive SNR (no signal measured): no log-log fit
            continue
        slope, intercept, r2 = fit_loglog(densities, ratio)
        jack = np.array([fit_loglog(densities, r[:, e] / r[:, o])[0] if np.all(r[:, e] / r[:, o] > 0) else np.nan
                         for r in leave_out])
        se = float(np.sqrt((J - 1) / J * np.nansum((jack - np.nanmean(jack)) ** 2)))
        out["fit"][f"{name}/outcome"] = {"slope": slope, "intercept": intercept, "r2": r2, "slope_se": se,
                                         "slope_low": slope - t * se, "slope_high": slope + t * se}
    return out


def predicted_ratio(*, horizon: int, num_decisions: int, num_choices: int, failure: str, survival: float,
                    group_size: int, placement: str, cue: str = "right") -> float:
    """SNR(exact) / SNR(outcome) for the tabular policy at uniform init with the rloo (or mean)
    baseline, from the closed form in docs/density.md (exact, not an approximation)."""
    terms = trace_terms(horizon=horizon, num_decisions=num_decisions, num_choices=num_choices, failure=failure,
                        survival=survival, group_size=group_size, placement=placement, cue=cue)
    return float(terms["outcome"] / terms["exact"])


def predicted_slope(env: Routine, densities, *, group_size: int) -> tuple[float, list[float]]:
    """`(slope, ratios)`: the log-log least-squares slope of `predicted_ratio` against the realised
    densities D / H of `densities`."""
    counts = [num_decisions_of(d, env.horizon) for d in densities]
    ratios = [predicted_ratio(horizon=env.horizon, num_decisions=count, num_choices=env.num_choices,
                              failure=env.failure, survival=env.survival, group_size=group_size,
                              placement=env.placement, cue=env.cue) for count in counts]
    return fit_loglog(np.asarray(counts, np.float64) / env.horizon, np.asarray(ratios))[0], ratios


def decision_counts(densities, horizon: int) -> list[int]:
    """The decision count of every density; raises `ValueError` for one that rounds to 0."""
    counts = [num_decisions_of(d, horizon) for d in densities]
    if min(counts) < 1:
        raise ValueError(f"density {densities[counts.index(min(counts))]:g} x horizon {horizon} rounds "
                         f"to 0 decisions; use densities >= {0.5 / horizon:g}")
    return counts


def measure_snr(env: Routine, policy_fn, params: Any, config: SnrConfig) -> dict:
    """Run `gradient_moments` on `env` (its density is ignored: the grid is `config.densities`) and
    summarise it. Raises `ValueError` for a density that rounds to no decision at this horizon."""
    counts = decision_counts(config.densities, env.horizon)
    sums, squares = gradient_moments(env, policy_fn, params, jnp.asarray(counts), config=config)
    realised = np.asarray(counts, np.float64) / env.horizon  # D / H: the fit's x (0.2 x 16 gives 3/16)
    summary = snr_summary(jax.device_get(sums), jax.device_get(squares), config=config, densities=realised)
    summary["requested_densities"] = list(config.densities)
    summary["num_decisions"] = counts
    return summary


def plot_ratio(summary: dict, path: str, *, title: str = "") -> str:
    """Write the log-log plot of each estimator's SNR ratio to outcome against ρ, with its fitted
    line (slope, interval, R² in the legend) and the predicted curve when present. Returns `path`."""
    from jaxcredit.analysis.plots import plt, save_figure  # pyplot on the Agg backend

    densities = np.asarray(summary["densities"])
    figure, axis = plt.subplots(figsize=(5.5, 4))
    for (name, ratio), marker in zip(summary["ratio"].items(), "os^"):
        fit = summary["fit"].get(name)
        label = name
        if fit:
            label += (f": slope {fit['slope']:.2f} [{fit['slope_low']:.2f}, {fit['slope_high']:.2f}], "
                      f"R² {fit['r2']:.3f}")
            axis.plot(densities, np.exp(fit["intercept"]) * densities ** fit["slope"], "--", color="grey", lw=1)
        axis.plot(densities, np.where(np.asarray(ratio, float) > 0, ratio, np.nan), marker, label=label)
    predicted = summary.get("predicted")
    if predicted:
        axis.plot(densities, predicted["exact/outcome"], "k:", label=f"predicted exact/outcome: slope "
                  f"{predicted['slope']:.2f}")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("decision density ρ")
    axis.set_ylabel("SNR(estimator) / SNR(outcome)")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=7)
    return save_figure(figure, path, dpi=120)


def aligned_rows(rows: list[list[str]]) -> list[str]:
    """Host: text rows of cells, each column right-aligned to its widest cell, two spaces apart."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(r, widths)) for r in rows]


def format_table(summary: dict) -> str:
    """Host: the summary as a plain-text table, one row per density, then the fits."""
    names = summary["estimators"]
    head = ["asked", "D", "rho=D/H"] + [f"SNR {n}" for n in names] + [f"median {n}" for n in names]
    head += list(summary["ratio"])
    rows = [head]
    for i, d in enumerate(summary["densities"]):
        row = [f"{summary['requested_densities'][i]:g}", str(summary["num_decisions"][i]), f"{d:.4g}"]
        row += [f"{summary['snr'][n][i]:.4g}" for n in names]
        row += [f"{summary['median_parameter_snr'][n][i]:.3g}" for n in names]
        row += [f"{r[i]:.3g}" for r in summary["ratio"].values()]
        rows.append(row)
    lines = aligned_rows(rows)
    for name, fit in summary["fit"].items():
        if fit is None:
            lines.append(f"{name}: no fit (a non-positive SNR)")
        else:
            lines.append(f"{name}: log-log slope {fit['slope']:.3f}, 95% interval [{fit['slope_low']:.3f}, "
                         f"{fit['slope_high']:.3f}] (jackknife over blocks), R² {fit['r2']:.3f}")
    if summary.get("predicted"):
        p = summary["predicted"]
        lines.append(f"predicted exact/outcome ({p['model']}): {', '.join(f'{r:.3g}' for r in p['exact/outcome'])}; "
                     f"slope {p['slope']:.3f}")
    return "\n".join(lines)


def run_snr(env: Routine, policy_fn, params: Any, config: SnrConfig, *, policy: str) -> dict:
    """`measure_snr` plus the run's description, its wall time and, for the tabular policy with the
    rloo or mean baseline, the predicted ratios and slope (`predicted_ratio`)."""
    import time

    start = time.perf_counter()
    summary = measure_snr(env, policy_fn, params, config)
    summary["seconds"] = round(time.perf_counter() - start, 2)
    summary["config"] = {**dataclasses.asdict(config), "policy": policy, "env": {
        k: v for k, v in env.config().items() if k != "density"}}
    if policy == "tabular" and config.baseline in ("rloo", "mean"):
        slope, ratios = predicted_slope(env, config.densities, group_size=config.group_size)
        summary["predicted"] = {"model": "tabular policy at uniform init, rloo/mean baseline (docs/density.md)",
                                "exact/outcome": ratios, "slope": slope}
    return summary
