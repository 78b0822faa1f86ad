"""The policy network: size, the uniform start, masking, the last-token shortcut, no NaN."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.policy import PolicyConfig, PolicyNetwork, count_parameters, make_policy, task_sizes
from jaxcredit.policy_fn import action_probabilities


def test_default_network_has_about_100k_parameters(mad):
    init_fn, _, _ = make_policy(PolicyConfig(), mad)
    assert 95_000 <= count_parameters(init_fn(jax.random.key(0))) <= 110_000


def test_fresh_network_is_uniform_over_legal_actions(mad, mad_init_batch):
    init_fn, policy_fn, value_fn = make_policy(PolicyConfig(), mad)
    params = init_fn(jax.random.key(3))
    states = mad_init_batch(jax.random.split(jax.random.key(0), 6))
    states = jax.jit(jax.vmap(mad.step))(states, jnp.array([0, 1, 2, 3, 16, 9]))  # 9: refused
    probs = action_probabilities(policy_fn(params, states.observation, states.legal_action_mask),
                                 states.legal_action_mask)
    legal = np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(probs, legal / legal.sum(-1, keepdims=True), atol=1e-6)
    assert value_fn(params, states.observation, states.legal_action_mask).shape == (6,)


def test_last_token_shortcut_equals_full_computation(mad, mad_policy, mad_init_batch):
    params, policy_fn, value_fn = mad_policy
    states = mad_init_batch(jax.random.split(jax.random.key(4), 6))
    full = PolicyNetwork(PolicyConfig(), task_sizes(mad), last_token_only=False)
    logits, value = jax.jit(full.apply)(params, states.observation)
    masked = policy_fn(params, states.observation, states.legal_action_mask)
    legal = np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(np.asarray(masked)[legal], np.asarray(logits)[legal], rtol=1e-5, atol=1e-5)
    assert (np.asarray(masked)[~legal] < -1e8).all()
    np.testing.assert_allclose(value_fn(params, states.observation, states.legal_action_mask), value,
                               rtol=1e-5, atol=1e-5)
    # Every token is read: changing the first cell changes the logits.
    changed = states.observation.at[:, 0].set((states.observation[:, 0] + 2) % mad.vocab_size)
    assert not np.allclose(policy_fn(params, changed, states.legal_action_mask), masked)


def test_batched_over_any_leading_axes_and_finite_on_ended_states(mad, mad_policy, mad_init_batch):
    params, policy_fn, _ = mad_policy
    states = mad_init_batch(jax.random.split(jax.random.key(5), 6))
    obs = states.observation.reshape(2, 3, -1)
    mask = states.legal_action_mask.reshape(2, 3, -1)
    np.testing.assert_allclose(policy_fn(params, obs, mask).reshape(6, -1),
                               policy_fn(params, states.observation, states.legal_action_mask), rtol=1e-5, atol=1e-5)
    ended = jnp.zeros_like(mask)
    probs = action_probabilities(policy_fn(params, obs, ended), ended)
    assert np.isfinite(np.asarray(probs)).all()
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)


def test_bad_config_is_a_value_error():
    import pytest

    with pytest.raises(ValueError, match="num_heads"):
        PolicyConfig(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="mlp_dim"):
        PolicyConfig(mlp_dim=0)
