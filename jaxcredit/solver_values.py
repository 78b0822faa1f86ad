"""Values under a reference policy: the one place that turns a policy choice into exact values.

`reference_values(env, problem, policy=...)` takes a problem's graph (built here unless given),
the reference policy's action probabilities at every position, and evaluates them by backward
induction (`jaxcredit.solver`). The policy is `"network"` (a `PolicyFn` with its parameters) or
one of `solver.POLICIES` (`"uniform"`, `"optimal"`, `"soft"`). The exact and solver credit arms,
the analysis and `jaxcredit solve` all call it. The network is evaluated only at positions
reached from the start, once per distinct (observation, legal mask) row, in fixed-size chunks
(`network_policy_probs`); unreached positions get values 0. An afterstate policy is scored from
the graph without stepping again. See docs/architecture.md#the-solver-contract.

Shape letters: S positions, A actions, L observation length, T turns (value arrays have T + 1
rows, one per number of turns left), N rows (positions, or positions x turns).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.afterstate import (
    afterstate_vocab_size,
    encode_afterstate,
    encode_lookahead,
    lookahead_summary,
    reward_sign,
)
from jaxcredit.env import Environment
from jaxcredit.policy_fn import PolicyFn, action_probabilities, afterstate_lookahead_of, masked_logits, policy_input_of
from jaxcredit.solver import (
    DEFAULT_TEMPERATURE,
    DEFAULT_TIE_BREAK_DISCOUNT,
    POLICIES,
    Graph,
    Values,
    build_graph,
    check_horizon,
    check_tie_break,
    evaluate_policy,
    positions_reached,
    solve_graph,
    start_position,
    tie_broken_values,
)

REFERENCE_POLICIES = ("network",) + POLICIES
NETWORK_CHUNK = 256  # rows per network call; more distinct rows take more calls


def observation_shows_turns(env: Environment) -> bool:
    """Host: whether the observation changes with the turn (then a network sees the turns left).

    Uses `env.observation_shows_turns` when the environment declares it; otherwise compares the
    observations of a sampled problem's start position at every turn.
    """
    declared = getattr(env, "observation_shows_turns", None)
    if declared is not None:
        return bool(declared)
    with jax.ensure_compile_time_eval():
        problem = env.sample_problem(jax.random.key(0))
        turns = jnp.arange(env.max_turns, dtype=jnp.int32)
        observations = jax.vmap(lambda t: env.position(problem, 0, turn=t)[0].observation)(turns)
        observations = np.asarray(observations)
    return bool((observations != observations[:1]).any())


def _pack(values: jax.Array, bits: int) -> jax.Array:
    """int32 `[N, W]`: the non-negative ints `values` `[N, M]` (each < 2**bits) packed `31 // bits` to a word."""
    per_word = max(1, 31 // bits)
    pad = -values.shape[1] % per_word
    values = jnp.pad(values.astype(jnp.int32), ((0, 0), (0, pad))).reshape(values.shape[0], -1, per_word)
    shifts = bits * jnp.arange(per_word, dtype=jnp.int32)
    return jnp.sum(values << shifts, axis=-1, dtype=jnp.int32)


def distinct_rows(keys: jax.Array, keep: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Group equal rows of int32 `keys` `[N, W]` among the rows where bool `keep` `[N]` holds.

    Returns `(first, group, count)`: int32 `[N]` a representative row of each group (groups
    `0..count-1` are the kept ones; later entries are padding), int32 `[N]` the group of every
    row, and int32 `[]` the number of kept groups. One multi-key sort; fixed shapes.
    """
    size = keys.shape[0]
    rows = jnp.arange(size, dtype=jnp.int32)
    operands = ((~keep).astype(jnp.int32),) + tuple(keys.T) + (rows,)
    *sorted_keys, order = jax.lax.sort(operands, num_keys=len(operands) - 1)
    sorted_keys = jnp.stack(sorted_keys, axis=-1)
    new = jnp.concatenate([jnp.ones((1,), bool), jnp.any(sorted_keys[1:] != sorted_keys[:-1], axis=-1)])
    group_sorted = jnp.cumsum(new, dtype=jnp.int32) - 1
    group = jnp.zeros((size,), jnp.int32).at[order].set(group_sorted)
    first = jnp.zeros((size,), jnp.int32).at[jnp.where(new, group_sorted, size)].set(order, mode="drop")
    count = jnp.sum(new & keep[order], dtype=jnp.int32)
    return first, group, count


def _distinct_probs(policy_fn: PolicyFn, params: Any, observation: jax.Array, legal: jax.Array, keep: jax.Array,
                    *, vocab_size: int, chunk_size: int,
                    group_by: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """`(probs [N, A], evals int32 [])`: `action_probabilities` of `policy_fn` at the kept rows
    (0 elsewhere), evaluated once per distinct (observation, legal) row, `chunk_size` rows a call.
    `group_by` int32 `[N, W]`: extra key columns (rows with different ones are evaluated apart)."""
    size, num_actions = legal.shape
    keys = [_pack(observation, max(1, int(vocab_size - 1).bit_length())), _pack(legal, 1)]
    keys = jnp.concatenate(keys if group_by is None else [group_by.astype(jnp.int32)] + keys, axis=-1)
    first, group, count = distinct_rows(keys, keep)
    chunk = min(chunk_size, size)

    def body(carry):
        index, out = carry
        slot = index * chunk + jnp.arange(chunk, dtype=jnp.int32)
        row = first[jnp.minimum(slot, size - 1)]
        mask = legal[row]
        probs = action_probabilities(policy_fn(params, observation[row], mask), mask)
        return index + 1, out.at[slot].set(probs, mode="drop")

    start = (jnp.zeros((), jnp.int32), jnp.zeros((size, num_actions), jnp.float32))
    _, out = jax.lax.while_loop(lambda carry: carry[0] * chunk < count, body, start)
    return jnp.where(keep[:, None], out[group], 0.0), count


def _network_rows(env: Environment, problem: Any, graph: Graph, *, horizon: int, start: jax.Array | None):
    """`(observation [R, L], legal [R, A], keep [R], turns)`: the rows a network is evaluated on
    for one problem (`R = turns * S`; `turns` is `horizon + 1` when the observation shows the turns
    left, else 1) and which of them are needed (positions reached from `start`)."""
    num_positions, num_actions = graph.legal.shape
    needed = graph.valid if start is None else positions_reached(graph, start)
    if observation_shows_turns(env):
        turn = jnp.clip(env.max_turns - jnp.arange(horizon + 1, dtype=jnp.int32), 0, env.max_turns)
        positions = jnp.arange(num_positions, dtype=jnp.int32)

        def observe(t):
            return jax.vmap(lambda s: env.position(problem, s, turn=t)[0].observation)(positions)

        observations = jax.vmap(observe)(turn)  # [T + 1, S, L]
        turns = horizon + 1
    else:
        observations, turns = graph.observation[None], 1
    legal = jnp.broadcast_to(graph.legal, (turns, num_positions, num_actions)).reshape(-1, num_actions)
    keep = jnp.broadcast_to(needed, (turns, num_positions)).reshape(-1)
    return observations.reshape(turns * num_positions, -1), legal, keep, turns


def _distinct_scores(score_fn, params: Any, rows: jax.Array, keep: jax.Array, group_by: jax.Array, *,
                     vocab_size: int, chunk_size: int) -> tuple[jax.Array, jax.Array]:
    """`(scores [N], evals int32 [])`: `score_fn(params, rows)` at the kept rows of int32 `rows`
    `[N, W]` (0 elsewhere), once per distinct (row, `group_by` int32 `[N, G]`), `chunk_size` a call."""
    size = rows.shape[0]
    keys = jnp.concatenate([group_by.astype(jnp.int32), _pack(rows, max(1, int(vocab_size - 1).bit_length()))],
                           axis=-1)
    first, group, count = distinct_rows(keys, keep)
    chunk = min(chunk_size, size)

    def body(carry):
        index, out = carry
        slot = index * chunk + jnp.arange(chunk, dtype=jnp.int32)
        scores = score_fn(params, rows[first[jnp.minimum(slot, size - 1)]])
        return index + 1, out.at[slot].set(scores, mode="drop")

    start = (jnp.zeros((), jnp.int32), jnp.zeros((size,), jnp.float32))
    _, out = jax.lax.while_loop(lambda carry: carry[0] * chunk < count, body, start)
    return jnp.where(keep, out[group], 0.0), count


def _lookahead_table(env: Environment, graphs: Graph, turns: int) -> jax.Array:
    """int32 `[P, turns, S, 3]`: the lookahead summary tokens of every position as an afterstate, per
    table row of turns left (row 0: no turn left, the afterstate is truncated and has no successor;
    any later row: the position's legal moves, read from the graph)."""
    count, win, other = lookahead_summary(graphs.legal, graphs.terminal, graphs.reward)  # [P, S]
    live = (jnp.arange(turns) > 0)[None, :, None]
    zeros = jnp.zeros((), jnp.int32)
    return encode_lookahead(jnp.where(live, count[:, None], zeros), live & win[:, None], live & other[:, None],
                            vocab_size=env.vocab_size, num_actions=env.num_actions)


def _afterstate_probs_batch(env: Environment, problems: Any, graphs: Graph, policy_fn, params: Any, *,
                            horizon: int, starts: jax.Array | None, chunk_size: int) -> tuple[jax.Array, jax.Array]:
    """`network_policy_probs_batch` for an `AfterstatePolicy`: the scores of the afterstates that the
    reached positions' legal actions lead to, each distinct encoding scored once, gathered into
    logits; `policy_evals` counts the encodings scored (the three terminal ones included). With the
    policy's lookahead, each next position's summary is read from the graph's row of it."""
    num_problems, num_positions, num_actions = graphs.legal.shape
    vocab, lookahead = env.vocab_size, afterstate_lookahead_of(policy_fn)
    rows = jax.vmap(lambda p, g, s: _network_rows(env, p, g, horizon=horizon, start=s)[:3],
                    in_axes=(0, 0, None if starts is None else 0))(problems, graphs, starts)
    observation, legal, keep = rows  # [P, R, ...], R = turns * S
    turns = observation.shape[1] // num_positions
    observation = observation.reshape(num_problems, turns, num_positions, -1)
    keep = keep.reshape(num_problems, turns, num_positions)
    legal = legal.reshape(num_problems, turns, num_positions, num_actions)
    if lookahead and turns == 1:
        # The observation hides the clock, but the summary shows the last turn (its afterstates are
        # truncated, with no successor): rows of 0, 1 and 2 or more turns left.
        turns = min(horizon + 1, 3)
        observation, keep, legal = (jnp.repeat(x, turns, axis=1) for x in (observation, keep, legal))
    # Row j (j turns left) leads to positions with j - 1 turns left: table row j - 1 (row 0 when the
    # observation does not show the turns, so there is one row).
    afterstate_row = jnp.maximum(jnp.arange(turns, dtype=jnp.int32) - 1, 0)
    signs = jnp.asarray([0.0, 1.0, -1.0], jnp.float32)  # reward_sign 0, 1, 2
    target = graphs.next_position * 3 + reward_sign(graphs.reward)  # [P, S, A]: (next position, sign)
    edge_keep = keep[..., None] & (graphs.legal & ~graphs.terminal)[:, None]  # [P, turns, S, A]

    def needed_of(edges, targets):  # [turns, S, A], [S, A] -> [turns, 3 S]
        rows_hit = jnp.broadcast_to(afterstate_row[:, None, None], edges.shape)
        return jnp.zeros((turns, num_positions * 3), bool).at[rows_hit, jnp.broadcast_to(targets, edges.shape)].max(
            edges)

    needed = jax.vmap(needed_of)(edge_keep, target)  # [P, turns, 3 S]
    encoded = encode_afterstate(jnp.repeat(observation, 3, axis=2), jnp.zeros((), bool),
                                jnp.tile(signs, num_positions), vocab_size=vocab)  # [P, turns, 3 S, L + 2]
    terminal_rows = encode_afterstate(jnp.zeros((3, observation.shape[-1]), jnp.int32), jnp.ones((3,), bool), signs,
                                      vocab_size=vocab)
    if lookahead:
        summary = jnp.repeat(_lookahead_table(env, graphs, turns), 3, axis=2)  # [P, turns, 3 S, 3]
        encoded = jnp.concatenate([encoded, summary], axis=-1)
        no_successor = encode_lookahead(jnp.zeros((3,), jnp.int32), jnp.zeros((3,), bool), jnp.zeros((3,), bool),
                                        vocab_size=vocab, num_actions=num_actions)
        terminal_rows = jnp.concatenate([terminal_rows, no_successor], axis=-1)
    width = encoded.shape[-1]
    problem_index = jnp.broadcast_to(jnp.arange(num_problems, dtype=jnp.int32)[:, None, None], needed.shape)
    live_scores, evals = _distinct_scores(
        policy_fn.score_fn, params, encoded.reshape(-1, width), needed.reshape(-1), problem_index.reshape(-1, 1),
        vocab_size=afterstate_vocab_size(vocab, num_actions=num_actions, lookahead=lookahead), chunk_size=chunk_size)
    live_scores = live_scores.reshape(num_problems, turns, num_positions * 3)
    terminal_scores = policy_fn.score_fn(params, terminal_rows)  # [3]
    gathered = jax.vmap(lambda scores, t: scores[:, t])(live_scores, target)  # [P, turns, S, A]
    scores = jnp.where(graphs.terminal[:, None], terminal_scores[reward_sign(graphs.reward)][:, None],
                       gathered[:, afterstate_row])
    logits = masked_logits(scores, legal)
    if policy_fn.logits_transform is not None:
        logits = policy_fn.logits_transform(logits, legal)
    probs = jnp.where(keep[..., None], action_probabilities(logits, legal), 0.0)
    evals = evals + 3 * jnp.any(graphs.terminal & graphs.legal).astype(jnp.int32)
    if 1 < turns < horizon + 1:  # rows of 0, 1, and 2 or more turns left
        probs = probs[:, jnp.minimum(jnp.arange(horizon + 1), turns - 1)]
    return jnp.broadcast_to(probs, (num_problems, horizon + 1, num_positions, num_actions)), evals


def network_policy_probs_batch(env: Environment, problems: Any, graphs: Graph, policy_fn: PolicyFn, params: Any, *,
                               horizon: int, starts: jax.Array | None = None,
                               chunk_size: int = NETWORK_CHUNK) -> tuple[jax.Array, jax.Array]:
    """`(probs [P, T + 1, S, A], policy_evals int32 [])`: `network_policy_probs` of `P` problems at once.

    `problems` and `graphs` have a leading axis `[P]`, `starts` int32 `[P]` (None: every valid
    position). Each problem's distinct rows are its own (the same number as one problem at a
    time), but all problems' rows share the chunks: `ceil(total / chunk_size)` network calls
    instead of `P` times the largest problem's (what `jax.vmap` of `network_policy_probs` runs).
    """
    horizon = check_horizon(horizon)
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    if policy_input_of(policy_fn) == "afterstate":
        return _afterstate_probs_batch(env, problems, graphs, policy_fn, params, horizon=horizon, starts=starts,
                                       chunk_size=chunk_size)
    num_problems, num_positions, num_actions = graphs.legal.shape
    rows = jax.vmap(lambda p, g, s: _network_rows(env, p, g, horizon=horizon, start=s)[:3],
                    in_axes=(0, 0, None if starts is None else 0))(problems, graphs, starts)
    observation, legal, keep = rows  # [P, R, ...]
    turns = observation.shape[1] // num_positions
    problem_index = jnp.broadcast_to(jnp.arange(num_problems, dtype=jnp.int32)[:, None], keep.shape)
    probs, evals = _distinct_probs(policy_fn, params, observation.reshape(-1, observation.shape[-1]),
                                   legal.reshape(-1, num_actions), keep.reshape(-1), vocab_size=env.vocab_size,
                                   chunk_size=chunk_size, group_by=problem_index.reshape(-1, 1))
    probs = probs.reshape(num_problems, turns, num_positions, num_actions)
    return jnp.broadcast_to(probs, (num_problems, horizon + 1, num_positions, num_actions)), evals


def network_values_batch(env: Environment, problems: Any, graphs: Graph, policy_fn: PolicyFn, params: Any, *,
                         horizon: int, starts: jax.Array | None = None,
                         chunk_size: int = NETWORK_CHUNK) -> tuple[Values, jax.Array]:
    """`(values, policy_evals)`: `reference_values(policy="network")` of `P` problems at once.

    `values` is `Values` with a leading axis `[P]` (`v [P, T + 1, S]`, `q [P, T + 1, S, A]`), the
    network's probabilities from `network_policy_probs_batch` (all problems' rows in shared chunks;
    `starts` int32 `[P]`, None: every valid position) and the backward induction per problem;
    `policy_evals` int32 `[]` is the rows evaluated over all problems.
    """
    probs, evals = network_policy_probs_batch(env, problems, graphs, policy_fn, params, horizon=horizon,
                                              starts=starts, chunk_size=chunk_size)
    return jax.vmap(lambda g, p: evaluate_policy(g, p, horizon=horizon))(graphs, probs), evals


def network_policy_probs(env: Environment, problem: Any, graph: Graph, policy_fn: PolicyFn, params: Any, *,
                         horizon: int, start: jax.Array | None = None,
                         chunk_size: int = NETWORK_CHUNK) -> tuple[jax.Array, jax.Array]:
    """`(probs, policy_evals)`: a network's action probabilities at the positions it is needed.

    `probs` float32 `[T + 1, S, A]` (row `t`: `t` turns left), illegal actions 0. The network is
    evaluated at the positions reached from `start` (int32 `[]`; None: every valid position),
    once per distinct (observation, legal mask), `chunk_size` rows per call; other positions get
    0. When the observation shows the turns left (`observation_shows_turns(env)`), at every
    turn, the observation with `t` turns left rebuilt as `env.position(problem, s,
    turn=env.max_turns - t)` (clipped to `[0, max_turns]`). `policy_evals` int32 `[]` is the
    number of rows evaluated (what a budget ledger charges; padding of the last chunk excluded).
    Several problems at once: `network_policy_probs_batch`.
    """
    add_axis = functools.partial(jax.tree_util.tree_map, lambda x: x[None])
    probs, evals = network_policy_probs_batch(env, add_axis(problem), add_axis(graph), policy_fn, params,
                                              horizon=horizon, starts=None if start is None else start[None],
                                              chunk_size=chunk_size)
    return probs[0], evals


def reference_values(env: Environment, problem: Any, *, policy: str, horizon: int | None = None,
                     policy_fn: PolicyFn | None = None, params: Any = None,
                     temperature: float = DEFAULT_TEMPERATURE, graph: Graph | None = None,
                     start: jax.Array | None = None, chunk_size: int = NETWORK_CHUNK, tie_break: str = "none",
                     tie_break_discount: float = DEFAULT_TIE_BREAK_DISCOUNT) -> tuple[Values, jax.Array]:
    """`(values, policy_evals)`: exact values of one problem under the reference `policy`.

    `policy` is `"network"` (`policy_fn` with `params`, see `network_policy_probs`) or one of
    `solver.POLICIES` (`temperature` for `"soft"`). `tie_break` (`solver.TIE_BREAKS`; not `"none"`
    for `"optimal"` only, with `tie_break_discount` for `"discount"`) breaks the optimal values'
    ties toward the fastest win (`solver.tie_broken_values`). `horizon` defaults to `env.max_turns`;
    `graph` is built unless given; `start` (int32 `[]`) defaults to the problem's start
    position: under `"network"` values are the network's only at positions reached from it.
    Returns `Values` (`v [T + 1, S]`, `q [T + 1, S, A]`) and the network evaluations done,
    int32 `[]` (0 for a fixed policy). Pure: jit it, vmap it over problems.
    """
    if policy not in REFERENCE_POLICIES:
        raise ValueError(f"unknown reference policy {policy!r}; choices: {', '.join(REFERENCE_POLICIES)}")
    tie_break, tie_break_discount = check_tie_break(tie_break, tie_break_discount)
    if tie_break != "none" and policy != "optimal":
        raise ValueError(f"tie-break {tie_break!r} breaks ties of the optimal values; "
                         f"the reference policy is {policy!r}")
    horizon = check_horizon(env.max_turns if horizon is None else horizon)
    graph = build_graph(env, problem) if graph is None else graph
    if policy != "network":
        values = solve_graph(graph, policy=policy, horizon=horizon, temperature=temperature)
        values = tie_broken_values(graph, values, tie_break=tie_break, horizon=horizon, discount=tie_break_discount)
        return values, jnp.zeros((), jnp.int32)
    if policy_fn is None:
        raise ValueError("reference policy 'network' needs policy_fn (and its params)")
    start = start_position(env, problem) if start is None else start
    probs, evals = network_policy_probs(env, problem, graph, policy_fn, params, horizon=horizon, start=start,
                                        chunk_size=chunk_size)
    return evaluate_policy(graph, probs, horizon=horizon), evals


def position_values(env: Environment, problem: Any, state: Any, *, policy: str, turns_left: int,
                    policy_fn: PolicyFn | None = None, params: Any = None) -> tuple[jax.Array, jax.Array]:
    """Host: float32 `[T + 1, S]`, `[T + 1, S, A]`, the exact values `v` and `q` of `problem` with
    `turns_left` turns left, for reading at `state`'s position: under a fixed `policy`
    (`solver.POLICIES`), or under the network `policy_fn` with `params` (`policy` `"network"`),
    which sees that position with exactly `turns_left` turns left (`env.max_turns` moved to
    `state.turn + turns_left`). What `jaxcredit solve` prints."""
    if policy != "network":
        values, _ = jax.jit(reference_values, static_argnames=("env", "policy", "horizon"))(
            env, problem, policy=policy, horizon=turns_left)
        return values.v, values.q
    if turns_left > 0:  # the network sees this position with exactly `turns_left` turns left
        env = dataclasses.replace(env, max_turns=int(state.turn) + turns_left)
    values, _ = jax.jit(reference_values, static_argnames=("env", "policy", "horizon", "policy_fn"))(
        env, problem, policy="network", horizon=turns_left, policy_fn=policy_fn, params=params)
    return values.v, values.q
