"""Evaluation on fixed, held-out problem sets: success (greedy and sampled), length, refusals,
action types; and greedy success on a held-out validation set (what the `best` checkpoint is
chosen on, so the evaluation set never picks a model).

Every problem space is split by a hash of the problem (`jaxcredit.holdout`) into training,
validation and evaluation parts (`config.holdout_fraction` held out, half for each). The sets are
fixed by `config.eval_seed` (arithmetic: the named families' `problem_set`), so every arm and
every seed is evaluated on the same problems. `holdout_fraction = 0` turns the split off for
problem spaces too small to hold out: the sets then overlap training. See
docs/training.md#held-out-evaluation.

Shape letters: E evaluation problems, V validation problems, T turns, A actions.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import Environment
from jaxcredit.holdout import EVALUATION, VALIDATION, first_in_split
from jaxcredit.policy_fn import AfterstatePolicy, PolicyFn
from jaxcredit.rollout import rollout

EvalSets = dict  # family name -> problem pytree with leaves [E, ...]


def _held_out(env: Environment, config, family: str | None, n: int, split: int, *, seed: int):
    """n problems of `family` in `split` (the environment's own stream, `Environment.problem_stream`),
    or, with `holdout_fraction = 0`, n of the whole space (`Environment.problem_sample`; they
    overlap the training stream), checked on the host against the environment's bounds
    (`Environment.check_problems`): the evaluation traces `init_problem`, which cannot check a
    traced problem."""
    if config.holdout_fraction == 0:
        problems = env.problem_sample(family, n, seed)
    else:
        problems = first_in_split(env, env.problem_stream(family, seed), n, split,
                                  holdout_fraction=config.holdout_fraction)
    name = "evaluation" if split == EVALUATION else "validation"
    env.check_problems(problems, label=f"{name} set" + (f" of family {family!r}" if family else ""))
    return problems


def evaluation_sets(env: Environment, config) -> EvalSets:
    """The fixed, held-out evaluation problems of `config` (host side, once per run), one set per
    family the environment evaluates on (`Environment.evaluation_families`)."""
    n, seed = config.eval_problems, config.eval_seed
    families = env.evaluation_families(config.eval_families)
    return {family: _held_out(env, config, family, n, EVALUATION, seed=seed) for family in families}


def validation_set(env: Environment, config) -> Any:
    """The fixed, held-out validation problems of `config` (leaves `[V, ...]`; host side): the
    training distribution's problems (arithmetic: the environment's own family) in the validation
    part. Drawn from the stream of `eval_seed + 1`, so even without a holdout it is another set."""
    return _held_out(env, config, None, config.validation_problems, VALIDATION, seed=config.eval_seed + 1)


def _greedy_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: 0 at the highest-scoring legal action, -1e9 elsewhere."""
    best = jnp.argmax(jnp.where(legal_action_mask, logits, -jnp.inf), axis=-1)
    return jnp.where(jnp.arange(logits.shape[-1]) == best[..., None], 0.0, -1e9)


@functools.cache  # one greedy function per policy, so jit caches hit
def greedy(policy_fn: PolicyFn) -> PolicyFn:
    """The greedy version of `policy_fn`: all mass on the highest-scoring legal action (for an
    `AfterstatePolicy`, the same policy with that transform, so it still reads afterstates)."""
    if isinstance(policy_fn, AfterstatePolicy):
        return dataclasses.replace(policy_fn, logits_transform=_greedy_logits)

    def greedy_fn(params, observation, legal_action_mask):
        return _greedy_logits(policy_fn(params, observation, legal_action_mask), legal_action_mask)

    return greedy_fn


def make_evaluate(env: Environment, policy_fn: PolicyFn, eval_sets: EvalSets, *, seed: int, validation: Any = None):
    """`evaluate(params) -> dict` of float32 scalars, pure and jittable.

    Keys per family F (suffix `/F` only when there are several families, plus the mean over
    families without suffix): `success_greedy`, `success_sampled`, `episode_length` (sampled,
    turns), `refusal_rate` (refused steps / live steps, sampled), `action_rate/<type>` (share of
    live sampled steps choosing each action type). With `validation` problems (leaves `[V, ...]`),
    also `validation_success_greedy`.
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
            "success_greedy": jnp.mean(env.episode_success(best.final_state, best.episode_return)),
            "success_sampled": jnp.mean(env.episode_success(sampled.final_state, sampled.episode_return)),
            "episode_length": jnp.mean(sampled.final_state.turn.astype(jnp.float32)),
            "refusal_rate": refused / num_live,
        }
        for i, name in enumerate(names):
            out[f"action_rate/{name}"] = chosen_types[..., i].sum() / num_live
        return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}

    def greedy_success(params: Any, problems) -> jax.Array:
        starts = jax.vmap(env.init_problem)(problems)
        best, _ = rollout(env, greedy(policy_fn), params, starts, key, num_turns=env.max_turns)
        return jnp.mean(env.episode_success(best.final_state, best.episode_return)).astype(jnp.float32)

    def evaluate(params: Any) -> dict:
        per_family = {family: one_family(params, problems) for family, problems in eval_sets.items()}
        if len(per_family) == 1:
            out = dict(next(iter(per_family.values())))
        else:
            out = {}
            for family, metrics in per_family.items():
                out.update({f"{k}/{family}": v for k, v in metrics.items()})
            for k in next(iter(per_family.values())):
                out[k] = jnp.mean(jnp.stack([m[k] for m in per_family.values()]))
        if validation is not None:
            out["validation_success_greedy"] = greedy_success(params, validation)
        return out

    return evaluate
