"""Umbrella (bsuite's umbrella chain): conformance and the plain-Python oracle, a hand-computed
episode, exact values from the solver (hand-computed on a tiny chain; the first action is the only
one with credit), the gymnax adapter, the sweeps and score helpers, bad input. Step-by-step parity
with bsuite's own implementation is tests/test_umbrella_bsuite.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver
from jaxcredit.conformance import check_against_reference, check_environment, rollout_random
from jaxcredit.envs import UmbrellaProblem, make, make_gymnax, make_reference
from jaxcredit.envs.umbrella import DISTRACT_SWEEP, LENGTH_SWEEP, average_regret, bsuite_score
from jaxcredit.train.evaluation import make_evaluate


def tiny_problem(*, need, start, noise, distractors):
    return UmbrellaProblem(need_umbrella=np.bool_(need), start_umbrella=np.bool_(start),
                           noise_positive=np.array(noise, bool), distractors=np.array(distractors, bool))


# L = 3, D = 2: the first two steps pay +1, +1; the last pays +1 with the umbrella, -1 without.
PROBLEM = tiny_problem(need=True, start=False, noise=[True, True, False],
                       distractors=[[0, 1], [1, 1], [0, 0], [1, 0]])


@pytest.fixture(scope="module")
def tiny():
    return make("umbrella", chain_length=3, n_distractor=2)


@pytest.mark.parametrize("overrides", [{"chain_length": 5, "n_distractor": 3}, {"chain_length": 1}])
def test_conformance_and_oracle(overrides):
    env = make("Umbrella-v0", **overrides)
    check_environment(env, reference=make_reference(env), num_episodes=48, illegal_fraction=0.1)


def test_oracle_many_random_sequences():
    env = make("umbrella", chain_length=6, n_distractor=4)
    initial, states, actions = rollout_random(env, seed=3, num_episodes=300, num_steps=7, illegal_fraction=0.05)
    check_against_reference(env, make_reference(env), initial, states, actions)
    final = np.asarray(states.reward)[env.chain_length - 1]
    ended = np.asarray(states.terminated)[env.chain_length - 1]
    refused = np.asarray(states.rejected)[: env.chain_length].any(axis=0)
    assert (ended == ~refused).all() and refused.any() and np.isin(final[ended], [-1.0, 1.0]).all()
    rewards = np.asarray(states.reward)[: env.chain_length - 1]
    assert np.isin(rewards, [-1.0, 0.0, 1.0]).all() and (rewards == 1).any() and (rewards == -1).any()


def test_hand_computed_episode(tiny):
    s = tiny.init_problem(PROBLEM)
    assert s.observation.tolist() == [1, 0, 2 + 3, 0, 1] and s.legal_action_mask.tolist() == [True, True]
    assert int(tiny.position_index(s)) == 0 and tiny.action_name(1) == "take umbrella"
    s = tiny.step(s, 1)  # take it: the first action is the one that counts
    assert s.observation.tolist() == [1, 1, 2 + 2, 1, 1] and float(s.reward) == 1.0
    assert int(tiny.position_index(s)) == 2 * 1 + 1
    s = tiny.step(s, 0)  # too late to leave it
    assert s.observation.tolist() == [1, 1, 2 + 1, 0, 0] and float(s.reward) == 1.0 and not bool(s.done)
    s = tiny.step(s, 0)
    assert bool(s.terminated) and float(s.reward) == 1.0 and s.observation.tolist() == [1, 1, 2, 1, 0]
    assert "have umbrella: yes" in tiny.render(s) and "terminated" in tiny.render(s)
    assert bool(tiny.episode_success(s, jnp.float32(3.0)))
    s = tiny.init_problem(PROBLEM)
    for a in [0, 1, 1]:  # left it at the first step
        s = tiny.step(s, a)
    assert bool(s.terminated) and float(s.reward) == -1.0 and int(s.env_state.umbrella) == 0
    assert not bool(tiny.episode_success(s, jnp.float32(1.0)))  # a positive return, and a miss
    s = tiny.step(tiny.init_problem(PROBLEM), 2)  # out of range: refused, the turn is gone, nothing else
    assert bool(s.rejected) and int(s.env_state.progress) == 0 and s.observation.tolist() == [1, 0, 5, 0, 1]
    s = tiny.step(tiny.step(s, 1), 1)  # the turn limit: the noise of step 2 (+1), never the umbrella outcome
    assert bool(s.truncated) and not bool(s.terminated) and float(s.reward) == 1.0 and int(s.env_state.progress) == 2


def _solve_one(env, problem):
    graph = solver.build_graph(env, problem)
    horizon = env.max_turns
    return (graph.valid, solver.solve_graph(graph, policy="uniform", horizon=horizon),
            solver.solve_graph(graph, policy="optimal", horizon=horizon), solver.start_position(env, problem))


# valid [B, S], uniform and optimal Values ([B, T + 1, S], [B, T + 1, S, A]), start [B]
solve = jax.jit(jax.vmap(_solve_one, in_axes=(None, 0)), static_argnums=0)


def test_exact_values_by_hand(tiny):
    """On PROBLEM (L = 3, noise +1, +1, need the umbrella): taking it returns 3, leaving it 1, so
    V* = 3 and the uniform V = 2 at the start; at every later position both actions have the same
    value (1 + 1 or 1 - 1 with 2 steps left, +1 or -1 with 1)."""
    valid, uniform, optimal, start = jax.tree_util.tree_map(
        lambda x: x[0], solve(tiny, jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], PROBLEM)))
    assert int(start) == 0 and np.asarray(valid).tolist() == [True, False, True, True, True, True]
    assert np.asarray(uniform.q[3, 0]).tolist() == [1.0, 3.0] and float(uniform.v[3, 0]) == 2.0
    assert float(optimal.v[3, 0]) == 3.0
    assert np.asarray(uniform.q[2, 2:4]).tolist() == [[0.0, 0.0], [2.0, 2.0]]
    assert np.asarray(uniform.q[1, 4:6]).tolist() == [[-1.0, -1.0], [1.0, 1.0]]
    assert np.asarray(uniform.v[0]).tolist() == [0.0] * 6


def test_only_the_first_action_has_credit():
    """Over 64 sampled problems at L = 12 with 5 distractors: V* at the start is bsuite's optimal
    return 1 plus the problem's noise rewards, the uniform V is one less (the coin of the first
    action is worth +1 or -1), the right first action is worth 2 more than the wrong one, and every
    later position has Q - V = 0 for both actions under both policies. At L = 1 (no noise) V* is 1
    and the uniform V is 0."""
    length = 12
    env = make("umbrella", chain_length=length, n_distractor=5)
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(7), 64))
    valid, uniform, optimal, start = solve(env, problems)
    noise = np.where(np.asarray(problems.noise_positive)[:, : length - 1], 1.0, -1.0).sum(axis=1)
    rows = np.arange(64)
    assert (np.asarray(optimal.v[rows, length, start]) == 1 + noise).all()
    assert (np.asarray(uniform.v[rows, length, start]) == noise).all() and len(set(noise)) > 3
    need = np.asarray(problems.need_umbrella).astype(int)
    q_start = np.asarray(uniform.q[rows, length, start])
    assert (q_start[rows, need] - q_start[rows, 1 - need] == 2).all()
    index = np.arange(env.num_positions)
    turns_left = length - index // 2
    later = (index >= 2)[None, :] & np.asarray(valid)
    for values in (uniform, optimal):
        q = np.asarray(values.q)[:, turns_left, index]  # [64, S, A]
        v = np.asarray(values.v)[:, turns_left, index]
        assert (q[later] == v[later][:, None]).all()
    one = make("umbrella", chain_length=1)
    _, uniform, optimal, start = solve(one, jax.vmap(one.sample_problem)(jax.random.split(jax.random.key(0), 4)))
    rows = np.arange(4)
    assert (np.asarray(optimal.v[rows, 1, start]) == 1).all() and (np.asarray(uniform.v[rows, 1, start]) == 0).all()


def test_sampled_problems_are_fair_coins():
    env = make("umbrella", chain_length=4, n_distractor=3)
    problems = jax.jit(jax.vmap(env.sample_problem))(jax.random.split(jax.random.key(1), 4000))
    for field in ("need_umbrella", "start_umbrella", "distractors"):
        assert abs(float(jnp.mean(getattr(problems, field))) - 0.5) < 0.03, field
    noise = np.asarray(problems.noise_positive)
    assert abs(noise[:, :3].mean() - 0.5) < 0.03 and not noise[:, 3].any()


def test_success_is_the_umbrella_outcome_not_the_return():
    """Training's evaluation counts an episode a success when its final step paid +1: a policy that
    takes the umbrella exactly when the observation says it is needed succeeds on every problem,
    though the noise makes its return negative on some; always taking it succeeds where it is needed."""
    env = make("umbrella", chain_length=6, n_distractor=1)
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(2), 128))

    def policy_fn(follow_need, observation, legal_action_mask):  # logits [..., 2]
        need = observation[..., 0].astype(jnp.float32)
        take = jnp.where(follow_need, need, 1.0)
        return jnp.stack([1.0 - take, take], axis=-1) * 10

    noise = np.where(np.asarray(problems.noise_positive)[:, :5], 1.0, -1.0).sum(axis=1)
    assert (noise + 1 <= 0).any()  # the return alone would count these as failures
    evaluate = jax.jit(make_evaluate(env, policy_fn, {"default": problems}, seed=0))
    assert float(evaluate(jnp.bool_(True))["success_greedy"]) == 1.0
    assert float(evaluate(jnp.bool_(False))["success_greedy"]) == pytest.approx(np.mean(problems.need_umbrella))


def test_gymnax_adapter():
    adapter, params = make_gymnax("Umbrella-v0", reset_pool=0, chain_length=2, n_distractor=1)
    obs, state = adapter.reset(jax.random.key(0), params)
    assert obs.shape == (4 * 5,) and adapter.num_actions == 2
    need = int(state.state.problem.need_umbrella)
    _, state, _, terminated, _, _ = adapter.step(jax.random.key(1), state, need, params)
    _, state, reward, terminated, _, info = adapter.step(jax.random.key(2), state, 0, params)
    assert bool(terminated) and float(reward) == 1.0 and float(info["discount"]) == 0.0 and int(state.time) == 0


def test_sweeps_and_score():
    assert len(LENGTH_SWEEP) == len(DISTRACT_SWEEP) == 23
    assert LENGTH_SWEEP[0] == {"chain_length": 1, "n_distractor": 20} and DISTRACT_SWEEP[-1]["n_distractor"] == 100
    for setting in LENGTH_SWEEP + DISTRACT_SWEEP:
        make("umbrella", **setting)
    assert average_regret([1.0, -1.0, -1.0, 1.0]) == 1.0 and average_regret([1.0] * 3) == 0.0
    assert bsuite_score([0.0, 0.49, 0.5, 2.0]) == 0.5
    with pytest.raises(ValueError, match="one average regret per setting"):
        bsuite_score([])


@pytest.mark.parametrize("overrides, message", [
    ({"chain_length": 0}, "umbrella.chain_length"), ({"chain_length": 2000}, "umbrella.chain_length"),
    ({"n_distractor": -1}, "umbrella.n_distractor"), ({"n_distractor": 1.5}, "umbrella.n_distractor"),
])
def test_bad_config(overrides, message):
    with pytest.raises(ValueError, match=message):
        make("umbrella", **overrides)


def test_bad_problem(tiny):
    bad_noise = tiny_problem(need=True, start=False, noise=[True, True, True], distractors=np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"noise_positive\[-1\] must be False"):
        tiny.init_problem(bad_noise)
    with pytest.raises(ValueError, match=r"problem.distractors must be bool with shape \(4, 2\)"):
        tiny.init_problem(PROBLEM.replace(distractors=np.zeros((3, 2), bool)))
    with pytest.raises(ValueError, match="problem.need_umbrella must be bool"):
        tiny.init_problem(PROBLEM.replace(need_umbrella=np.int32(1)))
