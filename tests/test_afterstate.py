"""Afterstate policy input: encodings equal the env's own next states, the solver's gathered scores
equal the network on stepped states, the ledger counts the steps, every credit arm trains with it,
and a saved afterstate policy loads back as one."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.afterstate import afterstate_observations, afterstate_width
from jaxcredit.checkpoint import load_policy, save_policy
from jaxcredit.envs import make
from jaxcredit.ledger import ledger_to_dict
from jaxcredit.policy import PolicyConfig, make_policy, task_sizes
from jaxcredit.policy_fn import AfterstatePolicy
from jaxcredit.rollout import rollout
from jaxcredit.solver import build_graph, positions_reached, start_position
from tests.afterstate_support import graph_and_stepped_probs, perturbed

NETWORK = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32, policy_input="afterstate")


@pytest.fixture(scope="module")
def small_arithmetic():
    """Three numbers, the turns left shown: afterstates carry the clock, and S = 1 + 24 + 24 * 4 = 121."""
    return make("arithmetic", count=3, max_turns=4, include_turns_left=True)


def test_encoding_of_a_correct_final_is_its_outcome_tokens():
    """[2, 3] -> 5: after COMBINE(0, +, 1) the only legal FINAL(0) wins; its afterstate is the outcome alone."""
    env = make("arithmetic", count=2, max_turns=3)
    state = env.step(env.init_problem(env.make_problem([2, 3], 5)), env.combine_action(0, 0, 1))
    encoded = afterstate_observations(env, jax.tree_util.tree_map(lambda x: x[None], state))[0]
    encoded = np.asarray(encoded).reshape(env.num_actions, afterstate_width(env.observation_length))
    vocab = env.vocab_size  # 15
    final = np.asarray(encoded[env.final_action(0)])
    assert final.tolist() == [0] * env.observation_length + [vocab + 1, vocab + 3]
    undo = encoded[env.undo_action]  # back to [2, 3], live, reward 0
    start = np.asarray(env.init_problem(env.make_problem([2, 3], 5)).observation)
    assert undo.tolist() == start.tolist() + [vocab, vocab + 2]
    illegal = encoded[env.final_action(1)]  # slot 1 is dead
    assert not illegal.any()


def test_scores_are_the_network_on_each_actions_stepped_next_state(small_arithmetic):
    env = small_arithmetic
    network = make_policy(NETWORK, env)
    params = perturbed(network)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(3), 2))
    trajectory, _ = rollout(env, network.policy_fn, params, states, jax.random.key(4), num_turns=env.max_turns)
    logits = np.asarray(network.policy_fn(params, trajectory.observation, trajectory.legal_action_mask))
    step = jax.jit(env.step)
    rows, where = [], []
    for b, t in zip(*np.nonzero(np.asarray(trajectory.live)), strict=True):
        state = jax.tree_util.tree_map(lambda x, b=b, t=t: x[b, t], trajectory.states)
        for action in np.nonzero(np.asarray(state.legal_action_mask))[0]:
            nxt = step(state, jnp.int32(action))  # stepped by hand, one action at a time
            ended, reward = bool(nxt.terminated), float(nxt.reward)
            tokens = [0] * env.observation_length if ended else np.asarray(nxt.observation).tolist()
            rows.append(tokens + [env.vocab_size + ended,
                                  env.vocab_size + 2 + (1 if reward > 0 else 2 if reward < 0 else 0)])
            where.append((b, t, action))
    scores = np.asarray(network.policy_fn.score_fn(params, jnp.asarray(rows, jnp.int32)))
    np.testing.assert_allclose(logits[tuple(np.asarray(where).T)], scores, rtol=1e-5, atol=1e-5)
    assert len(rows) > 20 and np.ptp(scores) > 0.01  # many afterstates, scores differ: not a tautology


@pytest.mark.parametrize("env_name", ["small_mad", "small_arithmetic"])
def test_solver_network_probabilities_equal_the_policy_on_stepped_afterstates(env_name, request):
    """The graph path gathers scores of next positions (turns left one lower when shown); it must equal
    the policy applied to afterstates computed by stepping, at every reached position and turn."""
    env = request.getfixturevalue(env_name)
    network = make_policy(NETWORK, env)
    params = perturbed(network)
    gathered, stepped, evals, reached = graph_and_stepped_probs(env, network, params)
    np.testing.assert_allclose(gathered, stepped, atol=1e-5)
    assert np.ptp(stepped[stepped > 0]) > 0.01  # not uniform: the scores matter
    assert 0 < evals <= 3 * reached * env.max_turns + 3


def test_rollout_charges_one_step_per_legal_action_of_each_live_state(small_mad):
    env = small_mad
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 8))
    network = make_policy(NETWORK, env)
    trajectory, counts = rollout(env, network.policy_fn, perturbed(network), states, jax.random.key(1),
                                 num_turns=env.max_turns)
    legal = np.asarray(trajectory.legal_action_mask) & np.asarray(trajectory.live)[..., None]
    assert int(counts.afterstate_env_steps) == int(legal.sum()) > int(counts.env_steps)
    assert trajectory.observation.shape[-1] == env.num_actions * afterstate_width(env.observation_length)
    token_network = make_policy(dataclasses.replace(NETWORK, policy_input="tokens"), env)
    _, token_counts = rollout(env, token_network.policy_fn, token_network.init_fn(jax.random.key(0)), states,
                              jax.random.key(1), num_turns=env.max_turns)
    assert int(token_counts.afterstate_env_steps) == 0


ARMS = {
    "outcome": {},
    "anchor": {},
    "mc": {"credit_options.continuations": 2},
    "exact": {},
    "solver": {"credit_options.policy": "optimal"},
    "critic": {"credit_options.label_states": 8, "credit_options.continuations": 2},
    "predictor": {"credit_options.states": 8, "credit_options.steps": 2, "credit_options.eval_states": 0},
}


@pytest.mark.parametrize("credit", list(ARMS))
def test_every_credit_arm_takes_a_step_with_afterstate_input(credit, tiny_arm):
    trainer, iterate = tiny_arm(credit=credit, policy_input="afterstate", **{"credit_options": {
        name.split(".", 1)[1]: value for name, value in ARMS[credit].items()}})
    assert isinstance(trainer.policy_fn, AfterstatePolicy)
    state = trainer.init(jnp.int32(0))
    after = iterate(state)
    counts = ledger_to_dict(after.ledger)
    before = ledger_to_dict(state.ledger)
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), state.params, after.params)
    assert any(jax.tree_util.tree_leaves(changed))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(after.params))
    # TINY MAD (3 cells): every live state has at least 2 legal actions, so the main attempts alone
    # cost more afterstate steps than twice their env steps; the total includes them.
    spent = counts["afterstate_env_steps"] - before["afterstate_env_steps"]
    assert spent >= 2 * (counts["main_env_steps"] - before["main_env_steps"]) > 0
    accounts = sum(counts[f"{a}_env_steps"] for a in ("main", "label", "critic", "predictor"))
    assert counts["total_env_steps"] == accounts + counts["afterstate_env_steps"]


def test_a_saved_afterstate_policy_loads_back_as_one(small_mad, tmp_path):
    env = small_mad
    network = make_policy(NETWORK, env)
    params = perturbed(network)
    with pytest.raises(ValueError, match="pass sizes"):
        save_policy(tmp_path / "no-sizes", params, policy_config=NETWORK, env_name="mad", env_config=env.config())
    path = save_policy(tmp_path / "policy", params, policy_config=NETWORK, env_name="mad", env_config=env.config(),
                       sizes=task_sizes(env))
    policy_fn, loaded, info = load_policy(path)
    assert isinstance(policy_fn, AfterstatePolicy) and info["policy_config"].policy_input == "afterstate"
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(2), 4))
    observation = afterstate_observations(env, states)
    np.testing.assert_array_equal(np.asarray(policy_fn(loaded, observation, states.legal_action_mask)),
                                  np.asarray(network.policy_fn(params, observation, states.legal_action_mask)))


def test_unknown_policy_input_is_a_value_error():
    from jaxcredit.train import config_from_dict

    with pytest.raises(ValueError, match="config.policy_input: unknown value 'pixels'"):
        config_from_dict({"policy_input": "pixels"})
    with pytest.raises(ValueError, match="policy.policy_input"):
        PolicyConfig(policy_input="pixels")


def test_undo_depends_on_history_the_tokens_hide_and_the_afterstate_shows():
    """On [1, 2, 3] -> 6 two reached positions have equal observations but UNDO leads to different
    states (found by search over the graph); their afterstate encodings of UNDO differ."""
    env = make("arithmetic", count=3, max_turns=4)
    problem = env.make_problem([1, 2, 3], 6)
    graph = build_graph(env, problem)
    reached = np.asarray(positions_reached(graph, start_position(env, problem)))
    observation, undo_next = np.asarray(graph.observation), np.asarray(graph.next_position)[:, env.undo_action]
    seen, pair = {}, None
    for s in np.nonzero(reached & np.asarray(graph.legal)[:, env.undo_action])[0]:
        other = seen.setdefault(observation[s].tobytes(), s)
        if (observation[undo_next[other]] != observation[undo_next[s]]).any():
            pair = (other, s)
            break
    assert pair is not None  # the token observation cannot tell where UNDO leads
    states = jax.vmap(lambda s: env.position(problem, s)[0])(jnp.asarray(pair))
    assert (np.asarray(states.observation[0]) == np.asarray(states.observation[1])).all()
    encoded = np.asarray(afterstate_observations(env, states)).reshape(2, env.num_actions, -1)
    assert (encoded[0, env.undo_action] != encoded[1, env.undo_action]).any()  # the afterstate input shows it


def test_results_pages_show_the_afterstate_counter_only_where_it_was_spent():
    from jaxcredit.analysis.page import _accounts
    from jaxcredit.ledger import ACCOUNTS

    tokens = {"r/outcome": [{"main_env_steps": 10, "afterstate_env_steps": 0, "total_env_steps": 10}]}
    afterstate = {"r/outcome": [{"main_env_steps": 10, "afterstate_env_steps": 40, "total_env_steps": 50}]}
    assert _accounts(tokens) == list(ACCOUNTS)
    assert _accounts(afterstate) == [*ACCOUNTS, "afterstate"]
