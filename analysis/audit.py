"""Label reliability audits: how far Monte Carlo action credit can be trusted, against exact values.

`run_audit` plays the policy's own episodes (one per problem), samples one live state from each,
and, in the forced mode, estimates every legal action's credit `Q̂(s, a) − V̂(s)` with K
continuations per action, run as two independent halves; the sampled mode (`audit_sampled.py`)
runs completions under the policy itself, and `mode="both"` runs both on the same states. The
forced mode reports the sign agreement of the largest-magnitude credit between the halves, the
split-half correlation (with its Spearman-Brown projection), the Monte Carlo error against the
exact values as K grows, where the exact credit sits (before the final action or not), the
episodes' action classes (`classes.py`) and, on arithmetic, the FINAL-context rates
(`final_context.py`). See docs/analysis.md#audit-analysisauditpy-run_audit.

Shape letters: N sampled states, A actions, K continuations, B episodes, T turns.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.afterstate import policy_observations
from jaxcredit.analysis.classes import (
    ABSOLUTE_TOLERANCE,
    RELATIVE_TOLERANCE,
    class_summary,
    classify_actions,
)
from jaxcredit.analysis.exact import exact_credit, exact_step_values
from jaxcredit.analysis.final_context import final_context_summary
from jaxcredit.env import Environment
from jaxcredit.policy_fn import PolicyFn, action_probabilities
from jaxcredit.rollout import branch_returns, rollout


def sign_agreement(credit_a: np.ndarray, credit_b: np.ndarray, valid: np.ndarray,
                   valid_b: np.ndarray | None = None) -> dict:
    """Sign agreement of the largest-magnitude credit between two independent estimates.

    `credit_a`, `credit_b` float `[N, A]`, `valid` bool `[N, A]`. For each state, the action with
    the largest `|credit_a|` is looked up in `credit_b` and the signs compared, and the same with
    the halves swapped; a state whose selecting half is all zero has no signal and is skipped, a
    zero in the other half counts as disagreement. With `valid_b` (bool `[N, A]`), `valid` is
    where `credit_a` is defined and `valid_b` where `credit_b` is (the sampled audit: the actions
    each half took); each half chooses among its own, and a choice the other half does not have
    is not compared (`num_unmatched`, over both directions). Returns `{"agreement",
    "num_compared"}` (agreement NaN when nothing could be compared).
    """
    credit_a, credit_b, valid = np.asarray(credit_a), np.asarray(credit_b), np.asarray(valid, bool)
    valid_b = valid if valid_b is None else np.asarray(valid_b, bool)
    agree, compared, unmatched = 0, 0, 0
    for chooser, other, mine, theirs in ((credit_a, credit_b, valid, valid_b), (credit_b, credit_a, valid_b, valid)):
        magnitude = np.where(mine, np.abs(chooser), -1.0)
        top = np.argmax(magnitude, axis=1)
        rows = np.arange(chooser.shape[0])
        signal = magnitude[rows, top] > 0
        matched = signal & theirs[rows, top]
        agree += int((np.sign(chooser[rows, top]) == np.sign(other[rows, top]))[matched].sum())
        compared += int(matched.sum())
        unmatched += int((signal & ~matched).sum())
    extra = {} if valid_b is valid else {"num_unmatched": unmatched}
    if not compared:
        return {"agreement": float("nan"), "agreement_reason": "no state had a nonzero credit to compare",
                "num_compared": 0, **extra}
    return {"agreement": agree / compared, "num_compared": compared if extra else compared // 2, **extra}


def split_half_correlation(credit_a: np.ndarray, credit_b: np.ndarray, valid: np.ndarray) -> dict:
    """Pearson correlation of two halves' credits over the valid entries, and its Spearman-Brown
    projection `2r / (1 + r)` to the estimate from both halves together. NaN without variance."""
    a = np.asarray(credit_a, np.float64)[np.asarray(valid, bool)]
    b = np.asarray(credit_b, np.float64)[np.asarray(valid, bool)]
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        why = "fewer than 2 (state, action) pairs" if a.size < 2 else "a half has no variance"
        return {"correlation": float("nan"), "spearman_brown": float("nan"), "num_pairs": int(a.size),
                "correlation_reason": why, "spearman_brown_reason": why}
    r = float(np.corrcoef(a, b)[0, 1])
    return {"correlation": r, "spearman_brown": 2 * r / (1 + r) if r > -1 else float("nan"), "num_pairs": int(a.size)}


def credit_from_q(q: np.ndarray, probs: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """float `[N, A]`: `Q(s, a) − Σ_b π(b|s) Q(s, b)` on valid entries, 0 elsewhere."""
    q = np.where(valid, q, 0.0)
    return np.where(valid, q - np.sum(probs * q, axis=-1, keepdims=True), 0.0)


def mc_error_by_k(returns: np.ndarray, exact_q: np.ndarray, probs: np.ndarray, valid: np.ndarray,
                  ks: tuple[int, ...]) -> list[dict]:
    """Per k: RMSE of `Q̂_k` (mean of the first k returns `[N, A, K]`) and of the credit
    against the exact `Q` `[N, A]`, and the Bernoulli RMSE `sqrt(mean q(1-q) / k)`."""
    exact_credit_ = credit_from_q(exact_q, probs, valid)
    bernoulli = np.clip(exact_q, 0, 1) * (1 - np.clip(exact_q, 0, 1))
    rows = []
    for k in ks:
        q_hat = returns[..., :k].mean(axis=-1)
        credit_hat = credit_from_q(q_hat, probs, valid)
        rows.append({
            "k": int(k),
            "rmse_q": float(np.sqrt(np.mean((q_hat - exact_q)[valid] ** 2))),
            "rmse_credit": float(np.sqrt(np.mean((credit_hat - exact_credit_)[valid] ** 2))),
            "bernoulli_rmse_q": float(np.sqrt(np.mean(bernoulli[valid]) / k)),
        })
    return rows


def _share_before_final(magnitude: np.ndarray, before_final: np.ndarray, counted: np.ndarray) -> float:
    total = float(magnitude[counted].sum())
    return float(magnitude[counted & before_final].sum() / total) if total > 0 else float("nan")


def _progress(total: int, enabled: bool, unit: str = " states"):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="audit", unit=unit, file=sys.stderr, disable=not enabled,
                dynamic_ncols=True)


AUDIT_MODES = {"forced": ("forced",), "sampled": ("sampled",), "both": ("forced", "sampled")}


def run_audit(env: Environment, policy_fn: PolicyFn, params: Any, key: jax.Array, *, num_states: int = 605,
              num_continuations: int = 64, chunk_states: int = 64, progress: bool = True, mode: str = "both",
              num_completions: int = 57, relative_tolerance: float = RELATIVE_TOLERANCE,
              absolute_tolerance: float = ABSOLUTE_TOLERANCE) -> dict:
    """Audit the Monte Carlo action credit of `policy_fn` (with `params`) on `env`; consumes `key`.

    Plays `num_states` episodes on fresh problems and samples one live state from each. `mode`
    `"forced"` runs `num_continuations` (K, even) continuations per legal action of each state in
    two halves; `"sampled"` runs `num_completions` completions per state under the policy itself,
    in two halves (`audit_sampled.py`, the study's protocol); `"both"` runs both on the same
    states. `chunk_states` states per forced call, sampled completions 4096 per call (a tqdm bar
    on stderr counts them). Exact values come from the solver under the same policy. Returns a
    JSON-able dict (see the module docstring; the forced mode's numbers at the top level, the
    sampled mode's under `sampled`, the completions each did under `completions`; timings in
    `seconds`, the work in `env_steps`).
    """
    from jaxcredit.analysis.audit_sampled import run_sampled  # it imports this module's statistics

    if mode not in AUDIT_MODES:
        raise ValueError(f"unknown audit mode {mode!r}; choices: {', '.join(AUDIT_MODES)}")
    modes = AUDIT_MODES[mode]
    if num_states < 1 or chunk_states < 1:
        raise ValueError(f"num_states and chunk_states must be >= 1, got {num_states}, {chunk_states}")
    if num_continuations < 2 or num_continuations % 2:
        raise ValueError(f"num_continuations must be even and >= 2 (two halves), got {num_continuations}")
    if num_completions < 2:
        raise ValueError(f"num_completions must be >= 2 (two halves), got {num_completions}")
    seconds = {}
    started = time.perf_counter()
    problem_key, play_key, pick_key, half_a_key, half_b_key, sampled_key = jax.random.split(key, 6)
    problems = jax.vmap(env.sample_problem)(jax.random.split(problem_key, num_states))
    starts = jax.vmap(env.init_problem)(problems)
    trajectory, play_counts = rollout(env, policy_fn, params, starts, play_key, num_turns=env.max_turns)
    live = np.asarray(trajectory.live)
    num_live = live.sum(axis=1)
    picked = np.floor(np.asarray(jax.random.uniform(pick_key, (num_states,))) * num_live).astype(np.int64)
    rows = np.arange(num_states)
    seconds["episodes"] = time.perf_counter() - started

    started = time.perf_counter()
    values = exact_step_values(env, trajectory, reference="policy", policy_fn=policy_fn, params=params)
    credit = exact_credit(trajectory, values)
    seconds["exact"] = time.perf_counter() - started

    states = jax.tree_util.tree_map(lambda x: x[rows, picked], trajectory.states)
    legal = np.asarray(states.legal_action_mask)
    logits = policy_fn(params, policy_observations(env, policy_fn, states), states.legal_action_mask)
    probs = np.asarray(action_probabilities(logits, states.legal_action_mask), np.float64)
    exact_q = values["q"][rows, picked].astype(np.float64)
    success = np.asarray(env.episode_success(trajectory.final_state, trajectory.episode_return))
    last = num_live - 1  # where the credit sits: steps before each episode's last live step vs the last one
    before_final = np.arange(live.shape[1])[None, :] < last[:, None]
    names, type_of_action = env.action_types()
    classes = classify_actions(credit, values["v"], live, success, relative_tolerance=relative_tolerance,
                               absolute_tolerance=absolute_tolerance)
    action_type = type_of_action[np.clip(np.asarray(trajectory.action), 0, env.num_actions - 1)]
    audit = {
        "env": env.name,
        "env_config": env.config(),
        "modes": list(modes),
        "num_states": num_states,
        "max_legal_actions": int(legal.sum(axis=1).max()),
        "episode_success": float(success.mean()),
        "mean_episode_length": float(num_live.mean()),
        "credit_before_final": {
            "exact": _share_before_final(np.abs(credit), before_final, live),
            "steps_before_final": float((before_final & live).sum() / live.sum()),
        },
        "classes": class_summary(classes, action_type, names, credit),
        "thresholds": {"relative": relative_tolerance, "absolute": absolute_tolerance},
        "env_steps": {"episodes": int(play_counts.env_steps)},
        "completions": {},
    }
    if "forced" in modes:
        started = time.perf_counter()
        forced, credit_full, env_steps = _forced(
            env, policy_fn, params, states, (half_a_key, half_b_key), probs=probs, exact_q=exact_q,
            num_continuations=num_continuations, chunk_states=chunk_states, progress=progress)
        audit.update(forced)
        audit["env_steps"]["continuations"] = env_steps
        taken = np.asarray(trajectory.action)[rows, picked]
        taken_mc = np.abs(credit_full[rows, taken])
        audit["credit_before_final"]["mc_sampled_states"] = _share_before_final(taken_mc, picked < last,
                                                                                np.ones(num_states, bool))
        total = audit["num_state_actions"] * num_continuations
        audit["completions"]["forced"] = {"total": total, "per_state": total / num_states,
                                          "per_action": num_continuations}
        seconds["continuations"] = time.perf_counter() - started
    if "sampled" in modes:
        bar = _progress(num_states * num_completions, progress, unit=" completions")
        sampled = run_sampled(env, policy_fn, params, states, sampled_key, num_completions=num_completions,
                              exact_q=exact_q, probs=probs, progress=bar.update)
        bar.close()
        audit["sampled"] = sampled
        audit["env_steps"]["sampled_completions"] = sampled["env_steps"]
        audit["completions"]["sampled"] = {"total": sampled["total_completions"], "per_state": float(num_completions)}
        seconds["sampled_completions"] = sampled["seconds"]
    if "final_context" in env.audit_details:
        started = time.perf_counter()
        audit["final_context"] = _final_context(env, policy_fn, params, trajectory)
        seconds["final_context"] = time.perf_counter() - started
    seconds["total"] = sum(seconds.values())
    audit["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    return audit


def _forced(env, policy_fn, params, states, half_keys, *, probs, exact_q, num_continuations: int,
            chunk_states: int, progress: bool) -> tuple[dict, np.ndarray, int]:
    """The forced mode: K continuations per legal action of each state `[N]`, two halves. Returns
    its numbers, the full-K credit `[N, A]` and the environment steps the continuations took."""
    num_states = int(states.turn.shape[0])
    max_legal = int(np.asarray(states.legal_action_mask).sum(axis=1).max())
    half = num_continuations // 2
    chunk = min(chunk_states, num_states)
    returns_a, returns_b, valid, env_steps = [], [], [], 0
    bar = _progress(num_states, progress)
    for index, begin in enumerate(range(0, num_states, chunk)):
        take = np.arange(begin, begin + chunk) % num_states
        padding = jnp.asarray(np.arange(begin, begin + chunk) >= num_states)
        chunk_states_ = jax.tree_util.tree_map(lambda x, take=take: x[take], states)
        chunk_states_ = chunk_states_.replace(truncated=chunk_states_.truncated | padding)  # not run
        keep = min(chunk, num_states - begin)
        for key_, out in zip(half_keys, (returns_a, returns_b)):
            result = branch_returns(env, policy_fn, params, chunk_states_, jax.random.fold_in(key_, index),
                                    num_continuations=half, force_first_actions=True, max_legal_actions=max_legal)
            out.append(np.asarray(result.returns)[:keep])
            env_steps += int(result.counts.env_steps)
        valid.append(np.asarray(result.valid)[:keep])
        bar.update(keep)
    bar.close()
    returns_a, returns_b = np.concatenate(returns_a), np.concatenate(returns_b)
    valid = np.concatenate(valid)
    credit_a = credit_from_q(returns_a.mean(-1), probs, valid)
    credit_b = credit_from_q(returns_b.mean(-1), probs, valid)
    both = np.concatenate([returns_a, returns_b], axis=-1)
    credit_full = credit_from_q(both.mean(-1), probs, valid)
    exact_state_credit = credit_from_q(exact_q, probs, valid)
    ks = tuple(k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if k <= num_continuations)
    if ks[-1] != num_continuations:
        ks = ks + (num_continuations,)
    return {
        "num_continuations": num_continuations,
        "halves": [half, half],
        "num_state_actions": int(valid.sum()),
        "sign_agreement": sign_agreement(credit_a, credit_b, valid),
        "sign_agreement_vs_exact": sign_agreement(exact_state_credit, credit_full, valid),
        "split_half": split_half_correlation(credit_a, credit_b, valid),
        "mc_error": mc_error_by_k(both, exact_q, probs, valid, ks),
    }, credit_full, env_steps


def _final_context(env, policy_fn, params, trajectory, *, chunk: int = 4096) -> dict:
    """The FINAL-context summary (`final_context.py`) over every visited (live) state of the episodes."""
    b, t = np.nonzero(np.asarray(trajectory.live))
    states = jax.tree_util.tree_map(lambda x: x[b, t], trajectory.states)
    probs = []
    for begin in range(0, b.size, chunk):
        part = jax.tree_util.tree_map(lambda x, begin=begin: x[begin:begin + chunk], states)
        logits = policy_fn(params, policy_observations(env, policy_fn, part), part.legal_action_mask)
        probs.append(np.asarray(action_probabilities(logits, part.legal_action_mask), np.float64))
    return final_context_summary(env, states, np.concatenate(probs), np.asarray(trajectory.action)[b, t])
