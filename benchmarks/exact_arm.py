"""Part of `jaxcredit bench solver`: the exact credit arm's values, network where needed vs everywhere.

Ours: `jaxcredit.solver_values.reference_values(policy="network")`, what the trainer's `exact`
arm and the audits call: the network evaluated once per distinct observation of the positions
reached from each problem's start. Baseline: the same graph and the same backward induction with
the network evaluated at every position slot of the graph (`num_positions` per problem), which is
what the exact arm did before. Both run on the same problems with the trainer's default network;
the largest difference of their values at reached positions is reported next to the times.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import solver
from jaxcredit.benchmarks.common import time_interleaved
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.solver_values import reference_values


def bench_exact_arm(env, *, label: str, num_problems: int, repeats: int) -> dict:
    """Time both ways of computing `num_problems` problems' network values; returns raw numbers."""
    init_fn, policy_fn, _ = make_policy(PolicyConfig(), env)  # the trainer's default network
    params = init_fn(jax.random.key(0))
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(1), num_problems))

    def reached(problem):
        values, evals = reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params)
        start = solver.start_position(env, problem)
        return values, evals, solver.positions_reached(solver.build_graph(env, problem), start)

    def everywhere(problem):
        graph = solver.build_graph(env, problem)
        probs = action_probabilities(policy_fn(params, graph.observation, graph.legal), graph.legal)
        probs = jnp.broadcast_to(probs, (env.max_turns + 1,) + probs.shape)  # as the arm did: [T + 1, S, A]
        return solver.evaluate_policy(graph, probs, horizon=env.max_turns)

    ours, baseline = jax.jit(jax.vmap(reached)), jax.jit(jax.vmap(everywhere))
    timed = time_interleaved({"reached": lambda: ours(problems), "everywhere": lambda: baseline(problems)},
                             repeats=repeats)
    (seconds, (values, evals, mask)), (full_seconds, full) = timed["reached"], timed["everywhere"]
    mask = np.asarray(mask)[:, None, :]
    diff = float(np.max(np.where(mask[..., None], np.abs(np.asarray(values.q) - np.asarray(full.q)), 0.0)))
    return {
        "env": label,
        "problems": num_problems,
        "reached_seconds": seconds,
        "everywhere_seconds": full_seconds,
        "ratio": full_seconds / seconds,
        "evals_per_problem": float(np.mean(np.asarray(evals))),
        "reached_per_problem": float(np.mean(mask.sum(axis=(1, 2)))),
        "positions_per_problem": env.num_positions,
        "max_abs_diff": diff,
    }
