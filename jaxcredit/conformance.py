"""A reusable conformance check every environment must pass (in the spirit of pgx's api_test).

`check_environment(env, reference=...)` drives many random episodes -- random legal, random
illegal and out-of-range actions -- under `jax.jit(jax.vmap(env.step))`, and checks dtypes and
shapes, single-vs-batched agreement, the shared rules (absorbing end, refusal, turn limit),
step-by-step equality with a plain-Python reference, the positions round trip, that the
jitted step is traced once, and that a declared null action and every decorative action
(`decorative_action_mask`) change nothing but the turn. It raises `AssertionError` naming the
first broken rule.

A reference is any object with `reset(problem)` and `step(action)` (both returning itself)
and attributes `observation`, `legal_action_mask`, `reward`, `terminated`, `truncated`,
`rejected`, `turn`, plus a method `position_index()`; `problem` arrives as NumPy arrays.

Shape letters: N episodes, T steps, A actions, L observation length.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import Environment, State

_FIELDS = ("observation", "legal_action_mask", "reward", "terminated", "truncated", "rejected", "turn")


def _episode(tree, i):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[i], tree)


def _assert_equal(what: str, got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {want.tolist()}")


def check_shapes_and_dtypes(env: Environment, state: State) -> None:
    """One unbatched state has the contract's dtypes and shapes."""
    A, L = env.num_actions, env.observation_length
    expect = {
        "observation": (jnp.int32, (L,)),
        "legal_action_mask": (jnp.bool_, (A,)),
        "reward": (jnp.float32, ()),
        "terminated": (jnp.bool_, ()),
        "truncated": (jnp.bool_, ()),
        "rejected": (jnp.bool_, ()),
        "turn": (jnp.int32, ()),
    }
    for field, (dtype, shape) in expect.items():
        value = getattr(state, field)
        if value.dtype != dtype or value.shape != shape:
            raise AssertionError(f"{env.name}: State.{field} is {value.dtype}{list(value.shape)}, "
                                 f"expected {jnp.dtype(dtype)}{list(shape)}")
    obs = np.asarray(state.observation)
    if obs.min() < 0 or obs.max() >= env.vocab_size:
        raise AssertionError(f"{env.name}: observation tokens {obs.tolist()} outside [0, {env.vocab_size})")


def random_actions(rng: np.random.Generator, legal_action_mask: np.ndarray, *,
                   illegal_fraction: float) -> np.ndarray:
    """int `[N]`: a uniform legal action per row, replaced with probability `illegal_fraction`
    by any action id in `[-2, A + 2)` (so illegal and out-of-range actions are exercised)."""
    n, num_actions = legal_action_mask.shape
    scores = rng.random((n, num_actions)) + legal_action_mask
    legal_choice = scores.argmax(axis=1)
    wild = rng.integers(-2, num_actions + 2, size=n)
    return np.where(rng.random(n) < illegal_fraction, wild, legal_choice)


def rollout_random(env: Environment, *, seed: int, num_episodes: int, num_steps: int,
                   illegal_fraction: float):
    """Run random episodes under `jit(vmap(step))`. Returns `(initial, states, actions)` where
    `states` has leaves `[T, N, ...]` (the state after each step) and `actions` is `[T, N]`."""
    rng = np.random.default_rng(seed)
    keys = jax.random.split(jax.random.key(seed), num_episodes)
    state = jax.jit(jax.vmap(env.init))(keys)
    step = jax.jit(jax.vmap(env.step))
    initial, states, actions = state, [], []
    for _ in range(num_steps):
        action = random_actions(rng, np.asarray(state.legal_action_mask), illegal_fraction=illegal_fraction)
        state = step(state, jnp.asarray(action, jnp.int32))
        states.append(state)
        actions.append(action)
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *states)
    return initial, stacked, np.stack(actions)


def check_against_reference(env: Environment, reference, initial: State, states: State,
                            actions: np.ndarray) -> None:
    """Step-by-step equality of every field (and the position index) with the reference."""
    num_steps, num_episodes = actions.shape
    for i in range(num_episodes):
        ref = reference.reset(_episode(initial.problem, i))
        for t in range(-1, num_steps):
            if t >= 0:
                ref.step(int(actions[t, i]))
            state = _episode(initial, i) if t < 0 else _episode(states, (t, i))
            where = f"{env.name} episode {i} after {t + 1} steps (actions {actions[:t + 1, i].tolist()})"
            for field in _FIELDS:
                _assert_equal(f"{where}: {field}", getattr(state, field), getattr(ref, field))
            if not (ref.terminated or ref.truncated):
                _assert_equal(f"{where}: position index", env.position_index(state), ref.position_index())


def check_shared_rules(env: Environment, initial: State, states: State, actions: np.ndarray) -> None:
    """Absorbing end, refusal, turn limit and finite rewards over a batch of random episodes."""
    before = jax.tree_util.tree_map(lambda first, rest: np.concatenate([np.asarray(first)[None], rest[:-1]]),
                                    initial, states)
    was_done = np.asarray(before.terminated | before.truncated)
    rejected, reward = np.asarray(states.rejected), np.asarray(states.reward)
    if not np.isfinite(reward).all():
        raise AssertionError(f"{env.name}: non-finite reward")
    if (reward[was_done] != 0).any():
        raise AssertionError(f"{env.name}: stepping an ended episode gave a non-zero reward")
    for field in ("observation", "legal_action_mask", "terminated", "truncated", "turn"):
        a, b = np.asarray(getattr(before, field)), np.asarray(getattr(states, field))
        if not (a[was_done] == b[was_done]).all():
            raise AssertionError(f"{env.name}: stepping an ended episode changed {field}")
    live = ~was_done
    if (reward[live & rejected] != 0).any():
        raise AssertionError(f"{env.name}: a refused action earned a reward")
    if (np.asarray(states.turn)[live] != np.asarray(before.turn)[live] + 1).any():
        raise AssertionError(f"{env.name}: a live step did not use exactly one turn")
    refused = live & rejected
    pairs = (("problem", before.problem, states.problem), ("env_state", before.env_state, states.env_state))
    for name, a, b in pairs:
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            if not (np.asarray(x)[refused] == np.asarray(y)[refused]).all():
                raise AssertionError(f"{env.name}: a refused action changed the {name}")
    num_actions = env.num_actions
    out_of_range = live & ((actions < 0) | (actions >= num_actions))
    if not rejected[out_of_range].all():
        raise AssertionError(f"{env.name}: an out-of-range action was not refused")
    turn = np.asarray(states.turn)
    if (turn > env.max_turns).any():
        raise AssertionError(f"{env.name}: turn exceeded max_turns={env.max_turns}")
    at_limit = turn == env.max_turns
    if not (np.asarray(states.terminated | states.truncated)[at_limit]).all():
        raise AssertionError(f"{env.name}: an episode at the turn limit did not end")
    if (np.asarray(states.terminated & states.truncated)).any():
        raise AssertionError(f"{env.name}: an episode is both terminated and truncated")
    if (np.asarray(states.legal_action_mask)[np.asarray(states.terminated | states.truncated)]).any():
        raise AssertionError(f"{env.name}: an ended episode lists legal actions")


def check_single_matches_batched(env: Environment, initial: State, states: State, actions: np.ndarray,
                                 *, num_episodes: int = 3) -> None:
    """The unjitted, unbatched `step` reproduces the `jit(vmap(step))` trajectories."""
    for i in range(min(num_episodes, actions.shape[1])):
        state = _episode(initial, i)
        single = env.init_problem(state.problem)
        for t in range(actions.shape[0]):
            single = env.step(single, int(actions[t, i]))
            batched = _episode(states, (t, i))
            for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(batched)):
                _assert_equal(f"{env.name} single vs jit(vmap) at episode {i}, step {t}", a, b)


def check_positions(env: Environment, initial: State, states: State, *, max_indices: int = 4096) -> None:
    """Index of position i is i (for valid i), and each visited state's position rebuilds it."""
    problem = _episode(initial.problem, 0)
    indices = jnp.arange(min(env.num_positions, max_indices))
    position_states, valid = jax.jit(jax.vmap(lambda i: env.position(problem, i)))(indices)
    round_trip = np.asarray(jax.vmap(env.position_index)(position_states))
    valid = np.asarray(valid)
    if not valid.any():
        raise AssertionError(f"{env.name}: no valid position among the first {len(indices)} indices")
    bad = np.flatnonzero(valid & (round_trip != np.asarray(indices)))
    if bad.size:
        raise AssertionError(f"{env.name}: position_index(position(i)) != i for i in {bad[:10].tolist()}")
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), states)
    live = ~np.asarray(flat.terminated | flat.truncated)
    index = jax.vmap(env.position_index)(flat)
    rebuilt, ok = jax.vmap(lambda p, i, t: env.position(p, i, turn=t))(flat.problem, index, flat.turn)
    if not np.asarray(ok)[live].all():
        raise AssertionError(f"{env.name}: a visited live state has an invalid position index")
    for field in ("observation", "legal_action_mask"):
        a, b = np.asarray(getattr(rebuilt, field))[live], np.asarray(getattr(flat, field))[live]
        if not (a == b).all():
            raise AssertionError(f"{env.name}: rebuilding a visited state from its position changed {field}")


def check_no_retrace(env: Environment, initial: State, actions: np.ndarray) -> None:
    """Repeated calls of the jitted batched step with new values compile once."""
    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched_step(state, action):
        return jax.vmap(env.step)(state, action)

    state = initial
    for t in range(min(3, actions.shape[0])):
        state = batched_step(state, jnp.asarray(actions[t], jnp.int32))
    chex.clear_trace_counter()


def _check_changes_nothing(env: Environment, states: State, action: int, what: str) -> None:
    """`action` is legal in every visited live state and stepping it changes nothing but the turn:
    same problem and env state (so same position), reward 0, not refused, never terminating."""
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), states)
    live = ~np.asarray(flat.terminated | flat.truncated)
    if not np.asarray(flat.legal_action_mask)[live, action].all():
        raise AssertionError(f"{env.name}: {what} is not legal in every live state")
    after = jax.jit(jax.vmap(env.step))(flat, jnp.full(live.shape, action, jnp.int32))
    if np.asarray(after.rejected)[live].any() or np.asarray(after.terminated)[live].any():
        raise AssertionError(f"{env.name}: {what} was refused or ended an episode")
    if (np.asarray(after.reward)[live] != 0).any():
        raise AssertionError(f"{env.name}: {what} earned a reward")
    for name in ("problem", "env_state"):
        leaves = zip(jax.tree_util.tree_leaves(getattr(flat, name)), jax.tree_util.tree_leaves(getattr(after, name)))
        for x, y in leaves:
            if not (np.asarray(x)[live] == np.asarray(y)[live]).all():
                raise AssertionError(f"{env.name}: {what} changed the {name}")


def check_null_action(env: Environment, states: State) -> None:
    """A declared null action (`env.null_action`) is an action id, legal in every visited live state,
    and stepping it changes nothing but the turn: same problem and env state (so same position),
    reward 0, not refused, never terminating."""
    null = env.null_action
    if null is None:
        return
    if isinstance(null, bool) or not isinstance(null, int) or not 0 <= null < env.num_actions:
        raise AssertionError(f"{env.name}: null_action must be an action id in [0, {env.num_actions}), got {null!r}")
    _check_changes_nothing(env, states, null, "the null action")


def check_decorative_actions(env: Environment, states: State) -> None:
    """`env.decorative_action_mask()` is bool `[A]`, and each action it marks changes nothing but the
    turn in every visited live state (as `check_null_action` checks the null action)."""
    mask = np.asarray(env.decorative_action_mask())
    if mask.dtype != bool or mask.shape != (env.num_actions,):
        raise AssertionError(f"{env.name}: decorative_action_mask() must be bool [{env.num_actions}], "
                             f"got {mask.dtype} {mask.shape}")
    for action in np.flatnonzero(mask).tolist():
        _check_changes_nothing(env, states, action, f"decorative action {action} ({env.action_name(action)})")


def check_environment(env: Environment, *, reference=None, seed: int = 0, num_episodes: int = 256,
                      num_steps: int | None = None, illegal_fraction: float = 0.3) -> None:
    """Run every conformance check on `env`; raises `AssertionError` on the first failure.

    `num_steps` defaults to `max_turns + 2`, so every episode is also stepped after its end.
    """
    num_steps = env.max_turns + 2 if num_steps is None else num_steps
    check_shapes_and_dtypes(env, env.init(jax.random.key(seed)))
    initial, states, actions = rollout_random(
        env, seed=seed, num_episodes=num_episodes, num_steps=num_steps, illegal_fraction=illegal_fraction)
    check_shapes_and_dtypes(env, _episode(states, (num_steps - 1, 0)))
    check_shared_rules(env, initial, states, actions)
    check_single_matches_batched(env, initial, states, actions)
    check_positions(env, initial, states)
    check_no_retrace(env, initial, actions)
    check_null_action(env, states)
    check_decorative_actions(env, states)
    if reference is not None:
        check_against_reference(env, reference, initial, states, actions)
