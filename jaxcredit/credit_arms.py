"""The credit-arm registry: one function per arm, giving its advantages and its ledger charge.

An arm is what a training run's `credit` names. `CREDIT_ARMS[name].compute(context, trajectory,
problems, key)` returns a `CreditResult`: the advantages `[B, T]` (from `jaxcredit.credit`), the
critic's training batch (critic arm only), the work it spent as `Counts` per ledger account and,
for the arms that enumerate the graph (exact, solver), the exact value of every legal action at
each step's state (what the value-target objectives of `jaxcredit.objectives` train on).
The trainer records the charge as returned; the command line takes its `--credit` choices from
`CREDIT_NAMES`; analysis reads each arm's account and description from here.

| arm | advantage | work charged (account) |
| --- | --- | --- |
| `outcome` | episode return normalised in its group | none |
| `anchor` | GRPO + ω x step advantage among same-position steps (GiGPO) | none |
| `mc` | K branch continuations: `td` `r + V̂' - V̂`, `q` `Q̂ - Σ π Q̂` | continuations (`label`) |
| `progress-soft`, `progress-hard` | `Φ(h') - Φ(h)`, Φ from N continuations (Math-Shepherd) | continuations (`label`) |
| `progress-model` | `Φ(h') - Φ(h)`, Φ a value head fitted on the episodes' outcomes | none (main attempts' own) |
| `exact` | `Q^π - V^π` of the current network, from the solver | enumeration + network (`label`) |
| `solver` | `w (Q^μ - V^μ)` of a fixed μ (uniform, optimal, soft) | enumeration (`label`) |
| `critic` | GAE over a learned value head | its continuation labels (`critic`) |
| `predictor` | `Q̂(s, a_t) - Σ π Q̂(s, ·)` of a frozen model fitted offline | its one dataset (`predictor`), once |

An arm with a `prepare` function (today `predictor`) does one-time work before the first
iteration: `arm.prepare(context, key, draw_problem, heldout_problems)` returns a `Preparation`,
the arm's fixed state (kept in the trainer's state, checkpointed, passed back as
`context.prepared`) and its charge, recorded once.

Hyper-parameters come from `context.config`, any object with the `TrainConfig` field names an
arm reads (`attempts_per_problem`, `outcome_baseline`, `mc_variant`, `mc_continuations`, ...).
The counterfactual arms (`exact`, `solver`, `mc`) read `replacement`, the distribution whose
expected action value is the baseline (`credit.REPLACEMENTS`; `on-policy` where a config has no
such field); `check_replacement_option` is its one check.

Shape letters: P problems, G attempts per problem, B = P * G episodes, T turns, A actions,
L observation length, M critic label states, E held-out states.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcredit import solver
from jaxcredit.afterstate import input_env_steps, policy_observations
from jaxcredit.credit import (
    anchor_advantage,
    branch_action_values,
    branch_null_values,
    branch_state_progress,
    branch_state_values,
    check_replacement,
    gae_advantage,
    mc_advantage,
    outcome_advantage,
    progress_advantage,
    replacement_value,
    solver_advantage,
    solver_menu_values,
)
from jaxcredit.env import Environment
from jaxcredit.ledger import Counts
from jaxcredit.policy import PolicyConfig, PolicyFunctions, make_policy
from jaxcredit.policy_fn import PolicyFn, action_probabilities
from jaxcredit.predictor import (
    build_dataset,
    fit_predictor,
    heldout_accuracy,
    predicted_action_values,
    visited_states,
)
from jaxcredit.rollout import Trajectory, branch_returns
from jaxcredit.solver_values import network_values_batch, reference_values


class CreditContext(NamedTuple):
    """What every arm may read: the environment, the policy and its parameters, hyper-parameters.

    `config` has the `TrainConfig` field names an arm reads; `value_fn(params, observation,
    legal) -> [...]` is the critic head (critic arm only); `sharding` splits branch
    continuations over devices (None: one device); `prepared` is the arm's fixed state from its
    `prepare` (predictor arm only).
    """

    env: Environment
    policy_fn: PolicyFn
    params: Any
    config: Any
    value_fn: Any = None
    sharding: Any = None
    prepared: Any = None


class Preparation(NamedTuple):
    """An arm's one-time work before training.

    Attributes:
      state: the arm's fixed pytree of arrays (its `summary`, if any, a dict of float32 scalars the
        run directory records).
      charge: `{account: Counts}`, what the work cost, recorded once.
    """

    state: Any
    charge: dict


class CreditResult(NamedTuple):
    """One arm's output for one iteration.

    Attributes:
      advantage: float32 `[B, T]`, 0 on non-live steps.
      critic_batch: `(observation [M, P], legal [M, A], target [M], valid [M])` for the arms that
        train the value head (critic, progress-model; `P`: what the policy reads,
        `afterstate.policy_observations`), else None.
      charge: `{account: Counts}`, the work spent, per ledger account (empty: no work).
      action_values: float32 `[B, T, A]`, the exact value of every legal action at each step's
        state (`credit.solver_menu_values`; what the value-target objectives train on) for the arms
        that enumerate the graph (exact, solver), else None. It costs nothing beyond `charge`.
    """

    advantage: jax.Array
    critic_batch: Any
    charge: dict
    action_values: Any = None


@dataclasses.dataclass(frozen=True)
class CreditArm:
    """A registered arm: its name, the ledger account its work goes to (None: it spends none),
    whether it enumerates each problem's graph (then the environment must be small enough),
    a one-line description, the function computing it, and optionally the one-time work before
    training, `prepare(context, key, draw_problem, heldout_problems) -> Preparation`."""

    name: str
    account: str | None
    enumerates: bool
    description: str
    compute: Callable[[CreditContext, Trajectory, Any, jax.Array], CreditResult]
    prepare: Callable[..., Preparation] | None = None


def _zero() -> jax.Array:
    return jnp.zeros((), jnp.int32)


def outcome_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Outcome credit (`credit.outcome_advantage` with `config.outcome_baseline`); no label work."""
    c = context.config
    advantage = outcome_advantage(trajectory, group_size=c.attempts_per_problem, baseline=c.outcome_baseline)
    return CreditResult(advantage, None, {})


def anchor_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Anchor-state credit (`credit.anchor_advantage`, `config.anchor_weight`, `anchor_discount`); no label work."""
    c = context.config
    advantage = anchor_advantage(trajectory, group_size=c.attempts_per_problem, step_weight=c.anchor_weight,
                                 discount=c.anchor_discount)
    return CreditResult(advantage, None, {})


REPLACEMENT_ARMS = ("exact", "solver", "mc")  # the counterfactual arms, whose baseline `config.replacement` picks


def check_replacement_option(env: Environment, *, credit: str, replacement: str, mc_variant: str = "q",
                             objective: str = "pg") -> None:
    """The one check of the `replacement` option (`TrainConfig.replacement`; `credit.REPLACEMENTS`):
    raises `ValueError` naming the problem. `on-policy` (the default) suits every arm; another
    replacement needs a counterfactual arm (`REPLACEMENT_ARMS`) and the policy-gradient objective
    (value-target objectives use no advantage), `uniform` under `mc` needs every legal action's
    value (`mc_variant` `q`), and `null` needs an environment with a null action."""
    try:
        check_replacement(replacement, env)
    except ValueError as error:
        raise ValueError(f"config.replacement: {error}") from None
    if replacement == "on-policy":
        return
    if credit not in REPLACEMENT_ARMS:
        raise ValueError(f"config.replacement {replacement!r} applies to credit {', '.join(REPLACEMENT_ARMS)}; "
                         f"credit {credit!r} has no replacement: leave it 'on-policy'")
    if credit == "mc" and mc_variant == "td" and replacement == "uniform":
        raise ValueError("config.replacement 'uniform' under credit 'mc' needs the value of every legal action: "
                         "set mc_variant 'q'")
    if objective != "pg":
        raise ValueError(f"config.replacement {replacement!r} changes the advantage, which objective {objective!r} "
                         f"does not use; leave it 'on-policy'")


def _replacement(context: CreditContext, credit: str) -> str:
    """`config.replacement` (`on-policy` for a config without the field), checked for `credit`."""
    c = context.config
    replacement = getattr(c, "replacement", "on-policy")
    check_replacement_option(context.env, credit=credit, replacement=replacement,
                             mc_variant=getattr(c, "mc_variant", "q"), objective=getattr(c, "objective", "pg"))
    return replacement


def mc_td_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`r_t + V̂(s_{t+1}) - V̂(s_t)` from `config.mc_continuations` continuations of every state; consumes `key`.
    With `config.replacement` `null`, `V̂(s_t)` is replaced by `Q̂(s_t, null)` from as many continuations
    after the null action (`credit.branch_null_values`), charged too."""
    replacement = _replacement(context, "mc")
    k = context.config.mc_continuations
    if replacement == "on-policy":
        values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, key,
                                             num_continuations=k, sharding=context.sharding)
        return CreditResult(mc_advantage(trajectory, state_values=values), None, {"label": counts})
    value_key, null_key = jax.random.split(key)
    values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, value_key,
                                         num_continuations=k, sharding=context.sharding)
    null_values, null_counts = branch_null_values(context.env, context.policy_fn, context.params, trajectory,
                                                  null_key, num_continuations=k, sharding=context.sharding)
    advantage = mc_advantage(trajectory, state_values=values, baseline=null_values)
    return CreditResult(advantage, None, {"label": counts + null_counts})


def q_advantage(context: CreditContext, trajectory: Trajectory, q_hat: jax.Array, params: Any = None,
                replacement: str = "on-policy") -> jax.Array:
    """float32 `[B, T]`: `Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)`, π the policy network
    with `params` (None: the current `context.params`), from action values `q_hat` `[B, T, A]`
    (`credit.mc_advantage`). Another `replacement` subtracts `E_{a' ~ ρ}[Q̂(s_t, a')]` instead
    (`credit.replacement_value`); a refused `a_t` is still valued `r_t + V̂(s_{t+1})`."""
    params = context.params if params is None else params
    logits = context.policy_fn(params, trajectory.observation, trajectory.legal_action_mask)
    v_now = jnp.sum(action_probabilities(logits, trajectory.legal_action_mask) * q_hat, axis=-1)
    v_hat = jnp.concatenate([v_now, jnp.zeros_like(v_now[:, :1])], axis=1)
    baseline = None if replacement == "on-policy" else replacement_value(
        trajectory, q_hat, replacement=replacement, on_policy_value=v_now, null_action=context.env.null_action)
    return mc_advantage(trajectory, state_values=v_hat, action_values=q_hat, baseline=baseline)


def mc_q_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)` (unbiased from the same continuations,
    no second batch), `config.mc_continuations` per legal action; consumes `key`. `config.replacement`
    picks the baseline from the same `Q̂` (`uniform`: their mean; `null`: the null action's)."""
    replacement = _replacement(context, "mc")
    q_hat, counts = branch_action_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=context.config.mc_continuations,
                                         sharding=context.sharding)
    return CreditResult(q_advantage(context, trajectory, q_hat, replacement=replacement), None, {"label": counts})


def mc_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Monte Carlo credit, the `config.mc_variant` (`td` or `q`) variant."""
    variant = mc_q_arm if context.config.mc_variant == "q" else mc_td_arm
    return variant(context, trajectory, problems, key)


def _progress_arm(kind: str) -> Callable[[CreditContext, Trajectory, Any, jax.Array], CreditResult]:
    def progress_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
        progress, counts = branch_state_progress(context.env, context.policy_fn, context.params, trajectory, key,
                                                 num_continuations=context.config.progress_continuations,
                                                 kind=kind, sharding=context.sharding)
        return CreditResult(progress_advantage(trajectory, progress=progress), None, {"label": counts})

    progress_arm.__doc__ = (f"Math-Shepherd's {kind} progress credit `Φ(h_{{t+1}}) - Φ(h_t)` "
                            f"(`credit.progress_advantage`), `Φ` from `config.progress_continuations` continuations "
                            f"of every state under the current policy (`credit.branch_state_progress`, "
                            f"kind {kind!r}); consumes `key`; the continuations are charged to `label`.")
    progress_arm.__name__ = progress_arm.__qualname__ = f"progress_{kind}_arm"
    return progress_arm


progress_soft_arm = _progress_arm("soft")
progress_hard_arm = _progress_arm("hard")


def _graphs(env: Environment, problems: Any):
    """`(graphs [P], enumeration Counts)`: every problem's graph and what enumerating it costs:
    one env step per legal move of a position reached from the start (refusals cost nothing)."""
    graphs = jax.vmap(lambda p: solver.build_graph(env, p))(problems)
    starts = jax.vmap(lambda p: solver.start_position(env, p))(problems)
    steps = jnp.sum(jax.vmap(solver.enumeration_env_steps)(graphs, starts), dtype=jnp.int32)
    return graphs, starts, Counts(steps, _zero(), _zero())


def exact_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q^π - V^π` of the current network from the solver (the values `reference_values(policy="network")`
    gives, all problems' network rows in shared chunks), charged the enumeration and the network
    evaluations done (reached, distinct rows). `config.replacement` picks the baseline in place of `V^π`."""
    env, c = context.env, context.config
    replacement = _replacement(context, "exact")
    graphs, starts, counts = _graphs(env, problems)
    # the problems' distinct rows share the network's chunks (what reference_values does one problem at a time)
    values, evals = network_values_batch(env, problems, graphs, context.policy_fn, context.params,
                                         horizon=env.max_turns, starts=starts)
    counts = counts.replace(policy_evals=evals)
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem,
                                 replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def solver_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`config.solver_weight x (Q^μ - V^μ)` under the fixed `config.solver_policy` μ (its ties broken by
    `config.solver_tie_break`; plus the outcome advantage with `config.solver_add_outcome`), charged the
    enumeration. `config.replacement` picks the baseline in place of `V^μ`."""
    env, c = context.env, context.config
    replacement = _replacement(context, "solver")
    graphs, _, counts = _graphs(env, problems)
    def values_of(problem, graph):
        return reference_values(env, problem, policy=c.solver_policy, graph=graph, temperature=c.solver_temperature,
                                tie_break=c.solver_tie_break, tie_break_discount=c.solver_tie_break_discount)[0]

    values = jax.vmap(values_of)(problems, graphs)
    outcome = c.outcome_baseline if c.solver_add_outcome else None
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem, weight=c.solver_weight,
                                 outcome=outcome, replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def critic_values(context: CreditContext, trajectory: Trajectory) -> jax.Array:
    """float32 `[B, T+1]`: the value head at every state before an action and at the final states."""
    final = trajectory.final_state
    v_steps = context.value_fn(context.params, trajectory.observation, trajectory.legal_action_mask)
    v_final = context.value_fn(context.params, policy_observations(context.env, context.policy_fn, final),
                               final.legal_action_mask)
    return jnp.concatenate([v_steps, v_final[:, None]], axis=1)


def critic_labels(context: CreditContext, trajectory: Trajectory, key: jax.Array):
    """`(critic_batch, counts)`: Monte Carlo value labels (`config.critic_continuations` continuations)
    for `config.critic_label_states` states drawn from the live steps; consumes `key`."""
    c = context.config
    select_key, branch_key = jax.random.split(key)
    flat_live = trajectory.live.reshape(-1)
    num = min(c.critic_label_states, flat_live.shape[0])
    chosen = jax.random.choice(select_key, flat_live.shape[0], (num,), replace=False,
                               p=flat_live / jnp.maximum(flat_live.sum(), 1))
    states = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:])[chosen], trajectory.states)
    result = branch_returns(context.env, context.policy_fn, context.params, states, branch_key,
                            num_continuations=c.critic_continuations, sharding=context.sharding)
    observation = policy_observations(context.env, context.policy_fn, states)  # what the value head reads
    counts = result.counts.replace(afterstate_env_steps=result.counts.afterstate_env_steps
                                   + input_env_steps(context.policy_fn, states))
    return (observation, states.legal_action_mask, result.mean, result.valid), counts


def critic_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """GAE (`config.critic_lambda`) over the learned value head; its labels are charged to `critic`."""
    values = jax.lax.stop_gradient(critic_values(context, trajectory))
    advantage = gae_advantage(trajectory, state_values=values, lam=context.config.critic_lambda)
    critic_batch, counts = critic_labels(context, trajectory, key)
    return CreditResult(advantage, critic_batch, {"critic": counts})


def progress_model_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Learned progress: `r_t + Φ_θ(s_{t+1}) - Φ_θ(s_t)` (`credit.progress_advantage`), `Φ_θ` the network's
    value head fitted, as a process reward model is, on the policy's own episodes: every live state's
    target is its return to go (the episode's outcome, in environments that reward only the end).
    The critic batch is every step of the trajectory (`M = B * T`, valid where live); nothing is
    charged: the targets are the main attempts' own outcomes, already counted. `key` is unused."""
    values = jax.lax.stop_gradient(critic_values(context, trajectory))
    advantage = progress_advantage(trajectory, progress=values)
    to_go = jnp.cumsum(trajectory.reward[:, ::-1], axis=1)[:, ::-1]

    def flat(x):
        return x.reshape(-1, *x.shape[2:])

    critic_batch = (flat(trajectory.observation), flat(trajectory.legal_action_mask), flat(to_go),
                    flat(trajectory.live))
    return CreditResult(advantage, critic_batch, {})


def predictor_network(context: CreditContext) -> PolicyFunctions:
    """The predictor's model: a fresh copy of the policy Transformer (`config.d_model`, ...) whose
    action head, read on legal actions, is `Q̂(s, ·)`."""
    c = context.config
    return make_policy(PolicyConfig(d_model=c.d_model, num_layers=c.num_layers, num_heads=c.num_heads,
                                    mlp_dim=c.mlp_dim), context.env)


def predictor_prepare(context: CreditContext, key: jax.Array, draw_problem: Callable[[jax.Array], Any],
                      heldout_problems: Any = None) -> Preparation:
    """The predictor's dataset and model, once: `config.predictor_states` training problems
    (`draw_problem(key)`), one state each visited by the current (initial) policy, every legal action
    labelled by `config.predictor_continuations` continuations (`predictor.build_dataset`), then
    `config.predictor_steps` Adam steps (`config.predictor_learning_rate`). With `heldout_problems`
    (leaves `[E, ...]`), the summary holds `predictor.heldout_accuracy` too. Charged to `predictor`."""
    c = context.config
    network = predictor_network(context)
    init_key, problem_key, visit_key, data_key = jax.random.split(key, 4)
    problems = jax.vmap(draw_problem)(jax.random.split(problem_key, c.predictor_states))
    if heldout_problems is not None:  # one rollout visits both; only the dataset's episodes are charged
        problems = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), problems, heldout_problems)
    states, visits = visited_states(context.env, context.policy_fn, context.params, problems, visit_key)
    dataset, heldout = (jax.tree_util.tree_map(lambda x: x[:c.predictor_states], states),
                        jax.tree_util.tree_map(lambda x: x[c.predictor_states:], states))
    data, counts = build_dataset(context.env, context.policy_fn, context.params, dataset, data_key,
                                 num_continuations=c.predictor_continuations, sharding=context.sharding)
    counts = counts + jax.tree_util.tree_map(lambda x: jnp.sum(x[:c.predictor_states], dtype=jnp.int32), visits)
    q_params, losses = fit_predictor(network.policy_fn, network.init_fn(init_key), data, steps=c.predictor_steps,
                                     learning_rate=c.predictor_learning_rate)
    summary = {"dataset_states": jnp.asarray(c.predictor_states, jnp.float32),
               "dataset_pairs": data.valid.sum().astype(jnp.float32),
               "fit_loss_first": losses[0], "fit_loss_last": losses[-1]}
    if heldout_problems is not None:
        summary.update(heldout_accuracy(context.env, context.policy_fn, context.params, network.policy_fn, q_params,
                                        heldout_problems, heldout))
    state = {"params": q_params, "labelling_params": context.params, "summary": summary}
    return Preparation(state=state, charge={"predictor": counts})


def predictor_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q̂(s_t, a_t) - Σ_a π₀(a|s_t) Q̂(s_t, a)` from the frozen predictor (`context.prepared`, made by
    `predictor_prepare`): the advantage under the labelling policy π₀ (the initial network, whose
    values the model learned), a fixed label per (state, action) like the solver arm's `Q^μ - V^μ`;
    no work, nothing charged per iteration."""
    if context.prepared is None:
        raise ValueError("credit arm 'predictor' needs its prepared model (CreditContext.prepared); "
                         "the trainer's init makes it")
    q_fn = predictor_network(context).policy_fn  # a token network: it reads the observation tokens
    q_hat = predicted_action_values(q_fn, context.prepared["params"], trajectory.states.observation,
                                    trajectory.legal_action_mask)
    advantage = q_advantage(context, trajectory, q_hat, params=context.prepared["labelling_params"])
    return CreditResult(jax.lax.stop_gradient(advantage), None, {})


CREDIT_ARMS = {arm.name: arm for arm in (
    CreditArm("outcome", None, False, "episode return normalised within its group of attempts", outcome_arm),
    CreditArm("mc", "label", False, "Monte Carlo action credit from K branch continuations (VinePPO)", mc_arm),
    CreditArm("exact", "label", True, "exact Q - V of the current network, from the solver", exact_arm),
    CreditArm("solver", "label", True, "exact Q - V of a fixed reference or optimal policy (CAST-style)",
              solver_arm),
    CreditArm("anchor", None, False, "GRPO plus a step advantage among same-position steps (GiGPO)", anchor_arm),
    CreditArm("critic", "critic", False, "GAE over a learned value head trained on continuation labels",
              critic_arm),
    CreditArm("predictor", "predictor", False,
              "action values from a frozen model fitted once, offline, on a fixed dataset of Monte Carlo labels",
              predictor_arm, prepare=predictor_prepare),
    CreditArm("progress-soft", "label", False,
              "progress Φ(h') - Φ(h), Φ the fraction of N continuations that succeed (Math-Shepherd soft)",
              progress_soft_arm),
    CreditArm("progress-hard", "label", False,
              "progress Φ(h') - Φ(h), Φ whether any of N continuations succeeds (Math-Shepherd hard)",
              progress_hard_arm),
    CreditArm("progress-model", None, False,
              "progress Φ(h') - Φ(h), Φ a value head fitted on the policy's own episodes' outcomes (a learned PRM)",
              progress_model_arm),
)}
CREDIT_NAMES = tuple(CREDIT_ARMS)
LABEL_FREE_CREDITS = tuple(name for name, arm in CREDIT_ARMS.items() if arm.account is None)


def credit_arm(name: str) -> CreditArm:
    """The arm called `name`; raises `ValueError` listing the choices."""
    if name not in CREDIT_ARMS:
        raise ValueError(f"unknown credit arm {name!r}; choices: {', '.join(CREDIT_NAMES)}")
    return CREDIT_ARMS[name]
