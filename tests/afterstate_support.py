"""Helpers shared by the afterstate tests (tests/test_afterstate.py, tests/test_afterstate_lookahead.py)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.afterstate import afterstate_observations
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.solver import build_graph, positions_reached, start_position
from jaxcredit.solver_values import network_policy_probs


def perturbed(network, seed=0):
    """Parameters whose scores differ between afterstates (the action head starts at zero)."""
    params = network.init_fn(jax.random.key(seed))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(seed + 1), head["kernel"].shape)
    return params


def graph_and_stepped_probs(env, network, params, *, lookahead=0):
    """`(gathered, stepped, evals)` on one sampled problem's reached positions: the solver's `network`
    policy probabilities from the graph, float `[T, R, A]` for turns left 1..T, beside the policy
    applied to afterstates computed by stepping each position at each turn, and the graph path's
    count of network evaluations."""
    problem = env.sample_problem(jax.random.key(5))
    graph = build_graph(env, problem)
    start = start_position(env, problem)
    reached = np.nonzero(np.asarray(positions_reached(graph, start)))[0]

    @jax.jit
    def both(params):
        probs, evals = network_policy_probs(env, problem, graph, network.policy_fn, params, horizon=env.max_turns,
                                            start=start)

        def direct(turns_left):
            states = jax.vmap(lambda s: env.position(problem, s, turn=env.max_turns - turns_left)[0])(reached)
            logits = network.policy_fn(params, afterstate_observations(env, states, lookahead=lookahead),
                                       states.legal_action_mask)
            return action_probabilities(logits, states.legal_action_mask)

        return probs[1:, reached], jax.vmap(direct)(jnp.arange(1, env.max_turns + 1)), evals

    gathered, stepped, evals = both(params)
    return np.asarray(gathered), np.asarray(stepped), int(evals), reached.size
