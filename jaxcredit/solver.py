"""The exact solver: a problem's complete graph of positions, and exact values over the turns left.

`build_graph` enumerates every position of one problem through the environment's positions
contract and steps every action there with the environment's own `step`, giving a transition
table. Backward induction over the turns left then gives exact `V[t, s]` and `Q[t, s, a]` for any
policy given as action probabilities at every position, the optimal and soft-optimal values, and
reachability of success. Every function is pure with fixed shapes: jit it and `jax.vmap` it over
problems (`jaxcredit.solver_batch.solve_batch` does both). Values under a reference policy have
one entry point, `jaxcredit.solver_values.reference_values`. Values count turns LEFT on their
first axis (`v[0] = 0`). See docs/solver.md#values-and-conventions.

Shape letters: B problems, S positions, A actions, L observation length, T turns (the horizon;
value arrays have T + 1 rows, one per number of turns left `0..T`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.env import Environment
from jaxcredit.validation import require_int

POLICIES = ("uniform", "optimal", "soft")
# Tie-breaks of the optimal reference policy (`tie_broken_values`): `none` keeps Q*; `fastest` and
# `discount` lower each action's value by a small amount that grows with the turns its value needs.
TIE_BREAKS = ("none", "fastest", "discount")
VALUE_TOLERANCE = 1e-6  # values closer than this are tied (jaxcredit.objectives.TIE_TOLERANCE)
FASTEST_STEP = 1e-5  # `fastest`: the value given up per turn needed (10x VALUE_TOLERANCE)
DISCOUNT_SCALE = 1e-2  # `discount`: the share of `Q* - Q_γ` subtracted
DEFAULT_TIE_BREAK_DISCOUNT = 0.9
# The soft backup's default temperature, in units of success probability (values lie in [0, 1]).
# On default MAD it makes the Boltzmann policy good but imperfect (start value 0.31, against 1 for
# the optimal policy and 0.01 for the uniform one), so its credit is informative on most steps; at
# 0.1 it is practically the hard max (V_τ = 0.999 at the start). See the README.
DEFAULT_TEMPERATURE = 0.3


@struct.dataclass
class Graph:
    """The complete graph of one problem's positions (batched graphs carry a leading `[B]`).

    Attributes:
      next_position: int32 `[S, A]`; illegal or refused actions (and padding rows) stay at `s`.
      reward: float32 `[S, A]`, the reward of taking `a` at `s`.
      terminal: bool `[S, A]`, taking `a` at `s` ends the episode (terminated).
      legal: bool `[S, A]`, the rules accept `a` at `s` (all False on padding rows).
      valid: bool `[S]`, `s` is a real position of this problem (not padding).
      observation: int32 `[S, L]`, the observation at each position at turn 0.

    What enumerating the graph costs in environment steps depends on where the episode starts:
    `enumeration_env_steps(graph, start)` (one step per legal move of a reached position).
    """

    next_position: jax.Array
    reward: jax.Array
    terminal: jax.Array
    legal: jax.Array
    valid: jax.Array
    observation: jax.Array


@struct.dataclass
class Values:
    """Exact values over the turns left (batched values carry a leading `[B]`).

    Attributes:
      v: float32 `[T + 1, S]`, `v[t, s]` the value of position `s` with `t` turns left; `v[0] = 0`.
      q: float32 `[T + 1, S, A]`, `q[t, s, a]` the value of taking `a` there; `q[0] = 0`.
    """

    v: jax.Array
    q: jax.Array


@functools.partial(jax.jit, static_argnames=("env",))
def build_graph(env: Environment, problem: Any) -> Graph:
    """The complete graph of `problem`'s positions, stepped with `env.step` at every action.

    `problem` is one (unbatched) problem pytree; `jax.vmap(build_graph, in_axes=(None, 0))`
    builds many. This fixed-shape build steps the whole `[S, A]` table; the label work a budget
    ledger charges is what an enumeration needs, `enumeration_env_steps(graph, start)`.
    Jitted (`env` static), so a call outside `jit` compiles one program, not one per operation.
    """
    positions = jnp.arange(env.num_positions, dtype=jnp.int32)
    return graph_over_positions(env, problem, positions, jnp.ones(positions.shape, bool), lambda index: index)


def graph_over_positions(env: Environment, problem: Any, positions: jax.Array, keep: jax.Array,
                         row_of: Callable[[jax.Array], jax.Array]) -> Graph:
    """The graph restricted to the rows `positions` (int32 `[K]` position indices), `keep` bool `[K]`.

    Row k is position `positions[k]`, valid when `keep[k]` and the environment says so;
    `row_of` maps a position index (int32, any shape) to its row, so the rows must hold every
    position a legal action can reach. `build_graph` is the case `positions = arange(S)`.
    """
    states, valid = jax.vmap(lambda s: env.position(problem, s))(positions)
    valid = valid & keep
    actions = jnp.arange(env.num_actions, dtype=jnp.int32)
    step_all = jax.vmap(jax.vmap(env.step, in_axes=(None, 0)), in_axes=(0, None))
    stepped = step_all(states, actions)  # every leaf [K, A, ...]
    moved = row_of(jax.vmap(jax.vmap(env.position_index))(stepped))
    here = jnp.arange(positions.shape[0], dtype=jnp.int32)[:, None]
    legal = states.legal_action_mask & valid[:, None]
    accepted = legal & ~stepped.rejected
    return Graph(
        next_position=jnp.where(accepted, moved, here).astype(jnp.int32),
        reward=jnp.where(accepted, stepped.reward, 0.0).astype(jnp.float32),
        terminal=accepted & stepped.terminated,
        legal=legal,
        valid=valid,
        observation=states.observation,
    )


def start_position(env: Environment, problem: Any) -> jax.Array:
    """int32 `[]`: the position index of the start of an episode on `problem`."""
    return env.position_index(env.init_problem(problem))


def uniform_policy(graph: Graph) -> jax.Array:
    """float32 `[..., S, A]`: the uniform policy over legal actions (the reference policy).

    Equal to `action_probabilities(uniform_policy_fn(...), legal)` (uniform over all actions
    where none is legal), computed without the softmax.
    """
    count = jnp.sum(graph.legal, axis=-1, keepdims=True)
    fallback = 1.0 / graph.legal.shape[-1]
    return jnp.where(count > 0, graph.legal / jnp.maximum(count, 1), fallback).astype(jnp.float32)


def _backup(graph: Graph, v_next: jax.Array) -> jax.Array:
    """float32 `[..., S, A]`: Q with one more turn left, given `v_next` `[..., S]` for one turn fewer."""
    continuation = jnp.where(graph.terminal, 0.0, jnp.take(v_next, graph.next_position, axis=-1))
    return graph.reward + continuation


def _induct(turn_fn, graph: Graph, xs, *, horizon: int) -> jax.Array:
    """float32 `[T + 1, S]`: `v[0] = 0`, then `v[t] = turn_fn(Q[t], x[t])` for t = 1..horizon.

    Only V is carried and stacked; Q is rebuilt afterwards from V in one gather (`_all_q`),
    which is cheaper than stacking `[S, A]` rows inside the loop.
    """
    def body(v_prev, x):
        v = turn_fn(_backup(graph, v_prev), v_prev, x)
        return v, v

    zero = jnp.zeros(graph.valid.shape, jnp.float32)
    _, v = jax.lax.scan(body, zero, xs, length=horizon)
    return jnp.concatenate([zero[None], v])


def _all_q(graph: Graph, v: jax.Array) -> jax.Array:
    """float32 `[T + 1, S, A]`: Q at every turns left from `v [T + 1, S]` (row 0 is 0)."""
    q = jax.vmap(lambda v_prev: _backup(graph, v_prev))(v[:-1])
    return jnp.concatenate([jnp.zeros((1,) + graph.legal.shape, jnp.float32), q])


def check_horizon(horizon: int) -> int:
    """`horizon` (turns left) if it is an integer >= 0; else `ValueError`."""
    return require_int("horizon", horizon, 0)


def _policy_rows(graph: Graph, policy_probs: jax.Array, *, horizon: int):
    """`(xs, per_turn)`: what the induction scans over for `policy_probs` `[S, A]` or `[T + 1, S, A]`."""
    S, A = graph.legal.shape
    if policy_probs.shape == (S, A):
        return None, False
    if policy_probs.shape != (horizon + 1, S, A):
        raise ValueError(f"policy_probs must have shape {(S, A)} or {(horizon + 1, S, A)}, got {policy_probs.shape}")
    return policy_probs[1:], True


def _policy_v(graph: Graph, policy_probs: jax.Array, *, horizon: int) -> jax.Array:
    """float32 `[T + 1, S]`: V of a policy (see `evaluate_policy`)."""
    xs, per_turn = _policy_rows(graph, policy_probs, horizon=horizon)
    if per_turn:
        return _induct(lambda q, v_prev, probs: jnp.sum(probs * q, axis=-1), graph, xs, horizon=horizon)
    # One policy for every turn: fold it into the edges once, V[t] = expected reward + W . V[t-1].
    expected_reward = jnp.sum(policy_probs * graph.reward, axis=-1)
    weight = jnp.where(graph.terminal, 0.0, policy_probs)

    def body(v_prev, _):
        v = expected_reward + jnp.sum(weight * jnp.take(v_prev, graph.next_position, axis=-1), axis=-1)
        return v, v

    zero = jnp.zeros(graph.valid.shape, jnp.float32)
    _, v = jax.lax.scan(body, zero, None, length=horizon)
    return jnp.concatenate([zero[None], v])


def _optimal_v(graph: Graph, *, horizon: int) -> jax.Array:
    """float32 `[T + 1, S]`: `V*` (see `optimal_values`)."""
    any_legal = graph.legal.any(axis=-1)

    def turn(q, v_prev, _):
        best = jnp.max(jnp.where(graph.legal, q, -jnp.inf), axis=-1)
        return jnp.where(any_legal, best, v_prev)

    return _induct(turn, graph, None, horizon=horizon)


def _boltzmann(q: jax.Array, legal: jax.Array, temperature: float) -> jax.Array:
    """float32 `[..., S, A]`: `softmax(q / temperature)` over the legal actions, 0 elsewhere.

    A row without a legal action gets all zeros (its value is handled by the caller)."""
    logits = jnp.where(legal, q / temperature, -jnp.inf)
    top = jnp.max(logits, axis=-1, keepdims=True)
    weight = jnp.where(legal, jnp.exp(logits - jnp.where(jnp.isfinite(top), top, 0.0)), 0.0)
    return weight / jnp.maximum(jnp.sum(weight, axis=-1, keepdims=True), 1e-30)


def _check_temperature(temperature):
    """A Python number must be finite and > 0 (else `ValueError`); an array (e.g. traced, so one
    compiled function serves every temperature) is passed through unchecked."""
    if isinstance(temperature, (jax.Array, np.ndarray)):
        return temperature
    ok = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
    if not ok or not temperature > 0 or not np.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    return float(temperature)


def _soft_v(graph: Graph, *, horizon: int, temperature: float) -> jax.Array:
    """float32 `[T + 1, S]`: `V_τ` (see `soft_values`)."""
    any_legal = graph.legal.any(axis=-1)

    def turn(q, v_prev, _):
        v = jnp.sum(_boltzmann(q, graph.legal, temperature) * q, axis=-1)
        return jnp.where(any_legal, v, v_prev)

    return _induct(turn, graph, None, horizon=horizon)


def turns_needed(q: jax.Array, *, tolerance: float = VALUE_TOLERANCE) -> jax.Array:
    """int32 `[T + 1, S, A]`: for each entry of `q` `[T + 1, S, A]` (first axis turns left), the
    fewest turns left `t' <= t` at which the same action is still worth its value,
    `min {t' <= t : q[t', s, a] >= q[t, s, a] - tolerance}`. Under the optimal values, an action
    that wins for sure has `turns_needed` equal to the steps of its fastest win (that action
    included); a worthless action has 0. One `[T + 1, S, A]` comparison per row (`lax.map`)."""
    q = jnp.asarray(q)
    rows = jnp.arange(q.shape[0], dtype=jnp.int32)

    def first_row_reaching(t):
        reaching = (q >= q[t][None] - tolerance) & (rows <= t)[:, None, None]
        return jnp.argmax(reaching, axis=0).astype(jnp.int32)  # row t itself always reaches

    return jax.lax.map(first_row_reaching, rows)


def _discounted_optimal_q(graph: Graph, *, horizon: int, discount) -> jax.Array:
    """float32 `[T + 1, S, A]`: `Q_γ`, the optimal backup with every continuation multiplied by γ."""
    any_legal = graph.legal.any(axis=-1)

    def turn(q, v_prev, _):
        return jnp.where(any_legal, jnp.max(jnp.where(graph.legal, q, -jnp.inf), axis=-1), v_prev)

    def backup(v_prev):
        return graph.reward + discount * jnp.where(graph.terminal, 0.0, jnp.take(v_prev, graph.next_position, axis=-1))

    def body(v_prev, _):
        v = turn(backup(v_prev), v_prev, None)
        return v, v

    zero = jnp.zeros(graph.valid.shape, jnp.float32)
    _, v = jax.lax.scan(body, zero, None, length=horizon)
    v = jnp.concatenate([zero[None], v])
    return jnp.concatenate([jnp.zeros((1,) + graph.legal.shape, jnp.float32), jax.vmap(backup)(v[:-1])])


def check_tie_break(tie_break: str, discount=DEFAULT_TIE_BREAK_DISCOUNT) -> tuple[str, float]:
    """`(tie_break, discount)` if `tie_break` is one of `TIE_BREAKS` and `discount` a number in
    (0, 1); else `ValueError` (`discount` is checked only for `tie_break="discount"`)."""
    if not isinstance(tie_break, str) or tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie-break {tie_break!r}; choices: {', '.join(TIE_BREAKS)}")
    if tie_break == "discount":
        ok = isinstance(discount, (int, float)) and not isinstance(discount, bool)
        if not ok or not 0 < discount < 1:
            raise ValueError(f"the discount tie-break needs a discount in (0, 1), got {discount!r}")
    return tie_break, float(discount)


def tie_broken_values(graph: Graph, values: Values, *, tie_break: str, horizon: int,
                      discount: float = DEFAULT_TIE_BREAK_DISCOUNT) -> Values:
    """The optimal `values` (`Q*`, `V*`; `v [T + 1, S]`, `q [T + 1, S, A]`) with ties broken toward
    the fastest win, for the argmax of whoever reads them (greedy play, the `hard` and `pairwise`
    objectives' labels).

    With spare turns (and an UNDO), most legal actions tie at `Q* = 1`: a step back, a wrong
    submission or a detour still leaves time to win. The tie-breaks lower each action's value a
    little, more the longer its value takes:

    - `none`: `values` unchanged.
    - `fastest`: `Q*[t, s, a] - FASTEST_STEP * turns_needed(Q*)[t, s, a]` (1e-5 a turn): the
      order is lexicographic on `(Q*, -turns needed)` wherever distinct values of `Q*` differ by
      more than `1e-5 T` (always, when values are 0 or 1).
    - `discount`: `Q* - DISCOUNT_SCALE (Q* - Q_γ)` (1% of the gap), `Q_γ` the optimal backup
      with a per-turn `discount` γ on continuations: a win in k steps is worth `γ^(k-1)` there.
      Wins one turn apart stay more than `VALUE_TOLERANCE` apart up to about 60 steps at γ = 0.9.

    `V` is the best legal tie-broken Q (a position without legal actions keeps `values.v`). Both
    shifts are below 1% (`fastest`: `1e-5 T`), so advantages built on these values are those of
    `Q*` up to that shift. Greedy play on the result wins from every position with `V* = 1` in
    the fewest turns, and every action tied at its best value makes progress (tested).
    """
    tie_break, discount = check_tie_break(tie_break, discount)
    horizon = check_horizon(horizon)
    if tie_break == "none":
        return values
    if tie_break == "fastest":
        q = values.q - FASTEST_STEP * turns_needed(values.q).astype(jnp.float32)
    else:
        q = values.q - DISCOUNT_SCALE * (values.q - _discounted_optimal_q(graph, horizon=horizon, discount=discount))
    best = jnp.max(jnp.where(graph.legal, q, -jnp.inf), axis=-1)
    v = jnp.where(graph.legal.any(axis=-1), best, values.v)
    return Values(v=v.at[0].set(0.0), q=q.at[0].set(0.0))


def evaluate_policy(graph: Graph, policy_probs: jax.Array, *, horizon: int) -> Values:
    """Exact values of a policy by backward induction over `horizon` turns left.

    `policy_probs` is float32 `[S, A]` (the same at every turn) or `[T + 1, S, A]` (row `t` is
    used with `t` turns left; row 0 is ignored), with `T = horizon`. Probabilities should be 0
    on illegal actions (`jaxcredit.policy_fn.action_probabilities`); mass on an illegal action
    is a refusal and is valued as one. Returns `Values` with `v [T + 1, S]`, `q [T + 1, S, A]`.
    """
    v = _policy_v(graph, policy_probs, horizon=check_horizon(horizon))
    return Values(v=v, q=_all_q(graph, v))


def visitation(graph: Graph, policy_probs: jax.Array, start: jax.Array, *, horizon: int) -> jax.Array:
    """float32 `[T + 1, S]`: `d[t, s]`, the probability that an episode from `start` (int32 `[]`)
    under the policy is live at position `s` with `t` turns left (the exact state distribution).

    The start distribution propagated forward through the policy and the graph: `d[T]` is one at
    `start`, `d[t - 1, s'] = sum over (s, a) leading to s' without ending of d[t, s] pi_t(a | s)`.
    `policy_probs` as for `evaluate_policy` (`[S, A]` or `[T + 1, S, A]`; mass on an illegal action
    is a refusal, which stays at `s`). Row 0 is 0: with no turn left the episode is over. Summed over
    `s`, row `t` is the chance the episode is still live with `t` turns left, so `d.sum()` is the
    expected number of steps, and `d[t, s] pi_t(a | s)` the expected visits of `(t, s, a)`.
    """
    horizon = check_horizon(horizon)
    num_positions, num_actions = graph.legal.shape
    xs, per_turn = _policy_rows(graph, policy_probs, horizon=horizon)
    rows = xs[::-1] if per_turn else jnp.broadcast_to(policy_probs, (horizon, num_positions, num_actions))
    targets = graph.next_position.reshape(-1)

    def turn(d, probs):  # d: [S] with t turns left; probs: the policy with t turns left
        flow = jnp.where(graph.terminal, 0.0, d[:, None] * probs)
        return jnp.zeros_like(d).at[targets].add(flow.reshape(-1)), d

    first = (jnp.arange(num_positions) == start).astype(jnp.float32)
    _, live = jax.lax.scan(turn, first, rows)  # rows for t = T, ..., 1
    return jnp.concatenate([jnp.zeros((1, num_positions), jnp.float32), live[::-1]])


def optimal_values(graph: Graph, *, horizon: int) -> Values:
    """`V*` and `Q*` over `horizon` turns left: the best legal action at every position and turn.

    A position with no legal action can only refuse, so its value is its own with one turn fewer.
    Returns `Values` with `v [T + 1, S]`, `q [T + 1, S, A]`.
    """
    v = _optimal_v(graph, horizon=check_horizon(horizon))
    return Values(v=v, q=_all_q(graph, v))


def soft_values(graph: Graph, *, horizon: int, temperature: float = DEFAULT_TEMPERATURE) -> Values:
    """Soft-optimal values `V_τ`, `Q_τ` over `horizon` turns left: the Boltzmann backup.

    At every turn the policy is Boltzmann in its own action values,
    `π_τ[t](a | s) = exp(Q_τ[t, s, a] / τ) / Σ_b exp(Q_τ[t, s, b] / τ)` over the legal actions
    `a, b` of `s`, and `V_τ[t, s] = Σ_a π_τ[t](a | s) Q_τ[t, s, a]`, with
    `Q_τ[t, s, a] = reward[s, a] + (1 - terminal[s, a]) V_τ[t - 1, next_position[s, a]]`
    (`V_τ[0] = 0`; a position with no legal action keeps `V_τ[t - 1, s]`, as in
    `optimal_values`). `V_τ` is the exact value of the policy `soft_policy` returns, so values
    stay success probabilities in `[0, 1]`; `τ -> 0` gives `V*` (the max), `τ -> ∞` the uniform
    policy's values. `temperature` τ > 0 is in units of success probability: an action whose Q is
    `τ` lower is `e` times less likely (a Python number, checked, or a float32 `[]` array, e.g.
    traced). Returns `Values` with `v [T + 1, S]`, `q [T + 1, S, A]`.
    """
    temperature = _check_temperature(temperature)
    v = _soft_v(graph, horizon=check_horizon(horizon), temperature=temperature)
    return Values(v=v, q=_all_q(graph, v))


def soft_policy(graph: Graph, values: Values, *, temperature: float = DEFAULT_TEMPERATURE) -> jax.Array:
    """float32 `[T + 1, S, A]`: the Boltzmann policy `softmax(values.q / τ)` over legal actions.

    With `values = soft_values(graph, temperature=τ)`, `evaluate_policy(graph, soft_policy(...))`
    gives back the same values. Rows without a legal action (and row 0) put equal mass on every
    action, which is a refusal there.
    """
    probs = _boltzmann(values.q, graph.legal, _check_temperature(temperature))
    return jnp.where(graph.legal.any(axis=-1, keepdims=True), probs, 1.0 / graph.legal.shape[-1])


def greedy_policy(graph: Graph, values: Values) -> jax.Array:
    """float32 `[T + 1, S, A]`: all mass on the first legal action of highest `values.q`."""
    masked = jnp.where(graph.legal, values.q, -jnp.inf)
    best = jnp.argmax(masked, axis=-1)
    return jax.nn.one_hot(best, graph.legal.shape[-1], dtype=jnp.float32)


def greedy_play(graph: Graph, values: Values, start: jax.Array, *, horizon: int) -> tuple[jax.Array, jax.Array]:
    """One episode of greedy play on `values` from position `start` (int32 `[]`) with `horizon`
    turns left: at each turn the first legal action of highest `values.q` for the turns left.

    Returns `(won, turns)`: bool `[]`, a step earned a positive reward; int32 `[]`, the turns
    played until the episode ended (or `horizon`). With `Q*` it wins wherever `V*` is 1 (the
    value counts the turns left); with the values of another policy it is that policy's greedy
    improvement, which may not win.
    """
    horizon = check_horizon(horizon)

    def turn(carry, step):
        position, done, won, turns = carry
        left = horizon - step
        best = jnp.argmax(jnp.where(graph.legal[position], values.q[left, position], -jnp.inf))
        scored = graph.reward[position, best] > 0
        ends = graph.terminal[position, best] | scored | ~jnp.any(graph.legal[position])
        won = won | (~done & scored)
        turns = turns + (~done).astype(jnp.int32)
        position = jnp.where(done, position, graph.next_position[position, best])
        return (position, done | ends, won, turns), None

    carry = (jnp.asarray(start, jnp.int32), jnp.array(False), jnp.array(False), jnp.array(0, jnp.int32))
    (_, _, won, turns), _ = jax.lax.scan(turn, carry, jnp.arange(horizon))
    return won, turns


def reachable(graph: Graph, *, horizon: int) -> jax.Array:
    """bool `[T + 1, S]`: success (a step earning a positive reward) is possible within `t` turns.

    Only legal actions count; row 0 is all False.
    """
    horizon = check_horizon(horizon)
    succeeds = graph.legal & (graph.reward > 0)
    leads_on = graph.legal & ~graph.terminal

    def turn(r_prev, _):
        r = jnp.any(succeeds | (leads_on & r_prev[graph.next_position]), axis=-1)
        return r, r

    _, r = jax.lax.scan(turn, jnp.zeros(graph.valid.shape, bool), None, length=horizon)
    return jnp.concatenate([jnp.zeros((1,) + graph.valid.shape, bool), r])


def reached_by_moves(first: jax.Array, source: jax.Array, target: jax.Array, moves: jax.Array) -> jax.Array:
    """bool `[N]`: the rows reached from the rows `first` (bool `[N]`) through the moves (edges)
    `source -> target` (int32 `[E]`) where bool `moves` `[E]` holds: a breadth-first enumeration,
    iterated to a fixed point (at most one round per step of the longest chain of moves)."""
    def expand(carry):
        reached, _ = carry
        hit = jnp.zeros(reached.shape, jnp.int32).at[target].max((reached[source] & moves).astype(jnp.int32)) > 0
        grown = reached | hit
        return grown, jnp.any(grown != reached)

    reached, _ = jax.lax.while_loop(lambda carry: carry[1], expand, (first, jnp.array(True)))
    return reached


def positions_reached(graph: Graph, start: jax.Array) -> jax.Array:
    """bool `[S]`: the positions a breadth-first enumeration from `start` (int32 `[]`) reaches.

    A position is reached when a chain of accepted moves that do not end the episode leads to it
    from `start` (the turn limit is not applied: this is the graph an enumeration must expand).
    """
    num_positions, num_actions = graph.legal.shape
    rows = jnp.arange(num_positions, dtype=jnp.int32)
    moves = graph.legal & ~graph.terminal & (graph.next_position != rows[:, None])  # [S, A]
    return reached_by_moves((rows == start) & graph.valid, jnp.repeat(rows, num_actions),
                            graph.next_position.reshape(-1), moves.reshape(-1))


def enumeration_env_steps(graph: Graph, start: jax.Array) -> jax.Array:
    """int32 `[]`: environment steps a breadth-first enumeration of the graph from `start` needs:
    one per legal move out of each reached position (`positions_reached`); refused moves cost
    nothing. This is what an exact or solver credit arm is charged per problem."""
    reached = positions_reached(graph, start)
    return jnp.sum(graph.legal & reached[:, None], dtype=jnp.int32)


@functools.partial(jax.jit, static_argnames=("env", "policy", "horizon", "temperature"))
def solve(env: Environment, problem: Any, *, policy: str = "uniform", horizon: int | None = None,
          temperature: float = DEFAULT_TEMPERATURE) -> Values:
    """Build `problem`'s graph and return its exact values under `policy` ('uniform', 'optimal'
    or 'soft', the latter with `temperature`; see `solve_graph`).

    `horizon` defaults to `env.max_turns`. Jitted (`env`, `policy`, `horizon`, `temperature` static).
    """
    horizon = env.max_turns if horizon is None else horizon
    return solve_graph(build_graph(env, problem), policy=policy, horizon=horizon, temperature=temperature)


def solve_graph(graph: Graph, *, policy: str, horizon: int, temperature: float = DEFAULT_TEMPERATURE) -> Values:
    """Exact values of an already built graph under `policy`: 'uniform' (`evaluate_policy` of
    `uniform_policy`), 'optimal' (`optimal_values`, the hard max) or 'soft' (`soft_values` with
    `temperature`, a checked Python number or a float32 `[]` array; ignored by the others).
    The arguments are checked here; the solve is one jitted program per policy and horizon."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choices: {', '.join(POLICIES)}")
    temperature = _check_temperature(temperature) if policy == "soft" else None
    return _solve_graph(graph, temperature, policy=policy, horizon=check_horizon(horizon))


@functools.partial(jax.jit, static_argnames=("policy", "horizon"))
def _solve_graph(graph: Graph, temperature, *, policy: str, horizon: int) -> Values:
    if policy == "uniform":
        return evaluate_policy(graph, uniform_policy(graph), horizon=horizon)
    if policy == "optimal":
        return optimal_values(graph, horizon=horizon)
    return soft_values(graph, horizon=horizon, temperature=temperature)
