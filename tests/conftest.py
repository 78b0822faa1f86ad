"""Shared fixtures: environments and compiled functions built once per session."""

import pytest

from jaxcredit.envs import make, make_reference


@pytest.fixture(scope="session")
def mad():
    return make("mad")


@pytest.fixture(scope="session")
def mad_reference(mad):
    return make_reference(mad)


@pytest.fixture(scope="session")
def arithmetic():
    return make("arithmetic")


@pytest.fixture(scope="session")
def arithmetic_reference(arithmetic):
    return make_reference(arithmetic)


# ----- policy, rollouts, branches (credit branch) -----

@pytest.fixture(scope="session")
def small_mad():
    """A MAD small enough for exact values and large-K Monte Carlo in tests (S = 16 positions)."""
    return make("mad", length=4, num_tokens=3, min_useful=1, max_useful=3, max_turns=6)


@pytest.fixture(scope="session")
def mad_policy(mad):
    """`(params, policy_fn, value_fn)` of the default ~100k-parameter network on default MAD.

    The action head is perturbed so the policy is not exactly uniform.
    """
    import jax

    from jaxcredit.policy import PolicyConfig, make_policy

    init_fn, policy_fn, value_fn = make_policy(PolicyConfig(), mad)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)
    return params, policy_fn, value_fn


@pytest.fixture(scope="session")
def mad_init_batch(mad):
    """`jit(vmap(mad.init))`: keys `[B]` -> states `[B]`."""
    import jax

    return jax.jit(jax.vmap(mad.init))
