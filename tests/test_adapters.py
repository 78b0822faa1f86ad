"""What the adapters share without gymnax: versioned ids, observation encodings, the fused
step-or-restart of the base class, and the jumanji-style adapter against the plain env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.conformance import random_actions
from jaxcredit.env import tree_select
from jaxcredit.envs import BLANK, ENVIRONMENT_IDS, ENVIRONMENTS, JumanjiAdapter, make, make_jumanji
from jaxcredit.envs import problem_set as host_problems
from jaxcredit.envs.encodings import encode, encoded_spec
from jaxcredit.envs.jumanji_adapter import FIRST, LAST, MID

SMALL_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 4}


def test_versioned_ids_make_the_same_environments():
    assert make("MAD-v0") == make("mad") and make("Arithmetic-v0", count=3) == make("arithmetic", count=3)
    assert set(ENVIRONMENT_IDS.values()) == set(ENVIRONMENTS)
    ids = "MAD-v0, Arithmetic-v0, Routine-v0, Umbrella-v0, mad"
    with pytest.raises(ValueError, match=f"unknown environment 'MAD-v9'; choices: {ids}"):
        make("MAD-v9")
    with pytest.raises(ValueError, match="unknown mad config field.*colour"):
        make("MAD-v0", colour=1)


def test_encodings_hand_computed():
    env = make("mad", **SMALL_MAD)  # L = 4 tokens, V = 7
    tokens = jnp.array([0, 3, 6, 6], jnp.int32)
    one_hot = np.asarray(encode(env, tokens, "one_hot"))
    assert one_hot.shape == (28,) and one_hot.dtype == np.float32
    assert np.flatnonzero(one_hot).tolist() == [0, 7 + 3, 14 + 6, 21 + 6] and one_hot.sum() == 4
    assert np.asarray(encode(env, tokens, "embedding")).tolist() == [0, 10, 20, 27]
    assert np.asarray(encode(env, tokens, "tokens")).tolist() == [0, 3, 6, 6]
    assert encoded_spec(env, "one_hot")[0] == (28,) and encoded_spec(env, "embedding")[3] == 27
    with pytest.raises(ValueError, match="unknown observation encoding 'ids'; choices: one_hot, tokens"):
        make_jumanji("mad", encoding="ids")


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_step_or_restart_equals_step_then_select(name):
    """The fused restart equals `tree_select(done, init_problem(next), step(state, action))` on
    every leaf, over random legal, illegal and out-of-range actions of 256 episodes."""
    small = {"mad": SMALL_MAD, "routine": {"horizon": 4, "failure": "probabilistic"},
             "umbrella": {"chain_length": 3, "n_distractor": 2}}
    env = make(name, **small.get(name, {"count": 3}))
    rng = np.random.default_rng(0)
    if name == "mad":  # host-drawn problems: no compile of the samplers
        problems = np.where(rng.random((512, 3)) < 0.5, rng.integers(0, 2, (512, 3)), BLANK).astype(np.int32)
    elif name in ("routine", "umbrella"):
        problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(0), 512))
    else:
        problems = host_problems("default", 512, 0, count=3)
    states = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: x[:256], problems))
    next_problems = jax.tree_util.tree_map(lambda x: x[256:], problems)

    def fused_and_reference(state, action, problem):
        stepped = env.step(state, action)
        return env.step_or_restart(state, action, problem), \
            (stepped, tree_select(stepped.done, env.init_problem(problem), stepped))

    both = jax.jit(jax.vmap(fused_and_reference))
    restarts = 0
    for _ in range(3 * env.max_turns):
        actions = random_actions(rng, np.asarray(states.legal_action_mask), illegal_fraction=0.3)
        got, want = both(states, actions, next_problems)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(a, b)
        restarts += int(got[0].done.sum())
        states = got[1]
    assert restarts >= 256  # every episode ended at least once


def test_jumanji_adapter_follows_the_env():
    env = make("mad", **SMALL_MAD)
    adapter = make_jumanji("MAD-v0", **SMALL_MAD)
    assert isinstance(adapter, JumanjiAdapter) and adapter.num_actions == 7 and adapter.observation_shape == (28,)
    state, timestep = adapter.reset(jax.random.key(0))
    reference, env_step = state.state, jax.jit(env.step)
    assert int(timestep.step_type) == FIRST and bool(timestep.first()) and float(timestep.discount) == 1.0
    rng = np.random.default_rng(0)
    for _ in range(6):  # past the turn limit: LAST, then the absorbing end
        np.testing.assert_array_equal(timestep.observation.action_mask, reference.legal_action_mask)
        np.testing.assert_array_equal(timestep.observation.observation,
                                      jax.nn.one_hot(reference.observation, env.vocab_size).reshape(-1))
        action = int(rng.integers(-1, env.num_actions + 1))
        state, timestep = adapter.step(state, action)
        reference = env_step(reference, action)
        assert int(timestep.step_type) == (LAST if bool(reference.done) else MID)
        assert float(timestep.reward) == float(reference.reward)
        assert float(timestep.discount) == (0.0 if bool(reference.terminated) else 1.0)
        assert bool(timestep.extras["rejected"]) == bool(reference.rejected)
    assert bool(timestep.last()) and bool(reference.truncated)


def test_jumanji_terminal_step_has_discount_zero():
    env = make("mad", **SMALL_MAD)
    adapter = JumanjiAdapter(env, encoding="tokens")
    state, timestep = adapter.reset(jax.random.key(3))
    tape = np.asarray(state.state.problem)
    for cell in np.flatnonzero(tape != -1):  # select every useful cell, then submit
        state, timestep = adapter.step(state, int(cell))
    state, timestep = adapter.step(state, env.submit_action)
    assert bool(timestep.last()) and float(timestep.discount) == 0.0 and float(timestep.reward) == 1.0
    assert timestep.observation.observation.dtype == jnp.int32 and not bool(timestep.observation.action_mask.any())
