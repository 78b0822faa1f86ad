"""The built-in credit arms: one function per arm giving its advantages and its ledger charge,
and each arm's options, a frozen dataclass validated here.

An arm is what a training run's `credit` names (the contract and the open registry:
`jaxcredit.arm_registry`). `CREDIT_ARMS[name].compute(context, trajectory, problems, key)`
returns a `CreditResult`: the advantages `[B, T]` (from `jaxcredit.credit`), the critic's training
batch (critic arm only), the work it spent as `Counts` per ledger account and, for the arms that
enumerate the graph (exact, solver), the exact value of every legal action at each step's state
(what the value-target objectives of `jaxcredit.objectives` train on). The trainer records the
charge as returned; analysis reads each arm's account, description and card text from here.

| arm | advantage | work charged (account) |
| --- | --- | --- |
| `outcome` | episode return normalised in its group | none |
| `anchor` | GRPO + ω x step advantage among same-position steps (GiGPO) | none |
| `mc` | K branch continuations: `td` `r + V̂' - V̂`, `q` `Q̂ - Σ π Q̂` | continuations (`label`) |
| `exact` | `Q^π - V^π` of the current network, from the solver | enumeration + network (`label`) |
| `solver` | `w (Q^μ - V^μ)` of a fixed μ (uniform, optimal, soft) | enumeration (`label`) |
| `critic` | GAE over a learned value head | its continuation labels (`critic`) |
| `predictor` | `Q̂(s, a_t) - Σ π Q̂(s, ·)` of a frozen model fitted offline | its one dataset (`predictor`), once |

Each arm's options are the dataclass beside it (`OutcomeOptions`, `AnchorOptions`, `McOptions`,
`ExactOptions`, `SolverOptions`, `CriticOptions`, `PredictorOptions`), one `option(...)` line each.

An arm with a `prepare` function (today `predictor`) does one-time work before the first
iteration: `arm.prepare(context, key, draw_problem, validation_problems)` returns a
`Preparation`, the arm's fixed state (kept in the trainer's state, checkpointed, passed back as
`context.prepared`) and its charge, recorded once.

Hyper-parameters come from `context.options` (the arm's options, `config.credit_options`) and
`context.config` (the run's shared fields: `attempts_per_problem`, the network's sizes).

Shape letters: P problems, G attempts per problem, B = P * G episodes, T turns, A actions,
L observation length, M critic label states, E held-out states, V validation problems, N seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit import solver
from jaxcredit.arm_registry import (
    CREDIT_ARMS,
    ArmOptions,
    CardText,
    CreditArm,
    CreditContext,
    CreditResult,
    NoOptions,
    Preparation,
    credit_arm,
    credit_names,
    label_free_credits,
    option,
    register_credit_arm,
)
from jaxcredit.credit import (
    anchor_advantage,
    branch_action_values,
    branch_state_values,
    gae_advantage,
    mc_advantage,
    outcome_advantage,
    solver_advantage,
    solver_menu_values,
)
from jaxcredit.env import Environment
from jaxcredit.ledger import Counts
from jaxcredit.policy import PolicyConfig, PolicyFunctions, make_policy
from jaxcredit.policy_fn import action_probabilities
from jaxcredit.predictor import (
    PREDICTOR_COUNTS,
    PREDICTOR_FILE,
    build_dataset,
    fit_predictor,
    heldout_accuracy,
    predicted_action_values,
    visited_states,
)
from jaxcredit.rollout import Trajectory, branch_returns
from jaxcredit.solver_values import network_values_batch, reference_values
from jaxcredit.validation import require_int

OUTCOME_BASELINES = ("grpo", "rloo", "mean")
MC_VARIANTS = ("td", "q")
SOLVER_POLICIES = ("uniform", "optimal", "soft")
MAX_ENUMERATED = 4_000_000  # positions x actions per problem an exact computation may enumerate
OBSERVED_STATE = ("the full environment state: the position (MAD: tape and selection; arithmetic: the live "
                  "numbers and history) and the turns left, which the values depend on even where the "
                  "network's observation does not show them")


def _zero() -> jax.Array:
    return jnp.zeros((), jnp.int32)


def _require_group(baseline: str, config) -> None:
    """`rloo` leaves one attempt out of each group: it needs `attempts_per_problem >= 2`."""
    require_int("config.attempts_per_problem", config.attempts_per_problem, 2 if baseline == "rloo" else 1)


# ----- outcome -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OutcomeOptions(ArmOptions):
    """The outcome arm's options."""

    arm = "outcome"
    baseline: str = option("grpo", choices=OUTCOME_BASELINES, legacy="outcome_baseline",
                           doc="the baseline within each problem's group of attempts: `grpo` (mean and standard "
                               "deviation), `rloo` (leave-one-out mean; needs 2 attempts) or `mean`")


def outcome_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Outcome credit (`credit.outcome_advantage` with the `baseline` option); no label work."""
    advantage = outcome_advantage(trajectory, group_size=context.config.attempts_per_problem,
                                  baseline=context.options.baseline)
    return CreditResult(advantage, None, {})


def _outcome_card(options: OutcomeOptions, config: dict) -> CardText:
    group = config.get("attempts_per_problem", 4)
    return CardText(f"every action of an episode gets its episode return, group-normalised ({options.baseline} "
                    f"over the {group} attempts of the same problem)",
                    "none: one value per episode, compared within the group of attempts on one problem",
                    "none (observed outcomes of the main attempts; no intervention)",
                    "the main attempts themselves under the current policy, to the end of the episode; reward: "
                    "the environment's success reward")


# ----- anchor ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class AnchorOptions(ArmOptions):
    """The anchor (GiGPO) arm's options."""

    arm = "anchor"
    weight: float = option(1.0, low=0.0, legacy="anchor_weight",
                           doc="the weight of the advantage within identical positions")
    discount: float = option(0.95, low=0.0, high=1.0, legacy="anchor_discount",
                             doc="the discount of step returns (GiGPO's 0.95)")


def anchor_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Anchor-state credit (`credit.anchor_advantage` with the `weight` and `discount` options); no label work."""
    o = context.options
    advantage = anchor_advantage(trajectory, group_size=context.config.attempts_per_problem, step_weight=o.weight,
                                 discount=o.discount)
    return CreditResult(advantage, None, {})


def _anchor_card(options: AnchorOptions, config: dict) -> CardText:
    return CardText(f"per action: the GRPO episode advantage + {options.weight} × the return-to-go (discount "
                    f"{options.discount}) normalised among the group's steps taken in the same position (GiGPO)",
                    "identical positions (anchor states) within the group of attempts on one problem",
                    "none (observed returns-to-go of the main attempts grouped by anchor state)",
                    "the main attempts under the current policy, to the end of the episode")


# ----- mc ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class McOptions(ArmOptions):
    """The Monte Carlo arm's options."""

    arm = "mc"
    variant: str = option("td", choices=MC_VARIANTS, legacy="mc_variant",
                          doc="`td` (`r_t + V(s_{t+1}) - V(s_t)`) or `q` (`Q(s_t, a_t) - V(s_t)`)")
    continuations: int = option(4, low=1, legacy="mc_continuations",
                                doc="K, continuations per state (`td`) or per legal action (`q`)")


def mc_td_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`r_t + V̂(s_{t+1}) - V̂(s_t)` from `continuations` continuations of every state; consumes `key`."""
    values, counts = branch_state_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=context.options.continuations,
                                         sharding=context.sharding)
    return CreditResult(mc_advantage(trajectory, state_values=values), None, {"label": counts})


def q_advantage(context: CreditContext, trajectory: Trajectory, q_hat: jax.Array, params: Any = None) -> jax.Array:
    """float32 `[B, T]`: `Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)`, π the policy network
    with `params` (None: the current `context.params`), from action values `q_hat` `[B, T, A]`
    (`credit.mc_advantage`)."""
    params = context.params if params is None else params
    logits = context.policy_fn(params, trajectory.observation, trajectory.legal_action_mask)
    v_hat = jnp.sum(action_probabilities(logits, trajectory.legal_action_mask) * q_hat, axis=-1)
    v_hat = jnp.concatenate([v_hat, jnp.zeros_like(v_hat[:, :1])], axis=1)
    return mc_advantage(trajectory, state_values=v_hat, action_values=q_hat)


def mc_q_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`Q̂(s_t, a_t) - V̂(s_t)` with `V̂ = Σ_a π(a|s) Q̂(s, a)` (unbiased from the same continuations,
    no second batch), `continuations` per legal action; consumes `key`."""
    q_hat, counts = branch_action_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=context.options.continuations,
                                         sharding=context.sharding)
    return CreditResult(q_advantage(context, trajectory, q_hat), None, {"label": counts})


def mc_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Monte Carlo credit, the `variant` option's (`td` or `q`)."""
    variant = mc_q_arm if context.options.variant == "q" else mc_td_arm
    return variant(context, trajectory, problems, key)


def _mc_card(options: McOptions, config: dict) -> CardText:
    k, variant = options.continuations, options.variant
    formula = "r_t + V̂(s_{t+1}) − V̂(s_t)" if variant == "td" else "Q̂(s_t, a_t) − V̂(s_t), V̂ = Σ π Q̂"
    return CardText(f"per action: {formula}, estimating Q^π(s_t, a_t) − V^π(s_t) of the current policy",
                    OBSERVED_STATE, f"continuation (K={k} per state{', per action' if variant == 'q' else ''})",
                    "continuations under the current policy from the branched state to the episode's end "
                    "(at most max_turns); reward: the environment's success reward")


# ----- exact and solver --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ExactOptions(ArmOptions):
    """The exact arm's options (none yet)."""

    arm = "exact"


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
    evaluations done (reached, distinct rows)."""
    env, c = context.env, context.config
    graphs, starts, counts = _graphs(env, problems)
    # the problems' distinct rows share the network's chunks (what reference_values does one problem at a time)
    values, evals = network_values_batch(env, problems, graphs, context.policy_fn, context.params,
                                         horizon=env.max_turns, starts=starts)
    counts = counts.replace(policy_evals=evals)
    return CreditResult(solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem), None,
                        {"label": counts}, solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def _exact_card(options: ExactOptions, config: dict) -> CardText:
    return CardText("per action: Q^π(s_t, a_t) − V^π(s_t) of the current policy", OBSERVED_STATE,
                    "exact, solver over the graph of positions reached from the start (the current network at "
                    "each distinct observation)",
                    "the current policy in expectation over the complete graph, for the turns left; reward: the "
                    "environment's success reward")


@dataclasses.dataclass(frozen=True)
class SolverOptions(ArmOptions):
    """The solver arm's options."""

    arm = "solver"
    policy: str = option("uniform", choices=SOLVER_POLICIES, legacy="solver_policy",
                         doc="the reference policy μ: `uniform`, `optimal` (hard max) or `soft`")
    weight: float = option(1.0, low=0.0, legacy="solver_weight",
                           doc="the factor the `Q^μ - V^μ` advantage is multiplied by")
    temperature: float = option(0.3, positive=True, legacy="solver_temperature",
                                doc="the Boltzmann temperature of `policy` `soft`, in success probability")
    add_outcome: bool = option(False, legacy="solver_add_outcome", doc="add the outcome advantage to the arm's own")
    baseline: str = option("grpo", choices=OUTCOME_BASELINES, legacy="outcome_baseline",
                           doc="the added outcome advantage's baseline (with `add_outcome`)")


def solver_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`weight x (Q^μ - V^μ)` under the fixed `policy` μ (plus the outcome advantage with
    `add_outcome`, its `baseline`), charged the enumeration."""
    env, c, o = context.env, context.config, context.options
    graphs, _, counts = _graphs(env, problems)
    values = jax.vmap(lambda p, g: reference_values(env, p, policy=o.policy, graph=g,
                                                    temperature=o.temperature)[0])(problems, graphs)
    outcome = o.baseline if o.add_outcome else None
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem, weight=o.weight,
                                 outcome=outcome)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def _solver_check(options: SolverOptions, config) -> None:
    if options.add_outcome:
        _require_group(options.baseline, config)
        if config.objective != "pg":
            raise ValueError(f"credit_options.add_outcome of credit 'solver' adds to the advantage, which objective "
                             f"{config.objective!r} does not use; set it false")


def _solver_card(options: SolverOptions, config: dict) -> CardText:
    policy = options.policy
    if policy == "soft":
        policy = f"soft-optimal (Boltzmann, τ={options.temperature})"
    added = " plus the outcome advantage" if options.add_outcome else ""
    return CardText(f"per action: {options.weight} × (Q^μ − V^μ){added}, μ = the {policy} policy (fixed, not the "
                    "learner)", OBSERVED_STATE,
                    f"exact under fixed reference/optimal policy ({policy}), solver over complete graph",
                    f"the fixed {policy} policy in expectation, for the turns left; reward: the environment's "
                    "success reward")


# ----- critic ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CriticOptions(ArmOptions):
    """The critic arm's options."""

    arm = "critic"
    label_states: int = option(32, low=1, legacy="critic_label_states",
                               doc="states per iteration labelled with Monte Carlo returns")
    continuations: int = option(4, low=1, legacy="critic_continuations",
                                doc="Monte Carlo continuations per labelled state")
    coef: float = option(1.0, low=0.0, legacy="critic_coef", doc="the weight of the critic's squared error in the loss")
    gae_lambda: float = option(0.95, low=0.0, high=1.0, legacy="critic_lambda",
                               doc="GAE's λ (PPO's 0.95; 0: the one-step TD advantage)")


def critic_values(context: CreditContext, trajectory: Trajectory) -> jax.Array:
    """float32 `[B, T+1]`: the value head at every state before an action and at the final states."""
    final = trajectory.final_state
    v_steps = context.value_fn(context.params, trajectory.observation, trajectory.legal_action_mask)
    v_final = context.value_fn(context.params, final.observation, final.legal_action_mask)
    return jnp.concatenate([v_steps, v_final[:, None]], axis=1)


def critic_labels(context: CreditContext, trajectory: Trajectory, key: jax.Array):
    """`(critic_batch, counts)`: Monte Carlo value labels (`continuations` continuations) for
    `label_states` states drawn from the live steps; consumes `key`."""
    o = context.options
    select_key, branch_key = jax.random.split(key)
    flat_live = trajectory.live.reshape(-1)
    num = min(o.label_states, flat_live.shape[0])
    chosen = jax.random.choice(select_key, flat_live.shape[0], (num,), replace=False,
                               p=flat_live / jnp.maximum(flat_live.sum(), 1))
    states = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:])[chosen], trajectory.states)
    result = branch_returns(context.env, context.policy_fn, context.params, states, branch_key,
                            num_continuations=o.continuations, sharding=context.sharding)
    return (states.observation, states.legal_action_mask, result.mean, result.valid), result.counts


def critic_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """GAE (`gae_lambda`) over the learned value head; its labels are charged to `critic`."""
    values = jax.lax.stop_gradient(critic_values(context, trajectory))
    advantage = gae_advantage(trajectory, state_values=values, lam=context.options.gae_lambda)
    critic_batch, counts = critic_labels(context, trajectory, key)
    return CreditResult(advantage, critic_batch, {"critic": counts}, critic_coef=context.options.coef)


def _critic_card(options: CriticOptions, config: dict) -> CardText:
    return CardText(f"per action: GAE (λ={options.gae_lambda}) over δ_t = r_t + V_φ(s_{{t+1}}) − V_φ(s_t), V_φ the "
                    "network's value head",
                    "the network's observation (what the value head reads)",
                    f"learned value (trained on continuation labels: {options.label_states} states × "
                    f"K={options.continuations} per iteration)",
                    "continuations under the current policy for the value head's labels, to the episode's end",
                    f"; plus the value head's squared error × {options.coef}")


# ----- predictor ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PredictorOptions(ArmOptions):
    """The predictor arm's options."""

    arm = "predictor"
    states: int = option(256, low=1, legacy="predictor_states",
                         doc="the dataset's size: states visited by the initial policy (one per episode of a "
                             "training problem), every legal action of each labelled once before training")
    continuations: int = option(4, low=1, legacy="predictor_continuations",
                                doc="K, the continuations per (state, legal action) of the labels")
    steps: int = option(500, low=1, legacy="predictor_steps", doc="full-batch Adam steps fitting the model")
    learning_rate: float = option(1e-3, positive=True, legacy="predictor_learning_rate",
                                  doc="the learning rate of those steps")
    eval_states: int = option(64, low=0, legacy="predictor_eval_states",
                              doc="held-out states (one per validation problem) the fitted model is scored on "
                                  "against exact values; 0: not scored (an environment too large to enumerate)")


def predictor_network(context: CreditContext) -> PolicyFunctions:
    """The predictor's model: a fresh copy of the policy Transformer (`config.d_model`, ...) whose
    action head, read on legal actions, is `Q̂(s, ·)`."""
    c = context.config
    return make_policy(PolicyConfig(d_model=c.d_model, num_layers=c.num_layers, num_heads=c.num_heads,
                                    mlp_dim=c.mlp_dim), context.env)


def _scored_problems(options: PredictorOptions, validation_problems: Any):
    """The `eval_states` problems (leaves `[E, ...]`) the predictor is scored on: the validation
    set's, repeated in order if it is smaller; None when 0 are asked for."""
    if options.eval_states == 0 or validation_problems is None:
        return None
    size = jax.tree_util.tree_leaves(validation_problems)[0].shape[0]
    return jax.tree_util.tree_map(lambda x: x[jnp.arange(options.eval_states) % size], validation_problems)


def predictor_prepare(context: CreditContext, key: jax.Array, draw_problem: Callable[[jax.Array], Any],
                      validation_problems: Any = None) -> Preparation:
    """The predictor's dataset and model, once: `states` training problems (`draw_problem(key)`), one
    state each visited by the current (initial) policy, every legal action labelled by
    `continuations` continuations (`predictor.build_dataset`), then `steps` Adam steps
    (`learning_rate`). With `validation_problems` (leaves `[V, ...]`) and `eval_states` > 0, the
    summary holds `predictor.heldout_accuracy` on `eval_states` of them too. Charged to `predictor`."""
    o = context.options
    heldout_problems = _scored_problems(o, validation_problems)
    network = predictor_network(context)
    init_key, problem_key, visit_key, data_key = jax.random.split(key, 4)
    problems = jax.vmap(draw_problem)(jax.random.split(problem_key, o.states))
    if heldout_problems is not None:  # one rollout visits both; only the dataset's episodes are charged
        problems = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), problems, heldout_problems)
    states, visits = visited_states(context.env, context.policy_fn, context.params, problems, visit_key)
    dataset, heldout = (jax.tree_util.tree_map(lambda x: x[:o.states], states),
                        jax.tree_util.tree_map(lambda x: x[o.states:], states))
    data, counts = build_dataset(context.env, context.policy_fn, context.params, dataset, data_key,
                                 num_continuations=o.continuations, sharding=context.sharding)
    counts = counts + jax.tree_util.tree_map(lambda x: jnp.sum(x[:o.states], dtype=jnp.int32), visits)
    q_params, losses = fit_predictor(network.policy_fn, network.init_fn(init_key), data, steps=o.steps,
                                     learning_rate=o.learning_rate)
    summary = {"dataset_states": jnp.asarray(o.states, jnp.float32),
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
    q_fn = predictor_network(context).policy_fn
    q_hat = predicted_action_values(q_fn, context.prepared["params"], trajectory.observation,
                                    trajectory.legal_action_mask)
    advantage = q_advantage(context, trajectory, q_hat, params=context.prepared["labelling_params"])
    return CreditResult(jax.lax.stop_gradient(advantage), None, {})


def _predictor_check_environment(options: PredictorOptions, env: Environment) -> None:
    if options.eval_states and env.num_positions * env.num_actions > MAX_ENUMERATED:
        raise ValueError(f"credit_options.eval_states of credit 'predictor': scoring the predictor against exact "
                         f"values enumerates {env.num_positions} positions x {env.num_actions} actions per problem, "
                         "too large; set credit_options.eval_states=0")


def _predictor_record(options: PredictorOptions, summary: dict, counters: list) -> dict:
    """`predictor.json`: the dataset's settings, and per seed its size, cost and held-out accuracy
    (`summary`: numpy `[N]` per key; `counters`: each seed's ledger counters)."""
    seeds = []
    for i, ledger in enumerate(counters):
        row = {"seed_index": i}
        row.update({k: int(v[i]) if k in PREDICTOR_COUNTS else float(v[i]) for k, v in sorted(summary.items())})
        row.update({k: ledger[k] for k in ("predictor_env_steps", "predictor_policy_evals")})
        seeds.append(row)
    settings = {field: getattr(options, name) for field, name in credit_arm("predictor").legacy_fields.items()}
    return {"config": settings, "seeds": seeds}


def _predictor_card(options: PredictorOptions, config: dict) -> CardText:
    return CardText("per action: Q̂(s_t, a_t) − Σ_a π₀(a|s_t) Q̂(s_t, a), Q̂ a frozen model of Q^π₀ of the initial "
                    "policy π₀, fitted once before training (a fixed label per state and action)",
                    "the network's observation (what the predictor reads)",
                    f"learned action values, fitted offline on one fixed dataset of {options.states} states visited "
                    f"by π₀, every legal action labelled by K={options.continuations} continuations (charged once, "
                    "before the first iteration)",
                    "continuations under the initial policy π₀ from the forced action to the episode's end (for the "
                    "dataset only; none during training)")


def _outcome_check(options: OutcomeOptions, config) -> None:
    _require_group(options.baseline, config)


for _arm in (
    CreditArm("outcome", None, False, "episode return normalised within its group of attempts", outcome_arm,
              options=OutcomeOptions, check=_outcome_check, card=_outcome_card),
    CreditArm("mc", "label", False, "Monte Carlo action credit from K branch continuations (VinePPO)", mc_arm,
              options=McOptions, card=_mc_card),
    CreditArm("exact", "label", True, "exact Q - V of the current network, from the solver", exact_arm,
              options=ExactOptions, card=_exact_card),
    CreditArm("solver", "label", True, "exact Q - V of a fixed reference or optimal policy (CAST-style)",
              solver_arm, options=SolverOptions, check=_solver_check, card=_solver_card),
    CreditArm("anchor", None, False, "GRPO plus a step advantage among same-position steps (GiGPO)", anchor_arm,
              options=AnchorOptions, card=_anchor_card),
    CreditArm("critic", "critic", False, "GAE over a learned value head trained on continuation labels",
              critic_arm, options=CriticOptions, card=_critic_card),
    CreditArm("predictor", "predictor", False,
              "action values from a frozen model fitted once, offline, on a fixed dataset of Monte Carlo labels",
              predictor_arm, prepare=predictor_prepare, options=PredictorOptions,
              check_environment=_predictor_check_environment, card=_predictor_card,
              prepared_file=PREDICTOR_FILE, prepared_record=_predictor_record),
):
    register_credit_arm(_arm)
del _arm

__all__ = ["CREDIT_ARMS", "MAX_ENUMERATED", "OBSERVED_STATE", "AnchorOptions", "ArmOptions", "CardText", "CreditArm",
           "CreditContext", "CreditResult", "CriticOptions", "ExactOptions", "McOptions", "NoOptions",
           "OutcomeOptions", "Preparation", "PredictorOptions", "SolverOptions", "credit_arm", "credit_names",
           "label_free_credits", "option", "register_credit_arm"]
