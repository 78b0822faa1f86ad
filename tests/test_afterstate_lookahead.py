"""Afterstate lookahead (`afterstate_lookahead=1`): the summary equals the true successors stepped by
hand, the ledger counts its steps exactly, the solver's graph path equals the policy on stepped
encodings, arms train with it (the rollout's and the continuations' calls), checkpoints keep it,
the config refuses it with tokens, and the gymnax adapter observes the same encodings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.afterstate import afterstate_observations, afterstate_width, input_steps_per_state
from jaxcredit.checkpoint import load_policy, save_policy
from jaxcredit.envs import make
from jaxcredit.ledger import ledger_to_dict
from jaxcredit.policy import PolicyConfig, make_policy, task_sizes
from jaxcredit.policy_fn import AfterstatePolicy, uniform_policy_fn
from jaxcredit.rollout import replay, rollout
from tests.afterstate_support import graph_and_stepped_probs, perturbed

NETWORK = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32, policy_input="afterstate",
                       afterstate_lookahead=1)


@pytest.fixture(scope="module")
def pair():
    """[2, 3] -> 5 with three turns (V = 15, A = 11, L = 10)."""
    env = make("arithmetic", count=2, max_turns=3)
    return env, env.make_problem([2, 3], 5)


def python_summary(env, state, step):
    """Per action of `state`: `(count, win, other)` of its afterstate's legal successors, by a plain loop."""
    rows = []
    for a in range(env.num_actions):
        if not bool(state.legal_action_mask[a]):
            rows.append(None)
            continue
        after = step(state, jnp.int32(a))
        count, win, other = 0, False, False
        for b in np.nonzero(np.asarray(after.legal_action_mask))[0]:
            nxt = step(after, jnp.int32(b))
            count += 1
            win |= bool(nxt.terminated) and float(nxt.reward) > 0
            other |= bool(nxt.terminated) and float(nxt.reward) <= 0
        rows.append((count, win, other))
    return rows


@pytest.mark.parametrize("env_name", ["pair", "small_mad"])
def test_summary_is_the_true_successors(env_name, request):
    """Every live state of a few random episodes: the three summary tokens equal a Python loop over
    each legal afterstate's legal successors; the rest of the row is the lookahead-0 encoding."""
    env = request.getfixturevalue(env_name)
    env = env[0] if isinstance(env, tuple) else env
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    trajectory, _ = rollout(env, uniform_policy_fn, None, states, jax.random.key(1), num_turns=env.max_turns)
    live = np.nonzero(np.asarray(trajectory.live))
    flat = jax.tree_util.tree_map(lambda x: x[live], trajectory.states)
    width, plain = afterstate_width(env.observation_length, 1), afterstate_width(env.observation_length)
    encoded = np.asarray(afterstate_observations(env, flat, lookahead=1)).reshape(-1, env.num_actions, width)
    without = np.asarray(afterstate_observations(env, flat)).reshape(-1, env.num_actions, plain)
    np.testing.assert_array_equal(encoded[..., :plain], without)
    base, step, seen = env.vocab_size + 5, jax.jit(env.step), set()
    for n in range(encoded.shape[0]):
        state = jax.tree_util.tree_map(lambda x, n=n: x[n], flat)
        for a, expected in enumerate(python_summary(env, state, step)):
            if expected is None:
                assert not encoded[n, a].any()
                continue
            count, win, other = expected
            assert encoded[n, a, plain:].tolist() == [base + count, base + env.num_actions + 1 + win,
                                                      base + env.num_actions + 3 + other]
            seen.add((count > 0, win, other))
    assert (True, True, False) in seen and (False, False, False) in seen  # wins ahead, and ended afterstates


def test_ledger_counts_every_legal_successor_by_hand(pair):
    """Episode 1, COMBINE 0+1 then FINAL 0: the start has 7 legal moves whose afterstates have
    2 + 2 + 2 + 2 + 2 + 7 + 7 = 24 legal successors (31 steps); after 2 + 3 = [5], UNDO leads to the
    start (7 successors) and FINAL 0 wins (none): 2 + 7 = 9. Episode 2, FINAL 0 three times (wrong,
    keeps the position): 31, 31, then on the last turn the 7 afterstates are truncated: 7.
    40 + 69 = 109; the same without lookahead is 7 + 2 + 7 + 7 + 7 = 30."""
    env, problem = pair
    combine, final = env.combine_action(0, 0, 1), env.final_action(0)
    starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), problem))
    actions = jnp.asarray([[combine, final, final], [final, final, final]], jnp.int32)
    network = make_policy(NETWORK, env)
    trajectory, counts = replay(env, starts, actions, policy_fn=network.policy_fn, params=perturbed(network))
    per_state = np.asarray(jnp.where(trajectory.live, input_steps_per_state(env, network.policy_fn,
                                                                              trajectory.states), 0))
    assert per_state.tolist() == [[31, 9, 0], [31, 31, 7]]
    assert int(counts.afterstate_env_steps) == 109 and int(counts.env_steps) == 5
    plain = make_policy(PolicyConfig(**{**NETWORK.to_dict(), "afterstate_lookahead": 0}), env)
    _, plain_counts = replay(env, starts, actions, policy_fn=plain.policy_fn, params=plain.init_fn(jax.random.key(0)))
    assert int(plain_counts.afterstate_env_steps) == 30


@pytest.mark.parametrize("env_kwargs", [{"count": 3, "max_turns": 4},
                                        {"count": 3, "max_turns": 4, "include_turns_left": True}])
def test_solver_network_probabilities_equal_the_policy_on_stepped_lookahead(env_kwargs):
    """The graph path reads each next position's summary from the graph (none on the last turn, the
    afterstate truncated), with the clock hidden (three rows) or shown (a row per turn left)."""
    env = make("arithmetic", **env_kwargs)
    network = make_policy(NETWORK, env)
    params = perturbed(network)
    gathered, stepped, _, _ = graph_and_stepped_probs(env, network, params, lookahead=1)
    np.testing.assert_allclose(gathered, stepped, atol=1e-5)
    assert np.abs(stepped[0] - stepped[1]).max() > 1e-3  # the last turn reads differently: not a tautology


# One arm per path that spends afterstate steps (tests/test_afterstate.py runs every arm with plain
# afterstate input): main rollouts (outcome; anchor and exact add no stepped afterstates), branch
# continuations (mc; the progress arms and the predictor's dataset branch the same way), critic
# labels, and the solver's graph scoring.
# Lookahead changes only the policy function, and test_afterstate runs every arm on afterstate input;
# here the two ways an arm calls the policy while training: the rollout (outcome) and branch
# continuations (mc). Each arm is a compile of its own, the cost of this file.
ARMS = {
    "outcome": {},
    "mc": {"continuations": 2},
}


@pytest.mark.parametrize("credit", list(ARMS))
def test_every_credit_arm_takes_a_step_with_lookahead(credit, tiny_arm):
    trainer, iterate = tiny_arm(credit=credit, policy_input="afterstate", afterstate_lookahead=1,
                                credit_options=ARMS[credit])
    assert isinstance(trainer.policy_fn, AfterstatePolicy) and trainer.policy_fn.lookahead == 1
    state = trainer.init(jnp.int32(0))
    after = iterate(state)
    before, counts = ledger_to_dict(state.ledger), ledger_to_dict(after.ledger)
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), state.params, after.params)
    assert any(jax.tree_util.tree_leaves(changed))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(after.params))
    # TINY MAD: every live state has at least 2 legal actions, and every afterstate but the last
    # turn's and the ended ones has legal successors: more than 3 afterstate steps per main step.
    spent = counts["afterstate_env_steps"] - before["afterstate_env_steps"]
    assert spent > 3 * (counts["main_env_steps"] - before["main_env_steps"]) > 0
    accounts = sum(counts[f"{a}_env_steps"] for a in ("main", "label", "critic", "predictor"))
    assert counts["total_env_steps"] == accounts + counts["afterstate_env_steps"]


def test_a_saved_lookahead_policy_loads_back_with_its_lookahead(small_mad, tmp_path):
    env = small_mad
    network = make_policy(NETWORK, env)
    params = perturbed(network)
    path = save_policy(tmp_path / "policy", params, policy_config=NETWORK, env_name="mad", env_config=env.config(),
                       sizes=task_sizes(env))
    policy_fn, loaded, info = load_policy(path)
    assert info["policy_config"] == NETWORK and policy_fn.lookahead == 1
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(2), 4))
    observation = afterstate_observations(env, states, lookahead=1)
    np.testing.assert_array_equal(np.asarray(policy_fn(loaded, observation, states.legal_action_mask)),
                                  np.asarray(network.policy_fn(params, observation, states.legal_action_mask)))


def test_lookahead_is_refused_with_tokens_and_bad_values():
    from jaxcredit.train import config_from_dict

    with pytest.raises(ValueError, match="config.afterstate_lookahead=1 needs policy_input 'afterstate'"):
        config_from_dict({"afterstate_lookahead": 1})
    with pytest.raises(ValueError, match="policy.afterstate_lookahead=1 needs policy_input 'afterstate'"):
        PolicyConfig(afterstate_lookahead=1)
    for bad in (2, -1, True, 1.0):
        with pytest.raises(ValueError, match="config.afterstate_lookahead"):
            config_from_dict({"policy_input": "afterstate", "afterstate_lookahead": bad})
    assert config_from_dict({"policy_input": "afterstate", "afterstate_lookahead": 1}).afterstate_lookahead == 1


def test_gymnax_adapter_observes_the_afterstate_encodings(small_mad):
    pytest.importorskip("gymnax")
    from jaxcredit.envs import make_gymnax

    env = small_mad
    for lookahead in (0, 1):
        adapter, params = make_gymnax("mad", observation="afterstate", afterstate_lookahead=lookahead,
                                      reset_pool=0, **env.config())
        width = afterstate_width(env.observation_length, lookahead)
        space = adapter.observation_space(params)
        assert adapter.encoding == "tokens" and space.shape == (env.num_actions * width,)
        obs, state = adapter.reset(jax.random.key(0), params)
        one = jax.tree_util.tree_map(lambda x: x[None], state.state)
        np.testing.assert_array_equal(obs, afterstate_observations(env, one, lookahead=lookahead)[0])
        assert bool(space.contains(obs))
        action = int(np.nonzero(np.asarray(state.state.legal_action_mask))[0][0])
        obs, state, *_, info = adapter.step(jax.random.key(1), state, action, params)
        one = jax.tree_util.tree_map(lambda x: x[None], state.state)
        np.testing.assert_array_equal(obs, afterstate_observations(env, one, lookahead=lookahead)[0])
        assert int(info["afterstate_env_steps"]) == int(input_steps_per_state(
            env, make_policy(PolicyConfig(policy_input="afterstate", afterstate_lookahead=lookahead), env).policy_fn,
            one)[0])
    with pytest.raises(ValueError, match="encoding 'tokens'"):
        make_gymnax("mad", observation="afterstate", encoding="one_hot")
    with pytest.raises(ValueError, match="needs policy_input 'afterstate'"):
        make_gymnax("mad", afterstate_lookahead=1)
    with pytest.raises(ValueError, match="GymnaxAdapter.observation: unknown value"):
        make_gymnax("mad", observation="pixels")
