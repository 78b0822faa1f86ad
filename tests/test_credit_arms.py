"""The credit-arm registry and the reference values it uses: shapes, ledger charges, reached-only exact values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver
from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext, credit_names, label_free_credits
from jaxcredit.envs import make
from jaxcredit.ledger import ACCOUNTS
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.rollout import rollout
from jaxcredit.solver_values import reference_values
from jaxcredit.train import config_from_dict

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
P, G = 2, 2  # problems, attempts per problem
VARIANTS = [("outcome", {}), ("anchor", {}), ("mc", {"variant": "td", "continuations": 2}),
            ("mc", {"variant": "q", "continuations": 2}), ("exact", {}), ("solver", {"policy": "soft"}),
            ("critic", {"label_states": 4, "continuations": 2}),
            ("progress-hard", {"continuations": 2})]  # the arms' options (`credit_options`)
# `predictor` charges its dataset once, before training, not per call: tests/test_predictor.py


def _tiny_network(env):
    init_fn, policy_fn, value_fn = make_policy(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32), env)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)  # not uniform
    return params, policy_fn, value_fn


@pytest.fixture(scope="module")
def batch():
    env = make("mad", **TINY_MAD)
    params, policy_fn, value_fn = _tiny_network(env)
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(2), P))
    starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.repeat(x, G, axis=0), problems))
    trajectory, _ = rollout(env, policy_fn, params, starts, jax.random.key(3), num_turns=env.max_turns)
    return env, params, policy_fn, value_fn, problems, trajectory


def test_registry_names_accounts_and_label_free_arms():
    assert credit_names()[:10] == ("outcome", "mc", "exact", "solver", "anchor", "critic", "predictor",
                                   "progress-soft", "progress-hard", "progress-model")
    assert label_free_credits()[:3] == ("outcome", "anchor", "progress-model")
    assert {arm.account for arm in CREDIT_ARMS.values()} <= set(ACCOUNTS) | {None}
    assert [name for name, arm in CREDIT_ARMS.items() if arm.enumerates] == ["exact", "solver"]


@pytest.mark.parametrize("name, fields", VARIANTS, ids=[f"{n}-{'-'.join(map(str, f.values()))}" for n, f in VARIANTS])
def test_every_arm_gives_advantages_and_charges_its_account(batch, name, fields):
    env, params, policy_fn, value_fn, problems, trajectory = batch
    config = config_from_dict({"env": "mad", "env_overrides": TINY_MAD, "credit": name, "credit_options": fields,
                               "problems_per_iteration": P, "attempts_per_problem": G, "holdout_fraction": 0.0})
    arm = CREDIT_ARMS[name]
    context = CreditContext(env=env, policy_fn=policy_fn, params=params, config=config, value_fn=value_fn)
    result = jax.jit(lambda t, p, k: arm.compute(context, t, p, k))(trajectory, problems, jax.random.key(4))
    advantage = np.asarray(result.advantage)
    assert advantage.shape == (P * G, env.max_turns) and advantage.dtype == np.float32
    assert np.isfinite(advantage).all() and not advantage[~np.asarray(trajectory.live)].any()
    assert (result.critic_batch is not None) == (name in ("critic", "progress-model"))
    assert set(result.charge) == ({arm.account} if arm.account else set())
    for counts in result.charge.values():
        assert int(counts.env_steps) > 0
    if name == "exact":  # the network is evaluated once per distinct observation of the reached positions:
        # every one of the 2**3 selections of a tape is reached and shows differently
        assert int(result.charge["label"].policy_evals) == P * 2**3
        steps = sum(int(solver.enumeration_env_steps(solver.build_graph(env, p), solver.start_position(env, p)))
                    for p in problems)
        assert int(result.charge["label"].env_steps) == steps
    if name == "solver":
        assert int(result.charge["label"].policy_evals) == 0


def _full_graph_values(env, problem, policy_fn, params):
    """The network evaluated at every position of the full graph (what the exact arm did before)."""
    graph = solver.build_graph(env, problem)
    probs = action_probabilities(policy_fn(params, graph.observation, graph.legal), graph.legal)
    return graph, solver.evaluate_policy(graph, probs, horizon=env.max_turns)


@pytest.mark.parametrize("env_name", ["mad", "arithmetic"])
def test_reached_only_network_values_equal_full_graph_values(env_name):
    env = make("mad", **TINY_MAD) if env_name == "mad" else make("arithmetic", count=3, max_turns=5)  # S = 217
    params, policy_fn, _ = _tiny_network(env)
    problem = env.sample_problem(jax.random.key(5))

    @jax.jit
    def both(problem):
        graph, full = _full_graph_values(env, problem, policy_fn, params)
        small_chunks = reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params,
                                        graph=graph, chunk_size=64)
        reached = solver.positions_reached(graph, solver.start_position(env, problem))
        return graph, full, reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params,
                                             graph=graph), small_chunks, reached

    graph, full, (values, evals), (chunked, chunked_evals), reached = both(problem)
    reached = np.asarray(reached)
    np.testing.assert_allclose(np.asarray(values.v)[:, reached], np.asarray(full.v)[:, reached], atol=2e-6)
    np.testing.assert_allclose(np.asarray(values.q)[:, reached], np.asarray(full.q)[:, reached], atol=2e-6)
    # many calls of 64 rows: the same values (a row's logits may differ in the last bit with the batch size)
    np.testing.assert_allclose(np.asarray(chunked.q), np.asarray(values.q), atol=1e-6)
    rows = np.concatenate([np.asarray(graph.observation), np.asarray(graph.legal)], axis=1)[reached]
    distinct = len(np.unique(rows, axis=0))
    assert int(evals) == int(chunked_evals) == distinct
    if env_name == "arithmetic":  # several paths give the same live numbers: fewer evaluations
        assert distinct < reached.sum()
