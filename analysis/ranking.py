"""The ranking study: do progress labels rank decorative steps above load-bearing ones, compared
with exact counterfactual credit, and on which steps do the two disagree?

On the steps of a fixed policy's own episodes, every live step gets three **progress labels**
`Φ(h_{t+1}) − Φ(h_t)`, each its credit arm's label (`progress-soft`, `progress-hard`,
`progress-model`); the **exact counterfactual credit** `Δ_t` under every replacement the
environment allows (`credit.REPLACEMENTS`); and an **action class** (`RANK_CLASSES`: `decorative`
for the environment's decorative actions, else its on-policy Δ's class, `neutral` for a task
action within the tolerance). `ranking_measures` gives, per label, replacement and class, the
suite's label measures (`analysis.label_measures`), the mean label per class, the share of
decorative steps ranked above the median load-bearing step, and where labels and Δ disagree most.
`progress-model`'s value head is fitted here as the trainer fits it. See docs/ranking.md.

Shape letters: B episodes, T turns, A actions, n live steps.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxcredit.analysis.classes import CLASSES, classify_actions, decorative_tolerance
from jaxcredit.analysis.exact import exact_step_values
from jaxcredit.analysis.label_measures import label_measures
from jaxcredit.credit import REPLACEMENTS, branch_state_progress_kinds, progress_advantage, replacement_value
from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext, ProgressModelOptions
from jaxcredit.env import Environment
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.rollout import Trajectory, rollout
from jaxcredit.stats import t_interval
from jaxcredit.value_fit import critic_loss, full_batch_adam

RANK_CLASSES = ("load-bearing", "decorative", "harmful-but-recovered", "harmful", "neutral")
PROGRESS_LABELS = ("progress-soft", "progress-hard", "progress-model")
FIT_STEPS = 200
FIT_LEARNING_RATE = 1e-3
MAX_GRAD_NORM = 1.0  # the trainer's default clipping


class _ArmConfig(NamedTuple):
    """What the progress arms read of a run's config (`CreditContext.config`)."""

    credit_options: Any
    attempts_per_problem: int = 1
    objective: str = "pg"


def reference_name(replacement: str) -> str:
    """The label kind of exact credit under `replacement`: `"Δ on-policy"`, ..."""
    return f"Δ {replacement}"


def replacements_of(env: Environment) -> tuple[str, ...]:
    """The replacements `env` allows: all of `REPLACEMENTS`, without `null` when it has no null action."""
    return tuple(r for r in REPLACEMENTS if r != "null" or env.null_action is not None)


def check_decorative(env: Environment, *, label: str = "the ranking study") -> None:
    """Raise `ValueError` unless `env` has a decorative action (`decorative_action_mask`)."""
    if not np.asarray(env.decorative_action_mask()).any():
        raise ValueError(f"{label}: environment {env.name!r} as configured has no decorative actions, so there is no "
                         "decorative class to rank (MAD: set decorative_actions >= 1)")


# ----- classes and exact credit -------------------------------------------------------------------
def step_classes(action: np.ndarray, decorative_mask: np.ndarray, credit: np.ndarray, value: np.ndarray,
                 live: np.ndarray, success: np.ndarray) -> np.ndarray:
    """int32 `[B, T]`: the index in `RANK_CLASSES` of every live step, -1 elsewhere.

    `action` int `[B, T]`, `decorative_mask` bool `[A]` (the environment's decorative actions),
    `credit` float `[B, T]` (on-policy exact Δ), `value` float `[B, T]` (exact `V(s_t)`), `live`
    bool `[B, T]`, `success` bool `[B]`. A step that took a decorative action is `decorative`
    whatever its Δ; any other gets `classify_actions`' class, its `decorative` renamed `neutral`.
    """
    action = np.asarray(action)
    mask = np.asarray(decorative_mask, bool)
    by_credit = classify_actions(credit, value, live, success)
    rename = np.array([RANK_CLASSES.index("neutral" if name == "decorative" else name) for name in CLASSES])
    classes = np.where(by_credit >= 0, rename[np.maximum(by_credit, 0)], -1)
    in_range = (action >= 0) & (action < mask.shape[0])
    took_decorative = in_range & mask[np.clip(action, 0, mask.shape[0] - 1)]
    return np.where(np.asarray(live, bool) & took_decorative, RANK_CLASSES.index("decorative"),
                    classes).astype(np.int32)


def counterfactual_credit(env: Environment, trajectory: Trajectory, values: dict) -> dict:
    """`{replacement: float32 [B, T]}`: `Q(s_t, a_t) − E_{a' ~ ρ}[Q(s_t, a')]` for every replacement
    of `replacements_of(env)`, from exact values (`exact_step_values`: `v` `[B, T]`, `q` `[B, T, A]`,
    `refused` `[B, T]`); a refused action is valued as `exact_credit` values it. 0 off live steps."""
    action = np.asarray(trajectory.action)
    legal_mask = np.asarray(trajectory.legal_action_mask)
    safe = np.clip(action, 0, legal_mask.shape[-1] - 1)
    legal = np.take_along_axis(legal_mask, safe[..., None], axis=-1)[..., 0] & (action == safe)
    chosen = np.where(legal, np.take_along_axis(values["q"], safe[..., None], axis=-1)[..., 0], values["refused"])
    live = np.asarray(trajectory.live)
    out = {}
    for replacement in replacements_of(env):
        baseline = np.asarray(replacement_value(trajectory, jnp.asarray(values["q"]), replacement=replacement,
                                                on_policy_value=jnp.asarray(values["v"]),
                                                null_action=env.null_action))
        out[replacement] = np.where(live, chosen - baseline, 0.0).astype(np.float32)
    return out


# ----- progress labels ----------------------------------------------------------------------------
@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "value_fn", "continuations"))
def _progress(env, policy_fn, value_fn, params, value_params, trajectory, key, *, continuations):
    # soft and hard from one set of continuations: what each arm's compute gives with this key
    phi, _ = branch_state_progress_kinds(env, policy_fn, params, trajectory, key, num_continuations=continuations)
    labels = {f"progress-{kind}": progress_advantage(trajectory, progress=phi[kind]) for kind in phi}
    context_ = _context(env, policy_fn, value_params, ProgressModelOptions(), value_fn)
    labels["progress-model"] = CREDIT_ARMS["progress-model"].compute(context_, trajectory, None, key).advantage
    return labels


def _context(env, policy_fn, params, options, value_fn=None):
    return CreditContext(env, policy_fn, params, _ArmConfig(options), value_fn=value_fn)


def progress_labels(env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
                    continuations: int, value_fn: PolicyFn, value_params: Any) -> dict:
    """`{label: float32 [B, T]}` of `PROGRESS_LABELS` on `trajectory`: soft and hard from one set of
    `continuations` continuations per state under `policy_fn` (`credit.branch_state_progress_kinds`,
    then `credit.progress_advantage`: each equal to its arm's `compute` with `key`), learned from
    the `progress-model` arm's `compute` with `value_fn` and `value_params`. Consumes `key`."""
    labels = _progress(env, policy_fn, value_fn, params, value_params, trajectory, key, continuations=continuations)
    return {name: np.asarray(labels[name]) for name in PROGRESS_LABELS}


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "value_fn", "steps"))
def _fit(env, policy_fn, value_fn, params, trajectory, learning_rate, *, steps):
    context_ = _context(env, policy_fn, params, ProgressModelOptions(), value_fn)
    batch = CREDIT_ARMS["progress-model"].compute(context_, trajectory, None, jax.random.key(0)).critic_batch

    def loss(p):
        return critic_loss(value_fn, p, batch, context_.options.coef)

    params, losses = full_batch_adam(loss, params, steps=steps, learning_rate=learning_rate,
                                     max_grad_norm=MAX_GRAD_NORM)
    return params, jnp.append(losses, loss(params))


def fit_value_head(env: Environment, policy_fn: PolicyFn, value_fn: PolicyFn, params: Any, trajectory: Trajectory,
                   *, steps: int = FIT_STEPS, learning_rate: float = FIT_LEARNING_RATE) -> tuple[Any, np.ndarray]:
    """`(fitted params, losses float [steps + 1])`: `steps` full-batch Adam steps from `params` on the
    `progress-model` arm's critic batch of `trajectory` (`[B, T]`: every live state, target its return
    to go), the trainer's squared-error loss; the losses before each step and after the last."""
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"fit steps must be an integer >= 0, got {steps!r}")
    fitted, losses = _fit(env, policy_fn, value_fn, params, trajectory, learning_rate, steps=steps)
    return fitted, np.asarray(losses)


# ----- the steps of one policy --------------------------------------------------------------------
def rank_trajectory(env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
                    continuations: int, value_fn: PolicyFn, value_params: Any) -> dict:
    """Host: every live step of `trajectory` (`[B, T]`, episodes of π = `policy_fn` with `params`) with
    its class, its labels and its exact credit. Consumes `key` (the progress continuations).

    Returns flat NumPy arrays over the n live steps: `class` int32 `[n]` (index in `RANK_CLASSES`),
    `value` `[n]` (exact `V(s_t)`), `episode`, `turn`, `action` int32 `[n]`, `labels` `{label: [n]}`
    and `references` `{replacement: [n]}` (Δ)."""
    check_decorative(env)
    values = exact_step_values(env, trajectory, reference="policy", policy_fn=policy_fn, params=params)
    references = counterfactual_credit(env, trajectory, values)
    labels = progress_labels(env, policy_fn, params, trajectory, key, continuations=continuations,
                             value_fn=value_fn, value_params=value_params)
    live = np.asarray(trajectory.live)
    success = np.asarray(env.episode_success(trajectory.final_state, trajectory.episode_return))
    classes = step_classes(trajectory.action, env.decorative_action_mask(), references["on-policy"], values["v"],
                           live, success)
    episode = np.broadcast_to(np.arange(live.shape[0])[:, None], live.shape)
    return {"class": classes[live], "value": values["v"][live], "episode": episode[live].astype(np.int32),
            "turn": np.asarray(trajectory.turn)[live], "action": np.asarray(trajectory.action)[live],
            "labels": {k: v[live] for k, v in labels.items()},
            "references": {k: v[live] for k, v in references.items()}}


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "episodes"))
def _episodes(env, policy_fn, params, key, *, episodes):
    problem_key, action_key = jax.random.split(key)
    starts = jax.vmap(env.init)(jax.random.split(problem_key, episodes))
    return rollout(env, policy_fn, params, starts, action_key, num_turns=env.max_turns)[0]


def collect_steps(env: Environment, policy_fn: PolicyFn, params: Any, key: jax.Array, *, value_fn: PolicyFn,
                  episodes: int, continuations: int, fit_steps: int = FIT_STEPS,
                  fit_learning_rate: float = FIT_LEARNING_RATE) -> dict:
    """Host: `rank_trajectory` on `episodes` fresh episodes of π (problems from `env.init`), the learned
    label's value head fitted (`fit_value_head`) on a second, independent batch of as many.
    Consumes `key`. Returns `rank_trajectory`'s dict plus `fit_loss` (first and last)."""
    check_decorative(env)
    episode_key, fit_key, label_key = jax.random.split(key, 3)
    fitting = _episodes(env, policy_fn, params, fit_key, episodes=episodes)
    value_params, losses = fit_value_head(env, policy_fn, value_fn, params, fitting, steps=fit_steps,
                                          learning_rate=fit_learning_rate)
    trajectory = _episodes(env, policy_fn, params, episode_key, episodes=episodes)
    steps = rank_trajectory(env, policy_fn, params, trajectory, label_key, continuations=continuations,
                            value_fn=value_fn, value_params=value_params)
    steps["fit_loss"] = [float(losses[0]), float(losses[-1])]
    return steps


def pool_steps(parts: list[dict]) -> dict:
    """The steps of several policies (`rank_trajectory` dicts) as one set; `episode` numbers run on."""
    if not parts:
        raise ValueError("pool_steps needs at least one set of steps")
    offsets = np.cumsum([0] + [int(p["episode"].max()) + 1 if p["episode"].size else 0 for p in parts[:-1]])
    out = {name: np.concatenate([p[name] for p in parts]) for name in ("class", "value", "turn", "action")}
    out["episode"] = np.concatenate([p["episode"] + offset for p, offset in zip(parts, offsets)])
    for group in ("labels", "references"):
        out[group] = {k: np.concatenate([p[group][k] for p in parts]) for k in parts[0][group]}
    return out


def run_ranking(policies: dict, *, seed: int = 0, episodes: int = 256, continuations: int = 8,
                fit_steps: int = FIT_STEPS, progress: bool = True) -> dict:
    """Host: the study of every policy. `policies` maps a name to a list of loaded checkpoints
    (`jaxcredit.checkpoint.PolicyCheckpoint`: `path`, `policy_fn`, `params`, `info["value_fn"]`,
    `env`; several: e.g. a sweep cell's seeds, all on one environment, their steps pooled).
    Checkpoint i of the whole list uses `fold_in(key(seed), i)`. Returns
    `{"config", "policies": {name: {"checkpoints", "env", "steps_per_checkpoint", "fit_loss",
    **ranking_measures}}, "seconds"}`; a tqdm bar on stderr counts the checkpoints (`progress`)."""
    import sys
    import time

    from tqdm.auto import tqdm

    for name, loaded in policies.items():
        if not loaded:
            raise ValueError(f"policy {name!r}: no checkpoints")
        envs = {checkpoint.env for checkpoint in loaded}
        if len(envs) > 1:
            raise ValueError(f"policy {name!r}: its checkpoints are of different environments")
        check_decorative(loaded[0].env, label=f"policy {name!r}")
    started = time.time()
    key = jax.random.key(seed)
    out = {"config": {"seed": seed, "episodes": episodes, "continuations": continuations, "fit_steps": fit_steps,
                      "fit_learning_rate": FIT_LEARNING_RATE}, "policies": {}}
    total = sum(len(loaded) for loaded in policies.values())
    index = 0
    with tqdm(total=total, desc="rank", unit="policy", file=sys.stderr, disable=not progress) as bar:
        for name, loaded in policies.items():
            parts, losses = [], []
            for checkpoint in loaded:
                steps = collect_steps(checkpoint.env, checkpoint.policy_fn, checkpoint.params,
                                      jax.random.fold_in(key, index), value_fn=checkpoint.info["value_fn"],
                                      episodes=episodes, continuations=continuations, fit_steps=fit_steps)
                losses.append(steps.pop("fit_loss"))
                parts.append(steps)
                index += 1
                bar.update(1)
            env = loaded[0].env
            out["policies"][name] = {"checkpoints": [c.path for c in loaded], "env": {"name": env.name, **env.config()},
                                     "replacements": list(replacements_of(env)),
                                     "steps_per_checkpoint": [int(p["class"].size) for p in parts],
                                     "fit_loss": losses, **ranking_measures(pool_steps(parts)),
                                     "across_checkpoints": across_checkpoints(parts)}
    out["seconds"] = round(time.time() - started, 1)
    return out


# ----- the measures (pure) ------------------------------------------------------------------------
def _spread(values: list) -> dict:
    """`{"values", "n", "mean", "low", "high"}` of the non-None `values` (a 95% Student-t interval of
    their mean; `low`/`high` None under 2 values)."""
    kept = [float(v) for v in values if v is not None]
    out = {"values": kept, "n": len(kept), "mean": float(np.mean(kept)) if kept else None, "low": None, "high": None}
    if len(kept) >= 2:
        _, low, high = t_interval(np.asarray(kept))
        out.update(low=float(low), high=float(high))
    return out


def across_checkpoints(parts: list[dict]) -> dict:
    """The headline measures checkpoint by checkpoint (each checkpoint an independent training seed),
    and their mean over checkpoints with a 95% t interval: `{"n", "decorative_above_median": {kind:
    spread}, "mean_label": {kind: {class: spread}}}` (`_spread`; a checkpoint without the class is
    left out of that class's n)."""
    each = [ranking_measures(part) for part in parts]
    kinds = list(each[0]["mean_label"]) if each else []
    return {"n": len(each),
            "decorative_above_median": {k: _spread([m["decorative_above_median"][k] for m in each]) for k in kinds},
            "mean_label": {k: {c: _spread([m["mean_label"][k][c] for m in each]) for c in RANK_CLASSES}
                           for k in kinds}}



def _mean(x: np.ndarray) -> float | None:
    return float(np.mean(x)) if x.size else None


def above_median_share(label: np.ndarray, classes: np.ndarray) -> float | None:
    """The share of decorative steps whose `label` (`[n]`) is strictly above the median label of the
    load-bearing steps (`classes` int `[n]`, indices in `RANK_CLASSES`); None without either class."""
    decorative = label[classes == RANK_CLASSES.index("decorative")]
    load_bearing = label[classes == RANK_CLASSES.index("load-bearing")]
    if not decorative.size or not load_bearing.size:
        return None
    return float(np.mean(decorative > np.median(load_bearing)))


def percentile_ranks(x: np.ndarray) -> np.ndarray:
    """float `[n]`: each entry's rank among all n (ties averaged), divided by n: in (0, 1]."""
    x = np.asarray(x, np.float64)
    return stats.rankdata(x) / max(x.size, 1)


def ranking_measures(steps: dict) -> dict:
    """The study's measures of one set of steps (`rank_trajectory` or `pool_steps`), JSON-able.

    Returns `steps`, `class_counts {class: n}`, `mean_label {kind: {class: mean or None}}` (kinds: the
    progress labels and `Δ <replacement>`), `measures {label: {replacement: {"all" | class:
    label_measures}}}` (the sign counted where `|Δ| > ε_t`, the action-class tolerance of `V(s_t)`),
    `decorative_above_median {kind: share}` (`above_median_share`) and `disagreement {label:
    {replacement: {"rank_gap": {class: gap}, "sign_disagreement": {class: 1 − agreement},
    "order": [classes], "top": class}}}`: the gap is the class's mean percentile rank under the
    label minus under Δ (positive: the label ranks the class higher), `order` sorts the classes
    present by its size, largest first.
    """
    classes = np.asarray(steps["class"])
    labels, references = steps["labels"], steps["references"]
    tolerance = decorative_tolerance(steps["value"])
    present = [c for c in RANK_CLASSES if (classes == RANK_CLASSES.index(c)).any()]
    masks = {c: classes == RANK_CLASSES.index(c) for c in RANK_CLASSES}
    kinds = {**labels, **{reference_name(r): x for r, x in references.items()}}
    out = {"steps": int(classes.size), "class_counts": {c: int(m.sum()) for c, m in masks.items()},
           "mean_label": {k: {c: _mean(np.asarray(x)[masks[c]]) for c in RANK_CLASSES} for k, x in kinds.items()},
           "decorative_above_median": {k: above_median_share(np.asarray(x), classes) for k, x in kinds.items()},
           "measures": {}, "disagreement": {}}
    for name, label in labels.items():
        label = np.asarray(label, np.float64)
        label_rank = percentile_ranks(label)
        out["measures"][name], out["disagreement"][name] = {}, {}
        for replacement, delta in references.items():
            delta = np.asarray(delta, np.float64)
            signed = np.abs(delta) > tolerance
            per = {"all": label_measures(label, delta, signed)}
            per.update({c: label_measures(label[masks[c]], delta[masks[c]], signed[masks[c]]) for c in RANK_CLASSES})
            out["measures"][name][replacement] = per
            delta_rank = percentile_ranks(delta)
            gap = {c: float(np.mean(label_rank[masks[c]] - delta_rank[masks[c]])) for c in present}
            sign = {c: None if per[c]["sign_agreement"] is None else 1.0 - per[c]["sign_agreement"] for c in present}
            order = sorted(present, key=lambda c: -abs(gap[c]))
            out["disagreement"][name][replacement] = {"rank_gap": gap, "sign_disagreement": sign, "order": order,
                                                      "top": order[0] if order else None}
    return out


__all__ = ["FIT_LEARNING_RATE", "FIT_STEPS", "PROGRESS_LABELS", "RANK_CLASSES", "above_median_share",
           "check_decorative", "collect_steps", "counterfactual_credit", "fit_value_head", "percentile_ranks",
           "pool_steps", "progress_labels", "rank_trajectory", "ranking_measures", "reference_name",
           "replacements_of", "run_ranking", "step_classes"]
