"""Soft-optimal (Boltzmann) values: a hand-checked case, the two limits, self-consistency, and how
many more steps of MAD episodes get credit than under the hard max."""

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver
from jaxcredit.credit import solver_action_advantage
from jaxcredit.envs import BLANK, make
from jaxcredit.policy_fn import uniform_policy_fn
from jaxcredit.rollout import rollout

HORIZON = 6


@pytest.fixture(scope="module")
def small_graphs():
    """MAD length 4, 2 tokens: all 81 tapes' graphs."""
    env = make("mad", length=4, num_tokens=2, min_useful=0, max_useful=4, max_turns=HORIZON)
    tapes = np.array(list(itertools.product([BLANK, 0, 1], repeat=4)), np.int32)
    return jax.jit(jax.vmap(solver.build_graph, in_axes=(None, 0)), static_argnums=0)(env, jnp.asarray(tapes))


@functools.partial(jax.jit, static_argnames="policy")
def _solve_all_jit(graphs, temperature, *, policy):
    one = lambda g: solver.solve_graph(g, policy=policy, horizon=HORIZON, temperature=temperature)  # noqa: E731
    return jax.vmap(one)(graphs)


def _solve_all(graphs, policy, temperature=solver.DEFAULT_TEMPERATURE):
    """All graphs' values; the temperature is traced, so every temperature shares one compile."""
    return _solve_all_jit(graphs, jnp.float32(temperature), policy=policy)


def test_hand_checked_one_cell_tape():
    # One useful cell, 2 turns. Position 0 (nothing selected): select or a wrong submit.
    # Position 1 (selected): submit (reward 1) or unselect. With 1 turn left from position 1,
    # Q = (0 unselect, 1 submit), so V_τ = σ(1/τ); from position 0 with 2 turns, Q = (σ(1/τ) select,
    # 0 submit), so V_τ = σ(1/τ) · σ(σ(1/τ)/τ). Uniform: 1/2 and 1/4; optimal: 1 and 1.
    env = make("mad", length=1, num_tokens=1, min_useful=1, max_useful=1, max_turns=2)
    tape = jnp.array([0], jnp.int32)
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    for tau in (0.5, 2.0):
        values = solver.solve(env, tape, policy="soft", temperature=tau)
        inner = sigmoid(1 / tau)
        np.testing.assert_allclose(values.v[1, 1], inner, rtol=1e-6)
        np.testing.assert_allclose(values.v[2, 0], inner * sigmoid(inner / tau), rtol=1e-6)
        np.testing.assert_allclose(values.q[2, 0, :], [inner, 0.0, 0.0], atol=1e-7)  # select, (illegal), submit
    np.testing.assert_allclose(solver.solve(env, tape, policy="soft", temperature=0.5).v[2, 0], 0.751680, rtol=1e-5)
    np.testing.assert_allclose(solver.solve(env, tape, policy="uniform").v[2, 0], 0.25, rtol=1e-6)
    np.testing.assert_allclose(solver.solve(env, tape, policy="optimal").v[2, 0], 1.0)


def test_limits_are_optimal_and_uniform(small_graphs):
    optimal, uniform = _solve_all(small_graphs, "optimal"), _solve_all(small_graphs, "uniform")
    cold, hot = _solve_all(small_graphs, "soft", 1e-3), _solve_all(small_graphs, "soft", 1e6)
    for name in ("v", "q"):
        np.testing.assert_allclose(getattr(cold, name), getattr(optimal, name), atol=1e-6, err_msg=name)
        np.testing.assert_allclose(getattr(hot, name), getattr(uniform, name), atol=1e-5, err_msg=name)
    # in between it is strictly between, somewhere (the 81 tapes include ones where it matters)
    middle = _solve_all(small_graphs, "soft", 0.3)
    assert (np.asarray(middle.v) <= np.asarray(optimal.v) + 1e-6).all()
    assert (np.asarray(middle.v) >= np.asarray(uniform.v) - 1e-6).all()
    start, best, reference = (np.asarray(x.v)[:, HORIZON, 0] for x in (middle, optimal, uniform))
    inside = (start < best - 1e-3) & (start > reference + 1e-3)
    assert inside.sum() >= 40, inside.sum()


def test_soft_values_are_the_values_of_the_boltzmann_policy(small_graphs):
    tau = 0.3
    soft = _solve_all(small_graphs, "soft", tau)

    def again(graph, values):
        return solver.evaluate_policy(graph, solver.soft_policy(graph, values, temperature=tau), horizon=HORIZON)

    evaluated = jax.jit(jax.vmap(again))(small_graphs, soft)
    np.testing.assert_allclose(evaluated.v, soft.v, atol=1e-6)
    np.testing.assert_allclose(evaluated.q, soft.q, atol=1e-6)
    assert (np.asarray(soft.v) >= 0).all() and (np.asarray(soft.v) <= 1 + 1e-6).all()


@pytest.mark.parametrize("bad", [0, -0.1, float("nan"), float("inf"), True, "hot"])
def test_bad_temperature_is_a_value_error(small_graphs, bad):
    graph = jax.tree_util.tree_map(lambda x: x[0], small_graphs)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        solver.soft_values(graph, horizon=2, temperature=bad)
    with pytest.raises(ValueError, match="unknown policy 'softest'; choices: uniform, optimal, soft"):
        solver.solve_graph(graph, policy="softest", horizon=2)


def test_soft_credit_is_nonzero_on_many_more_mad_steps_than_the_hard_max():
    """Uniform-policy episodes on the quick preset's MAD: the hard max gives credit on ~12% of steps
    (V* = 1 and every Q* = 1 wherever turns are to spare); the Boltzmann backup at τ = 0.3 on most.
    (Default MAD, measured the same way on 256 episodes: 8.3% and 64.2%.)"""
    mad = make("mad", length=5, num_tokens=4, min_useful=1, max_useful=2, max_turns=8)

    @jax.jit
    def credit(keys):
        starts = jax.vmap(mad.init)(keys)
        trajectory, _ = rollout(mad, uniform_policy_fn, None, starts, jax.random.key(1), num_turns=mad.max_turns)

        def one(problem):
            graph = solver.build_graph(mad, problem)
            return [solver.solve_graph(graph, policy=p, horizon=mad.max_turns, temperature=0.3)
                    for p in ("optimal", "soft")]

        hard, soft = jax.vmap(one)(starts.problem)
        return trajectory.live, [solver_action_advantage(trajectory, v, group_size=1) for v in (hard, soft)]

    live, credits = credit(jax.random.split(jax.random.key(0), 256))
    hard, soft = (np.abs(np.asarray(a))[np.asarray(live)] for a in credits)
    hard_share, soft_share = (hard > 1e-2).mean(), (soft > 1e-2).mean()
    # measured: 0.123 and 0.663 on these 256 episodes
    assert 0.08 < hard_share < 0.18 and soft_share > 0.5, (hard_share, soft_share)
    assert (hard > 1e-6).mean() == hard_share  # the hard max is exactly 0 or large
