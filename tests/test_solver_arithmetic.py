"""The exact solver on interactive arithmetic: the recursive oracle, optimal play on every family,
the compacted batch solver, and `jaxcredit solve arithmetic`."""

import dataclasses
import json
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("jaxcredit.envs.arithmetic")

from jaxcredit import solver, solver_batch  # noqa: E402
from jaxcredit.benchmarks.python_solver import RecursiveSolver  # noqa: E402
from jaxcredit.cli import main  # noqa: E402
from jaxcredit.envs import make, make_reference  # noqa: E402
from jaxcredit.envs.problems import FAMILIES, problem_set  # noqa: E402
from jaxcredit.policy_fn import action_probabilities  # noqa: E402

HORIZON = 5
build_graphs = jax.jit(jax.vmap(solver.build_graph, in_axes=(None, 0)), static_argnums=0)


def _take(batch, i):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[i], batch)


def _explore(reference, problem):
    """{position index: reference episode there} for every position reachable by legal moves."""
    reference.reset(problem)
    found, frontier = {reference.position_index(): reference}, [reference]
    while frontier:
        reached = []
        for ref in frontier:
            for action in np.flatnonzero(ref.legal_action_mask):
                child = pickle.loads(pickle.dumps(ref)).step(int(action))
                if not child.terminated and child.position_index() not in found:
                    found[child.position_index()] = child
                    reached.append(child)
        frontier = reached
    return found


@pytest.fixture(scope="module")
def small():
    env = make("arithmetic", count=3, max_turns=HORIZON)
    batch = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs),
                                   *[problem_set(name, 2, seed=3, count=3) for name in FAMILIES])
    oracle_env = dataclasses.replace(env, max_turns=HORIZON + env.count)  # room for HORIZON turns anywhere
    return env, batch, build_graphs(env, jax.tree_util.tree_map(jnp.asarray, batch)), oracle_env


@pytest.mark.parametrize("policy", ["uniform", "random", "optimal"])
def test_small_arithmetic_values_equal_the_oracle_at_every_reachable_position(small, policy):
    env, batch, graphs, oracle_env = small
    if policy == "random":  # a fixed stochastic policy, different at every turn and position
        logits = jax.random.normal(jax.random.key(4), (8, HORIZON + 1) + graphs.legal.shape[1:]) * 2.0
        probs = np.asarray(action_probabilities(logits, graphs.legal[:, None]))
        values = jax.vmap(lambda g, p: solver.evaluate_policy(g, p, horizon=HORIZON))(graphs, jnp.asarray(probs))
    else:
        values = jax.vmap(lambda g: solver.solve_graph(g, policy=policy, horizon=HORIZON))(graphs)
    reference = make_reference(oracle_env)
    for i in range(8):
        reachable = _explore(reference, _take(batch, i))
        assert sorted(reachable) == np.flatnonzero(np.asarray(graphs.valid[i])).tolist()
        table = probs[i] if policy == "random" else None
        oracle = RecursiveSolver(policy if table is None else
                                 (lambda ref, t, table=table: table[t][ref.position_index()].tolist()))
        for position, ref in reachable.items():
            for t in range(HORIZON + 1):
                where = f"problem {i} position {position} turns left {t}"
                np.testing.assert_allclose(values.v[i, t, position], oracle.value(ref, t), atol=1e-6, err_msg=where)
                np.testing.assert_allclose(values.q[i, t, position], oracle.q_values(ref, t), atol=1e-6,
                                           err_msg=where)


def test_greedy_play_on_optimal_q_solves_every_family_and_batch_is_exact():
    env = make("arithmetic")
    T = env.max_turns

    @jax.jit
    def play(problem):
        graph = solver.build_graph(env, problem)
        best = solver.optimal_values(graph, horizon=T)
        greedy = solver.greedy_policy(graph, best)
        uniform = solver.evaluate_policy(graph, solver.uniform_policy(graph), horizon=T)

        def turn(state, _):
            state = env.step(state, jnp.argmax(greedy[T - state.turn, env.position_index(state)]))
            return state, state.reward

        start = solver.start_position(env, problem)
        final, rewards = jax.lax.scan(turn, env.init_problem(problem), None, length=T)
        return (final.terminated, rewards.sum(), best.v[T, start], uniform.v[T, start], uniform.q[T, start],
                solver.enumeration_env_steps(graph, start))

    batch = jax.tree_util.tree_map(lambda *xs: jnp.asarray(np.concatenate(xs)),
                                   *[problem_set(name, 1, seed=1) for name in FAMILIES])  # one of every family
    terminated, returns, best, uniform_v, uniform_q, enumeration = jax.lax.map(play, batch)
    assert np.asarray(terminated).all() and (np.asarray(returns) == 1.0).all()
    np.testing.assert_array_equal(best, 1.0)
    solved = solver_batch.solve_batch(env, batch, chunk_size=len(FAMILIES))  # compacted: most index slots are invalid
    np.testing.assert_allclose(solved.start_value, uniform_v, atol=1e-6)
    np.testing.assert_allclose(solved.start_q, uniform_q, atol=1e-6)
    assert (np.asarray(solved.num_positions) < env.num_positions).all()
    # the batch solver's label cost is the enumeration's (every valid path is reached here)
    np.testing.assert_array_equal(solved.env_steps, enumeration)
    np.testing.assert_array_equal(solved.env_steps, solved.num_edges)
    optimal = solver_batch.solve_batch(env, batch, policy="optimal", chunk_size=len(FAMILIES))
    np.testing.assert_array_equal(optimal.start_value, 1.0)


def _solve_json(capsys, *argv):
    code = main(["solve", "arithmetic", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_cli_arithmetic_hand_checked(capsys):
    # 2 and 3, target 5: 7 legal first moves (5 combinations, 2 premature FINALs); 2 of them make a
    # 5, after which FINAL of that slot is 1 of 2 legal moves (FINAL, UNDO): V = 2/7 * 1/2.
    result = _solve_json(capsys, "--numbers", "2", "3", "--target", "5", "--turns", "2")
    assert result["value"] == pytest.approx(1 / 7, rel=1e-6) and len(result["actions"]) == 7
    assert {a["action"] for a in result["actions"][:2]} == {"COMBINE 0 + 1", "COMBINE 1 + 0"}
    assert result["actions"][0]["q"] == pytest.approx(0.5, rel=1e-6)
    assert _solve_json(capsys, "--numbers", "2", "3", "--target", "5", "--turns", "1",
                       "--policy", "optimal")["value"] == 0.0
    after_undo = _solve_json(capsys, "--numbers", "2", "3", "4", "5", "--target", "14",
                             "--actions", "combine 0 + 1; UNDO")
    fresh = _solve_json(capsys, "--numbers", "2", "3", "4", "5", "--target", "14", "--turns", "5")
    assert after_undo == fresh  # back at the start with two turns fewer


@pytest.mark.parametrize("actions, message", [
    ("FINAL(9)", "unknown action"),
    ("COMBINE(0, /, 1)", "not legal"),  # 2 / 3 is not exact
    ("UNDO", "not legal"),
])
def test_cli_arithmetic_bad_actions(capsys, actions, message):
    code = main(["solve", "arithmetic", "--numbers", "2", "3", "4", "5", "--target", "14", "--actions", actions])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and message in err
