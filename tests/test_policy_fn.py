"""The policy contract's masking helpers: exact probabilities and no NaN."""

import jax.numpy as jnp
import numpy as np

from jaxcredit.policy_fn import action_probabilities, log_probabilities, uniform_policy_fn


def test_uniform_over_legal_actions():
    mask = jnp.array([[True, False, True, True], [False, False, False, False]])
    probs = action_probabilities(uniform_policy_fn(None, None, mask), mask)
    np.testing.assert_allclose(probs[0], [1 / 3, 0, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(probs[1], [0.25] * 4, rtol=1e-6)  # ended episode: finite, uniform
    assert np.isfinite(np.asarray(log_probabilities(jnp.zeros((2, 4)), mask))).all()


def test_masked_softmax_matches_hand_value():
    logits = jnp.array([0.0, 100.0, jnp.log(3.0)])
    mask = jnp.array([True, False, True])
    np.testing.assert_allclose(action_probabilities(logits, mask), [0.25, 0.0, 0.75], rtol=1e-6)
