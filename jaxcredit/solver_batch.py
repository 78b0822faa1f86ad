"""Exact start values of many problems: the solver in jitted chunks, stepping only legal moves.

`solve_batch` is what audits and benchmarks call for hundreds or thousands of problems, under the
uniform or the optimal policy. It keeps only what they need per problem (the start position's V
and Q, the graph's size), so memory stays at one chunk, and gives the values of
`jaxcredit.solver` at a fraction of the work: the graph is a list of legal moves (valid position,
legal action), not the full `[S, A]` table (a refusal has probability 0 under these policies, so
only the start row is stepped whole); problems are sorted by size and each chunk padded to a few
bucketed shapes, so only a few compile; a chunk's graphs are solved as one block-diagonal graph.
See docs/solver.md#many-problems-at-once-solve_batch.

Shape letters: B problems, S positions, K rows (valid positions, padded), E moves (padded), A actions.
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
    build_graph,
    check_horizon,
    evaluate_policy,
    greedy_play,
    optimal_values,
    reached_by_moves,
    start_position,
    uniform_policy,
)

BATCH_POLICIES = ("uniform", "optimal")  # solve_batch keeps the start values of these two
BUCKETS = 8  # rows are padded to multiples of ceil(S / BUCKETS), moves to ceil(S * A / (8 * BUCKETS))


@struct.dataclass
class BatchSolution:
    """What `solve_batch` keeps per problem: the start position's values and the graph's size.

    Attributes:
      start_value: float32 `[B]`, V of the start position with `horizon` turns left.
      start_q: float32 `[B, A]`, Q of every action there.
      start_legal: bool `[B, A]`, the legal actions there.
      num_positions: int32 `[B]`, the number of valid positions of each problem.
      env_steps: int32 `[B]`, environment steps an enumeration from the start needs: one per
        legal move of each position reached from the start, what a budget ledger charges
        (`jaxcredit.solver.enumeration_env_steps`; refused moves cost nothing).
      num_edges: int32 `[B]`, the number of legal moves (valid position, legal action), reached
        or not (what `solve_batch` steps).
    """

    start_value: jax.Array
    start_q: jax.Array
    start_legal: jax.Array
    num_positions: jax.Array
    env_steps: jax.Array
    num_edges: jax.Array


@struct.dataclass
class EdgeGraph:
    """One problem's graph as a list of its legal moves (internal to `solve_batch`).

    Rows are the problem's valid positions in index order, then padding; edges are the legal
    (row, action) pairs in row order, then padding. The start row is kept whole (every action).

    Attributes:
      source: int32 `[E]` row of each edge; next_row: int32 `[E]`; reward: float32 `[E]`;
      terminal: bool `[E]`; live: bool `[E]` (not padding).
      legal_count: int32 `[K]`, legal actions per row.
      start_row: int32 `[]`; start_next: int32 `[A]`; start_reward: float32 `[A]`;
      start_terminal, start_legal: bool `[A]` (refused actions stay at the start row).
      num_positions, num_edges: int32 `[]`.
    """

    source: jax.Array
    next_row: jax.Array
    reward: jax.Array
    terminal: jax.Array
    live: jax.Array
    legal_count: jax.Array
    start_row: jax.Array
    start_next: jax.Array
    start_reward: jax.Array
    start_terminal: jax.Array
    start_legal: jax.Array
    num_positions: jax.Array
    num_edges: jax.Array


def _all_positions(env: Environment, problem: Any):
    """`(states [S], legal [S, A])`: every position index of `problem`, legal masks zeroed where invalid."""
    states, valid = jax.vmap(lambda s: env.position(problem, s))(jnp.arange(env.num_positions, dtype=jnp.int32))
    return states, valid, states.legal_action_mask & valid[:, None]


@functools.partial(jax.jit, static_argnums=0)
def _sizes(env: Environment, problems: Any) -> tuple[jax.Array, jax.Array]:
    """int32 `[B]` twice: valid positions and legal moves of each problem (positions only, no step)."""
    def one(problem):
        _, valid, legal = _all_positions(env, problem)
        return jnp.sum(valid).astype(jnp.int32), jnp.sum(legal).astype(jnp.int32)

    return jax.vmap(one)(problems)


def _where_true(mask: jax.Array, *, size: int) -> jax.Array:
    """int32 `[size]`: the indices of the first `size` True entries of bool `[N]` `mask`, then N.

    `jnp.nonzero(mask, size=size, fill_value=N)`, by binary search in the running count: on CPU
    this is much faster than nonzero's scatter for a long mask.
    """
    count = jnp.cumsum(mask, dtype=jnp.int32)
    wanted = jnp.arange(1, size + 1, dtype=jnp.int32)
    return jnp.searchsorted(count, wanted, side="left", method="scan").astype(jnp.int32)


def _edge_graph(env: Environment, problem: Any, *, rows: int, edges: int) -> EdgeGraph:
    """`problem`'s `EdgeGraph` with `rows` rows and `edges` edges, stepping only the legal moves.

    Needs `rows` > the number of valid positions unless every position is valid (`rows == S`):
    the last row is then padding, and an index with no row (never reached by a legal move of a
    valid position, by the positions contract) maps to it, where every value is 0.
    """
    S, A = env.num_positions, env.num_actions
    states, valid, legal = _all_positions(env, problem)
    if rows == S:
        position_of_row, row_of = jnp.arange(S, dtype=jnp.int32), jnp.arange(S, dtype=jnp.int32)
    else:
        position_of_row = _where_true(valid, size=rows)
        row_of = jnp.full((S,), rows - 1, jnp.int32).at[position_of_row].set(
            jnp.arange(rows, dtype=jnp.int32), mode="drop")
    is_row = position_of_row < S
    row_position = jnp.minimum(position_of_row, S - 1)
    row_legal = legal[row_position] & is_row[:, None]  # [K, A]
    flat = _where_true(row_legal.reshape(-1), size=edges)
    live = flat < rows * A
    source = jnp.where(live, flat // A, 0)
    edge_states = jax.tree_util.tree_map(lambda x: x[row_position[source]], states)
    stepped = jax.vmap(env.step)(edge_states, flat % A)
    moved = live & ~stepped.rejected

    start = start_position(env, problem)
    from_start = jax.vmap(env.step, in_axes=(None, 0))(jax.tree_util.tree_map(lambda x: x[start], states),
                                                       jnp.arange(A, dtype=jnp.int32))
    start_moved = legal[start] & ~from_start.rejected
    return EdgeGraph(
        source=source,
        next_row=jnp.where(moved, row_of[jax.vmap(env.position_index)(stepped)], source),
        reward=jnp.where(moved, stepped.reward, 0.0).astype(jnp.float32),
        terminal=moved & stepped.terminated,
        live=live,
        legal_count=jnp.sum(row_legal, axis=-1).astype(jnp.int32),
        start_row=row_of[start],
        start_next=jnp.where(start_moved, row_of[jax.vmap(env.position_index)(from_start)], row_of[start]),
        start_reward=jnp.where(start_moved, from_start.reward, 0.0).astype(jnp.float32),
        start_terminal=start_moved & from_start.terminated,
        start_legal=legal[start],
        num_positions=jnp.sum(valid).astype(jnp.int32),
        num_edges=jnp.sum(legal).astype(jnp.int32),
    )


@functools.partial(jax.jit, static_argnames=("env", "rows", "edges"))
def build_chunk(env: Environment, problems: Any, *, rows: int, edges: int) -> EdgeGraph:
    """The `EdgeGraph`s of a chunk of `problems` (leading axis `[B]`), `rows` rows and `edges` edges
    each (`compact_size`, `edge_size`). Jitted (`env`, `rows`, `edges` static)."""
    return jax.vmap(functools.partial(_edge_graph, env, rows=rows, edges=edges))(problems)


@functools.partial(jax.jit, static_argnames=("policy", "horizon"))
def solve_chunk(graphs: EdgeGraph, *, policy: str, horizon: int) -> BatchSolution:
    """Solve a chunk's edge graphs (leading axis `[B]`, from `build_chunk`) as one block-diagonal
    graph of `B * K` rows. Jitted (`policy`, `horizon` static)."""
    B, K = graphs.legal_count.shape
    offset = jnp.arange(B, dtype=jnp.int32) * K
    source = (graphs.source + offset[:, None]).reshape(-1)
    next_row = (graphs.next_row + offset[:, None]).reshape(-1)
    reward, terminal, live = graphs.reward.reshape(-1), graphs.terminal.reshape(-1), graphs.live.reshape(-1)
    legal_count = graphs.legal_count.reshape(-1)
    weight = jnp.where(live, 1.0 / jnp.maximum(legal_count[source], 1), 0.0)  # the uniform policy

    def turn(v_prev, _):
        q = reward + jnp.where(terminal, 0.0, v_prev[next_row])
        if policy == "uniform":
            v = jax.ops.segment_sum(weight * q, source, num_segments=B * K, indices_are_sorted=True)
        else:  # a row without legal moves can only refuse: its value stays 0, as in the full graph
            best = jax.ops.segment_max(jnp.where(live, q, -jnp.inf), source, num_segments=B * K,
                                       indices_are_sorted=True)
            v = jnp.where(legal_count > 0, best, 0.0)
        return v, None

    zero = jnp.zeros((B * K,), jnp.float32)
    # the rows a breadth-first enumeration from each start reaches (as `solver.positions_reached`)
    moves = (live & ~terminal) & (next_row != source)
    first = jnp.zeros((B * K,), bool).at[graphs.start_row + offset].set(True)
    reached = reached_by_moves(first, source, next_row, moves)
    before_last, _ = jax.lax.scan(turn, zero, None, length=max(horizon - 1, 0))
    last = turn(before_last, None)[0] if horizon > 0 else zero
    start = graphs.start_row + offset
    later = before_last[graphs.start_next + offset[:, None]]
    start_q = graphs.start_reward + jnp.where(graphs.start_terminal, 0.0, later)
    return BatchSolution(
        start_value=last[start],
        start_q=start_q if horizon > 0 else jnp.zeros_like(start_q),
        start_legal=graphs.start_legal,
        num_positions=graphs.num_positions,
        env_steps=jnp.sum((live & reached[source]).reshape(B, -1), axis=-1, dtype=jnp.int32),
        num_edges=graphs.num_edges,
    )


def compact_size(env: Environment, num_valid: int) -> int:
    """Host: the padded row count for a chunk whose largest problem has `num_valid` positions."""
    if num_valid == env.num_positions:
        return num_valid  # nothing to compact (MAD): the full graph
    step = -(-env.num_positions // BUCKETS)
    return step * (num_valid // step + 1)  # strictly more than num_valid: a padding row exists


def edge_size(env: Environment, num_edges: int) -> int:
    """Host: the padded edge count for a chunk whose largest problem has `num_edges` legal moves."""
    step = -(-env.num_positions * env.num_actions // (8 * BUCKETS))
    return step * max(1, -(-num_edges // step))


def _check_chunk_size(chunk_size) -> None:
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")


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
    if policy not in BATCH_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choices: {', '.join(BATCH_POLICIES)}")
    _check_chunk_size(chunk_size)
    horizon = check_horizon(env.max_turns if horizon is None else horizon)
    num_problems = jax.tree_util.tree_leaves(problems)[0].shape[0]
    def padded_chunk(first):  # always chunk_size indices, so one compiled shape serves every chunk
        return np.minimum(np.arange(first, first + chunk_size), num_problems - 1)

    sizes = [jax.device_get(_sizes(env, _rows(problems, padded_chunk(first))))
             for first in range(0, num_problems, chunk_size)]
    num_valid = np.concatenate([valid for valid, _ in sizes])[:num_problems]
    num_edges = np.concatenate([edges for _, edges in sizes])[:num_problems]
    order = np.lexsort((num_edges, num_valid))  # similar sizes share a chunk and a compiled shape
    pieces = []
    for first in range(0, num_problems, chunk_size):
        index = order[padded_chunk(first)]
        graphs = build_chunk(env, _rows(problems, index), rows=compact_size(env, int(num_valid[index].max())),
                              edges=edge_size(env, int(num_edges[index].max())))
        solution = solve_chunk(graphs, policy=policy, horizon=horizon)
        pieces.append(_rows(solution, slice(0, min(chunk_size, num_problems - first))))
    solved = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *pieces)
    return _rows(solved, np.argsort(order))


@functools.partial(jax.jit, static_argnames=("env", "horizon"))
def _greedy_chunk(env: Environment, problems: Any, *, horizon: int) -> dict:
    def one(problem):
        graph = build_graph(env, problem)
        start = start_position(env, problem)
        uniform = evaluate_policy(graph, uniform_policy(graph), horizon=horizon)
        best = optimal_values(graph, horizon=horizon)
        won, turns = greedy_play(graph, uniform, start, horizon=horizon)
        return {"uniform_greedy_won": won, "uniform_greedy_turns": turns, "solvable": best.v[horizon, start] > 0,
                "uniform_value": uniform.v[horizon, start]}
    return jax.vmap(one)(problems)


def greedy_reference_play(env: Environment, problems: Any, *, chunk_size: int = 16) -> dict:
    """Greedy play on the exact values under the uniform reference, on many problems (leaves `[B, ...]`),
    `chunk_size` at a time, from each problem's start with `env.max_turns` turns.

    Returns numpy arrays `[B]`: `uniform_greedy_won` (bool), `uniform_greedy_turns` (int32), `solvable`
    (bool, `V*` of the start is positive: some play wins) and `uniform_value` (the uniform policy's own
    success probability). Needs no training: it asks whether the uniform reference's values alone
    point to a win.
    """
    _check_chunk_size(chunk_size)
    num = jax.tree_util.tree_leaves(problems)[0].shape[0]
    if num == 0:
        raise ValueError("greedy_reference_play: no problems")
    pieces = []
    for first in range(0, num, chunk_size):
        index = np.minimum(np.arange(first, first + chunk_size), num - 1)  # padded: one compiled shape
        out = jax.device_get(_greedy_chunk(env, _rows(problems, index), horizon=env.max_turns))
        pieces.append({k: np.asarray(v)[: min(chunk_size, num - first)] for k, v in out.items()})
    return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}


def memory_per_problem(env: Environment, *, horizon: int | None = None) -> dict[str, int]:
    """Host: bytes of one problem's full graph and of its full values (`v` and `q`) at `horizon`."""
    horizon = env.max_turns if horizon is None else horizon
    problem = jax.eval_shape(env.sample_problem, jax.random.key(0))
    graph = jax.eval_shape(functools.partial(build_graph, env), problem)
    values = jax.eval_shape(lambda g: evaluate_policy(g, uniform_policy(g), horizon=horizon), graph)

    def nbytes(tree):
        return int(sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree)))

    return {"graph_bytes": nbytes(graph), "values_bytes": nbytes(values)}
