"""The exact inputs of text-matched credit: every visited (state, action) pair of a policy, from the solver.

A state is (problem, turns left, position). `exact_pairs` solves each problem under the policy
(the uniform policy, or a network at the positions reached from the start:
`jaxcredit.solver_values.network_policy_probs_batch`), takes the exact values
(`solver.evaluate_policy`) and the exact state distribution (`solver.visitation`), and keeps
every pair with positive expected visits. `state_groups` gives each visited state its observation
key (the token observation of a key environment, or its text protocol's prompt), within each
problem or across the pool. `hidden_views` turns an environment's `hidden_variables` into the
keys `run_identification` measures. No sampling anywhere. See
docs/analysis.md#text-matched-credit-analysisidentificationpy.

Shape letters: B problems, P problems per chunk, T turns, S positions, A actions, L observation
length, R observation rows per position (T + 1 when it shows the turns left, else 1), n pairs.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import solver
from jaxcredit.analysis.identification import identification_measures, pair_tolerance, state_counts
from jaxcredit.env import Environment
from jaxcredit.envs.text_protocol import text_protocol
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.solver_values import network_policy_probs_batch, observation_shows_turns

KEYS = ("tokens", "text")
SCOPES = ("problem", "pool")
CELLS_PER_CHUNK = 4_000_000  # (T + 1) * S * A cells of each table per jitted call


def chunk_size(env: Environment) -> int:
    """Problems per jitted call: about `CELLS_PER_CHUNK` cells of `[T + 1, S, A]` tables, 1 to 64."""
    return int(max(1, min(64, CELLS_PER_CHUNK // ((env.max_turns + 1) * env.num_positions * env.num_actions))))


@functools.partial(jax.jit, static_argnames=("env", "policy_fn"))
def _chunk_tables(env: Environment, policy_fn: PolicyFn | None, params: Any, problems: Any):
    """`(v [P, T + 1, S], q [P, T + 1, S, A], probs [P, T + 1, S, A], d [P, T + 1, S])` of a chunk:
    exact values and visitation under the uniform policy (`policy_fn` None) or the network."""
    horizon = env.max_turns
    graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
    starts = jax.vmap(lambda p: solver.start_position(env, p))(problems)
    if policy_fn is None:
        uniform = solver.uniform_policy(graphs)  # [P, S, A]
        probs = jnp.broadcast_to(uniform[:, None], (uniform.shape[0], horizon + 1) + uniform.shape[1:])
    else:
        probs, _ = network_policy_probs_batch(env, problems, graphs, policy_fn, params, horizon=horizon, starts=starts)
    values = jax.vmap(lambda g, p: solver.evaluate_policy(g, p, horizon=horizon))(graphs, probs)
    visits = jax.vmap(lambda g, p, s: solver.visitation(g, p, s, horizon=horizon))(graphs, probs, starts)
    return values.v, values.q, probs, visits


def _chunks(env: Environment, problems: Any):
    """`(start, index)` per chunk: the rows of `problems` (leaves `[B, ...]`) it holds, the last chunk
    padded by repeating the first problems (one compiled shape)."""
    count = jax.tree_util.tree_leaves(problems)[0].shape[0]
    size = min(chunk_size(env), count)
    for start in range(0, count, size):
        yield start, np.arange(start, start + size) % count


def _take(problems: Any, index: np.ndarray) -> Any:
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], problems)


def exact_pairs(env: Environment, problems: Any, *, policy_fn: PolicyFn | None = None, params: Any = None) -> dict:
    """Host: every (state, action) pair with positive expected visits under the policy.

    `problems` leaves `[B, ...]`; the policy is uniform (`policy_fn` None) or the network
    `policy_fn` with `params`. Returns NumPy arrays `[n]`: `problem`, `turns_left`, `position`,
    `action` (int), `credit` (`Q − V`), `weight` (expected visits per episode of its problem:
    `d[t, s] π_t(a | s)`), `value` (`V` of the state), all float64 but the ints.
    """
    count = jax.tree_util.tree_leaves(problems)[0].shape[0]
    parts = []
    for start, index in _chunks(env, problems):
        v, q, probs, visits = (np.asarray(x) for x in _chunk_tables(env, policy_fn, params, _take(problems, index)))
        keep = min(index.size, count - start)
        weight = visits[:keep, :, :, None].astype(np.float64) * probs[:keep]
        p, t, s, a = np.nonzero(weight > 0)
        parts.append({"problem": (p + start).astype(np.int32), "turns_left": t.astype(np.int32),
                      "position": s.astype(np.int32), "action": a.astype(np.int32),
                      "credit": q[p, t, s, a].astype(np.float64) - v[p, t, s], "weight": weight[p, t, s, a],
                      "value": v[p, t, s].astype(np.float64)})
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _same_dynamics(a: solver.Graph, b: solver.Graph) -> jax.Array:
    fields = ("next_position", "reward", "terminal", "legal", "valid")
    return jnp.all(jnp.stack([jnp.all(getattr(a, f) == getattr(b, f), axis=(1, 2) if f != "valid" else 1)
                              for f in fields]), axis=0)


@functools.partial(jax.jit, static_argnames=("env", "key_env", "per_turn"))
def _chunk_observations(env: Environment, key_env: Environment, problems: Any, *, per_turn: bool):
    """`(observation int32 [P, R, S, L], same bool [P])`: `key_env`'s observation at every position
    (per turns left when `per_turn`), and whether its graph is `env`'s (positions and dynamics)."""
    key_graphs = jax.vmap(lambda p: solver.build_graph(key_env, p))(problems)
    if key_env == env:
        same = jnp.ones(key_graphs.valid.shape[:1], bool)
    else:
        same = _same_dynamics(jax.vmap(lambda p: solver.build_graph(env, p))(problems), key_graphs)
    if not per_turn:
        return key_graphs.observation[:, None], same
    turns = key_env.max_turns - jnp.arange(key_env.max_turns + 1, dtype=jnp.int32)
    positions = jnp.arange(key_env.num_positions, dtype=jnp.int32)

    def observe(problem):
        return jax.vmap(lambda t: jax.vmap(lambda s: key_env.position(problem, s, turn=t)[0].observation)(positions))(
            turns)

    return jax.vmap(observe)(problems), same


@functools.partial(jax.jit, static_argnames=("key_env",))
def _states_at(key_env: Environment, problems: Any, positions: jax.Array, turns: jax.Array):
    """The states (leaves `[N, ...]`) of `problems` (leaves `[N, ...]`) at `positions` and `turns` int32 `[N]`."""
    return jax.vmap(lambda p, s, t: key_env.position(p, s, turn=t)[0])(problems, positions, turns)


def state_groups(env: Environment, key_env: Environment, problems: Any, pairs: dict, *, key: str,
                 scope: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host: `(state, state_group, pair_group)`, int64 `[n]`: each pair's state id (problem, turns
    left, position), its observation key's group under `key_env` (the same positions and dynamics
    as `env`, checked; `ValueError` otherwise) and its pair's group (that key and the same action).
    `key` `tokens` matches the token observation and the action id; `text` the text protocol's
    prompt and the action's reply text (`protocol.reply`: arithmetic names numbers, not slots).
    `scope` `problem` keys within each problem, `pool` across problems."""
    if key not in KEYS or scope not in SCOPES:
        raise ValueError(f"key must be one of {', '.join(KEYS)} and scope one of {', '.join(SCOPES)}, "
                         f"got {key!r}, {scope!r}")
    if key_env.max_turns != env.max_turns or key_env.num_positions != env.num_positions:
        raise ValueError(f"the key environment {key_env.config()} has other turns or positions than {env.config()}")
    horizon, size = env.max_turns, env.num_positions
    state = (pairs["problem"].astype(np.int64) * (horizon + 1) + pairs["turns_left"]) * size + pairs["position"]
    states, first, state_index = np.unique(state, return_index=True, return_inverse=True)
    problem, turns_left, position = (pairs[name][first] for name in ("problem", "turns_left", "position"))
    scope_id = problem.astype(np.int64) if scope == "problem" else np.zeros(states.shape, np.int64)
    protocol = text_protocol(key_env) if key == "text" else None
    per_turn = observation_shows_turns(key_env)
    group_keys: list = [None] * states.size
    action_keys = pairs["action"].astype(object)
    pairs_of_state = np.split(np.argsort(state_index, kind="stable"), np.cumsum(np.bincount(state_index))[:-1])
    for start, index in _chunks(env, problems):
        chunk = _take(problems, index)
        rows = np.flatnonzero((problem >= start) & (problem < start + index.size))
        if not rows.size:
            continue
        observation, same = _chunk_observations(env, key_env, chunk, per_turn=per_turn)
        if not bool(np.all(same)):
            raise ValueError(f"the key environment {key_env.config()} has other dynamics than {env.config()}")
        if protocol is None:
            observation = np.asarray(observation)
            tokens = observation[problem[rows] - start, turns_left[rows] if per_turn else 0, position[rows]]
            for row, token_row in zip(rows, tokens):
                group_keys[row] = (int(scope_id[row]), token_row.tobytes())
        else:
            host = jax.tree_util.tree_map(np.asarray, _states_at(
                key_env, _take(problems, problem[rows]), position[rows], (horizon - turns_left[rows]).astype(np.int32)))
            for k, row in enumerate(rows):
                one = jax.tree_util.tree_map(lambda x, k=k: x[k], host)
                group_keys[row] = (int(scope_id[row]), protocol.render_prompt(one))
                for pair in pairs_of_state[row]:
                    action_keys[pair] = protocol.reply(one, int(pairs["action"][pair]))
    ids: dict = {}
    group = np.array([ids.setdefault(k, len(ids)) for k in group_keys], np.int64)[state_index]
    pair_ids: dict = {}
    pair_group = np.array([pair_ids.setdefault(k, len(pair_ids)) for k in zip(group.tolist(), action_keys)], np.int64)
    return state, group, pair_group


def hiding_environment(env: Environment, hide: str) -> Environment:
    """`env` configured so that its token observation hides `hide` (one of its `hidden_variables`)."""
    return dataclasses.replace(env, **_variable(env, hide).hidden)


def _variable(env: Environment, hide: str):
    variables = env.hidden_variables()
    if hide not in variables:
        choices = f"choices: {', '.join(variables)}" if variables else "it declares none"
        raise ValueError(f"environment {env.name!r} has no hidden variable {hide!r}; {choices}")
    return variables[hide]


def hidden_views(env: Environment, hide: str | None, *, key: str) -> tuple[list[tuple[str, Environment, dict]],
                                                                          list[str]]:
    """Host: `(views, notes)`: the keys to measure, `(label, key environment, its overrides)`: `env`
    itself (`hide` None, or `hide` hidden), then `env` with `hide` shown where a configuration
    shows it; and what cannot be shown. `ValueError` for a variable `env` does not declare, a
    configuration that does not hide it, or the text key where the prompt shows it."""
    if hide is None:
        return [("as configured", env, {})], []
    variable = _variable(env, hide)
    config = env.config()
    differ = {name: config.get(name) for name, value in variable.hidden.items() if config.get(name) != value}
    if differ:
        raise ValueError(f"{env.name} hides {hide} only with {variable.hidden}; this configuration has {differ}")
    if key == "text" and variable.text_shows:
        raise ValueError(f"the text protocol's prompt of {env.name} shows {hide}: hide it in the token "
                         "observation (key tokens)")
    views, notes = [(f"{hide} hidden", env, {})], []
    if variable.shown is None:
        shown_by = "; the text protocol's prompt shows it (key text)" if variable.text_shows else ""
        notes.append(f"no configuration of {env.name} shows {hide} ({variable.description}){shown_by}")
    else:
        views.append((f"{hide} shown", dataclasses.replace(env, **variable.shown), dict(variable.shown)))
    return views, notes


def run_identification(env: Environment, problems: Any, *, policy_fn: PolicyFn | None = None, params: Any = None,
                       policy: str = "uniform policy", hide: str | None = None, key: str = "tokens",
                       scope: str = "problem") -> dict:
    """Host: the record of text-matched against restored credit of one policy on `problems` (leaves
    `[B, ...]`), one entry per view of `hidden_views(env, hide, key=key)`: its state counts and
    `identification_measures`. `policy` describes the policy in the record."""
    began = time.perf_counter()
    views, notes = hidden_views(env, hide, key=key)
    pairs = exact_pairs(env, problems, policy_fn=policy_fn, params=params)
    tolerance = pair_tolerance(pairs["value"])
    count = jax.tree_util.tree_leaves(problems)[0].shape[0]
    env_text = ", ".join(f"{name}={value}" for name, value in env.config().items())
    record = {"env": env.name, "env_config": env.config(), "env_text": env_text, "policy": policy,
              "problems": int(count), "key": key, "scope": scope, "hide": hide,
              "expected_steps": float(pairs["weight"].sum() / count), "views": []}
    for label, key_env, overrides in views:
        state, group, pair_group = state_groups(env, key_env, problems, pairs, key=key, scope=scope)
        measures = {**state_counts(state, group, pairs["weight"]),
                    **identification_measures(pairs["credit"], pairs["weight"], pair_group, tolerance)}
        record["views"].append({"view": label, "key_overrides": overrides, "measures": measures})
    record["notes"] = notes
    record["seconds"] = round(time.perf_counter() - began, 1)
    return record


__all__ = ["KEYS", "SCOPES", "chunk_size", "exact_pairs", "hidden_views", "hiding_environment", "run_identification",
           "state_groups"]
