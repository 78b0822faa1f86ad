"""Exact values at every step of recorded episodes, under a chosen policy, from the solver.

`exact_step_values` solves each episode's problem under the reference policy
(`jaxcredit.solver_values.reference_values`: `"policy"`, the given network or `PolicyFn`,
evaluated at the positions reached from the start, a chunk's problems sharing the network calls
(`network_values_batch`); `"uniform"`; `"optimal"`) and gathers, for
every step `t`, `V(s_t)`, `Q(s_t, ·)` and the value of a refusal. `exact_credit` turns them into
the counterfactual credit of the action actually taken, `Δ_t = Q(s_t, a_t) − V(s_t)`. Problems
are solved in fixed-size chunks (one compile), so a large environment's graphs (arithmetic: ~25 MB
each) never all sit in memory at once.

Shape letters: B episodes, T turns, A actions, C problems per chunk.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import solver
from jaxcredit.env import Environment
from jaxcredit.policy_fn import PolicyFn, uniform_policy_fn
from jaxcredit.rollout import Trajectory
from jaxcredit.solver_values import network_values_batch, reference_values

REFERENCE_POLICIES = ("policy", "uniform", "optimal")


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "reference"))
def _chunk_values(env: Environment, policy_fn: PolicyFn, params: Any, problems: Any, turns_left: jax.Array,
                  positions: jax.Array, *, reference: str):
    horizon = env.max_turns
    graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
    if reference == "policy":  # the chunk's distinct network rows share the network calls
        starts = jax.vmap(lambda p: solver.start_position(env, p))(problems)
        values, _ = network_values_batch(env, problems, graphs, policy_fn, params, horizon=horizon, starts=starts)
    else:
        values = jax.vmap(lambda p, g: reference_values(env, p, policy=reference, horizon=horizon, graph=g)[0])(
            problems, graphs)

    def gather(v, q, tl, pos):
        tl = jnp.clip(tl, 0, horizon)
        return v[tl, pos], q[tl, pos], v[jnp.maximum(tl - 1, 0), pos]

    return jax.vmap(gather)(values.v, values.q, turns_left, positions)


def chunk_problems(env: Environment) -> int:
    """How many problems to solve per jitted call: about 10M `[S, A]` cells (arithmetic: 18 problems,
    ~0.45 GB of graphs and values), at most 64; more problems a call share more network calls."""
    return int(max(1, min(64, 10_000_000 // (env.num_positions * env.num_actions))))


def exact_step_values(env: Environment, trajectory: Trajectory, *, reference: str = "policy",
                      policy_fn: PolicyFn = uniform_policy_fn, params: Any = None) -> dict:
    """Host: exact values at every step of `trajectory` (`[B, T]`) under `reference`.

    `reference` is `"policy"` (`policy_fn` with `params`, evaluated at every position),
    `"uniform"` or `"optimal"`. Returns NumPy arrays: `v` float32 `[B, T]` (`V(s_t)`), `q`
    float32 `[B, T, A]` (`Q(s_t, a)`, a refusal's value on illegal actions) and `refused`
    float32 `[B, T]` (the value of a refused action, `V` with one turn fewer).
    """
    if reference not in REFERENCE_POLICIES:
        raise ValueError(f"unknown reference policy {reference!r}; choices: {', '.join(REFERENCE_POLICIES)}")
    batch = trajectory.live.shape[0]
    problems = jax.tree_util.tree_map(lambda x: x[:, 0], trajectory.states.problem)
    chunk = min(chunk_problems(env), batch)
    v, q, refused = [], [], []
    for start in range(0, batch, chunk):
        index = np.arange(start, start + chunk) % batch  # the last chunk repeats the first episodes
        def take(x, index=index):
            return x[index]

        out = _chunk_values(env, policy_fn, params, jax.tree_util.tree_map(take, problems),
                            take(trajectory.turns_left), take(trajectory.position), reference=reference)
        keep = min(chunk, batch - start)
        v.append(np.asarray(out[0])[:keep])
        q.append(np.asarray(out[1])[:keep])
        refused.append(np.asarray(out[2])[:keep])
    return {"v": np.concatenate(v), "q": np.concatenate(q), "refused": np.concatenate(refused)}


def exact_credit(trajectory: Trajectory, values: dict) -> np.ndarray:
    """float32 `[B, T]`: `Δ_t = Q(s_t, a_t) − V(s_t)` of the action taken (0 on non-live steps).

    A refused (illegal) action is valued as what it is, one turn used: `V` with one turn fewer.
    """
    action = np.asarray(trajectory.action)
    legal_mask = np.asarray(trajectory.legal_action_mask)
    safe = np.clip(action, 0, legal_mask.shape[-1] - 1)
    chosen_q = np.take_along_axis(values["q"], safe[..., None], axis=-1)[..., 0]
    legal = np.take_along_axis(legal_mask, safe[..., None], axis=-1)[..., 0] & (action == safe)
    chosen = np.where(legal, chosen_q, values["refused"])
    return np.where(np.asarray(trajectory.live), chosen - values["v"], 0.0).astype(np.float32)
