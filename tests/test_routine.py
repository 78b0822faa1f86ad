"""Routine (decision density): conformance, the plain-Python oracle, exact credit is 0 exactly on
routine turns, hand-computed episodes, the text protocol, the gymnax adapter, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver
from jaxcredit.conformance import check_against_reference, check_environment, rollout_random
from jaxcredit.envs import RoutineProblem, make, make_gymnax, make_reference
from jaxcredit.envs.routine import decision_layout, num_decisions_of
from jaxcredit.envs.text_protocol import Refusal, text_protocol

PROBLEM = RoutineProblem(decision=np.array([False, True, False, True]), right=np.array([0, 2, 0, 1], np.int32))


@pytest.fixture(scope="module")
def probabilistic():
    return make("routine", horizon=5, density=0.4, num_choices=3, failure="probabilistic", survival=0.3,
                placement="fixed")


def test_conformance_and_oracle():
    fatal = make("Routine-v0", horizon=6, density=0.5)
    check_environment(fatal, reference=make_reference(fatal), num_episodes=48, illegal_fraction=0.1)


def test_oracle_many_random_sequences(probabilistic):
    initial, states, actions = rollout_random(probabilistic, seed=11, num_episodes=300, num_steps=6,
                                              illegal_fraction=0.05)
    check_against_reference(probabilistic, make_reference(probabilistic), initial, states, actions)
    final = np.asarray(states.reward)[probabilistic.horizon - 1]
    # survival ** wrong with two decisions, or 0 (truncated after a refusal)
    assert np.isin(final, np.float32([1.0, 0.3, 0.09, 0.0])).all() and (final == np.float32(0.09)).any()


def test_hand_computed_episode():
    env = make("routine", horizon=4, density=0.5, num_choices=3, failure="probabilistic", survival=0.5)
    s = env.init_problem(PROBLEM)
    assert s.observation.tolist() == [0, 4 + 1] and s.legal_action_mask.tolist() == [True] * 3
    s = env.step(s, 1)  # routine: anything goes
    assert s.observation.tolist() == [1, 4 + 2 + 2] and int(s.env_state.wrong) == 0
    s = env.step(s, 0)  # decision, right is 2: wrong
    assert int(s.env_state.wrong) == 1 and int(env.position_index(s)) == 2 * 5 + 1
    s = env.step(env.step(s, 2), 1)  # routine, then the right action
    assert bool(s.terminated) and float(s.reward) == 0.5 and env.action_name(2) == "choose 2"
    fatal = make("routine", horizon=4, density=0.5, num_choices=3)
    s = fatal.init_problem(PROBLEM)
    for a in [0, 2, 1, 1]:
        s = fatal.step(s, a)
    assert float(s.reward) == 1.0 and "terminated" in fatal.render(s)
    s = fatal.step(fatal.init_problem(PROBLEM), 7)  # out of range: refused, and the turn is gone
    for a in [0, 2, 0]:
        s = fatal.step(s, a)
    assert bool(s.truncated) and not bool(s.terminated) and float(s.reward) == 0.0


@pytest.mark.parametrize("placement", ["random", "fixed"])
def test_layouts_have_exactly_round_density_decisions(placement):
    horizon, densities = 16, [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    counts = [make("routine", horizon=horizon, density=d, placement=placement).num_decisions for d in densities]
    assert counts == [1, 2, 3, 6, 13, 16]  # half up: 0.8 -> 1, 3.2 -> 3, 12.8 -> 13
    layout = jax.jit(jax.vmap(jax.vmap(
        lambda key, d: decision_layout(key, horizon=horizon, num_decisions=d, placement=placement, num_choices=2),
        in_axes=(0, None)), in_axes=(None, 0)))
    problems = layout(jax.random.split(jax.random.key(0), 200), jnp.array(counts))  # [densities, 200, H]
    decision, right = np.asarray(problems.decision), np.asarray(problems.right)
    assert (decision.sum(axis=2) == np.array(counts)[:, None]).all()
    assert (right[~decision] == 0).all() and right.max() == 1
    if placement == "random":  # every turn can be a decision
        assert decision[1].mean(axis=0).min() > 0.05
    else:
        assert np.flatnonzero(decision[1, 0]).tolist() == [4, 12] and (decision[:, :1] == decision).all()


@pytest.mark.parametrize("failure, num_choices", [("fatal", 3), ("probabilistic", 2)])
def test_exact_credit_is_zero_exactly_on_routine_turns(failure, num_choices):
    """Under the uniform reference, `Q - V` at every valid position (turn k, w mistakes) with the
    episode's own turns left is 0 for every action on a routine turn and non-zero for every action
    on a decision turn (fatal: while no mistake has been made; after one nothing matters), for
    every density of a grid at horizon 32 (one compiled solve: the dynamics read the layout from
    the problem, the density only sets how many decisions a layout has). With 2 choices the zero is
    exact in float32; with 3 the uniform average `(x + x + x) / 3` rounds, so it is 0 to 1e-6 of V,
    while a decision's |Q - V| is at least a quarter of V."""
    horizon = 32
    counts = [num_decisions_of(d, horizon) for d in (1 / 32, 0.1, 0.25, 0.5, 0.75, 1.0)]
    env = make("routine", horizon=horizon, density=1.0, failure=failure, num_choices=num_choices, survival=0.5)
    keys = jax.random.split(jax.random.key(5), len(counts))
    problems = jax.vmap(lambda key, d: decision_layout(key, horizon=horizon, num_decisions=d, placement="random",
                                                       num_choices=num_choices))(keys, jnp.array(counts))

    @jax.jit
    @jax.vmap
    def solve(problem):
        graph = solver.build_graph(env, problem)
        return graph.valid, solver.solve_graph(graph, policy="uniform", horizon=horizon)

    valid, values = solve(problems)
    stride = env.max_wrong + 1
    index = np.arange(env.num_positions)
    k, w = index // stride, index % stride
    turns_left = horizon - k
    for i, count in enumerate(counts):
        q, v = np.asarray(values.q[i]), np.asarray(values.v[i])
        value = v[turns_left, index][:, None]
        delta = q[turns_left, index] - value
        ok, decision = np.asarray(valid[i]), np.asarray(problems.decision[i])[k]
        assert (ok & decision).sum() >= count and ((ok & ~decision).sum() > 0 or count == horizon)
        routine = np.abs(delta[ok & ~decision])
        assert (routine == 0).all() if num_choices == 2 else (routine <= 1e-6 * value[ok & ~decision]).all()
        alive = w == 0 if failure == "fatal" else np.ones_like(ok)
        live_decision = ok & decision & alive
        assert (np.abs(delta[live_decision]) >= value[live_decision] / 4).all() and (value[live_decision] > 0).all()
        assert (delta[ok & decision & ~alive] == 0).all()


def test_text_protocol():
    env = make("routine", horizon=4, density=0.5, num_choices=3)
    protocol = text_protocol(env)
    s = env.init_problem(PROBLEM)
    assert "Routine turn" in protocol.render_prompt(s) and "Turn 1 of 4" in protocol.render_prompt(s)
    s, parsed = protocol.step(s, "  choose 1\n")
    assert parsed == 1 and "the right choice is 2" in protocol.render_prompt(s)
    assert protocol.parse("choose 3", s) == Refusal("no choice 3; choices are 0..2")
    assert protocol.parse("pick 1", s).reason.startswith("malformed")
    s, parsed = protocol.step(s, "choose1")
    assert isinstance(parsed, Refusal) and bool(s.rejected) and int(s.turn) == 2 and int(s.env_state.progress) == 1


def test_gymnax_adapter():
    adapter, params = make_gymnax("Routine-v0", reset_pool=0, horizon=3, density=1.0)
    obs, state = adapter.reset(jax.random.key(0), params)
    assert obs.shape == (2 * adapter.env.vocab_size,) and adapter.num_actions == 2
    right = state.state.problem.right
    total = 0.0
    for t in range(3):
        obs, state, reward, terminated, truncated, info = adapter.step(jax.random.key(t), state, right[t], params)
        total += float(reward)
    assert bool(terminated) and total == 1.0 and int(state.time) == 0  # restarted


@pytest.mark.parametrize("overrides, message", [
    ({"density": 0.01}, "rounds to 0 decisions"), ({"placement": "even"}, "routine.placement"),
    ({"failure": "soft"}, "routine.failure"), ({"num_choices": 1}, "routine.num_choices"),
    ({"horizon": 0}, "routine.horizon"), ({"survival": 1.5}, "routine.survival"), ({"density": 2}, "routine.density"),
])
def test_bad_config(overrides, message):
    with pytest.raises(ValueError, match=message):
        make("routine", **overrides)


def test_bad_problem():
    env = make("routine", horizon=4, density=0.5, num_choices=3)
    with pytest.raises(ValueError, match="needs 2"):
        env.init_problem(RoutineProblem(decision=np.array([True, True, True, False]), right=np.zeros(4, np.int32)))
    with pytest.raises(ValueError, match=r"right must be in \[0, 3\)"):
        env.init_problem(PROBLEM.replace(right=jnp.array([0, 5, 0, 1], jnp.int32)))


def test_default_is_the_fixed_horizon_design_unchanged():
    """The default configuration draws the same layout and shows the same tokens as before the
    fixed-decisions fields existed (hand-recorded values), and its config round-trips."""
    env = make("routine")
    assert (env.horizon, env.num_decisions, env.vocab_size, env.cue, env.decisions) == (16, 4, 20, "right", 0)
    problem = env.sample_problem(jax.random.key(3))
    assert np.flatnonzero(np.asarray(problem.decision)).tolist() == [6, 7, 12, 14]
    assert np.asarray(problem.right).tolist() == [0] * 6 + [1] + [0] * 9
    s = env.init_problem(problem)
    cues = []
    for a in range(16):
        cues.append(int(s.observation[1]))
        s = env.step(s, a % 2)
    assert cues == [17] * 6 + [19, 18] + [17] * 4 + [18, 17, 18, 17] and float(s.reward) == 0.0
    assert type(env)(**env.config()) == env and env.config()["horizon"] == 16


@pytest.mark.parametrize("decisions", [2, 4])
@pytest.mark.parametrize("placement", ["random", "fixed"])
def test_fixed_decisions_have_exactly_d_consequential_turns(decisions, placement):
    """decisions=D, density ρ: H = D / ρ and every sampled layout has exactly D decision turns;
    under the uniform reference exact credit is 0 on every routine turn and non-zero on every
    decision turn reached before a mistake, at horizons from D to 64 (H = D, 4D, 16D; and 64)."""
    for density in (1.0, 0.25, 0.0625) + ((1 / 32,) if decisions == 2 else ()):
        env = make("routine", decisions=decisions, density=density, placement=placement, cue="index")
        assert env.horizon == round(decisions / density) and env.num_decisions == decisions
        problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(1), 64))
        assert (np.asarray(problems.decision).sum(axis=1) == decisions).all()
        problem = jax.tree_util.tree_map(lambda x: x[0], problems)
        graph = solver.build_graph(env, problem)
        values = solver.solve_graph(graph, policy="uniform", horizon=env.horizon)
        k = np.arange(env.horizon)
        alive = k * (env.max_wrong + 1)  # positions (k, w = 0)
        delta = np.asarray(values.q)[env.horizon - k, alive] - np.asarray(values.v)[env.horizon - k, alive][:, None]
        decision = np.asarray(problem.decision)
        assert (delta[~decision] == 0).all() and (np.abs(delta[decision]) > 0).all()
        assert np.isclose(float(values.v[env.horizon, 0]), 0.5**decisions)  # uniform success 1/C^D at every ρ


def test_fixed_decisions_config():
    env = make("routine", decisions=3, density=0.3)
    assert env.horizon == 10 and env.realised_density == 0.3 and type(env)(**env.config()) == env
    assert make("routine", decisions=2, density=0.3).horizon == 7  # 6.67 rounds half up to 7
    with pytest.raises(ValueError, match="disagrees with decisions / density"):
        make("routine", decisions=2, density=0.25, horizon=16)
    with pytest.raises(ValueError, match="need horizon 200"):
        make("routine", decisions=2, density=0.01)
    with pytest.raises(ValueError, match="routine.cue"):
        make("routine", cue="hidden")
    with pytest.raises(ValueError, match="vocab_horizon"):
        make("routine", horizon=8, vocab_horizon=4)


def test_index_cue_hides_the_right_action():
    """cue='right' shows the right action at a decision (a policy can copy it); cue='index' shows
    only the decision's ordinal, and the right action of decision j is the fixed answers()[j], the
    same for every layout and horizon: the observation is independent of the right action."""
    shown = make("routine", decisions=2, density=0.25, placement="fixed")
    hidden = make("routine", decisions=2, density=0.25, placement="fixed", cue="index", vocab_horizon=16)
    answers = hidden.answers()
    assert answers[:2].tolist() == make("routine", decisions=2, density=1.0, cue="index").answers()[:2].tolist()
    p = hidden.sample_problem(jax.random.key(0))
    turns = np.flatnonzero(np.asarray(p.decision))
    assert turns.tolist() == [2, 6] and np.asarray(p.right)[turns].tolist() == answers[:2].tolist()
    s = hidden.init_problem(p)
    observed = []
    for t in range(hidden.horizon):
        observed.append(s.observation.tolist())
        s = hidden.step(s, int(p.right[t]))
    assert float(s.reward) == 1.0 and hidden.vocab_size == 16 + 2 + 2
    assert [o[1] for o in observed] == [17, 17, 18, 17, 17, 17, 19, 17]  # V + 1 routine, V + 2 + j decision
    right_cues = set()
    for seed in range(8):  # cue 'right': the decision cue changes with the problem's right action
        q = shown.sample_problem(jax.random.key(seed))
        right_cues.add(int(shown.step(shown.step(shown.init_problem(q), 0), 0).observation[1]))  # turn 2
    assert right_cues == {8 + 2, 8 + 3}
    with pytest.raises(ValueError, match="fixed answers"):
        hidden.init_problem(p.replace(right=jnp.where(p.decision, 1 - p.right, 0)))
    check_environment(hidden, reference=make_reference(hidden), num_episodes=32, illegal_fraction=0.1)
    protocol = text_protocol(hidden)
    prompt = protocol.render_prompt(hidden.step(hidden.step(hidden.init_problem(p), 0), 0))
    assert "Decision turn 1 of 2" in prompt and "the right choice is" not in prompt
