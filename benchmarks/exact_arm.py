"""Part of `jaxcredit bench solver`: the exact credit arm's values, network where needed vs everywhere.

Ours: what the trainer's `exact` arm and the audits compute
(`jaxcredit.solver_values.network_values_batch`: `network_policy_probs_batch`, then the backward
induction): the network evaluated once per distinct observation of the positions reached from
each problem's start, every problem's rows packed into shared chunks. Baseline: the same graph and
backward induction with the network evaluated at every position slot of the graph. Both run on
the same problems with the trainer's default network; the largest difference of their values at
reached positions is reported next to the times.

The parameters are arguments of both jitted functions, never constants folded into them: under
jax 0.10.2 on CPU, a program that folds in the fresh network's all-zero action head computes
garbage in its large dots (a max difference of 0.2-0.7 between the two sides).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import solver
from jaxcredit.benchmarks.common import time_interleaved
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.solver_values import network_values_batch


def bench_exact_arm(env, *, label: str, num_problems: int, repeats: int) -> dict:
    """Time both ways of computing `num_problems` problems' network values; returns raw numbers."""
    init_fn, policy_fn, _ = make_policy(PolicyConfig(), env)  # the trainer's default network
    params = init_fn(jax.random.key(0))
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(1), num_problems))

    horizon = env.max_turns

    def graphs_and_starts(problems):
        graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
        return graphs, jax.vmap(lambda p: solver.start_position(env, p))(problems)

    @jax.jit
    def reached(params, problems):
        graphs, starts = graphs_and_starts(problems)
        values, evals = network_values_batch(env, problems, graphs, policy_fn, params, horizon=horizon,
                                             starts=starts)
        return values, evals, jax.vmap(solver.positions_reached)(graphs, starts)

    @jax.jit
    def everywhere(params, problems):
        graphs, _ = graphs_and_starts(problems)
        probs = action_probabilities(policy_fn(params, graphs.observation, graphs.legal), graphs.legal)
        probs = jnp.broadcast_to(probs[:, None], (num_problems, horizon + 1) + probs.shape[1:])  # [P, T + 1, S, A]
        return jax.vmap(lambda g, p: solver.evaluate_policy(g, p, horizon=horizon))(graphs, probs)

    timed = time_interleaved({"reached": lambda: reached(params, problems),
                              "everywhere": lambda: everywhere(params, problems)}, repeats=repeats)
    (seconds, (values, evals, mask)), (full_seconds, full) = timed["reached"], timed["everywhere"]
    mask = np.asarray(mask)[:, None, :]
    diff = float(np.max(np.where(mask[..., None], np.abs(np.asarray(values.q) - np.asarray(full.q)), 0.0)))
    return {
        "env": label,
        "problems": num_problems,
        "reached_seconds": seconds,
        "everywhere_seconds": full_seconds,
        "ratio": full_seconds / seconds,
        "evals_per_problem": float(np.asarray(evals)) / num_problems,
        "reached_per_problem": float(np.mean(mask.sum(axis=(1, 2)))),
        "positions_per_problem": env.num_positions,
        "max_abs_diff": diff,
    }
