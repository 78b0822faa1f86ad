"""Evaluation on fixed problem sets: success (greedy and sampled), length, refusals, action types.

The evaluation sets are fixed by `config.eval_seed`: MAD draws `eval_problems` tapes from that
seed; arithmetic uses the named families' `problems(family, n, seed)` (default: `default`).
Every arm and every seed is evaluated on the same problems.

Shape letters: E evaluation problems, T turns, A actions.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import Environment
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.rollout import rollout

EvalSets = dict  # family name -> problem pytree with leaves [E, ...]


def evaluation_sets(env: Environment, config) -> EvalSets:
    """The fixed evaluation problems of `config` (host side, once per run)."""
    n, seed = config.eval_problems, config.eval_seed
    if env.name == "arithmetic":
        from jaxcredit.envs import problems

        families = config.eval_families or ("default",)
        return {family: problems(family, n, seed, count=env.count) for family in families}
    if config.eval_families and tuple(config.eval_families) != ("default",):
        raise ValueError(f"config.eval_families: environment {env.name!r} has only the 'default' family")
    return {"default": jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(seed), n))}


@functools.cache  # one greedy function per policy, so jit caches hit
def greedy(policy_fn: PolicyFn) -> PolicyFn:
    """The greedy version of `policy_fn`: all mass on the highest-scoring legal action."""
    def greedy_fn(params, observation, legal_action_mask):
        logits = jnp.where(legal_action_mask, policy_fn(params, observation, legal_action_mask), -jnp.inf)
        best = jnp.argmax(logits, axis=-1)
        return jnp.where(jnp.arange(logits.shape[-1]) == best[..., None], 0.0, -1e9)

    return greedy_fn


def make_evaluate(env: Environment, policy_fn: PolicyFn, eval_sets: EvalSets, *, seed: int):
    """`evaluate(params) -> dict` of float32 scalars, pure and jittable.

    Keys per family F (suffix `/F` only when there are several families, plus the mean over
    families without suffix): `success_greedy`, `success_sampled`, `episode_length` (sampled,
    turns), `refusal_rate` (refused steps / live steps, sampled), `action_rate/<type>` (share of
    live sampled steps choosing each action type).
    """
    names, type_of_action = env.action_types()
    type_one_hot = jnp.asarray(np.eye(len(names), dtype=np.float32)[type_of_action])  # [A, types]
    key = jax.random.fold_in(jax.random.key(seed), 7)

    def one_family(params: Any, problems) -> dict:
        starts = jax.vmap(env.init_problem)(problems)
        best, _ = rollout(env, greedy(policy_fn), params, starts, key, num_turns=env.max_turns)
        sampled, _ = rollout(env, policy_fn, params, starts, key, num_turns=env.max_turns)
        live = sampled.live.astype(jnp.float32)
        num_live = jnp.maximum(live.sum(), 1.0)
        # The state after step t carries that step's refusal flag.
        refused = jnp.sum(sampled.live & sampled.next_states().rejected)
        chosen_types = type_one_hot[sampled.action] * live[..., None]  # [E, T, types]
        out = {
            "success_greedy": jnp.mean(best.episode_return > 0),
            "success_sampled": jnp.mean(sampled.episode_return > 0),
            "episode_length": jnp.mean(sampled.final_state.turn.astype(jnp.float32)),
            "refusal_rate": refused / num_live,
        }
        for i, name in enumerate(names):
            out[f"action_rate/{name}"] = chosen_types[..., i].sum() / num_live
        return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}

    def evaluate(params: Any) -> dict:
        per_family = {family: one_family(params, problems) for family, problems in eval_sets.items()}
        if len(per_family) == 1:
            return next(iter(per_family.values()))
        out = {}
        for family, metrics in per_family.items():
            out.update({f"{k}/{family}": v for k, v in metrics.items()})
        for k in next(iter(per_family.values())):
            out[k] = jnp.mean(jnp.stack([m[k] for m in per_family.values()]))
        return out

    return evaluate
