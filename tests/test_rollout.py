"""Rollouts and branch continuations: recorded fields and exact, hand-counted costs.

A deterministic "oracle" policy (select the first unselected useful cell, else submit) makes
every episode's length known: a tape with n useful cells ends after n + 1 steps. Branches are
checked against a plain-Python simulation of the same policy on the reference environment.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.ledger import Counts
from jaxcredit.rollout import branch_returns, rollout


def oracle_policy_fn(params, observation, legal_action_mask):
    """Logits that pick the first unselected useful cell, else submit (near-deterministic)."""
    del params
    cells = observation[..., :-1]
    length = cells.shape[-1]
    unselected_useful = (cells >= 2) & (cells % 2 == 0)
    action = jnp.where(unselected_useful.any(-1), jnp.argmax(unselected_useful, axis=-1), 2 * length)
    return 60.0 * jax.nn.one_hot(action, legal_action_mask.shape[-1])


def oracle_action(reference):
    for i, (token, selected) in enumerate(zip(reference.tape, reference.selected)):
        if token != -1 and not selected:
            return i
    return 2 * reference.length


@pytest.fixture(scope="module")
def oracle_episodes(mad, mad_init_batch):
    states = mad_init_batch(jax.random.split(jax.random.key(11), 32))
    trajectory, counts = rollout(mad, oracle_policy_fn, None, states, jax.random.key(0), num_turns=mad.max_turns)
    return states, trajectory, counts


def test_rollout_records_and_counts_the_oracle_episodes(mad, oracle_episodes):
    states, trajectory, counts = oracle_episodes
    n_useful = np.asarray((states.problem != -1).sum(-1))
    t = np.arange(mad.max_turns)
    live = t[None] < n_useful[:, None] + 1
    np.testing.assert_array_equal(trajectory.live, live)
    assert counts == Counts(env_steps=int(live.sum()), policy_evals=int(live.sum()), episodes=32)
    np.testing.assert_array_equal(trajectory.reward, (t[None] == n_useful[:, None]).astype(np.float32))
    np.testing.assert_array_equal(trajectory.episode_return, np.ones(32))
    np.testing.assert_array_equal(trajectory.done, t[None] >= n_useful[:, None])
    np.testing.assert_array_equal(trajectory.terminated, trajectory.done)
    np.testing.assert_array_equal(trajectory.turn, np.minimum(t[None], n_useful[:, None] + 1))
    np.testing.assert_array_equal(trajectory.turns_left, mad.max_turns - np.asarray(trajectory.turn))
    np.testing.assert_array_equal(trajectory.states.turn, trajectory.turn)
    np.testing.assert_array_equal(trajectory.observation, trajectory.states.observation)
    assert np.abs(np.asarray(trajectory.log_prob)).max() < 1e-5
    # The position before step t is the bitmask of the first t useful cells (capped at n).
    tapes = np.asarray(states.problem)
    for b in range(4):
        useful = np.flatnonzero(tapes[b] != -1)
        expected = [sum(1 << int(i) for i in useful[: min(step, len(useful))]) for step in t]
        np.testing.assert_array_equal(trajectory.position[b], expected)
    np.testing.assert_array_equal(jax.tree_util.tree_leaves(trajectory.next_states())[0][:, -1],
                                  jax.tree_util.tree_leaves(trajectory.final_state)[0])


def test_rollout_counts_nothing_on_ended_episodes_and_stops_at_num_turns(mad, oracle_episodes):
    states, trajectory, _ = oracle_episodes
    _, counts = rollout(mad, oracle_policy_fn, None, trajectory.final_state, jax.random.key(1),
                        num_turns=mad.max_turns)
    assert counts == Counts(env_steps=0, policy_evals=0, episodes=0)
    short, counts = rollout(mad, oracle_policy_fn, None, states, jax.random.key(1), num_turns=2)
    assert short.live.shape == (32, 2) and counts.env_steps == 64  # every tape needs >= 2 steps


def simulate_branch(mad_reference, tape, prefix, forced, horizon):
    """Plain Python: replay `prefix`, take `forced` (or not), follow the oracle; (return, steps, evals)."""
    env = mad_reference.reset(tape)
    for action in prefix:
        env.step(action)
    total, steps, evals = 0.0, 0, 0
    while not (env.terminated or env.truncated) and steps < horizon:
        if forced is not None and steps == 0:
            action = forced
        else:
            action, evals = oracle_action(env), evals + 1
        env.step(action)
        total, steps = total + env.reward, steps + 1
    return total, steps, evals


@pytest.mark.parametrize("force", [False, True])
def test_branch_returns_match_a_plain_python_simulation(mad, mad_reference, oracle_episodes, force):
    _, trajectory, _ = oracle_episodes
    k = 3
    # Branch from turns 0..3 of 4 episodes: some of those states have already ended.
    picks = [(b, t) for b in range(4) for t in range(4)]
    index = tuple(np.array(p) for p in zip(*picks))
    states = jax.tree_util.tree_map(lambda x: x[index], trajectory.states)
    result = branch_returns(mad, oracle_policy_fn, None, states, jax.random.key(2), num_continuations=k,
                            force_first_actions=force, chunk_size=40)
    tapes, actions = np.asarray(trajectory.states.problem), np.asarray(trajectory.action)
    expected_steps = expected_evals = expected_episodes = 0
    for n, (b, t) in enumerate(picks):
        ended = bool(trajectory.states.done[b, t])
        mask = np.asarray(trajectory.legal_action_mask[b, t])
        for a in range(mad.num_actions) if force else [None]:
            valid = not ended and (a is None or mask[a])
            got_valid = result.valid[n, a] if force else result.valid[n]
            got_returns = result.returns[n, a] if force else result.returns[n]
            assert bool(got_valid) == valid
            if not valid:
                np.testing.assert_array_equal(got_returns, 0.0)
                continue
            ret, steps, evals = simulate_branch(mad_reference, tapes[b, 0], actions[b, :t], a, mad.max_turns)
            np.testing.assert_array_equal(got_returns, ret)
            expected_steps, expected_evals, expected_episodes = (
                expected_steps + k * steps, expected_evals + k * evals, expected_episodes + k)
    assert result.counts == Counts(expected_steps, expected_evals, expected_episodes)
    assert np.isfinite(np.asarray(result.std)).all() and float(np.abs(result.std).max()) == 0.0
