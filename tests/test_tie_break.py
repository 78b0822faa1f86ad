"""Tie-breaks of the optimal reference policy: toward the fastest win, so that the best-labelled
actions are the ones that make progress (`jaxcredit.solver.tie_broken_values`)."""

import jax
import numpy as np
import pytest

from jaxcredit import solver
from jaxcredit.envs import make, problem_set
from jaxcredit.solver_values import reference_values

ENV = make("arithmetic", count=3)  # 217 positions: quick to solve
TIE_BREAKS = ("none", "fastest", "discount")


@pytest.fixture(scope="module")
def solved():
    """Graphs, start positions and the values under each tie-break of the problem 2 3 4 -> 20
    followed by 12 `default` problems of three numbers (numpy, leaves `[P, ...]`)."""
    drawn = problem_set("default", 12, 5, count=3)
    numbers = np.concatenate([[[2, 3, 4]], drawn.numbers]).astype(np.int32)
    problems = type(drawn)(numbers=numbers, target=np.concatenate([[20], drawn.target]).astype(np.int32))

    @jax.jit
    def one(problem):
        graph = solver.build_graph(ENV, problem)
        values = {name: reference_values(ENV, problem, policy="optimal", graph=graph, tie_break=name)[0]
                  for name in TIE_BREAKS}
        return graph, values, solver.start_position(ENV, problem)

    return jax.tree_util.tree_map(np.asarray, jax.vmap(one)(problems))


def _best(q, legal):
    top = np.where(legal, q, -np.inf).max()
    return np.flatnonzero(legal & (q >= top - solver.VALUE_TOLERANCE))


def _play(graph, q, start, pick):
    """Host: play one episode from `start` with `max_turns` turns, `pick(best actions)` each turn;
    returns the turns used to win, or None."""
    s, left = int(start), ENV.max_turns
    while left > 0:
        a = pick(_best(q[left, s], graph.legal[s]))
        if graph.reward[s, a] > 0:
            return ENV.max_turns - left + 1
        s, left = int(graph.next_position[s, a]), left - 1
    return None


def _row(tree, i):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def test_hand_checked_start_of_2_3_4_to_20(solved):
    graph, values, start = solved
    g, s, t = _row(graph, 0), int(start[0]), ENV.max_turns
    names = lambda actions: sorted(ENV.action_name(a) for a in actions)  # noqa: E731
    # 6 ordered pairs: + and * always, - on the 3 pairs a >= b, / only 4 / 2; 3 FINALs; no UNDO: 19 legal
    assert g.legal[s].sum() == 19
    # with 7 turns every legal action still wins (undo, or a wrong FINAL, leaves time): all 19 tie at 1
    assert len(_best(values["none"].q[0][t, s], g.legal[s])) == 19
    for name in ("fastest", "discount"):  # 20 = (2 + 3) * 4 only: the first step is 2 + 3, either way round
        assert names(_best(values[name].q[0][t, s], g.legal[s])) == ["COMBINE 0 + 1", "COMBINE 1 + 0"]
    fastest = values["fastest"].q[0][t, s]
    first = ENV.combine_action(0, 0, 1)
    assert fastest[first] == pytest.approx(1 - 3 * solver.FASTEST_STEP, abs=1e-7)  # a win in 3 turns
    assert np.asarray(solver.turns_needed(values["none"].q[0]))[t, s, first] == 3
    assert values["fastest"].v[0][t, s] == pytest.approx(fastest[first])


@pytest.mark.parametrize("tie_break", ["fastest", "discount"])
def test_greedy_and_any_tied_action_win_in_the_fewest_turns(solved, tie_break):
    graph, values, start = solved
    q = values[tie_break].q
    rng = np.random.default_rng(0)
    for i in range(len(start)):
        g = _row(graph, i)
        assert _play(g, q[i], start[i], lambda best: best[0]) == ENV.count  # greedy: 2 combinations, FINAL
        for _ in range(3):  # any action of the tie-broken best set makes progress
            assert _play(g, q[i], start[i], rng.choice) == ENV.count


def test_the_tied_set_shrinks_and_untied_play_dawdles(solved):
    graph, values, start = solved
    rng = np.random.default_rng(1)
    sizes = {name: [] for name in TIE_BREAKS}
    lengths = []
    for i in range(len(start)):
        g = _row(graph, i)
        lengths.append(_play(g, values["none"].q[i], start[i], rng.choice))
        s, left = int(start[i]), ENV.max_turns
        for _ in range(2):  # two random legal steps in (an UNDO or a wrong FINAL included)
            a = rng.choice(np.flatnonzero(g.legal[s]))
            s, left = (s, left) if g.terminal[s, a] else (int(g.next_position[s, a]), left - 1)
        if values["none"].v[i][left, s] == 1:
            for name in TIE_BREAKS:
                sizes[name].append(len(_best(values[name].q[i][left, s], g.legal[s])))
    assert None not in lengths and np.mean(lengths) > ENV.count + 1  # random optimal play wins, slowly
    assert len(sizes["none"]) >= 6
    assert np.mean(sizes["fastest"]) < 0.6 * np.mean(sizes["none"])
    assert sizes["fastest"] == sizes["discount"]  # values 0/1: the same order


def test_tie_broken_values_stay_within_their_shift_of_the_optimal_values(solved):
    _, values, _ = solved
    exact = values["none"]
    assert np.abs(values["fastest"].q - exact.q).max() <= solver.FASTEST_STEP * ENV.max_turns + 1e-7
    assert np.abs(values["discount"].q - exact.q).max() <= solver.DISCOUNT_SCALE + 1e-7
    assert (values["fastest"].q <= exact.q + 1e-7).all() and (values["fastest"].v[:, 0] == 0).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "uniform", "tie_break": "fastest"},
     "breaks ties of the optimal values; the reference policy is 'uniform'"),
    ({"policy": "optimal", "tie_break": "slowest"}, "unknown tie-break 'slowest'; choices: none, fastest, discount"),
    ({"policy": "optimal", "tie_break": "discount", "tie_break_discount": 1.0}, r"discount in \(0, 1\), got 1.0"),
])
def test_bad_tie_breaks(kwargs, message):
    problem = ENV.make_problem([2, 3, 4], 20)
    with pytest.raises(ValueError, match=message):
        reference_values(ENV, problem, **kwargs)


@pytest.mark.parametrize("options, message", [
    ({"tie_break": "fastest"}, "needs credit_options.policy 'optimal', got 'uniform'"),
    ({"policy": "optimal", "tie_break": "first"},
     "credit_options.tie_break of credit 'solver': unknown value 'first'; choices: none, fastest, discount"),
    ({"policy": "optimal", "tie_break": "discount", "tie_break_discount": 0.0},
     r"credit_options.tie_break_discount of credit 'solver' must be in \(0, 1\), got 0.0"),
])
def test_config_refuses_bad_tie_breaks(options, message):
    from jaxcredit.train import config_from_dict

    with pytest.raises(ValueError, match=message):
        config_from_dict({"env": "arithmetic", "credit": "solver", "credit_options": options})
    config = config_from_dict({"env": "arithmetic", "credit": "solver", "credit_options.policy": "optimal",
                               "credit_options.tie_break": "fastest"})
    assert (config.credit_options.tie_break, config.credit_options.tie_break_discount) == ("fastest", 0.9)
    # an older config.json's flat fields read into the solver arm's options
    old = config_from_dict({"env": "arithmetic", "credit": "solver", "solver_policy": "optimal",
                            "solver_tie_break": "discount", "solver_tie_break_discount": 0.5})
    assert (old.credit_options.tie_break, old.credit_options.tie_break_discount) == ("discount", 0.5)
