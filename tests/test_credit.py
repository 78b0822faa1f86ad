"""Credit estimators: hand-computed labels, the repaired MAD episode, Monte Carlo -> exact, no NaN."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.credit import (
    anchor_advantage,
    branch_action_values,
    branch_state_values,
    exact_advantage,
    mc_advantage,
    outcome_advantage,
    solver_advantage,
)
from jaxcredit.credit_arms import credit_arm, credit_names
from jaxcredit.envs import make
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.rollout import branch_returns, replay, rollout
from jaxcredit.solver import solve
from jaxcredit.solver_values import reference_values

SUBMIT = 16  # default MAD: length 8
REPAIRED_TAPE = np.array([-1, 3, -1, -1, 7, -1, -1, -1], np.int32)  # useful cells 1 and 4
# select blank 0, select useful 1, select useful 4, submit (wrong), unselect 0, submit (reward 1)
REPAIRED = [0, 1, 4, SUBMIT, 8, SUBMIT]
FAILED = [2, SUBMIT, 3, SUBMIT, 5, 6, 7, 9, 10, SUBMIT, 11, SUBMIT]  # never right: return 0


def replay_episodes(env, tapes, actions):
    states = jax.vmap(env.init_problem)(jnp.asarray(np.stack(tapes)))
    width = max(len(a) for a in actions)
    padded = np.array([list(a) + [0] * (width - len(a)) for a in actions], np.int32)
    trajectory, _ = replay(env, states, jnp.asarray(padded))
    return trajectory


@pytest.fixture(scope="module")
def repaired_group(mad):
    return replay_episodes(mad, [REPAIRED_TAPE, REPAIRED_TAPE], [REPAIRED, FAILED])


@pytest.fixture(scope="module")
def repaired_values(mad):
    """The solver's values of the repaired tape under the uniform reference and the optimal policy."""
    tape = jnp.asarray(REPAIRED_TAPE)
    return solve(mad, tape, policy="uniform"), solve(mad, tape, policy="optimal")


def test_repaired_episode_outcome_gives_every_action_the_same_label(repaired_group):
    np.testing.assert_array_equal(repaired_group.live[0], np.arange(12) < 6)
    assert repaired_group.episode_return.tolist() == [1.0, 0.0]
    for baseline, label in [("grpo", 1.0), ("rloo", 1.0), ("mean", 0.5)]:
        advantage = np.asarray(outcome_advantage(repaired_group, group_size=2, baseline=baseline))
        np.testing.assert_allclose(advantage[0, :6], label, rtol=1e-5)
        np.testing.assert_array_equal(advantage[0, 6:], 0.0)
        np.testing.assert_allclose(advantage[1], -label, rtol=1e-5)


def test_repaired_episode_exact_credit_under_the_uniform_reference(repaired_group, repaired_values):
    values, _ = repaired_values
    advantage = np.asarray(solver_advantage(repaired_group, values=values))[0]
    signs = np.sign(advantage[:6]).tolist()
    # select blank 0 -, select useful 1 +, select useful 4 +, wrong submit -, unselect 0 +, final submit +
    assert signs == [-1, 1, 1, -1, 1, 1]
    np.testing.assert_array_equal(advantage[6:], 0.0)
    # The hand value of the final submit: reward 1 minus the uniform value of the right selection
    # with 7 turns left, where 1 of its 8 legal actions ends the episode with reward 1.
    tl, p = int(repaired_group.turns_left[0, 5]), int(repaired_group.position[0, 5])
    assert (tl, p) == (7, 0b10010)
    np.testing.assert_allclose(advantage[5], 1.0 - float(values.v[tl, p]), rtol=1e-6)
    # exact (the current policy is uniform) is the same estimator on the same values
    np.testing.assert_array_equal(exact_advantage(repaired_group, values=values), solver_advantage(
        repaired_group, values=values))
    # CAST-style: add the outcome advantage
    combined = solver_advantage(repaired_group, values=values, weight=0.5, outcome="grpo", group_size=2)
    np.testing.assert_allclose(combined[0, :6], 0.5 * advantage[:6] + 1.0, rtol=1e-5)


def test_outcome_hand_values_and_uniform_groups_give_zero(mad):
    tapes = [REPAIRED_TAPE] * 4
    group = replay_episodes(mad, tapes, [REPAIRED, FAILED, FAILED, REPAIRED])
    first = lambda baseline: np.asarray(outcome_advantage(group, group_size=4, baseline=baseline))[:, 0]  # noqa: E731
    np.testing.assert_allclose(first("grpo"), [1, -1, -1, 1], rtol=1e-5)
    np.testing.assert_allclose(first("rloo"), [2 / 3, -2 / 3, -2 / 3, 2 / 3], rtol=1e-5)
    np.testing.assert_allclose(first("mean"), [0.5, -0.5, -0.5, 0.5], rtol=1e-6)
    for actions in ([REPAIRED] * 4, [FAILED] * 4):  # identical outcomes: 0 without dividing by 0
        same = replay_episodes(mad, tapes, actions)
        for baseline in ("grpo", "rloo", "mean"):
            advantage = outcome_advantage(same, group_size=4, baseline=baseline)
            assert np.isfinite(np.asarray(advantage)).all() and not np.asarray(advantage).any()
    with pytest.raises(ValueError, match="group_size"):
        outcome_advantage(group, group_size=3)
    with pytest.raises(ValueError, match="rloo"):
        outcome_advantage(group, group_size=1, baseline="rloo")
    with pytest.raises(ValueError, match="unknown credit arm 'vine'"):
        credit_arm("vine")
    assert set(credit_names()) >= {"outcome", "mc", "exact", "solver", "anchor", "critic", "predictor",
                                   "progress-soft", "progress-hard", "progress-model"}


def test_anchor_hand_computed(small_mad):
    tape = np.array([0, -1, -1, -1], np.int32)  # one useful cell: select 0, submit
    submit = 8
    won = [0, submit]  # positions 0, {0}
    lost = [submit, 1, 5, submit, 2, 3]  # positions 0, 0, {1}, 0, 0, {2}: truncated, return 0
    group = replay_episodes(small_mad, [tape, tape], [won, lost])
    np.testing.assert_array_equal(group.position[1], [0, 0, 2, 0, 0, 4])
    advantage = np.asarray(anchor_advantage(group, group_size=2, step_weight=1.0))
    # Episode level (grpo): +1 / -1. Anchor position 0 holds the won episode's first step (G=1)
    # and four lost steps (G=0): mean 0.2, std 0.4, so +2 and -0.5; other anchors are single.
    np.testing.assert_allclose(advantage[0], [1 + 2, 1, 0, 0, 0, 0], rtol=1e-4)
    np.testing.assert_allclose(advantage[1], [-1.5, -1.5, -1, -1.5, -1.5, -1], rtol=1e-4)
    half = np.asarray(anchor_advantage(group, group_size=2, step_weight=0.5))
    np.testing.assert_allclose(half[0, 0], 2.0, rtol=1e-4)


def test_refused_and_ended_steps_never_give_nan(mad, repaired_values):
    # An illegal action (unselect an unselected cell) is refused; the winning episode then ends
    # and its later steps are padding. A problem with no success reachable gives V = 0 everywhere.
    refused = [9, 9, 1, 4, SUBMIT, 0, 0, 0, 0, 0, 0, 0]
    group = replay_episodes(mad, [REPAIRED_TAPE, REPAIRED_TAPE], [refused, refused[:2] + [SUBMIT] * 10])
    assert bool(group.states.rejected[0, 1]) and not bool(group.live[0, 5])
    values, optimal = repaired_values
    state_values = jnp.full((2, 13), 0.25)
    action_values = jnp.full((2, 12, mad.num_actions), 0.5)
    outputs = {
        "outcome": outcome_advantage(group, group_size=2),
        "mc": mc_advantage(group, state_values=state_values),
        "mc_q": mc_advantage(group, state_values=state_values, action_values=action_values),
        "exact": exact_advantage(group, values=values),
        "solver": solver_advantage(group, values=optimal, outcome="rloo", group_size=2),
        "anchor": anchor_advantage(group, group_size=2),
    }
    for name, advantage in outputs.items():
        advantage = np.asarray(advantage)
        assert np.isfinite(advantage).all(), name
        np.testing.assert_array_equal(advantage[~np.asarray(group.live)], 0.0, err_msg=name)
    # The refused step costs a turn and changes nothing: its exact credit is V[tl-1, p] - V[tl, p] < 0.
    tl = int(group.turns_left[0, 0])
    np.testing.assert_allclose(outputs["exact"][0, 0], values.v[tl - 1, 0] - values.v[tl, 0], rtol=1e-6)
    assert float(outputs["exact"][0, 0]) < 0


# ----- Monte Carlo labels converge to the exact ones -----

@pytest.fixture(scope="module")
def tiny_task():
    """A MAD with moderate values (3 cells, 5 turns) and a small non-uniform network policy."""
    env = make("mad", length=3, num_tokens=2, min_useful=1, max_useful=2, max_turns=5)
    init_fn, policy_fn, _ = make_policy(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32), env)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(2), 8))
    trajectory, _ = rollout(env, policy_fn, params, states, jax.random.key(3), num_turns=env.max_turns)

    @jax.jit
    def exact_values(problems):
        def one(problem):
            return reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params)[0]

        return jax.vmap(one)(problems)

    return env, policy_fn, params, trajectory, exact_values(states.problem)


def test_mc_converges_to_exact(tiny_task):
    env, policy_fn, params, trajectory, values = tiny_task
    live = np.asarray(trajectory.live)
    rows = jnp.arange(live.shape[0])[:, None]
    v_exact = np.asarray(values.v[rows, trajectory.turns_left, trajectory.position])[live]
    assert live.sum() >= 30 and 0.05 < v_exact.mean() < 0.95  # moderate values, many states
    exact = np.asarray(exact_advantage(trajectory, values=values))
    k = 4096
    state_values, counts = branch_state_values(env, policy_fn, params, trajectory, jax.random.key(4),
                                               num_continuations=k)
    assert int(counts.episodes) == k * (live.sum() + int((~trajectory.final_state.done).sum()))
    estimate = np.asarray(state_values[:, :-1])[live]
    standard_error = np.sqrt(v_exact * (1 - v_exact) / k)
    assert (np.abs(estimate - v_exact) <= 3 * standard_error + 1e-6).all()
    # VinePPO advantage r + V(s') - V(s): two independent estimates, each within its error.
    next_live = np.asarray(~trajectory.done) & live
    next_position = np.asarray(trajectory.next_states().env_state) @ (1 << np.arange(env.length))
    v_next = np.where(next_live, np.asarray(values.v[rows, trajectory.turns_left - 1, next_position]), 0.0)
    se_next = np.sqrt(v_next * (1 - v_next) / k)[live]
    mc = np.asarray(mc_advantage(trajectory, state_values=state_values))[live]
    assert (np.abs(mc - exact[live]) <= 3 * np.sqrt(standard_error**2 + se_next**2) + 1e-6).all()

    # The error shrinks like 1 / sqrt(K): the same call's returns (same compiled function), split
    # into 16 independent blocks of K = 256, against all 4096 together. Scaled by the binomial
    # variance p (1 - p) / K, the squared error averages 1 at both K; the RMS error is ~4x larger.
    flat = jax.tree_util.tree_map(
        lambda before, final: np.concatenate([before, final[:, None]], 1).reshape(-1, *before.shape[2:]),
        trajectory.states, trajectory.final_state)
    returns = np.asarray(branch_returns(env, policy_fn, params, flat, jax.random.key(4), num_continuations=k).returns)
    returns = returns.reshape(live.shape[0], live.shape[1] + 1, k)[:, :-1][live]  # [n, K]
    np.testing.assert_allclose(returns.mean(-1), estimate, rtol=1e-6)
    blocks = returns.reshape(len(v_exact), 16, 256).mean(-1)
    uncertain = (v_exact > 0) & (v_exact < 1)
    variance = (v_exact * (1 - v_exact))[uncertain]
    scaled_all = np.mean((estimate - v_exact)[uncertain] ** 2 * k / variance)
    scaled_blocks = np.mean((blocks - v_exact[:, None])[uncertain] ** 2 * 256 / variance[:, None])
    assert uncertain.sum() >= 20 and 0.4 < scaled_all < 1.8 and 0.75 < scaled_blocks < 1.3, (scaled_all, scaled_blocks)
    ratio = np.sqrt(np.mean((blocks - v_exact[:, None]) ** 2) / np.mean((estimate - v_exact) ** 2))
    assert 2.5 < ratio < 6.5, ratio
    np.testing.assert_array_equal(estimate[~uncertain], v_exact[~uncertain])  # certain states are exact


def test_mc_q_variant_matches_exact_q(tiny_task):
    env, policy_fn, params, trajectory, values = tiny_task
    k = 1024
    action_values, counts = branch_action_values(env, policy_fn, params, trajectory, jax.random.key(5),
                                                 num_continuations=k, max_legal_actions=env.length + 1)
    rows = jnp.arange(trajectory.live.shape[0])[:, None]
    q_exact = np.asarray(values.q[rows, trajectory.turns_left, trajectory.position])
    legal = np.asarray(trajectory.legal_action_mask) & np.asarray(trajectory.live)[..., None]
    assert int(counts.episodes) == k * legal.sum()
    # Binomial standard errors, floored at K p (1 - p) = 5 where the normal approximation fails
    # (q near 0 or 1); q exactly 0 or 1 must be met exactly. With ~140 pairs, a couple may pass
    # 3 SE by chance (expected 0.4), none 4.5 SE.
    standard_error = np.sqrt(np.maximum(q_exact * (1 - q_exact), 5 / k) / k)
    z = (np.abs(np.asarray(action_values) - q_exact) / standard_error)[legal]
    assert legal.sum() >= 100 and (z > 3).sum() <= 2 and z.max() < 4.5, np.sort(z)[-5:]
    certain = legal & ((q_exact == 0) | (q_exact == 1))
    np.testing.assert_array_equal(np.asarray(action_values)[certain], q_exact[certain])
    np.testing.assert_array_equal(np.asarray(action_values)[~legal], 0.0)


def test_anchor_discount_hand_computed(small_mad):
    tape = np.array([0, -1, -1, -1], np.int32)
    submit = 8
    quick = [0, submit]  # positions 0, {0}: success in 2 turns
    slow = [submit, 0, submit]  # a wasted (wrong) submit first: positions 0, 0, {0}: success in 3
    group = replay_episodes(small_mad, [tape, tape], [quick, slow])
    # Both succeed, so the episode level is 0. Anchor position 0 holds G = γ (quick, step 0),
    # γ² and γ (slow, steps 0 and 1): normalised, +1/√2, -√2, +1/√2 for any γ < 1. Position {0}
    # holds two G = 1: 0. With γ = 1 every G is 1 and the wasted submit is not penalised.
    paper = np.asarray(anchor_advantage(group, group_size=2))  # the default: GiGPO's 0.95
    np.testing.assert_allclose(paper[0, :2], [1 / np.sqrt(2), 0], atol=1e-4)
    np.testing.assert_allclose(paper[1, :3], [-np.sqrt(2), 1 / np.sqrt(2), 0], atol=1e-4)
    undiscounted = np.asarray(anchor_advantage(group, group_size=2, discount=1.0))
    np.testing.assert_array_equal(undiscounted, 0.0)
    # by hand at γ = 0.95: G = 0.95, 0.9025, 0.95; mean 0.934167, std 0.022392 (ddof 0)
    g = np.array([0.95, 0.9025, 0.95])
    np.testing.assert_allclose(paper[[0, 1, 1], [0, 0, 1]], (g - g.mean()) / (g.std() + 1e-6), rtol=1e-4)


def test_out_of_range_actions_are_refusals_for_every_estimator(mad, repaired_values):
    """A text-protocol refusal is played as an out-of-range action: it uses a turn and changes
    nothing, so every estimator values it as V of the same position with one turn fewer."""
    from jaxcredit.analysis.exact import exact_credit

    values, optimal = repaired_values
    # step 0 out of range (99), step 1 illegal (unselect an unselected cell), step 2 negative, then a win
    actions = [99, 9, -1, 1, 4, SUBMIT]
    group = replay_episodes(mad, [REPAIRED_TAPE, REPAIRED_TAPE], [actions, actions])
    assert np.asarray(group.states.rejected)[0, 1:4].all() and np.asarray(group.live)[0, :6].all()
    tl, p = np.asarray(group.turns_left[0, :3]), np.asarray(group.position[0, :3])
    refusal = np.asarray(values.v)[tl - 1, p] - np.asarray(values.v)[tl, p]  # V[tl-1, 0] - V[tl, 0] < 0
    assert (refusal < 0).all()
    exact = np.asarray(exact_advantage(group, values=values))
    np.testing.assert_allclose(exact[0, :3], refusal, rtol=1e-6)
    # the analysis' exact credit agrees everywhere
    from jaxcredit.analysis.exact import exact_step_values

    np.testing.assert_allclose(exact, exact_credit(group, exact_step_values(mad, group, reference="uniform")),
                               atol=1e-6)
    hard = np.asarray(solver_advantage(group, values=optimal))
    np.testing.assert_array_equal(hard[0, :3], 0.0)  # V* = 1 with turns to spare: wasting one costs nothing
    # Monte Carlo Q̂ variant: the refusal's Q̂ is V̂ of the next state (same position, one turn fewer)
    state_values = jnp.asarray(np.linspace(0.1, 0.9, 7)[None].repeat(2, 0), jnp.float32)
    action_values = jnp.full((2, 6, mad.num_actions), 0.5)
    mc_q = np.asarray(mc_advantage(group, state_values=state_values, action_values=action_values))
    assert np.isfinite(mc_q).all()
    sv = np.asarray(state_values)
    np.testing.assert_allclose(mc_q[0, :3], sv[0, 1:4] - sv[0, :3], rtol=1e-6)
    np.testing.assert_allclose(mc_q[0, 3:6], 0.5 - sv[0, 3:6], rtol=1e-5)  # legal: Q̂ of the action
    np.testing.assert_allclose(mc_q[0, :3], np.asarray(mc_advantage(group, state_values=state_values))[0, :3],
                               rtol=1e-6)  # the same as the TD form there


def test_gae_hand_computed_and_its_two_ends(repaired_group):
    """λ = 0 is the one-step `r + V(s') - V(s)`; λ = 1 is `G_t - V(s_t)` whatever V is; between,
    by hand on the won episode (reward 1 at step 5 of 6)."""
    from jaxcredit.credit import gae_advantage

    values = jnp.asarray(np.stack([np.linspace(0.1, 0.7, 13), np.full(13, 0.3)]), jnp.float32)
    live = np.asarray(repaired_group.live)
    np.testing.assert_allclose(gae_advantage(repaired_group, state_values=values, lam=0.0),
                               mc_advantage(repaired_group, state_values=values), atol=1e-6)
    to_go = np.where(live, np.asarray(repaired_group.episode_return)[:, None], 0.0)  # one reward, at the end
    full = np.asarray(gae_advantage(repaired_group, state_values=values, lam=1.0))
    np.testing.assert_allclose(full, np.where(live, to_go - np.asarray(values)[:, :-1], 0.0), atol=1e-6)
    # λ = 0.5 on the won episode: δ_t = V(t+1) - V(t) = 0.05 for t < 5, δ_5 = 1 - V(5) = 0.65
    half = np.asarray(gae_advantage(repaired_group, state_values=values, lam=0.5))[0, :6]
    delta = np.array([0.05] * 5 + [0.65])
    expected = [sum(0.5 ** (k - t) * delta[k] for k in range(t, 6)) for t in range(6)]
    np.testing.assert_allclose(half, expected, rtol=1e-5)
