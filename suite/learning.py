"""Learning experiments: every arm trained through a sweep, scored by the area under its curve.

A setting of a `learning` experiment is one sweep (`jaxcredit.train.sweep.run_sweep`) with the
suite's arms and the regimes `attempts` and `fixed-steps`, so it resumes and runs on the sweep
backends like any sweep. Per arm, seed and regime the score is

    AUC = ∫₀¹ success(x) dx / optimal success,   x = budget counter / budget,

the trapezoid area under the greedy success on the evaluation problems (the evaluation before
training at x = 0, then every `budget / num_evals`), divided by the mean exact optimal success of
those problems from their start (`reference_values(policy="optimal")`), clipped to [0, 1]. An arm
that solves every problem from the first update scores 1; one that never learns scores its
untrained success.

Shape letters: E evaluation problems.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxcredit.rundir_io import read_jsonl
from jaxcredit.solver import start_position
from jaxcredit.solver_values import reference_values
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.loop import make_train
from jaxcredit.train.sweep import SweepSpec, run_sweep

REGIMES = ("attempts", "fixed-steps")
REGIME_TAGS = {"attempts": "equal-attempts", "fixed-steps": "equal-cost"}
_COUNTERS = {"attempts": "main_episodes", "fixed-steps": "total_env_steps"}


def setting_spec(experiment, setting: dict, arms: dict) -> SweepSpec:
    """The sweep of one setting: the experiment's config with the setting's env overrides, every arm."""
    base = {**experiment.config, "env_overrides": dict(setting), "num_seeds": experiment.seeds}
    return SweepSpec(name=f"suite/{experiment.name}", description=experiment.description, base=base,
                     arms={name: dict(fields) for name, fields in arms.items()},
                     budgets={r: experiment.budgets[r] for r in REGIMES}, reference_arm=next(iter(arms)),
                     regimes=REGIMES)


def optimal_success(config_fields: dict) -> float:
    """Mean exact optimal success, from the start, of the evaluation problems of `config_fields`
    (every family's set together)."""
    trainer = make_train(config_from_dict({**config_fields, "credit": "outcome"}))
    env = trainer.env

    @jax.jit
    def value(problems):
        def one(problem):
            values, _ = reference_values(env, problem, policy="optimal")
            return values.v[env.max_turns, start_position(env, problem)]
        return jax.vmap(one)(problems)

    return float(np.mean(np.concatenate([np.asarray(value(p)) for p in trainer.eval_sets.values()])))


def curve_auc(rows: list[dict], counter: str, budget: int, metric: str = "success_greedy") -> dict:
    """`{seed_index: AUC}`: the trapezoid area of `metric` over `counter / budget` in [0, 1] per seed
    (the last evaluation is extended to x = 1 when a run ended below its budget; a run that
    overshot is cut at 1)."""
    out = {}
    for seed in sorted({r["seed_index"] for r in rows}):
        mine = sorted((r for r in rows if r["seed_index"] == seed), key=lambda r: r["eval_index"])
        x = np.clip(np.asarray([r[counter] for r in mine], np.float64) / budget, 0.0, None)
        y = np.asarray([r[metric] for r in mine], np.float64)
        x[0] = 0.0
        if x[-1] < 1.0:
            x, y = np.append(x, 1.0), np.append(y, y[-1])
        keep = x <= 1.0
        cut_x, cut_y = x[keep], y[keep]
        if cut_x[-1] < 1.0:  # interpolate the crossing of x = 1
            j = int(np.argmax(~keep))
            frac = (1.0 - x[j - 1]) / (x[j] - x[j - 1])
            cut_x, cut_y = np.append(cut_x, 1.0), np.append(cut_y, y[j - 1] + frac * (y[j] - y[j - 1]))
        out[seed] = float(np.sum((cut_x[1:] - cut_x[:-1]) * (cut_y[1:] + cut_y[:-1]) / 2))
    return out


def run_setting(experiment, index: int, arms: dict, out: str, *, resume: bool, progress: bool,
                backend: str = "local", ray_address: str | None = None, plugins: tuple = ()) -> dict:
    """Train every arm on setting `index` into `out` (a sweep directory) and score it.

    Returns `{"optimal_success", "scores": {regime: {arm: [AUC per seed]}}}`.
    """
    setting = experiment.settings[index]
    spec = setting_spec(experiment, setting, arms)
    run_sweep(spec, out, resume=resume and os.path.exists(os.path.join(out, "sweep_spec.json")),
              progress=progress, backend=backend, ray_address=ray_address, plugins=tuple(plugins))
    best = optimal_success(spec.base)
    scores = {}
    for regime in REGIMES:
        scores[regime] = {}
        for arm in arms:
            rows = read_jsonl(os.path.join(out, regime, arm, "metrics.jsonl"))
            auc = curve_auc(rows, _COUNTERS[regime], experiment.budgets[regime])
            scores[regime][arm] = [float(np.clip(auc[s] / best, 0.0, 1.0)) if best > 0 else 0.0 for s in sorted(auc)]
    return {"optimal_success": best, "scores": scores}
