"""`packed_rows` computes only the kept rows with the dense values and gradient, and an afterstate
policy that packs its legal afterstates gives the dense network's logits, gradients and critic values."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.afterstate import afterstate_vocab_size, afterstate_width
from jaxcredit.envs import make
from jaxcredit.packed_rows import chunk_size, packed_rows
from jaxcredit.policy import PolicyConfig, PolicyNetwork, TaskSizes, make_policy
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.rollout import rollout
from tests.afterstate_support import perturbed

ROWS, WIDTH, VOCAB = 200, 5, 10


def _score(params, rows):
    """A small nonlinear score of int rows `[C, W]`: every row's gradient differs."""
    return jnp.tanh(params["embed"][rows] @ params["w"]).sum(-1)


@pytest.fixture(scope="module")
def toy():
    keys = jax.random.split(jax.random.key(0), 4)
    params = {"embed": jax.random.normal(keys[0], (VOCAB, 3)), "w": jax.random.normal(keys[1], (3,))}
    rows = jax.random.randint(keys[2], (ROWS, WIDTH), 0, VOCAB)
    weights = jax.random.normal(keys[3], (ROWS,))
    return params, rows, weights


def _dense(params, rows, keep):
    return jnp.where(keep, _score(params, rows), 0.0)


@pytest.mark.parametrize("kept", ["none", "some", "one-chunk", "all"])
def test_values_and_gradient_equal_the_dense_ones(toy, kept):
    params, rows, weights = toy
    chunk = 16
    keep = {"none": jnp.zeros(ROWS, bool), "all": jnp.ones(ROWS, bool),
            "one-chunk": jnp.arange(ROWS) % 12 == 0,  # 17 rows: just over one chunk
            "some": jax.random.bernoulli(jax.random.key(7), 0.3, (ROWS,))}[kept]
    packed = jax.jit(lambda p: packed_rows(_score, p, rows, keep, chunk=chunk))(params)
    np.testing.assert_allclose(packed, _dense(params, rows, keep), rtol=1e-6, atol=1e-6)
    assert not np.asarray(packed)[~np.asarray(keep)].any()  # rows not kept score exactly 0
    grad = jax.jit(jax.grad(lambda p: jnp.sum(weights * packed_rows(_score, p, rows, keep, chunk=chunk))))(params)
    dense = jax.grad(lambda p: jnp.sum(weights * _dense(p, rows, keep)))(params)
    for a, b in zip(jax.tree_util.tree_leaves(grad), jax.tree_util.tree_leaves(dense), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    if kept != "none":
        assert float(jnp.abs(dense["w"]).sum()) > 1e-3  # a gradient to compare: not a tautology


def test_under_vmap_each_batch_keeps_its_own_rows(toy):
    """Vmapped over parameters and masks: the loop runs to the largest count, every member is exact."""
    params, rows, weights = toy
    stacked = jax.tree_util.tree_map(lambda x: jnp.stack([x, 2 * x]), params)
    keep = jnp.stack([jnp.arange(ROWS) < 5, jnp.arange(ROWS) % 2 == 0])

    def loss(p, k):
        return jnp.sum(weights * packed_rows(_score, p, rows, k, chunk=32))

    grads = jax.jit(jax.vmap(jax.grad(loss)))(stacked, keep)
    for i in range(2):
        member = jax.tree_util.tree_map(lambda x, i=i: x[i], stacked)
        dense = jax.grad(lambda p, i=i: jnp.sum(weights * _dense(p, rows, keep[i])))(member)
        np.testing.assert_allclose(grads["w"][i], dense["w"], rtol=1e-5, atol=1e-5)


def test_chunk_size_and_bad_chunk():
    assert chunk_size(10) == 10 and chunk_size(448) == 64 and chunk_size(1792) == 112
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        packed_rows(_score, {}, jnp.zeros((4, 2), jnp.int32), jnp.ones(4, bool), chunk=0)


def test_packed_afterstate_policy_equals_the_dense_one():
    """Arithmetic with 3 numbers (most of the 28 actions illegal): logits, the gradient of a
    policy-gradient loss and the critic's value agree with the dense network on a rollout's steps."""
    env = make("arithmetic", count=3, max_turns=4, include_turns_left=True)
    config = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32, policy_input="afterstate")
    network = make_policy(config, env)
    params = perturbed(network)
    params = jax.tree_util.tree_map(  # every block's gradient nonzero, not only the action head's
        lambda x: x + 0.05 * jax.random.normal(jax.random.key(x.size), x.shape), params)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(3), 8))
    trajectory, _ = rollout(env, network.policy_fn, params, states, jax.random.key(4), num_turns=env.max_turns)
    mask, live = trajectory.legal_action_mask, trajectory.live
    assert network.policy_fn.packed and float(mask[live].mean()) < 0.8  # illegal rows to skip
    dense_fn = dataclasses.replace(network.policy_fn, packed=False)

    def loss(policy_fn, p):
        log_probs = jax.nn.log_softmax(policy_fn(p, trajectory.observation, mask))
        return jnp.sum(jnp.where(live[..., None] & mask, log_probs * jnp.arange(env.num_actions), 0.0))

    logits = [np.asarray(f(params, trajectory.observation, mask)) for f in (network.policy_fn, dense_fn)]
    np.testing.assert_allclose(logits[0][np.asarray(mask)], logits[1][np.asarray(mask)], rtol=1e-5, atol=1e-5)
    grads = [jax.jit(jax.grad(lambda p, f=f: loss(f, p)))(params) for f in (network.policy_fn, dense_fn)]
    scale = max(float(jnp.abs(b).max()) for b in jax.tree_util.tree_leaves(grads[1]))
    for a, b in zip(*(jax.tree_util.tree_leaves(g) for g in grads), strict=True):
        # float summation order only (the action head's bias, 0 in exact arithmetic, is all noise)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale)
    assert float(jnp.abs(grads[1]["params"]["block_0"]["mlp_in"]["kernel"]).sum()) > 1e-3
    # the critic: sum_a pi(a|s) v(s_a) over the legal afterstates, against the network on every row
    width = afterstate_width(env.observation_length)
    dense_network = PolicyNetwork(config, TaskSizes(afterstate_vocab_size(env.vocab_size), width, 1))
    scores, values = dense_network.apply(params, trajectory.observation.reshape(*mask.shape, width))
    expected = jnp.sum(action_probabilities(scores[..., 0], mask) * values, axis=-1)
    value = network.value_fn(params, trajectory.observation, mask)
    np.testing.assert_allclose(np.asarray(value)[np.asarray(live)], np.asarray(expected)[np.asarray(live)],
                               rtol=1e-5, atol=1e-5)
    assert np.ptp(np.asarray(expected)[np.asarray(live)]) > 1e-3  # values differ between states
