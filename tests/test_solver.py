"""The exact solver against a plain-Python recursive oracle, Bellman checks by direct stepping,
refusals, optimal play, reachability and network policies."""

import dataclasses
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver, solver_batch, solver_values
from jaxcredit.benchmarks.python_solver import RecursiveSolver, solve_start
from jaxcredit.envs import BLANK, MadSelectiveCopy, make, make_reference
from jaxcredit.policy_fn import action_probabilities

HORIZON = 6
build_graphs = jax.jit(jax.vmap(solver.build_graph, in_axes=(None, 0)), static_argnums=0)


@pytest.fixture(scope="module")
def small():
    """MAD length 4 with 2 tokens: every one of its 81 tapes, their graphs, and a reference
    environment with room for `HORIZON` turns after reaching any position."""
    env = make("mad", length=4, num_tokens=2, min_useful=0, max_useful=4, max_turns=HORIZON)
    tapes = np.array(list(itertools.product([BLANK, 0, 1], repeat=4)), np.int32)
    oracle_env = dataclasses.replace(env, max_turns=HORIZON + env.length)
    return env, tapes, build_graphs(env, jnp.asarray(tapes)), oracle_env


def _reference_at(reference, tape, position):
    """The reference episode on `tape` moved to `position` (a selection bitmask) by selecting."""
    reference.reset(tape)
    for cell in range(len(tape)):
        if position >> cell & 1:
            reference.step(cell)
    assert reference.position_index() == position
    return reference


def _assert_matches_oracle(env, tapes, values, oracle_env, policy_for_tape):
    """Every V[t, s] and Q[t, s, a] of every tape equals the recursive oracle's."""
    reference = make_reference(oracle_env)
    for i, tape in enumerate(tapes):
        oracle = RecursiveSolver(policy_for_tape(i))
        for position in range(env.num_positions):
            for t in range(HORIZON + 1):
                ref = _reference_at(reference, tape, position)
                want_v = oracle.value(ref, t)
                want_q = oracle.q_values(ref, t)
                where = f"tape {tape.tolist()} position {position} turns left {t}"
                np.testing.assert_allclose(values.v[i, t, position], want_v, atol=1e-6, err_msg=where)
                np.testing.assert_allclose(values.q[i, t, position], want_q, atol=1e-6, err_msg=where)


def test_graph_is_the_environment_step(small):
    env, tapes, graphs, _ = small
    assert graphs.next_position.shape == (81, 16, 9) and graphs.observation.shape == (81, 16, 5)
    assert np.asarray(graphs.valid).all()
    # enumeration cost: all 16 selections are reached from the empty one, each with 4 legal
    # select/unselect moves and submit: 16 x 5 = 80 env steps (the full table would be 16 x 9)
    starts = jax.vmap(lambda t: solver.start_position(env, t))(tapes)
    assert np.all(np.asarray(jax.vmap(solver.enumeration_env_steps)(graphs, starts)) == 16 * 5)
    tape, g = tapes[5], jax.tree_util.tree_map(lambda x: np.asarray(x[5]), graphs)
    for s, a in [(0, 2), (0b0100, 4 + 2), (0b1011, 8), (0b1111, 1)]:
        state = env.step(env.position(tape, s)[0], a)
        assert g.next_position[s, a] == int(env.position_index(state))
        assert g.reward[s, a] == float(state.reward) and g.terminal[s, a] == bool(state.terminated)


def test_uniform_values_equal_the_oracle_everywhere(small):
    env, tapes, graphs, oracle_env = small
    values = jax.vmap(lambda g: solver.evaluate_policy(g, solver.uniform_policy(g), horizon=HORIZON))(graphs)
    _assert_matches_oracle(env, tapes[::4], jax.tree_util.tree_map(lambda x: x[::4], values), oracle_env,
                           lambda i: "uniform")


@pytest.mark.parametrize("per_turn", [False, True])
def test_random_stochastic_policy_equals_the_oracle(small, per_turn):
    env, tapes, graphs, oracle_env = small
    shape = (HORIZON + 1, 16, 9) if per_turn else (16, 9)
    logits = jax.random.normal(jax.random.key(3), shape) * 2.0
    legal = graphs.legal[0] if not per_turn else jnp.broadcast_to(graphs.legal[0], shape)
    probs = np.asarray(action_probabilities(logits, legal))  # legality is the same for every tape
    values = jax.vmap(lambda g: solver.evaluate_policy(g, jnp.asarray(probs), horizon=HORIZON))(graphs)

    def table_policy(reference, turns_left):
        return (probs[turns_left] if per_turn else probs)[reference.position_index()].tolist()

    _assert_matches_oracle(env, tapes[1::7], jax.tree_util.tree_map(lambda x: x[1::7], values), oracle_env,
                           lambda i: table_policy)


def test_optimal_values_equal_the_oracle(small):
    env, tapes, graphs, oracle_env = small
    values = jax.vmap(lambda g: solver.optimal_values(g, horizon=HORIZON))(graphs)
    _assert_matches_oracle(env, tapes[2::9], jax.tree_util.tree_map(lambda x: x[2::9], values), oracle_env,
                           lambda i: "optimal")


@pytest.fixture(scope="module")
def default_batch(mad):
    tapes = jax.vmap(mad.sample_problem)(jax.random.split(jax.random.key(11), 64))
    graphs = build_graphs(mad, tapes)
    uniform = jax.jit(jax.vmap(lambda g: solver.evaluate_policy(g, solver.uniform_policy(g), horizon=mad.max_turns)))(
        graphs)
    return tapes, graphs, uniform


def test_bellman_by_stepping_the_environment_at_every_turn(mad, default_batch):
    """Q[t, s, a] = r + (not terminated) V[t-1, s'] with s' and r from `env.step` at turn max_turns - t."""
    tapes, graphs, values = default_batch
    T, S, A = mad.max_turns, mad.num_positions, mad.num_actions

    @jax.jit
    def bellman_gap(tape, v, q):
        def at(t, s, a):
            state = mad.step(mad.position(tape, s, turn=mad.max_turns - t)[0], a)
            later = jnp.where(state.terminated, 0.0, v[t - 1, mad.position_index(state)])
            return jnp.abs(q[t, s, a] - (state.reward + later))
        grid = jnp.meshgrid(jnp.arange(1, T + 1), jnp.arange(S), jnp.arange(A), indexing="ij")
        return jnp.max(jax.vmap(at)(*(x.ravel() for x in grid)))

    for i in range(0, 64, 8):
        assert float(bellman_gap(tapes[i], values.v[i], values.q[i])) < 1e-6
    probs = jax.vmap(solver.uniform_policy)(graphs)
    np.testing.assert_allclose(values.v, jnp.sum(probs[:, None] * values.q, -1), atol=1e-6)
    assert not np.asarray(values.v[:, 0]).any() and not np.asarray(values.q[:, 0]).any()


def test_ended_episode_is_worth_nothing_and_refusals_cost_a_turn(mad, default_batch):
    tapes, graphs, values = default_batch
    wanted = jnp.sum((tapes != BLANK) << jnp.arange(mad.length), axis=-1)  # the correct selection
    correct_submit = values.q[jnp.arange(64), 1:, wanted, mad.submit_action]
    np.testing.assert_array_equal(correct_submit, 1.0)  # only the reward: V(ended) = 0
    illegal = ~np.asarray(graphs.legal)
    assert illegal.sum() == 64 * 256 * 8  # 8 of 17 actions are illegal in every position
    S = mad.num_positions
    stay = np.broadcast_to(np.asarray(values.v)[:, :-1, :, None], (64, mad.max_turns, S, mad.num_actions))
    q = np.asarray(values.q)[:, 1:]
    mask = np.broadcast_to(illegal[:, None], q.shape)
    np.testing.assert_array_equal(q[mask], stay[mask])
    assert (np.asarray(graphs.next_position)[illegal] == np.nonzero(illegal)[1]).all()
    assert not np.asarray(graphs.reward)[illegal].any()


def test_default_mad_start_values_equal_the_python_solver(mad, mad_reference, default_batch):
    tapes, _, values = default_batch
    for i in range(3):
        want_v, want_q = solve_start(mad_reference, np.asarray(tapes[i]))
        np.testing.assert_allclose(values.v[i, mad.max_turns, 0], want_v, atol=1e-6)
        np.testing.assert_allclose(values.q[i, mad.max_turns, 0], want_q, atol=1e-6)


def test_hand_checked_optimal_value_and_reachability(mad):
    @jax.jit
    def analyse(tape):
        graph = solver.build_graph(mad, tape)
        uniform = solver.evaluate_policy(graph, solver.uniform_policy(graph), horizon=12)
        return solver.optimal_values(graph, horizon=12), solver.reachable(graph, horizon=12), uniform

    best, reach, uniform = analyse(mad.parse_tape("_ t04 _ _ t09 _ _ _"))
    np.testing.assert_array_equal(best.v[:, 0], [0, 0, 0] + [1] * 10)  # select 1, select 4, submit
    assert float(best.v[1, 0b10010]) == 1.0 and float(best.v[2, 0b10011]) == 1.0
    assert float(best.v[2, 0b10111]) == 0.0  # two wrong cells need two unselects, then submit
    np.testing.assert_array_equal(reach, np.asarray(best.v) > 0)
    np.testing.assert_allclose(uniform.v[3, 0], 2 / 9 * 1 / 9 * 1 / 9, rtol=1e-6)  # 9 legal actions each turn


def test_greedy_play_on_optimal_q_solves_every_tape(mad):
    tapes = jax.vmap(mad.sample_problem)(jax.random.split(jax.random.key(5), 512))

    @jax.jit
    def play(tape):
        graph = solver.build_graph(mad, tape)
        greedy = solver.greedy_policy(graph, solver.optimal_values(graph, horizon=mad.max_turns))

        def turn(state, _):
            action = jnp.argmax(greedy[mad.max_turns - state.turn, mad.position_index(state)])
            state = mad.step(state, action)
            return state, state.reward

        final, rewards = jax.lax.scan(turn, mad.init_problem(tape), None, length=mad.max_turns)
        return final.terminated, rewards.sum(), final.turn

    terminated, returns, turns = jax.vmap(play)(tapes)
    assert np.asarray(terminated).all() and (np.asarray(returns) == 1.0).all()
    assert (np.asarray(turns) <= mad.max_turns).all()


def test_solve_batch_in_chunks_equals_per_problem(mad, default_batch):
    tapes, graphs, values = default_batch
    batch = solver_batch.solve_batch(mad, tapes[:13], chunk_size=5)
    np.testing.assert_allclose(batch.start_value, values.v[:13, mad.max_turns, 0], atol=1e-7)
    np.testing.assert_allclose(batch.start_q, values.q[:13, mad.max_turns, 0], atol=1e-7)
    # enumeration cost: 256 selections reached, 8 select/unselect moves and submit legal at each
    assert (np.asarray(batch.num_positions) == 256).all() and (np.asarray(batch.env_steps) == 256 * 9).all()
    best = solver_batch.solve_batch(mad, tapes[:13], policy="optimal", chunk_size=16)
    np.testing.assert_array_equal(best.start_value, 1.0)
    with pytest.raises(ValueError, match="unknown policy"):
        solver_batch.solve_batch(mad, tapes, policy="greedy")
    memory = solver_batch.memory_per_problem(mad)
    assert memory["graph_bytes"] == 256 * 17 * (4 + 4 + 1 + 1) + 256 + 256 * 9 * 4
    assert memory["values_bytes"] == 13 * 256 * 4 * (1 + 17)


@dataclasses.dataclass(frozen=True)
class MadWithClock(MadSelectiveCopy):
    """MAD whose observation ends with the number of turns left (to test per-turn policies)."""

    @property
    def observation_length(self) -> int:
        return self.length + 2

    def _observe(self, problem, selected, turn):
        return jnp.append(super()._observe(problem, selected, turn), self.max_turns - turn)


def _linear_policy(params, observation, legal_action_mask):
    """A tiny 'network': logits from a sum of per-token embeddings."""
    return jnp.sum(params[observation], axis=-2)


def test_network_policy_per_turn_when_the_observation_shows_the_clock(small):
    env, tapes, graphs, oracle_env = small
    clock_env = MadWithClock(**env.config())
    assert solver_values.observation_shows_turns(clock_env) and not solver_values.observation_shows_turns(env)
    params = jax.random.normal(jax.random.key(2), (64, env.num_actions))
    tape = jnp.asarray(tapes[40])

    @functools.partial(jax.jit, static_argnums=0)
    def network_values(env, tape, params):
        graph = solver.build_graph(env, tape)
        probs, _ = solver_values.network_policy_probs(env, tape, graph, _linear_policy, params, horizon=HORIZON)
        return probs, solver.evaluate_policy(graph, probs, horizon=HORIZON)

    probs, values = network_values(clock_env, tape, params)
    assert probs.shape == (HORIZON + 1, 16, 9)
    for t, s in [(1, 3), (4, 3), (6, 0)]:
        state = clock_env.position(tape, s, turn=HORIZON - t)[0]
        want = action_probabilities(_linear_policy(params, state.observation, state.legal_action_mask),
                                    state.legal_action_mask)
        np.testing.assert_allclose(probs[t, s], want, rtol=1e-5, atol=1e-7)
    assert not np.allclose(probs[1], probs[6])  # the clock token changes the policy
    table = np.asarray(probs)
    _assert_matches_oracle(env, tapes[40:41], jax.tree_util.tree_map(lambda x: x[None], values), oracle_env,
                           lambda i: lambda ref, t: table[t][ref.position_index()].tolist())
    plain, _ = network_values(env, tape, params)
    np.testing.assert_array_equal(plain[1], plain[HORIZON])  # no clock: one policy for every turn


def test_bench_compares_with_the_python_solver_on_the_same_problems(small):
    from jaxcredit.benchmarks.solver import bench_one

    env, tapes, _, _ = small
    result = bench_one(env, make_reference(env), jnp.asarray(tapes[:40]), label="mad-small", chunk_size=16,
                       python_problems=6, repeats=1)
    assert result["max_abs_diff"] < 1e-6 and result["problems"] == 40 and result["positions_per_problem"] == 16
    assert result["ratio"] == pytest.approx(result["jax_problems_per_s"] / result["python_problems_per_s"])
    assert result["graph_bytes_per_problem"] > 16 * 9 * 10


@dataclasses.dataclass(frozen=True)
class MadCapped(MadSelectiveCopy):
    """MAD where at most `cap` cells may be selected: positions with more are invalid (unreachable)."""

    cap: int = 2

    def _legal_action_mask(self, problem, selected):
        room = jnp.sum(selected) < self.cap
        return jnp.concatenate([~selected & room, selected, jnp.ones((1,), bool)])

    def _position(self, problem, index):
        selected, valid = super()._position(problem, index)
        return selected, valid & (jnp.sum(selected) <= self.cap)


def test_solve_batch_compacts_invalid_positions_exactly():
    env = MadCapped(length=4, num_tokens=3, min_useful=1, max_useful=2, max_turns=5)
    tapes = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(9), 21))
    graphs = build_graphs(env, tapes)
    for policy in ("uniform", "optimal"):
        batch = solver_batch.solve_batch(env, tapes, policy=policy, chunk_size=8)
        values = jax.jit(jax.vmap(lambda g, p=policy: solver.solve_graph(g, policy=p, horizon=5)))(graphs)
        np.testing.assert_allclose(batch.start_value, values.v[:, 5, 0], atol=1e-7)
        np.testing.assert_allclose(batch.start_q, values.q[:, 5, 0], atol=1e-7)
        assert (np.asarray(batch.num_positions) == 1 + 4 + 6).all()  # at most 2 of 4 cells selected
    np.testing.assert_array_equal(batch.start_value, 1.0)  # optimal: every tape solvable
    assert solver_batch.compact_size(env, 11) == 12 and solver_batch.compact_size(env, 16) == 16


def test_where_true_equals_nonzero_with_fill():
    rng = np.random.default_rng(0)
    for n, p, size in [(50, 0.3, 20), (50, 0.0, 5), (64, 1.0, 64), (200, 0.05, 3)]:
        mask = rng.random(n) < p
        want = np.nonzero(mask)[0][:size]
        want = np.concatenate([want, np.full(size - len(want), n)])
        np.testing.assert_array_equal(solver_batch._where_true(jnp.asarray(mask), size=size), want)


def test_enumeration_cost_counts_legal_moves_of_reached_positions():
    """Hand count. A 2-cell tape: 4 selection masks, all reached from the empty one; each has
    2 legal select/unselect moves and submit: 4 x 3 = 12 steps (the full table was 4 x 5 = 20).
    A 2-cell arithmetic problem [2, 3] -> 5: the start has 4 combinations (2+3, 3+2, 3-2, 2*3,
    3*2; 2-3 is negative, 2/3 and 3/2 inexact: 5 accepted), UNDO is illegal, 2 FINALs: 7 moves;
    each of the 5 children has UNDO and 1 FINAL: 10 more; 17 in all, every reached position."""
    mad = make("mad", length=2, num_tokens=2, min_useful=1, max_useful=2, max_turns=4)
    tape = jnp.array([0, BLANK], jnp.int32)
    graph = solver.build_graph(mad, tape)
    start = solver.start_position(mad, tape)
    reached = solver.positions_reached(graph, start)
    assert np.asarray(reached).tolist() == [True, True, True, True]
    assert int(solver.enumeration_env_steps(graph, start)) == 12

    arith = make("arithmetic", count=2, max_turns=4)
    problem = arith.make_problem([2, 3], 5)
    graph = solver.build_graph(arith, problem)
    start = solver.start_position(arith, problem)
    reached = np.asarray(solver.positions_reached(graph, start))
    assert reached.sum() == 1 + 5
    assert int(solver.enumeration_env_steps(graph, start)) == 17


def test_network_policy_probs_batch_shares_chunks_across_problems(small):
    """Several problems' network rows in shared chunks give each problem exactly what one problem
    at a time gives (probabilities and distinct-row counts), with a chunk smaller than one
    problem's rows so chunks hold rows of two problems; the clock variant evaluates every turn."""
    env, tapes, _, _ = small
    params = jax.random.normal(jax.random.key(3), (64, env.num_actions))
    problems = jnp.asarray(tapes[[3, 40, 41, 80]])

    @functools.partial(jax.jit, static_argnums=0)
    def both(env, problems):
        graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
        starts = jax.vmap(lambda p: solver.start_position(env, p))(problems)
        one = jax.vmap(lambda p, g, s: solver_values.network_policy_probs(env, p, g, _linear_policy, params,
                                                                          horizon=HORIZON, start=s))(
            problems, graphs, starts)
        batch = solver_values.network_policy_probs_batch(env, problems, graphs, _linear_policy, params,
                                                         horizon=HORIZON, starts=starts, chunk_size=5)
        # the values: one problem at a time as `reference_values` gives them vs all at once
        one_values = jax.vmap(lambda p, g: solver_values.reference_values(
            env, p, policy="network", horizon=HORIZON, policy_fn=_linear_policy, params=params, graph=g)[0])(
            problems, graphs)
        batch_values = solver_values.network_values_batch(env, problems, graphs, _linear_policy, params,
                                                          horizon=HORIZON, starts=starts, chunk_size=5)
        return one, batch, one_values, batch_values

    for variant in (env, MadWithClock(**env.config())):
        (probs, evals), (batch_probs, batch_evals), one_values, (batch_values, value_evals) = both(variant, problems)
        np.testing.assert_allclose(batch_probs, probs, rtol=1e-6, atol=1e-7)
        assert int(batch_evals) == int(evals.sum()) and int(batch_evals) > 2 * 5
        assert float(np.asarray(probs).sum()) > 0
        np.testing.assert_allclose(batch_values.q, one_values.q, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(batch_values.v, one_values.v, rtol=1e-5, atol=1e-6)
        assert int(value_evals) == int(batch_evals) and float(np.abs(np.asarray(one_values.q)).sum()) > 0


def test_bench_exact_arm_values_agree_where_needed(small):
    """`bench solver`'s exact-arm comparison: the arm's way (reached positions, distinct rows, shared
    chunks) and the network at every slot give the same values at every reached position, with
    fewer network rows."""
    from jaxcredit.benchmarks.exact_arm import bench_exact_arm

    env = make("arithmetic", count=3)
    result = bench_exact_arm(env, label="arithmetic-3", num_problems=3, repeats=1)
    assert result["max_abs_diff"] < 1e-6 and result["positions_per_problem"] == 217
    assert 0 < result["evals_per_problem"] <= result["reached_per_problem"] < 217
    assert result["ratio"] == pytest.approx(result["everywhere_seconds"] / result["reached_seconds"])
