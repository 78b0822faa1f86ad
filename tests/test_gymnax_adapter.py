"""The gymnax adapter: spaces, auto-reset against a hand loop over the jaxcredit env, both step
forms, refusals, and a published gymnax trainer (rejax PPO) learning MAD."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("gymnax")

from gymnax.environments import spaces  # noqa: E402

from jaxcredit.envs import ENVIRONMENTS, make  # noqa: E402
from jaxcredit.envs.gymnax_adapter import GymnaxAdapter, make_gymnax  # noqa: E402

SMALL_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 4}


def test_spaces_and_params():
    adapter, params = make_gymnax("mad", **SMALL_MAD)
    assert isinstance(adapter.action_space(params), spaces.Discrete) and adapter.action_space(params).n == 7
    box = adapter.observation_space(params)
    assert isinstance(box, spaces.Box) and box.shape == (4,) and box.dtype == jnp.int32
    assert (box.low, box.high) == (0, adapter.env.vocab_size - 1) == (0, 6)
    assert params.max_steps_in_episode == 4 and adapter.num_actions == 7 and adapter.name == "jaxcredit-mad"
    obs, state = adapter.reset(jax.random.key(0), params)
    assert obs.dtype == jnp.int32 and bool(box.contains(obs))
    assert hash(adapter) == hash(GymnaxAdapter(make("mad", **SMALL_MAD)))  # usable as a static jit argument
    with pytest.raises(ValueError, match="jaxcredit Environment"):
        GymnaxAdapter("mad")


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_auto_reset_matches_a_hand_loop_over_the_env(name):
    """200 random actions (legal, illegal and out of range) through `jit(step)` equal a plain loop
    that steps the jaxcredit env and starts a new problem from the step's key when an episode ends."""
    env = make(name, **(SMALL_MAD if name == "mad" else {}))
    adapter = GymnaxAdapter(env)
    five = GymnaxAdapter(env, five_value_step=True)
    step, step5 = jax.jit(adapter.step), jax.jit(five.step)
    rng = np.random.default_rng(0)
    obs, gstate = adapter.reset(jax.random.key(1))
    state = env.init(jax.random.key(1))
    episodes = 0
    for i in range(200):
        action = int(rng.integers(-1, env.num_actions + 1))
        key = jax.random.key(100 + i)
        obs, next_gstate, reward, terminated, truncated, info = step(key, gstate, action)
        obs5, _, reward5, done5, info5 = step5(key, gstate, action)
        stepped = env.step(state, action)
        assert np.array_equal(info["final_observation"], stepped.observation)
        assert float(reward) == float(stepped.reward) == float(reward5)
        assert bool(terminated) == bool(stepped.terminated) and bool(truncated) == bool(stepped.truncated)
        assert bool(info["rejected"]) == bool(stepped.rejected)
        assert bool(done5) == bool(stepped.done) and np.array_equal(obs5, obs)
        assert float(info["discount"]) == (0.0 if bool(stepped.terminated) else 1.0)
        assert set(info5) == set(info)
        state = env.init(key) if bool(stepped.done) else stepped
        episodes += bool(stepped.done)
        assert np.array_equal(obs, state.observation)
        assert np.array_equal(info["legal_action_mask"], state.legal_action_mask)
        assert np.array_equal(adapter.legal_action_mask(next_gstate), state.legal_action_mask)
        assert int(next_gstate.time) == int(state.turn)
        gstate = next_gstate
    assert episodes >= 10


def test_refused_action_uses_a_turn_and_changes_nothing():
    adapter, params = make_gymnax("mad", **SMALL_MAD)
    obs, state = adapter.reset(jax.random.key(0), params)
    unselect_0 = 3  # cell 0 is unselected at the start: unselecting it is illegal
    obs2, state2, reward, terminated, truncated, info = adapter.step(jax.random.key(1), state, unselect_0, params)
    assert bool(info["rejected"]) and not bool(terminated | truncated) and float(reward) == 0.0
    assert np.array_equal(obs2, obs) and int(state2.time) == 1
    for action in (99, -5):  # out of range: refused the same way
        _, state3, _, _, _, info = adapter.step(jax.random.key(2), state2, action, params)
        assert bool(info["rejected"]) and int(state3.time) == 2


def test_batched_jit_vmap():
    adapter, params = make_gymnax("mad", **SMALL_MAD)
    keys = jax.random.split(jax.random.key(0), 64)
    obs, states = jax.vmap(adapter.reset, in_axes=(0, None))(keys, params)
    actions = jnp.full((64,), 6)  # submit: wrong at the start (every tape has a useful cell)
    out = jax.jit(jax.vmap(adapter.step, in_axes=(0, 0, 0, None)))(keys, states, actions, params)
    assert out[0].shape == (64, 4) and out[2].shape == (64,)
    assert not bool(jnp.any(out[3])) and not bool(jnp.any(out[5]["rejected"]))


def test_rejax_ppo_learns_mad_and_beats_random():
    """A published trainer that consumes gymnax environments (rejax PPO, five-value step, no action
    masking) trains on a tiny MAD; its policy succeeds far more often than the uniform random one."""
    rejax = pytest.importorskip("rejax")
    from rejax.evaluate import evaluate

    tiny = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 6}
    env, params = make_gymnax("mad", five_value_step=True, **tiny)
    algo = rejax.PPO.create(env=env, env_params=params, num_envs=16, num_steps=32, num_epochs=4, num_minibatches=4,
                            total_timesteps=20_480, eval_freq=20_480, learning_rate=3e-3, ent_coef=0.01,
                            normalize_observations=True, skip_initial_evaluation=True,
                            agent_kwargs={"hidden_layer_sizes": (64, 64)})
    train_state, _ = jax.jit(algo.train)(jax.random.key(0))
    _, learned = evaluate(algo.make_act(train_state), jax.random.key(1), env, params, 1024, tiny["max_turns"])

    def uniform_random(obs, key):
        return jax.random.randint(key, (), 0, env.num_actions)

    _, random = evaluate(uniform_random, jax.random.key(1), env, params, 1024, tiny["max_turns"])
    learned, random = float(learned.mean()), float(random.mean())
    assert random < 0.15, random
    assert learned >= random + 0.3, (learned, random)
