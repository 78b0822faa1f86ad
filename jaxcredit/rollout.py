"""Rollouts and branch continuations: batches of episodes under any `PolicyFn`, with their cost.

`rollout` plays a batch of episodes for a fixed number of turns with `jax.lax.scan` and records
everything credit assignment needs in a `Trajectory` (batch-major, `[B, T, ...]`), including
the states themselves so any step can be branched from. `branch_returns` runs `K`
continuations from each of a batch of states (optionally forcing every legal first action) in
one jitted call, chunked with `lax.map` so thousands of continuations per state fit in memory.
Both return a `jaxcredit.ledger.Counts` of the live work they did. What the policy reads at a
state is `jaxcredit.afterstate.policy_inputs`: the observation tokens, or for an afterstate
policy every action's afterstate, with lookahead their successors summarized (whose environment
steps `Counts.afterstate_env_steps` counts).

Shape letters: B episodes, T turns (recorded steps), N branched states, K continuations,
A actions, L observation length, C continuations per chunk.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import NamedSharding

from jaxcredit.afterstate import policy_inputs
from jaxcredit.env import Environment, State
from jaxcredit.ledger import Counts
from jaxcredit.policy_fn import PolicyFn, log_probabilities, masked_logits
from jaxcredit.sharding import constrain_batch


@struct.dataclass
class Trajectory:
    """A batch of episodes, batch-major. Step t is the action taken in `states[:, t]`.

    Attributes:
      observation: int32 `[B, T, P]`, what the policy read before each action
        (`afterstate.policy_observations`): the observation tokens (`P = L`), or for an
        afterstate policy the afterstate encodings (`P = A * W`); `states.observation` is
        always the observation tokens.
      legal_action_mask: bool `[B, T, A]`, the legal actions before each action.
      action: int32 `[B, T]`, the action taken.
      log_prob: float32 `[B, T]`, its log-probability under the policy (masked softmax).
      reward: float32 `[B, T]`, the reward of the step (0 on non-live steps).
      terminated: bool `[B, T]`, the episode terminated at this step or before.
      truncated: bool `[B, T]`, the episode was truncated at this step or before.
      done: bool `[B, T]`, `terminated | truncated` after the step.
      live: bool `[B, T]`, the episode had not ended before this step: the step really
        happened (the counted ones; everything else is padding of the fixed shape).
      turn: int32 `[B, T]`, the turn of the state before the action.
      turns_left: int32 `[B, T]`, `env.max_turns - turn` (the solver's value index).
      position: int32 `[B, T]`, `env.position_index` of the state before the action.
      states: the `State` pytree before each action, every leaf `[B, T, ...]`.
      final_state: the `State` after the last recorded step, every leaf `[B, ...]`.
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    done: jax.Array
    live: jax.Array
    turn: jax.Array
    turns_left: jax.Array
    position: jax.Array
    states: State
    final_state: State

    @property
    def episode_return(self) -> jax.Array:
        """float32 `[B]`: the undiscounted sum of rewards of each episode."""
        return jnp.sum(self.reward, axis=1)

    def next_states(self) -> State:
        """The `State` after each action, every leaf `[B, T, ...]` (`states` shifted by one)."""
        return jax.tree_util.tree_map(
            lambda before, final: jnp.concatenate([before[:, 1:], final[:, None]], axis=1),
            self.states, self.final_state,
        )


def live_chunk_size(batch: int) -> int:
    """The default number of live rows per policy evaluation in `rollout` and `branch_returns`: an
    eighth of the batch, at least 8 (a batch of at most 8 is evaluated whole)."""
    return min(batch, max(8, -(-batch // 8)))


def live_logits(policy_fn: PolicyFn, params: Any, state: State, *, chunk_size: int,
                observation: jax.Array | None = None) -> jax.Array:
    """float32 `[B, A]`: the policy's logits at the rows of `state` (leaves `[B, ...]`) whose episode
    has not ended; 0 at the ended rows (padding: masked, they sample uniformly over legal actions).
    `observation` int32 `[B, P]` is what the policy reads there (default `state.observation`).

    The live rows are gathered to the front and evaluated `chunk_size` at a time in a
    `lax.while_loop` that stops after the last live row, so ended episodes (most of a batch late in
    an episode, once a policy finishes early) cost no forward pass. `chunk_size >= B`: one call on
    every row, ended rows then set to 0.
    """
    observation = state.observation if observation is None else observation
    live = ~state.done
    batch = live.shape[0]
    if chunk_size >= batch:
        logits = policy_fn(params, observation, state.legal_action_mask)
        return jnp.where(live[:, None], logits, 0.0)
    padded = -(-batch // chunk_size) * chunk_size
    order = jnp.pad(jnp.argsort(~live, stable=True).astype(jnp.int32), (0, padded - batch))
    count = jnp.sum(live, dtype=jnp.int32)
    zeros = jnp.zeros(state.legal_action_mask.shape, jnp.float32)

    def body(carry):
        start, logits = carry
        index = jax.lax.dynamic_slice(order, (start,), (chunk_size,))
        index = jnp.where(start + jnp.arange(chunk_size) < count, index, batch)  # past the live rows: dropped
        rows = jnp.take(observation, index, axis=0, mode="clip")
        mask = jnp.take(state.legal_action_mask, index, axis=0, mode="clip")
        return start + chunk_size, logits.at[index].set(policy_fn(params, rows, mask), mode="drop")

    _, logits = jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), zeros))
    return logits


def _sample(policy_fn: PolicyFn, params: Any, state: State, key: jax.Array, *, chunk_size: int,
            observation: jax.Array | None = None):
    """`(action int32 [B], log_prob float32 [B])` sampled at the live rows (`live_logits`); consumes `key`."""
    logits = live_logits(policy_fn, params, state, chunk_size=chunk_size, observation=observation)
    log_probs = log_probabilities(logits, state.legal_action_mask)
    action = jax.random.categorical(key, masked_logits(logits, state.legal_action_mask), axis=-1)
    return action.astype(jnp.int32), jnp.take_along_axis(log_probs, action[..., None], axis=-1)[..., 0]


def _sample_rows(policy_fn: PolicyFn, params: Any, state: State, row_keys: jax.Array, *, chunk_size: int,
                 observation: jax.Array | None = None) -> jax.Array:
    """int32 `[B]`: an action sampled at each live row with that row's own key (`row_keys` `[B]`), so
    two rows in the same state with the same key take the same action."""
    logits = masked_logits(live_logits(policy_fn, params, state, chunk_size=chunk_size, observation=observation),
                           state.legal_action_mask)
    return jax.vmap(jax.random.categorical)(row_keys, logits).astype(jnp.int32)


def _play(env: Environment, states: State, choose, xs, num_turns: int,
          policy_fn: PolicyFn | None = None) -> tuple[Trajectory, Counts]:
    """Scan `num_turns` steps; `choose(state, observation, x) -> (action [B], log_prob [B])` picks each
    action, `observation` being what `policy_fn` reads (`policy_observations`; None: the tokens)."""
    batch_step = jax.vmap(env.step)
    batch_position = jax.vmap(env.position_index)

    def one_turn(carry, x):
        state, input_steps = carry
        if policy_fn is None:
            observation = state.observation
        else:
            observation, state_input_steps = policy_inputs(env, policy_fn, state)
            input_steps = input_steps + jnp.sum(state_input_steps, dtype=jnp.int32)
        action, log_prob = choose(state, observation, x)
        live = ~state.done
        next_state = batch_step(state, action)
        record = dict(
            observation=observation, legal_action_mask=state.legal_action_mask,
            action=action, log_prob=jnp.where(live, log_prob, 0.0), reward=next_state.reward,
            terminated=next_state.terminated, truncated=next_state.truncated, done=next_state.done,
            live=live, turn=state.turn, turns_left=env.max_turns - state.turn,
            position=batch_position(state), states=state,
        )
        return (next_state, input_steps), record

    (final_state, input_steps), records = jax.lax.scan(one_turn, (states, jnp.zeros((), jnp.int32)), xs,
                                                       length=num_turns)
    records = jax.tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), records)
    trajectory = Trajectory(**records, final_state=final_state)
    steps = jnp.sum(trajectory.live, dtype=jnp.int32)
    counts = Counts(env_steps=steps, policy_evals=steps, episodes=jnp.sum(~states.done, dtype=jnp.int32),
                    afterstate_env_steps=input_steps)
    return trajectory, counts


@functools.partial(jax.jit, static_argnames=("env", "policy_fn", "num_turns", "live_chunk"))
def rollout(
    env: Environment, policy_fn: PolicyFn, params: Any, states: State, key: jax.Array, *, num_turns: int,
    live_chunk: int | None = None,
) -> tuple[Trajectory, Counts]:
    """Play `num_turns` steps of every episode in `states` (leaves `[B, ...]`); consumes `key`.

    Actions are sampled from the masked softmax of `policy_fn`; an ended episode keeps stepping
    as padding (absorbing end, reward 0) and is not counted. Returns the `Trajectory` (`[B, T]`
    with `T = num_turns`) and the `Counts` of live steps, policy evaluations and episodes that
    were live at the start. `num_turns = env.max_turns` plays fresh episodes to their end.
    Each turn evaluates the policy on the live episodes only, `live_chunk` at a time (default
    `live_chunk_size(B)`; `B`: every row in one call, e.g. for a batch sharded over devices).
    """
    chunk = live_chunk_size(states.turn.shape[0]) if live_chunk is None else live_chunk

    def choose(state, observation, step_key):
        return _sample(policy_fn, params, state, step_key, chunk_size=chunk, observation=observation)

    return _play(env, states, choose, jax.random.split(key, num_turns), num_turns, policy_fn)


@functools.partial(jax.jit, static_argnames=("env", "policy_fn"))
def replay(
    env: Environment, states: State, actions: jax.Array, *, policy_fn: PolicyFn | None = None, params: Any = None
) -> tuple[Trajectory, Counts]:
    """The `Trajectory` of given actions int32 `[B, T]` from `states` (leaves `[B, ...]`).

    For scripted episodes (tests, audits of recorded play). Illegal actions are refused by the
    environment as usual; actions after an episode's end are padding. `log_prob` is the
    action's log-probability under `policy_fn` if given, else 0. Counts as `rollout` (policy
    evaluations and afterstate steps only with a `policy_fn`).
    """
    def choose(state, observation, action):
        if policy_fn is None:
            return action, jnp.zeros(action.shape, jnp.float32)
        logits = policy_fn(params, observation, state.legal_action_mask)
        log_probs = log_probabilities(logits, state.legal_action_mask)
        safe = jnp.clip(action, 0, env.num_actions - 1)
        return action, jnp.take_along_axis(log_probs, safe[..., None], axis=-1)[..., 0]

    trajectory, counts = _play(env, states, choose, jnp.swapaxes(actions, 0, 1).astype(jnp.int32), actions.shape[1],
                               policy_fn)
    if policy_fn is None:
        counts = counts.replace(policy_evals=jnp.zeros((), jnp.int32))
    return trajectory, counts


@struct.dataclass
class BranchResult:
    """Returns of branch continuations. With forced first actions every array has an `A` axis.

    Attributes:
      returns: float32 `[N, K]` or `[N, A, K]`: each continuation's undiscounted sum of rewards
        (0 where `valid` is False).
      mean: float32 `[N]` or `[N, A]`: the mean over K, a Monte Carlo estimate of `V(s)`
        (or `Q(s, a)`); 0 where not valid.
      std: float32 `[N]` or `[N, A]`: the sample standard deviation over K (ddof 1; 0 when K=1).
      valid: bool `[N]` or `[N, A]`: the state was live (and, when forcing, the action legal).
      counts: the `Counts` of the live work: continuations started, env steps, policy evals.
    """

    returns: jax.Array
    mean: jax.Array
    std: jax.Array
    valid: jax.Array
    counts: Counts


def _forced_actions(state: State, max_legal_actions: int):
    """Per state, the first `max_legal_actions` legal actions (in id order) and their validity."""
    order = jnp.argsort(~state.legal_action_mask, axis=-1, stable=True)[..., :max_legal_actions]
    return order.astype(jnp.int32), jnp.take_along_axis(state.legal_action_mask, order, axis=-1)


@functools.partial(
    jax.jit,
    static_argnames=(
        "env", "policy_fn", "num_continuations", "horizon", "force_first_actions", "max_legal_actions", "chunk_size",
        "sharding",
    ),
)
def branch_returns(
    env: Environment,
    policy_fn: PolicyFn,
    params: Any,
    states: State,
    key: jax.Array,
    *,
    num_continuations: int,
    horizon: int | None = None,
    force_first_actions: bool = False,
    max_legal_actions: int | None = None,
    chunk_size: int = 512,
    sharding: NamedSharding | None = None,
    key_groups: jax.Array | None = None,
) -> BranchResult:
    """Run `K = num_continuations` continuations from each state of `states` (leaves `[N, ...]`).

    Each continuation copies its state and plays the policy until the episode ends, for at most
    `horizon` steps (default `env.max_turns`, which always reaches the end or the turn limit).
    With `force_first_actions`, every legal action `a` of every state is taken first and the
    continuation goes on under the policy, giving `Q(s, a)` samples `[N, A, K]`; the forced step
    costs an environment step but no policy evaluation. Ended states and illegal forced actions
    are not run (`valid` False, returns 0). Consumes `key`.

    Work is flattened to `N * K` (or `N * M * K`, `M = max_legal_actions`, default A)
    continuations, sorted by the turn of their state, and processed `chunk_size` at a time with
    `lax.map`; each chunk loops (`lax.while_loop`) only until all its continuations have ended.
    `max_legal_actions` is a static bound on the number of legal actions per state (MAD:
    `length + 1`): it skips work on illegal actions; if a state has more legal actions, the
    extra ones (highest ids) are reported not valid. Results depend on `chunk_size` only
    through the random stream.

    `sharding` (a `jaxcredit.sharding.batch_sharding(...)`) splits each chunk's `C`
    continuations over its devices; the results match the unsharded call to float tolerance.

    `key_groups` int32 `[N]` gives common random numbers: continuation `j` of every state in the same
    group samples its action at turn `τ` with the key `fold_in(fold_in(fold_in(key, group), j), τ)`,
    whatever state it branched from and whichever first action was forced. Two continuations that
    reach the same state at the same turn then play the same actions from there, so the difference
    of two branched values cancels wherever their continuations meet. None: independent keys (the
    random stream above).
    """
    horizon = env.max_turns if horizon is None else horizon
    if horizon < 1 or num_continuations < 1 or chunk_size < 1:
        raise ValueError(f"branch_returns needs horizon, num_continuations and chunk_size >= 1, got "
                         f"{horizon}, {num_continuations}, {chunk_size}")
    num_states = states.turn.shape[0]
    k = num_continuations
    if force_first_actions:
        m = env.num_actions if max_legal_actions is None else min(max_legal_actions, env.num_actions)
        forced, valid = _forced_actions(states, m)  # [N, M]
        valid = valid & ~states.done[:, None]
    else:
        m = 1
        forced = jnp.full((num_states, 1), -1, jnp.int32)
        valid = ~states.done[:, None]

    # Sort states by (ended, turn) so a chunk holds continuations of similar length.
    order = jnp.argsort(jnp.where(states.done, env.max_turns + 1, states.turn), stable=True)
    total = num_states * m * k
    chunk_size = min(chunk_size, total)  # a small call is one chunk of its own size, not padded
    num_chunks = -(-total // chunk_size)
    padded = num_chunks * chunk_size
    flat_state = jnp.repeat(order, m * k)
    flat_forced = jnp.repeat(forced[order].reshape(-1), k)
    flat_valid = jnp.repeat(valid[order].reshape(-1), k)
    pad = padded - total
    flat_state = jnp.pad(flat_state, (0, pad)).reshape(num_chunks, chunk_size)
    flat_forced = jnp.pad(flat_forced, (0, pad), constant_values=-1).reshape(num_chunks, chunk_size)
    flat_valid = jnp.pad(flat_valid, (0, pad)).reshape(num_chunks, chunk_size)
    if key_groups is None:
        chunk_keys = jax.random.split(key, num_chunks)
    else:  # one base key per slot: its state's group and its continuation's index j
        continuation = jnp.pad(jnp.arange(total, dtype=jnp.int32) % k, (0, pad)).reshape(num_chunks, chunk_size)
        chunk_keys = jax.vmap(jax.vmap(lambda g, j: jax.random.fold_in(jax.random.fold_in(key, g), j)))(
            jnp.asarray(key_groups, jnp.int32)[flat_state], continuation)
    batch_step = jax.vmap(env.step)
    live_chunk = chunk_size if sharding is not None else live_chunk_size(chunk_size)

    def sample(state, chunk_key, t, observation):
        if key_groups is None:
            return _sample(policy_fn, params, state, jax.random.fold_in(chunk_key, t), chunk_size=live_chunk,
                           observation=observation)[0]
        row_keys = jax.vmap(jax.random.fold_in)(chunk_key, state.turn)  # chunk_key: the slots' base keys [C]
        return _sample_rows(policy_fn, params, state, row_keys, chunk_size=live_chunk, observation=observation)

    def run_chunk(chunk):
        state_index, forced_action, active, chunk_key = chunk
        state = constrain_batch(jax.tree_util.tree_map(lambda x: x[state_index], states), sharding)
        # An inactive slot (padding, ended state, illegal forced action) is marked ended up front.
        state = state.replace(truncated=state.truncated | ~active)
        ret = jnp.zeros((chunk_size,), jnp.float32)
        steps = jnp.zeros((), jnp.int32)
        if force_first_actions:
            state = batch_step(state, forced_action)
            ret = ret + state.reward
            steps = steps + jnp.sum(active, dtype=jnp.int32)

        def cond(carry):
            t, state, _, _, _, _ = carry
            return (t < horizon) & jnp.any(~state.done)

        def body(carry):
            t, state, ret, steps, evals, input_steps = carry
            live = ~state.done
            observation, state_input_steps = policy_inputs(env, policy_fn, state)
            input_steps = input_steps + jnp.sum(state_input_steps, dtype=jnp.int32)
            action = sample(state, chunk_key, t, observation)
            state = batch_step(state, action)
            live_count = jnp.sum(live, dtype=jnp.int32)
            return (t + 1, state, ret + jnp.where(live, state.reward, 0.0), steps + live_count, evals + live_count,
                    input_steps)

        start = jnp.asarray(1 if force_first_actions else 0, jnp.int32)
        zero = jnp.zeros((), jnp.int32)
        _, _, ret, steps, evals, input_steps = jax.lax.while_loop(cond, body, (start, state, ret, steps, zero, zero))
        return ret, steps, evals, input_steps

    chunk_returns, chunk_steps, chunk_evals, chunk_input_steps = jax.lax.map(
        run_chunk, (flat_state, flat_forced, flat_valid, chunk_keys)
    )
    sorted_returns = chunk_returns.reshape(-1)[:total].reshape(num_states, m, k)
    returns = jnp.zeros_like(sorted_returns).at[order].set(sorted_returns)
    if force_first_actions:
        full = jnp.zeros((num_states, env.num_actions, k), jnp.float32)
        rows = jnp.arange(num_states)[:, None]
        returns = full.at[rows, forced].add(jnp.where(valid[..., None], returns, 0.0))
        valid = jnp.zeros((num_states, env.num_actions), bool).at[rows, forced].max(valid)
    else:
        returns, valid = returns[:, 0], valid[:, 0]
    returns = jnp.where(valid[..., None], returns, 0.0)
    mean = jnp.mean(returns, axis=-1)
    std = jnp.std(returns, axis=-1, ddof=1) if k > 1 else jnp.zeros_like(mean)
    counts = Counts(
        env_steps=jnp.sum(chunk_steps, dtype=jnp.int32),
        policy_evals=jnp.sum(chunk_evals, dtype=jnp.int32),
        episodes=jnp.sum(valid, dtype=jnp.int32) * k,
        afterstate_env_steps=jnp.sum(chunk_input_steps, dtype=jnp.int32),
    )
    return BranchResult(returns=returns, mean=mean, std=std, valid=valid, counts=counts)
