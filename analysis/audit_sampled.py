"""The study's label audit: completions sampled under the policy itself, compared between halves.

The forced-action audit (`audit.py`) starts K continuations with every legal action of a state.
The study's protocol instead samples `C` completions per state under the policy itself, so it
only learns about the actions the samples took. Per half of the completions (independent draws):
`Q̂(s, a)`, the mean return of the half's completions whose first action was `a`; `V̂(s)`, the mean
return of all of them; `Δ̂ = Q̂ − V̂`. The statistic: in one half, the action with the largest
`|Δ̂|` among those it took; does the other half give it the same sign? A state where the other
half never took that action is not compared (`num_unmatched`). Also reported: agreement with the
exact `Δ`, the split-half correlation, and `Q̂` against the exact `Q`. See
docs/reliability.md#label-audits-forced-actions-and-sampled-completions.

Shape letters: N states, C completions per state, A actions.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.analysis.audit import credit_from_q, sign_agreement, split_half_correlation
from jaxcredit.analysis.formatting import format_number
from jaxcredit.env import Environment, State
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.rollout import branch_returns, rollout


def sample_completions(env: Environment, policy_fn: PolicyFn, params: Any, states: State, key: jax.Array, *,
                       num_completions: int, chunk_completions: int = 4096, progress=None) -> dict:
    """Host: `num_completions` (C) completions under the policy from each state of `states` (`[N]`).

    Each completion is one policy step from the state (`rollout` for one turn) and then one
    continuation to the episode's end (`branch_returns`). The `N · C` completions run
    `chunk_completions` at a time, always that many (the last chunk is padded with ended copies
    that do no work), so every call on one environment and policy shares one compiled program.
    `progress(n)` is called with the completions each chunk finished. Returns NumPy
    `first_action` int32 `[N, C]`, `returns` float32 `[N, C]`, and the work done, `env_steps`
    and `policy_evals`. Consumes `key`.
    """
    if num_completions < 2 or chunk_completions < 1:
        raise ValueError(f"num_completions must be >= 2 (two halves) and chunk_completions >= 1, got "
                         f"{num_completions}, {chunk_completions}")
    num_states = int(states.turn.shape[0])
    total = num_states * num_completions
    actions, returns, env_steps, policy_evals = [], [], 0, 0
    for index, begin in enumerate(range(0, total, chunk_completions)):
        flat = np.arange(begin, begin + chunk_completions)
        take = np.minimum(flat, total - 1) // num_completions
        batch = jax.tree_util.tree_map(lambda x, take=take: x[take], states)
        batch = batch.replace(truncated=batch.truncated | jnp.asarray(flat >= total))  # padding: ended, not run
        first_key, rest_key = jax.random.split(jax.random.fold_in(key, index))
        first, first_counts = rollout(env, policy_fn, params, batch, first_key, num_turns=1)
        rest = branch_returns(env, policy_fn, params, first.final_state, rest_key, num_continuations=1)
        keep = min(chunk_completions, total - begin)
        actions.append(np.asarray(first.action[:keep, 0]))
        returns.append(np.asarray(first.reward[:keep, 0]) + np.asarray(rest.returns[:keep, 0]))
        env_steps += int(first_counts.env_steps) + int(rest.counts.env_steps)
        policy_evals += int(first_counts.policy_evals) + int(rest.counts.policy_evals)
        if progress is not None:
            progress(keep)
    return {"first_action": np.concatenate(actions).astype(np.int32).reshape(num_states, num_completions),
            "returns": np.concatenate(returns).reshape(num_states, num_completions),
            "env_steps": env_steps, "policy_evals": policy_evals}


def action_values(first_action: np.ndarray, returns: np.ndarray, num_actions: int) -> tuple[np.ndarray, ...]:
    """`(q [N, A], count [N, A], credit [N, A], taken [N, A])` of completions `[N, C]`: per action
    the mean return of the completions that started with it (0 where none did), how many did,
    `Q̂ − V̂` with `V̂` the mean of all `C` returns (0 where none did), and `count > 0`."""
    first_action, returns = np.asarray(first_action), np.asarray(returns, np.float64)
    one_hot = first_action[..., None] == np.arange(num_actions)  # [N, C, A]
    count = one_hot.sum(axis=1)
    total = np.einsum("nca,nc->na", one_hot, returns)
    taken = count > 0
    q = np.where(taken, total / np.maximum(count, 1), 0.0)
    credit = np.where(taken, q - returns.mean(axis=1, keepdims=True), 0.0)
    return q, count, credit, taken


def sampled_audit(first_action: np.ndarray, returns: np.ndarray, exact_q: np.ndarray, probs: np.ndarray,
                  legal: np.ndarray) -> dict:
    """The sampled-mode numbers (see the module) of completions `first_action`, `returns` `[N, C]`
    against the exact `exact_q` `[N, A]` of the policy with probabilities `probs` `[N, A]` at the
    states (`legal` bool `[N, A]`). JSON-able."""
    num_states, num_completions = np.shape(returns)
    num_actions = np.shape(exact_q)[-1]
    half = num_completions // 2
    _, _, credit_a, taken_a = action_values(first_action[:, :half], returns[:, :half], num_actions)
    _, _, credit_b, taken_b = action_values(first_action[:, half:], returns[:, half:], num_actions)
    q_full, count, credit_full, taken = action_values(first_action, returns, num_actions)
    legal = np.asarray(legal, bool)
    if np.any(taken & ~legal):
        raise ValueError("a sampled completion started with an illegal action")
    exact_q = np.asarray(exact_q, np.float64)
    exact_credit = credit_from_q(exact_q, probs, legal)
    q_clip = np.clip(exact_q, 0, 1)
    return {
        "num_completions": int(num_completions),
        "halves": [int(half), int(num_completions - half)],
        "total_completions": int(num_states * num_completions),
        "completions_per_state": float(num_completions),
        "actions_taken_per_state": float(taken.sum() / num_states),
        "legal_actions_per_state": float(legal.sum() / num_states),
        "sign_agreement": sign_agreement(credit_a, credit_b, taken_a, valid_b=taken_b),
        "sign_agreement_vs_exact": sign_agreement(exact_credit, credit_full, taken),
        "split_half": split_half_correlation(credit_a, credit_b, taken_a & taken_b),
        "q_error": {"num_pairs": int(taken.sum()),
                    "rmse_q": float(np.sqrt(np.mean((q_full - exact_q)[taken] ** 2))),
                    "bernoulli_rmse_q": float(np.sqrt(np.mean((q_clip * (1 - q_clip) / np.maximum(count, 1))[taken])))},
    }


def run_sampled(env: Environment, policy_fn: PolicyFn, params: Any, states: State, key: jax.Array, *,
                num_completions: int, exact_q: np.ndarray, probs: np.ndarray, chunk_completions: int = 4096,
                progress=None) -> dict:
    """`sample_completions` then `sampled_audit` on `states` (`[N]`), with `env_steps`,
    `policy_evals` and `seconds` of the completions."""
    started = time.perf_counter()
    out = sample_completions(env, policy_fn, params, states, key, num_completions=num_completions,
                             chunk_completions=chunk_completions, progress=progress)
    seconds = time.perf_counter() - started
    summary = sampled_audit(out["first_action"], out["returns"], exact_q, probs, np.asarray(states.legal_action_mask))
    return {**summary, "env_steps": out["env_steps"], "policy_evals": out["policy_evals"], "seconds": round(seconds, 3)}


def sampled_markdown(sampled: dict) -> str:
    """Markdown table of the sampled mode's numbers (`sampled_audit`)."""
    sign, half, error = sampled["sign_agreement"], sampled["split_half"], sampled["q_error"]
    lines = ["| measure (sampled completions under the policy) | value |", "| --- | --- |",
             f"| completions: total / per state (two halves) | {sampled['total_completions']} / "
             f"{format_number(sampled['completions_per_state'], 'g')} "
             f"({sampled['halves'][0]} + {sampled['halves'][1]}) |",
             f"| distinct first actions taken / legal actions, per state | "
             f"{format_number(sampled['actions_taken_per_state'], '.2f')} / "
             f"{format_number(sampled['legal_actions_per_state'], '.2f')} |",
             f"| sign agreement of the largest credit among the actions taken, half vs half | "
             f"{format_number(sign['agreement'])} ({sign['num_compared']} comparisons; "
             f"{sign['num_unmatched']} not taken in the other half) |",
             f"| sign agreement, exact top action (among those taken) vs all completions | "
             f"{format_number(sampled['sign_agreement_vs_exact']['agreement'])} |",
             f"| split-half correlation over actions both halves took (Spearman-Brown) | "
             f"{format_number(half['correlation'])} ({format_number(half['spearman_brown'])}) |",
             f"| RMSE of Q̂ against exact / Bernoulli sqrt(q(1-q)/n) ({error['num_pairs']} (state, action) pairs) | "
             f"{format_number(error['rmse_q'], '.4f')} / {format_number(error['bernoulli_rmse_q'], '.4f')} |",
             f"| work: env steps / policy evaluations / seconds | {sampled['env_steps']} / {sampled['policy_evals']} / "
             f"{sampled['seconds']} |"]
    return "\n".join(lines) + "\n"
