"""Cheaper Monte Carlo labels: selective branching (`branch_fraction`) and common random numbers
(`common_random_numbers`), checked against the arms they reduce to and against hand-counted costs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.credit import highest_entropy_steps
from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext
from jaxcredit.envs import make
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.policy_fn import uniform_policy_fn
from jaxcredit.rollout import rollout
from jaxcredit.train import config_from_dict

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5, "decorative_actions": 2}
P, G = 4, 4  # problems, attempts per problem


def _config(credit, options):
    return config_from_dict({"env": "mad", "env_overrides": TINY_MAD, "credit": credit, "credit_options": options,
                             "problems_per_iteration": P, "attempts_per_problem": G, "holdout_fraction": 0.0})


@pytest.fixture(scope="module")
def batch():
    env = make("mad", **TINY_MAD)
    init_fn, policy_fn, _ = make_policy(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32), env)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)  # not uniform
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(2), P))
    starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.repeat(x, G, axis=0), problems))
    trajectory, _ = rollout(env, policy_fn, params, starts, jax.random.key(3), num_turns=env.max_turns)
    return env, params, policy_fn, problems, trajectory


@pytest.fixture(scope="module")
def uniform_batch(batch):
    """The same problems played by the uniform policy, which succeeds from more of its states."""
    env, _, _, problems, _ = batch
    starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.repeat(x, G, axis=0), problems))
    trajectory, _ = rollout(env, uniform_policy_fn, None, starts, jax.random.key(3), num_turns=env.max_turns)
    return env, None, uniform_policy_fn, problems, trajectory


def _label(batch, credit, options, key=4, policy_fn=None, trajectory=None):
    env, params, network, problems, played = batch
    context = CreditContext(env=env, policy_fn=policy_fn or network, params=params, config=_config(credit, options))
    result = CREDIT_ARMS[credit].compute(context, played if trajectory is None else trajectory, problems,
                                         jax.random.key(key))
    label = result.charge.get("label")
    cost = (0, 0) if label is None else (int(label.env_steps), int(label.policy_evals))
    return np.asarray(result.advantage), cost


def test_highest_entropy_steps_by_hand():
    live = jnp.array([[True, True, True, True], [True, True, False, False]])
    entropy = jnp.array([[0.1, 0.9, 0.5, 0.9], [0.3, 0.2, 5.0, 5.0]])
    trajectory = type("T", (), {"live": live})()
    picked = lambda q: np.asarray(highest_entropy_steps(trajectory, entropy, q)).tolist()  # noqa: E731
    assert picked(0.25) == [[False, True, False, False], [True, False, False, False]]  # ceil(1), ceil(0.5)
    assert picked(0.5) == [[False, True, False, True], [True, False, False, False]]  # a tie: the earlier first
    assert picked(1.0) == live.tolist() and not np.any(picked(0.0))  # ended steps are never picked


@pytest.mark.parametrize("variant", ["td", "q"])
def test_branching_every_step_is_mc_and_branching_none_is_rloo_outcome(batch, variant):
    mc, mc_cost = _label(batch, "mc", {"variant": variant, "continuations": 2})
    every, every_cost = _label(batch, "mc", {"variant": variant, "continuations": 2, "branch_fraction": 1.0})
    np.testing.assert_array_equal(every, mc)
    assert every_cost == mc_cost
    none, none_cost = _label(batch, "mc", {"variant": variant, "continuations": 2, "branch_fraction": 0.0})
    outcome, _ = _label(batch, "outcome", {"baseline": "rloo"})
    np.testing.assert_array_equal(none, outcome)
    assert none_cost == (0, 0)
    half, half_cost = _label(batch, "mc", {"variant": variant, "continuations": 2, "branch_fraction": 0.5})
    assert 0 < half_cost[0] < mc_cost[0]
    live = np.asarray(batch[4].live)
    from_outcome = live & (half == outcome)  # the steps not branched carry the outcome label exactly
    assert 0 < from_outcome.sum() < live.sum()


def test_common_random_numbers_give_a_null_step_the_label_zero(uniform_batch):
    """mc td with the null replacement labels `r_t + V̂(s_{t+1}) − Q̂(s_t, null)`: where the action
    taken is the null action itself, both branch from the same state at the same turn. With common
    random numbers their continuations are the same and the label is exactly 0; independent keys
    give it noise."""
    batch = uniform_batch
    env, trajectory = batch[0], batch[4]
    null_steps = np.asarray(trajectory.live & (trajectory.action == env.null_action))
    assert null_steps.sum() >= 3
    options = {"variant": "td", "continuations": 16, "replacement": "null"}
    common, common_cost = _label(batch, "mc", {**options, "common_random_numbers": True})
    independent, independent_cost = _label(batch, "mc", options)
    assert not common[null_steps].any()
    assert np.abs(independent[null_steps]).max() > 0
    assert common_cost[0] > 0 and independent_cost[0] > 0


def test_common_random_numbers_give_actions_with_the_same_next_state_the_same_value(uniform_batch):
    """mc q forces every legal first action: `note 0` and `note 1` both change nothing but the turn,
    so with common random numbers their `Q̂` are the same numbers; independent keys make them differ."""
    from jaxcredit.credit import branch_action_values

    env, params, policy_fn, _, trajectory = uniform_batch
    note0, note1 = env.null_action, env.null_action + 1
    live = np.asarray(trajectory.live)
    for common in (True, False):
        q, _ = branch_action_values(env, policy_fn, params, trajectory, jax.random.key(5), num_continuations=2,
                                    common_random_numbers=common)
        q = np.asarray(q)[live]
        same = np.array_equal(q[:, note0], q[:, note1])
        assert same == common and np.abs(q[:, note0]).max() > 0


def _always_note(env):
    """A policy that plays `note 0` with probability ~1 (logits -30 elsewhere): no episode ends early,
    every continuation from a state at turn t runs `max_turns - t` steps; every state has the same
    (near-zero) entropy, so selective branching picks each episode's first steps."""
    note = env.null_action

    def policy_fn(params, observation, legal):
        return jnp.broadcast_to(jnp.where(jnp.arange(env.num_actions) == note, 0.0, -30.0),
                                legal.shape).astype(jnp.float32)
    return policy_fn


@pytest.mark.parametrize("k", [1, 2])  # cost grows as K; the K = 4, 8 arms only scale it
def test_label_costs_by_hand(batch, k):
    env, params, _, problems, _ = batch
    policy_fn = _always_note(env)
    starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.repeat(x, G, axis=0), problems))
    trajectory, _ = rollout(env, policy_fn, params, starts, jax.random.key(6), num_turns=env.max_turns)
    assert np.asarray(trajectory.live).all()
    big_t, episodes = env.max_turns, P * G
    # mc td: every state before an action (turns 0..T-1) branched, K continuations of T - t steps each
    full = k * episodes * sum(big_t - t for t in range(big_t))
    for options, steps in [({}, full), ({"common_random_numbers": True}, full),
                           ({"branch_fraction": 0.4}, k * episodes * sum(big_t - t for t in range(3))),  # t=0,1 + next
                           ({"branch_fraction": 0.2}, k * episodes * sum(big_t - t for t in range(2)))]:
        _, cost = _label(batch, "mc", {"variant": "td", "continuations": k, **options}, policy_fn=policy_fn,
                         trajectory=trajectory)
        assert cost == (steps, steps), options  # one policy evaluation per continuation step
    # the null replacement adds, per branched state, one null step and K continuations of T - t - 1 steps
    _, cost = _label(batch, "mc", {"variant": "td", "continuations": k, "replacement": "null",
                                   "branch_fraction": 0.2}, policy_fn=policy_fn, trajectory=trajectory)
    null_steps = episodes * (1 + k * (big_t - 1))
    assert cost == (k * episodes * (big_t - 1) + null_steps, k * episodes * (big_t - 1) + k * episodes * (big_t - 1))
