"""Text-matched credit, exactly (`jaxcredit.analysis.identification`, `identification_exact`,
`solver.visitation`, `jaxcredit identify`): hand-built states, the exact state distribution, and
whole environments where hiding the turns left provably merges states."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxcredit import solver
from jaxcredit.analysis.identification import identification_measures, matched_credit, weighted_rank_correlation
from jaxcredit.analysis.identification_exact import exact_pairs, hidden_views, run_identification, state_groups
from jaxcredit.cli import main
from jaxcredit.envs import make


def _pair_graph() -> solver.Graph:
    """Start 0; `a0` leads to 1, `a1` to 2. Positions 1 and 2 render alike (the same observation) but
    are opposites: at 1 `a0` wins and `a1` loses, at 2 the reverse (both end the episode)."""
    return solver.Graph(
        next_position=jnp.array([[1, 2], [1, 1], [2, 2]], jnp.int32),
        reward=jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], jnp.float32),
        terminal=jnp.array([[False, False], [True, True], [True, True]]),
        legal=jnp.ones((3, 2), bool), valid=jnp.ones((3,), bool),
        observation=jnp.array([[7], [8], [8]], jnp.int32))


def test_the_matched_label_has_the_sign_of_the_heavier_visited_state():
    """The pair of look-alike states: π goes to 1 with 0.75, to 2 with 0.25, then plays uniformly. Exact
    credit at 1 is +0.5 for a0 and −0.5 for a1, at 2 the reverse; the matched label of a0 is
    (0.375 · 0.5 − 0.125 · 0.5) / 0.5 = +0.25, state 1's sign, so state 2's pairs (0.25 of the 2
    expected steps) flip; the start's pairs are decorative (Q = V = 0.5)."""
    graph = _pair_graph()
    probs = jnp.array([[0.75, 0.25], [0.5, 0.5], [0.5, 0.5]], jnp.float32)
    values = solver.evaluate_policy(graph, probs, horizon=2)
    visits = np.asarray(solver.visitation(graph, probs, jnp.int32(0), horizon=2))
    np.testing.assert_allclose(visits, [[0, 0, 0], [0, 0.75, 0.25], [1, 0, 0]])
    t, s, a = np.nonzero(visits[:, :, None] * np.asarray(probs)[None] > 0)
    credit = np.asarray(values.q)[t, s, a] - np.asarray(values.v)[t, s]
    weight = visits[t, s] * np.asarray(probs)[s, a]
    np.testing.assert_allclose(credit, [0.5, -0.5, -0.5, 0.5, 0, 0], atol=1e-7)  # t = 1 first
    group = np.asarray(graph.observation)[s, 0] * 2 + a  # the same observation and action
    matched = matched_credit(credit, weight, group)
    np.testing.assert_allclose(matched, [0.25, -0.25, 0.25, -0.25, 0, 0], atol=1e-7)
    measures = identification_measures(credit, weight, group, np.full(credit.shape, 1e-6))
    assert measures["sign_flip_share"] == pytest.approx(0.25 / 2)
    assert measures["sign_differs_share"] == pytest.approx(0.25 / 2)
    assert measures["mixed_group_share"] == pytest.approx(1.0 / 2)
    assert measures["pairs"] == 6 and measures["pair_groups"] == 4
    loadbearing, decorative = measures["by_class"]["load-bearing"], measures["by_class"]["decorative"]
    assert loadbearing["step_share"] == pytest.approx(0.25) and loadbearing["sign_flip_share"] == pytest.approx(0.25)
    assert decorative["step_share"] == pytest.approx(0.5) and decorative["sign_differs_share"] == 0.0


def test_a_hand_pair_of_flat_arrays():
    """Two states of one key, credit +0.2 visited 3 times as often as −0.4: matched +0.05."""
    credit, weight, group = np.array([0.2, -0.4]), np.array([0.75, 0.25]), np.array([5, 5])
    np.testing.assert_allclose(matched_credit(credit, weight, group), [0.05, 0.05])
    measures = identification_measures(credit, weight, group, np.full(2, 1e-6))
    assert measures["sign_flip_share"] == pytest.approx(0.25) and measures["mixed_group_share"] == 1.0
    # the same pair with the other state heavier takes the other sign
    np.testing.assert_allclose(matched_credit(credit, weight[::-1], group), [-0.25, -0.25])


def test_weighted_rank_correlation_is_spearman_on_repeated_rows():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=40).round(1), rng.normal(size=40).round(1)  # rounding makes ties
    assert weighted_rank_correlation(x, y, np.ones(40)) == pytest.approx(stats.spearmanr(x, y).statistic)
    counts = rng.integers(1, 4, size=40)
    repeated = stats.spearmanr(np.repeat(x, counts), np.repeat(y, counts)).statistic
    assert weighted_rank_correlation(x, y, counts.astype(float)) == pytest.approx(repeated)
    assert weighted_rank_correlation(x, np.zeros(40), np.ones(40)) is None


def test_visitation_gives_the_start_value_back(small_mad):
    """Σ over turns and positions of d[t, s] · (π's expected reward at (t, s)) is V at the start, and
    row t sums to the chance of still playing with t turns left (1 at the start)."""
    problem = small_mad.problem_sample(None, 1, 3)[0]
    graph = solver.build_graph(small_mad, problem)
    probs = solver.uniform_policy(graph)
    start = solver.start_position(small_mad, problem)
    horizon = small_mad.max_turns
    visits = solver.visitation(graph, probs, start, horizon=horizon)
    values = solver.evaluate_policy(graph, probs, horizon=horizon)
    expected_reward = jnp.sum(probs * graph.reward, axis=-1)
    assert float(jnp.sum(visits * expected_reward[None])) == pytest.approx(float(values.v[horizon, start]), rel=1e-5)
    assert float(visits[horizon].sum()) == pytest.approx(1.0) and float(visits[0].sum()) == 0.0
    assert np.all(np.diff(np.asarray(visits.sum(axis=1))) >= -1e-6)  # fewer turns left: never more live


def test_with_nothing_hidden_matched_credit_is_restored_credit(small_mad):
    """MAD's prompt shows the tape, the selection and the turns left: every visited state is its own
    group, so the text-matched credit is each state's exact credit, to the last bit."""
    problems = small_mad.problem_sample(None, 3, 0)
    pairs = exact_pairs(small_mad, problems)
    state, group, pair_group = state_groups(small_mad, small_mad, problems, pairs, key="text", scope="problem")
    assert np.unique(state).size == np.unique(group).size
    assert np.array_equal(matched_credit(pairs["credit"], pairs["weight"], pair_group), pairs["credit"])
    record = run_identification(small_mad, problems, key="text")
    measures = record["views"][0]["measures"]
    assert measures["merged_states"] == 0 and measures["rank_correlation"] == pytest.approx(1.0)
    assert measures["sign_flip_share"] == measures["sign_differs_share"] == measures["mixed_group_share"] == 0.0


def test_hiding_the_turns_left_merges_states_of_a_tiny_arithmetic():
    """Numbers 3 and 4, target 7, three turns, the uniform policy. Visited: the start with 3 turns left;
    the start (a wrong FINAL) and the 5 legal combinations with 2; the start (a FINAL or an UNDO) and
    the 5 with 1: 13 states. Hidden, the turns left merge them into 6 observations, and the start's
    credits with 1 turn left (0: nothing can win in one turn) take the mean of its 1-, 2- and 3-turn
    credits; shown, every state is its own. By hand: the start is live with 1 turn left with chance
    (2/7)² + 5/14 = 43/98; an episode takes 1 + 1 + 6/7 = 20/7 steps (one in 7 wins on its second);
    the decorative steps weigh 43/98 + 3/7 + 33/98 = 118/98 (the start with 1 turn left, and the
    combinations whose value is 0 with 2 and 1)."""
    env = make("arithmetic", count=2, max_turns=3)
    problems = jax_tree_stack([env.make_problem([3, 4], 7)])
    record = run_identification(env, problems, hide="turns_left")
    hidden, shown = (view["measures"] for view in record["views"])
    assert [view["view"] for view in record["views"]] == ["turns_left hidden", "turns_left shown"]
    assert (hidden["states"], hidden["groups"], hidden["merged_states"]) == (13, 6, 13)
    assert (shown["states"], shown["groups"], shown["merged_states"]) == (13, 13, 0)
    assert hidden["sign_differs_share"] == pytest.approx(43 / 98 / (20 / 7), rel=1e-5)
    assert hidden["by_class"]["decorative"]["sign_differs_share"] == pytest.approx(43 / 118, rel=1e-5)
    assert hidden["sign_flip_share"] == 0.0 and record["expected_steps"] == pytest.approx(20 / 7, rel=1e-6)
    assert shown["sign_differs_share"] == shown["sign_flip_share"] == 0.0
    assert shown["rank_correlation"] == pytest.approx(1.0) and hidden["rank_correlation"] < 1.0


def jax_tree_stack(problems):
    import jax

    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *problems)


@pytest.mark.parametrize("name, overrides", [("arithmetic", {"count": 3}), ("routine", {})])
def test_a_shown_variable_keeps_the_dynamics_and_changes_the_observation(name, overrides):
    """Each declared `shown` configuration has the hidden one's graph on sampled problems (checked by
    `state_groups`) and an observation that groups the visited states otherwise (routine's right
    action merges what its ordinal kept apart, across problems: the index cue's answers are fixed)."""
    env = make(name, **overrides)
    for variable, declared in env.hidden_variables().items():
        if declared.shown is None:
            continue
        hidden_env = env.__class__(**{**env.config(), **declared.hidden})
        views, _ = hidden_views(hidden_env, variable, key="tokens")
        problems = hidden_env.problem_sample(None, 8, 1)
        pairs = exact_pairs(hidden_env, problems)
        hidden, shown = (state_groups(hidden_env, key_env, problems, pairs, key="tokens", scope="pool")[1]
                         for _, key_env, _ in views)
        joint = np.unique(hidden * (shown.max() + 1) + shown).size
        assert joint > min(np.unique(hidden).size, np.unique(shown).size), variable  # not the same partition


def test_what_cannot_be_hidden_is_refused(small_mad):
    with pytest.raises(ValueError, match="no hidden variable 'cue'; choices: turns_left"):
        hidden_views(small_mad, "cue", key="tokens")
    with pytest.raises(ValueError, match="prompt of mad shows turns_left"):
        hidden_views(small_mad, "turns_left", key="text")
    with pytest.raises(ValueError, match="hides turns_left only with"):
        hidden_views(make("arithmetic", count=3, include_turns_left=True), "turns_left", key="tokens")
    views, notes = hidden_views(small_mad, "turns_left", key="tokens")
    assert len(views) == 1 and "no configuration of mad shows turns_left" in notes[0]


def test_identify_command(capsys):
    mad = '{"length": 3, "num_tokens": 2, "max_useful": 2, "max_turns": 4}'
    assert main(["identify", "--env", "mad", "--env-config", mad, "--hide", "turns_left", "--problems", "2",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["env"] == "mad" and record["hide"] == "turns_left" and record["problems"] == 2
    assert record["views"][0]["measures"]["merged_states"] > 0
    assert main(["identify", "--env", "mad", "--hide", "cue"]) == 2
    assert "no hidden variable 'cue'" in capsys.readouterr().err
    assert main(["identify", "--env", "arithmetic", "--env-config", '{"include_turns_left": true}',
                 "--hide", "turns_left"]) == 2
    assert "--hide turns_left sets include_turns_left=False" in capsys.readouterr().err
