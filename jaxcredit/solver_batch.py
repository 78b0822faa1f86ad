"""Exact start values of many problems: the solver in jitted chunks, compacted to valid positions.

`solve_batch` is what audits and benchmarks call for hundreds or thousands of problems. It keeps
only what they need per problem (the start position's V and Q, the graph's size), so memory stays
at one chunk's graphs. Two things make it fast on a CPU: problems whose positions are mostly
invalid (arithmetic: about 60% of the S index slots break a rule for a given problem) are
compacted to their valid positions before any step is taken -- problems are sorted by their
number of valid positions and each chunk is padded to a bucket of `S / 8`, so only a few shapes
compile -- and a chunk's graphs are solved as one block-diagonal graph (one flat gather per turn
instead of a batched one). The values are those of `jaxcredit.solver`, exactly.

Shape letters: B problems, S positions, K rows of a compacted graph, A actions.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.env import Environment
from jaxcredit.solver import (
    POLICIES,
    Graph,
    _backup,
    _check_horizon,
    _optimal_v,
    _policy_v,
    build_graph,
    evaluate_policy,
    graph_over_positions,
    start_position,
    uniform_policy,
)

BUCKETS = 8  # compacted sizes are multiples of ceil(S / BUCKETS): at most BUCKETS + 1 compiled shapes


@struct.dataclass
class BatchSolution:
    """What `solve_batch` keeps per problem: the start position's values and the graph's size.

    Attributes:
      start_value: float32 `[B]`, V of the start position with `horizon` turns left.
      start_q: float32 `[B, A]`, Q of every action there.
      start_legal: bool `[B, A]`, the legal actions there.
      num_positions: int32 `[B]`, the number of valid positions of each problem.
      env_steps: int32 `[B]`, environment steps a full graph costs (valid positions x A).
    """

    start_value: jax.Array
    start_q: jax.Array
    start_legal: jax.Array
    num_positions: jax.Array
    env_steps: jax.Array


@functools.partial(jax.jit, static_argnums=0)
def _valid_counts(env: Environment, problems: Any) -> jax.Array:
    """int32 `[B]`: the number of valid positions of each problem (positions only, no step)."""
    positions = jnp.arange(env.num_positions, dtype=jnp.int32)
    valid = jax.vmap(lambda p: jax.vmap(lambda s: env.position(p, s)[1])(positions))(problems)
    return jnp.sum(valid, axis=-1).astype(jnp.int32)


def _compact_graph(env: Environment, problem: Any, *, size: int) -> tuple[Graph, jax.Array]:
    """`(graph [K = size], start row)`: the graph over the problem's valid positions, then padding.

    Needs `size` > the number of valid positions: the last row is always padding, and a position
    index with no row (an invalid one) maps to it, where the value is 0 as in the full graph.
    `size == S` means every position is valid: then it is the full graph.
    """
    S = env.num_positions
    if size == S:
        return build_graph(env, problem), start_position(env, problem)
    all_positions = jnp.arange(S, dtype=jnp.int32)
    valid = jax.vmap(lambda s: env.position(problem, s)[1])(all_positions)
    rows = jnp.nonzero(valid, size=size, fill_value=S)[0].astype(jnp.int32)  # [K] position of each row
    is_position = rows < S
    row_of_position = jnp.full((S,), size - 1, jnp.int32).at[rows].set(jnp.arange(size, dtype=jnp.int32),
                                                                       mode="drop")
    graph = graph_over_positions(env, problem, jnp.where(is_position, rows, 0), is_position,
                                 lambda index: row_of_position[index])
    return graph, row_of_position[start_position(env, problem)]


@functools.partial(jax.jit, static_argnames=("env", "size"))
def _build_compact_chunk(env: Environment, problems: Any, *, size: int) -> tuple[Graph, jax.Array]:
    return jax.vmap(functools.partial(_compact_graph, env, size=size))(problems)


@functools.partial(jax.jit, static_argnames=("policy", "horizon"))
def _solve_chunk_graphs(graphs: Graph, start: jax.Array, *, policy: str, horizon: int) -> BatchSolution:
    """Solve a chunk's graphs `[B, K, A]` as one block-diagonal graph; keep the start rows `[B]`."""
    B, K, A = graphs.legal.shape
    offset = jnp.arange(B, dtype=jnp.int32) * K
    merged = jax.tree_util.tree_map(
        lambda x: x.reshape((B * K,) + x.shape[2:]),
        graphs.replace(next_position=graphs.next_position + offset[:, None, None], env_steps=None))
    if policy == "uniform":
        v = _policy_v(merged, uniform_policy(merged), horizon=horizon)
    else:
        v = _optimal_v(merged, horizon=horizon)
    start = start + offset
    start_q = _backup(jax.tree_util.tree_map(lambda x: x[start], merged), v[max(horizon - 1, 0)])
    return BatchSolution(
        start_value=v[horizon, start],
        start_q=start_q if horizon > 0 else jnp.zeros_like(start_q),
        start_legal=merged.legal[start],
        num_positions=jnp.sum(graphs.valid, axis=-1).astype(jnp.int32),
        env_steps=graphs.env_steps,
    )


def compact_size(env: Environment, num_valid: int) -> int:
    """Host: the padded row count for a chunk whose largest problem has `num_valid` positions."""
    if num_valid == env.num_positions:
        return num_valid  # nothing to compact (MAD): the full graph
    step = -(-env.num_positions // BUCKETS)
    return step * (num_valid // step + 1)  # strictly more than num_valid: a padding row exists


def _rows(tree, index):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[index], tree)


def solve_batch(env: Environment, problems: Any, *, policy: str = "uniform", chunk_size: int = 64,
                horizon: int | None = None) -> BatchSolution:
    """Exact start values of many problems (a pytree with leading axis `[B]`), `chunk_size` at a time.

    `policy` is 'uniform' or 'optimal'; `horizon` (turns left at the start) defaults to
    `env.max_turns`. Each chunk is padded to `chunk_size` problems and to a compacted size (see
    the module docstring), then built and solved by two jitted calls. Returns a `BatchSolution`
    with leading axis `[B]`, in the order of `problems`.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choices: {', '.join(POLICIES)}")
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    horizon = _check_horizon(env.max_turns if horizon is None else horizon)
    num_problems = jax.tree_util.tree_leaves(problems)[0].shape[0]
    def padded_chunk(first):  # always chunk_size indices, so one compiled shape serves every chunk
        return np.minimum(np.arange(first, first + chunk_size), num_problems - 1)

    counts = np.concatenate([np.asarray(_valid_counts(env, _rows(problems, padded_chunk(first))))
                             for first in range(0, num_problems, chunk_size)])[:num_problems]
    order = np.argsort(counts, kind="stable")  # similar sizes share a chunk and a compiled shape
    pieces = []
    for first in range(0, num_problems, chunk_size):
        index = order[padded_chunk(first)]
        chunk = _rows(problems, index)
        graphs, start = _build_compact_chunk(env, chunk, size=compact_size(env, int(counts[index].max())))
        solution = _solve_chunk_graphs(graphs, start, policy=policy, horizon=horizon)
        pieces.append(_rows(solution, slice(0, min(chunk_size, num_problems - first))))
    solved = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *pieces)
    return _rows(solved, np.argsort(order))


def memory_per_problem(env: Environment, *, horizon: int | None = None) -> dict[str, int]:
    """Host: bytes of one problem's full graph and of its full values (`v` and `q`) at `horizon`."""
    horizon = env.max_turns if horizon is None else horizon
    problem = jax.eval_shape(env.sample_problem, jax.random.key(0))
    graph = jax.eval_shape(functools.partial(build_graph, env), problem)
    values = jax.eval_shape(lambda g: evaluate_policy(g, uniform_policy(g), horizon=horizon), graph)

    def nbytes(tree):
        return int(sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree)))

    return {"graph_bytes": nbytes(graph), "values_bytes": nbytes(values)}
