"""The offline action-value predictor: one fixed dataset of Monte Carlo labels, one model fitted once.

The `predictor` credit arm (`jaxcredit.arms.predictor`): before training, it collects states
visited by the initial policy π₀ on training problems, labels EVERY legal action of each state
with the mean return of K continuations under a labelling policy (π₀, or a run's final policy:
`load_labeller`), fits a model of `Q(s, a)` to those labels, and freezes
it. During training the model's predictions are the action labels. Everything the labels cost is
charged once, to the ledger's `predictor` account. `visited_states`, `build_dataset`,
`fit_predictor` (full-batch Adam), `predicted_action_values` and `prepare_predictor` (all of it,
once) build it; `heldout_accuracy` scores it against exact advantages. The model is a fresh copy
of the policy Transformer, whose zero-initialised action head predicts 0 before fitting.
See docs/training.md#the-offline-action-value-predictor-predictor.

Shape letters: N states, A actions, L observation length, K continuations, E held-out states,
V validation problems.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.afterstate import input_steps_per_state, policy_observations
from jaxcredit.env import Environment, State
from jaxcredit.ledger import Counts
from jaxcredit.policy_fn import PolicyFn, action_probabilities
from jaxcredit.rollout import branch_returns, rollout
from jaxcredit.solver_values import reference_values
from jaxcredit.value_fit import full_batch_adam

PREDICTOR_FILE = "predictor.json"  # a run directory's record of the dataset and the held-out accuracy, per seed
PREDICTOR_COUNTS = ("dataset_states", "dataset_pairs", "states", "pairs", "sign_pairs")  # integers in that file
SIGN_TOLERANCE = 1e-6  # |exact advantage| at or below this has no sign and is left out of the sign agreement


class PredictorData(NamedTuple):
    """The fixed dataset: `observation` int32 `[N, L]`, `legal` bool `[N, A]`, `label` float32
    `[N, A]` (the mean return of K continuations after forcing each legal action; 0 elsewhere) and
    `valid` bool `[N, A]` (a labelled pair: live state, legal action)."""

    observation: jax.Array
    legal: jax.Array
    label: jax.Array
    valid: jax.Array


def visited_states(env: Environment, policy_fn: PolicyFn, params: Any, problems: Any,
                   key: jax.Array) -> tuple[State, Counts]:
    """`(states [N], counts [N])`: one episode of each problem (leaves `[N, ...]`) under the policy,
    and one state drawn uniformly among that episode's live steps; consumes `key`. `counts` is each
    episode's work (`rollout`'s rule: every live step is an env step and a policy evaluation, up to
    the episode's end, not only up to the chosen state); sum what is charged."""
    play_key, pick_key = jax.random.split(key)
    starts = jax.vmap(env.init_problem)(problems)
    trajectory, _ = rollout(env, policy_fn, params, starts, play_key, num_turns=env.max_turns)
    num_live = trajectory.live.sum(axis=1, dtype=jnp.int32)  # live steps are a prefix; a fresh start is live
    step = jnp.floor(jax.random.uniform(pick_key, num_live.shape) * num_live).astype(jnp.int32)
    step = jnp.clip(step, 0, jnp.maximum(num_live - 1, 0))
    rows = jnp.arange(num_live.shape[0])
    states = jax.tree_util.tree_map(lambda x: x[rows, step], trajectory.states)
    input_steps = jnp.where(trajectory.live, input_steps_per_state(env, policy_fn, trajectory.states), 0)
    return states, Counts(num_live, num_live, (~starts.done).astype(jnp.int32),
                          afterstate_env_steps=input_steps.sum(axis=1, dtype=jnp.int32))


def build_dataset(env: Environment, policy_fn: PolicyFn, params: Any, states: State, key: jax.Array, *,
                  num_continuations: int, sharding: Any = None) -> tuple[PredictorData, Counts]:
    """`(data, counts)`: every legal action of each of `states` (leaves `[N, ...]`, e.g. from
    `visited_states`) labelled by `num_continuations` continuations under the policy
    (`branch_returns` with forced first actions); consumes `key`. `counts` is the continuations'
    work: its `env_steps` minus its `policy_evals` is the number of continuations (a forced step
    costs no evaluation)."""
    result = branch_returns(env, policy_fn, params, states, key, num_continuations=num_continuations,
                            force_first_actions=True, sharding=sharding)
    data = PredictorData(observation=states.observation, legal=states.legal_action_mask, label=result.mean,
                         valid=result.valid)
    return data, result.counts


def predicted_action_values(q_fn: PolicyFn, q_params: Any, observation: jax.Array, legal: jax.Array) -> jax.Array:
    """float32 `[..., A]`: the model's `Q̂(s, a)` on legal actions, 0 on illegal ones."""
    return jnp.where(legal, q_fn(q_params, observation, legal), 0.0)


def fit_predictor(q_fn: PolicyFn, q_params: Any, data: PredictorData, *, steps: int,
                  learning_rate: float) -> tuple[Any, jax.Array]:
    """`(params, loss float32 [steps])`: `steps` full-batch Adam steps (gradients clipped to norm 1)
    on the mean squared error of `Q̂` over the dataset's valid (state, action) pairs."""
    count = jnp.maximum(data.valid.sum(), 1)

    def loss(params):
        error = jnp.where(data.valid, predicted_action_values(q_fn, params, data.observation, data.legal) - data.label,
                          0.0)
        return jnp.sum(error**2) / count

    return full_batch_adam(loss, q_params, steps=steps, learning_rate=learning_rate, max_grad_norm=1.0)


def _pearson(x: jax.Array, y: jax.Array, weight: jax.Array) -> jax.Array:
    """float32 `[]`: the Pearson correlation of `x` and `y` over the pairs where `weight` (0/1) is 1;
    0 when either side is constant there (a model predicting one value correlates with nothing)."""
    n = jnp.maximum(weight.sum(), 1.0)
    dx = x - jnp.sum(weight * x) / n
    dy = y - jnp.sum(weight * y) / n
    sxy, sxx, syy = (jnp.sum(weight * a * b) for a, b in ((dx, dy), (dx, dx), (dy, dy)))
    ok = (sxx > 1e-12) & (syy > 1e-12)
    return jnp.where(ok, sxy / jnp.sqrt(jnp.where(ok, sxx * syy, 1.0)), 0.0)


def heldout_accuracy(env: Environment, policy_fn: PolicyFn, params: Any, q_fn: PolicyFn, q_params: Any,
                     problems: Any, states: State) -> dict:
    """The model's accuracy on held-out `states` (leaves `[E, ...]`, one per problem of `problems`,
    e.g. from `visited_states`) against exact values of the labelling policy (`policy_fn`, `params`).

    Per (state, legal action) pair, the predicted advantage `Q̂(s, a) − Σ_b π(b|s) Q̂(s, b)` is compared
    with the exact `Q^π(s, a) − V^π(s)` (at the state's turns left and position). Returns float32 `[]`
    scalars: `pairs` (n), `advantage_pearson`, `sign_pairs` (pairs whose exact advantage exceeds
    `SIGN_TOLERANCE` in size), `sign_agreement` (the share of those whose predicted advantage has the
    same sign; a 0 prediction agrees with neither), `q_pearson` (`Q̂` against exact `Q`), `q_rmse`,
    and `states` (E). Not charged: it measures, like the evaluation.
    """
    def exact(problem, state):
        values, _ = reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params)
        turns_left = env.max_turns - state.turn
        position = env.position_index(state)
        return values.q[turns_left, position], values.v[turns_left, position]

    q_exact, v_exact = jax.lax.map(lambda args: exact(*args), (problems, states))  # [E, A], [E]
    legal = states.legal_action_mask & ~states.done[:, None]
    q_hat = predicted_action_values(q_fn, q_params, states.observation, legal)
    probs = action_probabilities(policy_fn(params, policy_observations(env, policy_fn, states), legal), legal)
    predicted = q_hat - jnp.sum(probs * q_hat, axis=-1, keepdims=True)
    target = q_exact - v_exact[:, None]
    weight = legal.astype(jnp.float32)
    signed = weight * (jnp.abs(target) > SIGN_TOLERANCE)
    agree = jnp.sign(predicted) == jnp.sign(target)
    pairs = weight.sum()
    return {
        "states": jnp.asarray(states.turn.shape[0], jnp.float32),
        "pairs": pairs,
        "advantage_pearson": _pearson(predicted, target, weight),
        "sign_pairs": signed.sum(),
        "sign_agreement": jnp.sum(signed * agree) / jnp.maximum(signed.sum(), 1.0),
        "q_pearson": _pearson(q_hat, q_exact, weight),
        "q_rmse": jnp.sqrt(jnp.sum(weight * (q_hat - q_exact) ** 2) / jnp.maximum(pairs, 1.0)),
    }


class Labeller(NamedTuple):
    """A trained policy that labels the predictor's dataset (`load_labeller`).

    Attributes:
      path: the policy checkpoint read (`<run>/policies/seed-<i>`).
      params: its parameter pytree (host arrays, the run's network shapes).
      cost: `Counts` of the run that trained it, for that seed: its total env steps, policy
        evaluations and main episodes (charged once with the dataset).
      final_success: its greedy validation success at the end of that run.
    """

    path: str
    params: Any
    cost: Counts
    final_success: float


def load_labeller(run_dir: str, *, seed_index: int, env: Environment, params: Any) -> Labeller:
    """The final policy of seed `seed_index` of the training run `run_dir`, checked to be a network
    of this run's shapes (`params`, a pytree like the one it replaces) trained on the same
    environment (`env`: its name and configuration). Raises `ValueError` in one line naming what
    is missing or different. The run's `summary.json` gives what its training cost."""
    from jaxcredit.checkpoint import load_policy, policy_checkpoint_path  # orbax only where a labeller is read

    where = f"credit_options.labeller of credit 'predictor' ({run_dir!r})"
    summary_path = os.path.join(run_dir, "summary.json")
    if not os.path.isfile(summary_path):
        raise ValueError(f"{where}: not a finished training run (no summary.json); the labeller's training is "
                         "charged from it")
    with open(summary_path) as handle:
        seeds = json.load(handle).get("seeds", [])
    if not 0 <= seed_index < len(seeds):
        raise ValueError(f"{where}: credit_options.labeller_seed {seed_index} is not one of its {len(seeds)} seeds")
    path = policy_checkpoint_path(run_dir, seed_index=seed_index)
    if not os.path.isdir(path) or path == run_dir:
        raise ValueError(f"{where}: it holds no final policy for seed {seed_index} (policies/seed-{seed_index})")
    _, labeller_params, info = load_policy(path)
    if info["env_name"] != env.name or info["env_config"] != json.loads(json.dumps(env.config())):
        raise ValueError(f"{where}: trained on {info['env_name']} {info['env_config']}, not on this run's "
                         f"{env.name} {env.config()}")
    shapes = jax.tree_util.tree_map(lambda x: tuple(np.shape(x)), labeller_params)
    expected = jax.tree_util.tree_map(lambda x: tuple(np.shape(x)), params)  # one seed's (traced under vmap)
    if shapes != expected:
        raise ValueError(f"{where}: its network is not this run's (d_model, num_layers, num_heads and mlp_dim "
                         "must match)")
    row = seeds[seed_index]
    cost = Counts(*(jnp.asarray(int(row[k]), jnp.int32) for k in ("total_env_steps", "total_policy_evals",
                                                                    "main_episodes")))
    return Labeller(path, labeller_params, cost, float(row["final_success"]))


def scored_problems(validation_problems: Any, *, eval_states: int):
    """The `eval_states` problems (leaves `[E, ...]`) the predictor is scored on: the validation
    set's (leaves `[V, ...]`, host arrays), repeated in order if it is smaller; None when 0 are
    asked for or there is no validation set."""
    if eval_states == 0 or validation_problems is None:
        return None
    size = jax.tree_util.tree_leaves(validation_problems)[0].shape[0]
    index = np.arange(eval_states) % size  # static: the validation set's leaves are host (NumPy) arrays
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x[index]), validation_problems)


def prepare_predictor(env: Environment, policy_fn: PolicyFn, params: Any, network: Any, key: jax.Array,
                      draw_problem: Callable[[jax.Array], Any], *, num_states: int, num_continuations: int,
                      steps: int, learning_rate: float, heldout_problems: Any = None,
                      sharding: Any = None) -> tuple[dict, Counts]:
    """`(state, counts)`: the predictor's dataset and model, once. `num_states` training problems
    (`draw_problem(key)`), one state each visited by the labelling policy (`policy_fn`, `params`),
    every legal action labelled by `num_continuations` continuations (`build_dataset`), then `steps`
    Adam steps (`learning_rate`) fitting `network` (a `PolicyFunctions`: `init_fn`, `policy_fn`);
    consumes `key`. `state` is `{"params": the model's, "labelling_params": params, "summary":
    float32 scalars}`; with `heldout_problems` (leaves `[E, ...]`, e.g. from `scored_problems`) the
    summary holds `heldout_accuracy` on them too, their episodes visited in the same rollout and not
    charged. `counts` is the dataset's work: its episodes and its continuations."""
    init_key, problem_key, visit_key, data_key = jax.random.split(key, 4)
    problems = jax.vmap(draw_problem)(jax.random.split(problem_key, num_states))
    if heldout_problems is not None:  # one rollout visits both; only the dataset's episodes are charged
        problems = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), problems, heldout_problems)
    states, visits = visited_states(env, policy_fn, params, problems, visit_key)
    dataset, heldout = (jax.tree_util.tree_map(lambda x: x[:num_states], states),
                        jax.tree_util.tree_map(lambda x: x[num_states:], states))
    data, counts = build_dataset(env, policy_fn, params, dataset, data_key, num_continuations=num_continuations,
                                 sharding=sharding)
    counts = counts + jax.tree_util.tree_map(lambda x: jnp.sum(x[:num_states], dtype=jnp.int32), visits)
    q_params, losses = fit_predictor(network.policy_fn, network.init_fn(init_key), data, steps=steps,
                                     learning_rate=learning_rate)
    summary = {"dataset_states": jnp.asarray(num_states, jnp.float32),
               "dataset_pairs": data.valid.sum().astype(jnp.float32),
               "fit_loss_first": losses[0], "fit_loss_last": losses[-1]}
    if heldout_problems is not None:
        summary.update(heldout_accuracy(env, policy_fn, params, network.policy_fn, q_params, heldout_problems,
                                        heldout))
    return {"params": q_params, "labelling_params": params, "summary": summary}, counts
