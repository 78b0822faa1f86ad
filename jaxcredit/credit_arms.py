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
| `progress-soft`, `progress-hard` | `Φ(h') - Φ(h)`, Φ from N continuations (Math-Shepherd) | continuations (`label`) |
| `progress-model` | `Φ(h') - Φ(h)`, Φ a value head fitted on the episodes' outcomes | none (main attempts' own) |
| `exact` | `Q^π - V^π` of the current network, from the solver | enumeration + network (`label`) |
| `solver` | `w (Q^μ - V^μ)` of a fixed μ (uniform, optimal, soft) | enumeration (`label`) |
| `critic` | GAE over a learned value head | its continuation labels (`critic`) |
| `predictor` | `Q̂(s, a_t) - Σ π Q̂(s, ·)` of a frozen model fitted offline | its one dataset (`predictor`), once |

Each arm's options are the dataclass beside it (`OutcomeOptions`, `AnchorOptions`, `McOptions`,
`ExactOptions`, `SolverOptions`, `CriticOptions`, `PredictorOptions`, `ProgressSoftOptions`,
`ProgressHardOptions`, `ProgressModelOptions`), one `option(...)` line each.

An arm with a `prepare` function (today `predictor`) does one-time work before the first
iteration: `arm.prepare(context, key, draw_problem, validation_problems)` returns a
`Preparation`, the arm's fixed state (kept in the trainer's state, checkpointed, passed back as
`context.prepared`) and its charge, recorded once.

The arms with a learned value head (`critic`, `progress-model`) have a `fit_for_labels` hook,
`jaxcredit.value_fit.fit_value_head`: measured without training (the suite's label quality),
their head is first fitted on the fixed policy's own episodes, as training would fit it.

Hyper-parameters come from `context.options` (the arm's options, `config.credit_options`) and
`context.config` (the run's shared fields: `attempts_per_problem`, `objective`, the network's
sizes). The counterfactual arms (`exact`, `solver`, `mc`) have a `replacement` option, the
distribution whose expected action value is the baseline (`credit.REPLACEMENTS`), checked in one
place, `check_replacement_option`.

Shape letters: P problems, G attempts per problem, B = P * G episodes, T turns, A actions,
L observation length, M critic label states, E held-out states, V validation problems, N seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import solver
from jaxcredit.afterstate import policy_inputs, policy_observations
from jaxcredit.arm_registry import (
    CREDIT_ARMS,
    ArmOptions,
    CardText,
    CreditArm,
    CreditContext,
    CreditResult,
    LabelFit,
    NoOptions,
    Preparation,
    credit_arm,
    credit_names,
    label_free_credits,
    option,
    register_credit_arm,
)
from jaxcredit.credit import (
    REPLACEMENTS,
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
from jaxcredit.solver import DEFAULT_TIE_BREAK_DISCOUNT, TIE_BREAKS
from jaxcredit.solver_values import network_values_batch, reference_values
from jaxcredit.validation import require_int
from jaxcredit.value_fit import fit_value_head

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


# ----- the counterfactual arms' replacement (mc, exact, solver) ---------------------------------
def _replacement_option():
    return option("on-policy", choices=REPLACEMENTS, legacy="replacement",
                  doc="what replaces the action in `Q(s, a_t) - E_{a' ~ ρ}[Q(s, a')]` (`credit.REPLACEMENTS`): "
                      "`on-policy` (the baseline is V), `uniform` (over the legal actions) or `null` (the "
                      "environment's null action; JSON null reads as `\"null\"`)")


def _null_replacement(options) -> None:
    """JSON null (`--set credit_options.replacement=null`) names the null replacement."""
    if options.replacement is None:
        object.__setattr__(options, "replacement", "null")


def check_replacement_option(options, config=None, env: Environment | None = None) -> None:
    """The one check of the `replacement` option of `exact`, `solver` and `mc` (`credit.REPLACEMENTS`):
    raises `ValueError` naming the problem. `on-policy` (the default) suits every config; another
    replacement needs the policy-gradient objective (value-target objectives use no advantage),
    `uniform` under `mc` needs every legal action's value (`variant` `q`), and `null` needs an
    environment with a null action (checked once `env` is given)."""
    replacement, arm = options.replacement, options.arm
    name = f"credit_options.replacement of credit {arm!r}"
    try:
        check_replacement(replacement, env)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if replacement == "on-policy":
        return
    if getattr(options, "variant", None) == "td" and replacement == "uniform":  # mc's td has no Q̂ per action
        raise ValueError(f"{name} 'uniform' needs the value of every legal action: set credit_options.variant 'q'")
    objective = getattr(config, "objective", "pg")
    if objective != "pg":
        raise ValueError(f"{name} {replacement!r} changes the advantage, which objective {objective!r} does not use; "
                         "leave it 'on-policy'")


def _replacement(context: CreditContext) -> str:
    """The arm's `replacement` option, checked against the run's config and environment."""
    check_replacement_option(context.options, context.config, context.env)
    return context.options.replacement


# ----- mc ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class McOptions(ArmOptions):
    """The Monte Carlo arm's options."""

    arm = "mc"
    variant: str = option("td", choices=MC_VARIANTS, legacy="mc_variant",
                          doc="`td` (`r_t + V(s_{t+1}) - V(s_t)`) or `q` (`Q(s_t, a_t) - V(s_t)`)")
    continuations: int = option(4, low=1, legacy="mc_continuations",
                                doc="K, continuations per state (`td`) or per legal action (`q`)")
    replacement: str = _replacement_option()

    def __post_init__(self):
        _null_replacement(self)
        super().__post_init__()


def mc_td_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`r_t + V̂(s_{t+1}) - V̂(s_t)` from `continuations` continuations of every state; consumes `key`.
    With the `replacement` option `null`, `V̂(s_t)` is replaced by `Q̂(s_t, null)` from as many
    continuations after the null action (`credit.branch_null_values`), charged too."""
    replacement = _replacement(context)
    k = context.options.continuations
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
    no second batch), `continuations` per legal action; consumes `key`. The `replacement` option
    picks the baseline from the same `Q̂` (`uniform`: their mean; `null`: the null action's)."""
    replacement = _replacement(context)
    q_hat, counts = branch_action_values(context.env, context.policy_fn, context.params, trajectory, key,
                                         num_continuations=context.options.continuations,
                                         sharding=context.sharding)
    return CreditResult(q_advantage(context, trajectory, q_hat, replacement=replacement), None, {"label": counts})


def mc_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """Monte Carlo credit, the `variant` option's (`td` or `q`)."""
    variant = mc_q_arm if context.options.variant == "q" else mc_td_arm
    return variant(context, trajectory, problems, key)


def _with_replacement(estimand: str, options) -> str:
    """The estimand of a counterfactual arm with its `replacement` in place of V."""
    replacement = options.replacement
    if replacement == "on-policy":
        return estimand
    return estimand + f", with E_{{a' ~ {replacement}}}[Q(s_t, a')] in place of V (the {replacement} replacement)"


def _mc_card(options: McOptions, config: dict) -> CardText:
    k, variant = options.continuations, options.variant
    formula = "r_t + V̂(s_{t+1}) − V̂(s_t)" if variant == "td" else "Q̂(s_t, a_t) − V̂(s_t), V̂ = Σ π Q̂"
    return CardText(_with_replacement(f"per action: {formula}, estimating Q^π(s_t, a_t) − V^π(s_t) of the current "
                                      "policy", options),
                    OBSERVED_STATE, f"continuation (K={k} per state{', per action' if variant == 'q' else ''})",
                    "continuations under the current policy from the branched state to the episode's end "
                    "(at most max_turns); reward: the environment's success reward")


def _check_replacement(options, config) -> None:
    check_replacement_option(options, config)


def _check_replacement_environment(options, env: Environment) -> None:
    check_replacement_option(options, None, env)


# ----- progress-soft, progress-hard --------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _ProgressOptions(ArmOptions):
    continuations: int = option(4, low=1, legacy="progress_continuations",
                                doc="N, continuations per state under the current policy that estimate Φ")


@dataclasses.dataclass(frozen=True)
class ProgressSoftOptions(_ProgressOptions):
    """The progress-soft arm's options."""

    arm = "progress-soft"


@dataclasses.dataclass(frozen=True)
class ProgressHardOptions(_ProgressOptions):
    """The progress-hard arm's options."""

    arm = "progress-hard"


def _progress_arm(kind: str) -> Callable[[CreditContext, Trajectory, Any, jax.Array], CreditResult]:
    def progress_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
        progress, counts = branch_state_progress(context.env, context.policy_fn, context.params, trajectory, key,
                                                 num_continuations=context.options.continuations,
                                                 kind=kind, sharding=context.sharding)
        return CreditResult(progress_advantage(trajectory, progress=progress), None, {"label": counts})

    progress_arm.__doc__ = (f"Math-Shepherd's {kind} progress credit `Φ(h_{{t+1}}) - Φ(h_t)` "
                            f"(`credit.progress_advantage`), `Φ` from the `continuations` option's continuations "
                            f"of every state under the current policy (`credit.branch_state_progress`, "
                            f"kind {kind!r}); consumes `key`; the continuations are charged to `label`.")
    progress_arm.__name__ = progress_arm.__qualname__ = f"progress_{kind}_arm"
    return progress_arm


progress_soft_arm = _progress_arm("soft")
progress_hard_arm = _progress_arm("hard")


def _progress_card(kind: str) -> Callable[[_ProgressOptions, dict], CardText]:
    phi = ("the fraction of N continuations that succeed" if kind == "soft"
           else "1 when any of N continuations succeeds, else 0")

    def card(options: _ProgressOptions, config: dict) -> CardText:
        return CardText(f"per action: Φ(h_{{t+1}}) − Φ(h_t), Φ = {phi} (Math-Shepherd {kind} labels): where the "
                        "step leads, not what it did", OBSERVED_STATE,
                        f"continuation (N={options.continuations} per state)",
                        "continuations under the current policy from each state to the episode's end; reward: the "
                        "environment's success reward")

    return card


# ----- exact and solver --------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ExactOptions(ArmOptions):
    """The exact arm's options."""

    arm = "exact"
    replacement: str = _replacement_option()

    def __post_init__(self):
        _null_replacement(self)
        super().__post_init__()


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
    evaluations done (reached, distinct rows). The `replacement` option picks the baseline in place of `V^π`."""
    env, c = context.env, context.config
    replacement = _replacement(context)
    graphs, starts, counts = _graphs(env, problems)
    # the problems' distinct rows share the network's chunks (what reference_values does one problem at a time)
    values, evals = network_values_batch(env, problems, graphs, context.policy_fn, context.params,
                                         horizon=env.max_turns, starts=starts)
    counts = counts.replace(policy_evals=evals)
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem,
                                 replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def _exact_card(options: ExactOptions, config: dict) -> CardText:
    return CardText(_with_replacement("per action: Q^π(s_t, a_t) − V^π(s_t) of the current policy", options),
                    OBSERVED_STATE,
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
    tie_break: str = option("none", choices=TIE_BREAKS, legacy="solver_tie_break",
                            doc="how the optimal reference breaks ties (`solver.TIE_BREAKS`): `none`, `fastest` "
                                "(toward the action whose value needs the fewest turns) or `discount` (toward the "
                                "best value discounted by `tie_break_discount` per turn); needs `policy` `optimal`")
    tie_break_discount: float = option(DEFAULT_TIE_BREAK_DISCOUNT, low=0.0, high=1.0,
                                       legacy="solver_tie_break_discount",
                                       doc="γ in (0, 1) of `tie_break` `discount`")
    replacement: str = _replacement_option()

    def __post_init__(self):
        _null_replacement(self)
        super().__post_init__()
        if self.tie_break_discount in (0.0, 1.0):
            raise ValueError(f"credit_options.tie_break_discount of credit 'solver' must be in (0, 1), "
                             f"got {self.tie_break_discount!r}")
        if self.tie_break != "none" and self.policy != "optimal":
            raise ValueError(f"credit_options.tie_break {self.tie_break!r} of credit 'solver' breaks ties of the "
                             f"optimal reference: it needs credit_options.policy 'optimal', got {self.policy!r}")


def solver_arm(context: CreditContext, trajectory: Trajectory, problems: Any, key: jax.Array) -> CreditResult:
    """`weight x (Q^μ - V^μ)` under the fixed `policy` μ (its ties broken by `tie_break`; plus the
    outcome advantage with `add_outcome`, its `baseline`), charged the enumeration. The
    `replacement` option picks the baseline in place of `V^μ`."""
    env, c, o = context.env, context.config, context.options
    replacement = _replacement(context)
    graphs, _, counts = _graphs(env, problems)
    def values_of(problem, graph):
        return reference_values(env, problem, policy=o.policy, graph=graph, temperature=o.temperature,
                                tie_break=o.tie_break, tie_break_discount=o.tie_break_discount)[0]

    values = jax.vmap(values_of)(problems, graphs)
    outcome = o.baseline if o.add_outcome else None
    advantage = solver_advantage(trajectory, values=values, group_size=c.attempts_per_problem, weight=o.weight,
                                 outcome=outcome, replacement=replacement, null_action=env.null_action)
    return CreditResult(advantage, None, {"label": counts},
                        solver_menu_values(trajectory, values, group_size=c.attempts_per_problem))


def _solver_check(options: SolverOptions, config) -> None:
    check_replacement_option(options, config)
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
    return CardText(_with_replacement(f"per action: {options.weight} × (Q^μ − V^μ){added}, μ = the {policy} policy "
                                      "(fixed, not the learner)", options), OBSERVED_STATE,
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
    v_final = context.value_fn(context.params, policy_observations(context.env, context.policy_fn, final),
                               final.legal_action_mask)
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
    observation, input_steps = policy_inputs(context.env, context.policy_fn, states)  # what the value head reads
    counts = result.counts.replace(afterstate_env_steps=result.counts.afterstate_env_steps
                                   + jnp.sum(input_steps, dtype=jnp.int32))
    return (observation, states.legal_action_mask, result.mean, result.valid), counts


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


@dataclasses.dataclass(frozen=True)
class ProgressModelOptions(ArmOptions):
    """The progress-model arm's options."""

    arm = "progress-model"
    coef: float = option(1.0, low=0.0, legacy="critic_coef",
                         doc="the weight of the value head's squared error in the loss")


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
    return CreditResult(advantage, critic_batch, {}, critic_coef=context.options.coef)


def _progress_model_card(options: ProgressModelOptions, config: dict) -> CardText:
    return CardText("per action: Φ_θ(h_{t+1}) − Φ_θ(h_t), Φ_θ the network's value head fitted on the policy's own "
                    "episodes' outcomes (a learned process reward model)",
                    "the network's observation (what the value head reads)",
                    "learned value (trained on the main attempts' returns to go; no continuations)",
                    "the main attempts themselves under the current policy, to the end of the episode",
                    f"; plus the value head's squared error × {options.coef}")


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
    index = np.arange(options.eval_states) % size  # static: the validation set's leaves are host (NumPy) arrays
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x[index]), validation_problems)


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
    q_fn = predictor_network(context).policy_fn  # a token network: it reads the observation tokens
    q_hat = predicted_action_values(q_fn, context.prepared["params"], trajectory.states.observation,
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


def _predictor_markdown(record: dict) -> str:
    """A Markdown table of one `predictor.json`: one row per seed and the mean over seeds."""
    config = record.get("config", {})
    lines = [f"Dataset: {config.get('predictor_states')} states visited by the initial policy, every legal action "
             f"labelled by K={config.get('predictor_continuations')} continuations; fitted in "
             f"{config.get('predictor_steps')} Adam steps. Accuracy on held-out states against exact values "
             "(advantage `Q̂ − Σ π₀ Q̂` vs `Q^π₀ − V^π₀`; n = state-action pairs, sign over pairs with a nonzero "
             "exact advantage).", "",
             "| seed | dataset env steps | n | advantage Pearson r | sign agreement (n) | Q Pearson r | Q RMSE |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    seeds = record.get("seeds", [])

    def cell(x, spec=".3f"):
        return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)

    for s in seeds:
        lines.append(f"| {s['seed_index']} | {s['predictor_env_steps']:,} | {s.get('pairs', 0)} | "
                     f"{cell(s.get('advantage_pearson'))} | {cell(s.get('sign_agreement'))} ({s.get('sign_pairs', 0)}) "
                     f"| {cell(s.get('q_pearson'))} | {cell(s.get('q_rmse'))} |")
    if seeds and all("advantage_pearson" in s for s in seeds):
        mean = {k: sum(s[k] for s in seeds) / len(seeds) for k in ("advantage_pearson", "sign_agreement", "q_pearson",
                                                                    "q_rmse", "predictor_env_steps")}
        lines.append(f"| **mean** | {mean['predictor_env_steps']:,.0f} | {sum(s['pairs'] for s in seeds)} | "
                     f"{mean['advantage_pearson']:.3f} | {mean['sign_agreement']:.3f} | {mean['q_pearson']:.3f} | "
                     f"{mean['q_rmse']:.3f} |")
    elif seeds:
        lines += ["", "Not scored against exact values (`predictor_eval_states` = 0)."]
    return "\n".join(lines) + "\n"


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
              options=McOptions, check=_check_replacement, check_environment=_check_replacement_environment,
              card=_mc_card),
    CreditArm("exact", "label", True, "exact Q - V of the current network, from the solver", exact_arm,
              options=ExactOptions, check=_check_replacement, check_environment=_check_replacement_environment,
              card=_exact_card),
    CreditArm("solver", "label", True, "exact Q - V of a fixed reference or optimal policy (CAST-style)",
              solver_arm, options=SolverOptions, check=_solver_check, check_environment=_check_replacement_environment,
              card=_solver_card),
    CreditArm("anchor", None, False, "GRPO plus a step advantage among same-position steps (GiGPO)", anchor_arm,
              options=AnchorOptions, card=_anchor_card),
    CreditArm("critic", "critic", False, "GAE over a learned value head trained on continuation labels",
              critic_arm, options=CriticOptions, fit_for_labels=fit_value_head, card=_critic_card),
    CreditArm("predictor", "predictor", False,
              "action values from a frozen model fitted once, offline, on a fixed dataset of Monte Carlo labels",
              predictor_arm, prepare=predictor_prepare, options=PredictorOptions,
              check_environment=_predictor_check_environment, card=_predictor_card,
              prepared_file=PREDICTOR_FILE, prepared_record=_predictor_record,
              prepared_title="Predictor label accuracy", prepared_markdown=_predictor_markdown),
    CreditArm("progress-soft", "label", False,
              "progress Φ(h') - Φ(h), Φ the fraction of N continuations that succeed (Math-Shepherd soft)",
              progress_soft_arm, options=ProgressSoftOptions, card=_progress_card("soft")),
    CreditArm("progress-hard", "label", False,
              "progress Φ(h') - Φ(h), Φ whether any of N continuations succeeds (Math-Shepherd hard)",
              progress_hard_arm, options=ProgressHardOptions, card=_progress_card("hard")),
    CreditArm("progress-model", None, False,
              "progress Φ(h') - Φ(h), Φ a value head fitted on the policy's own episodes' outcomes (a learned PRM)",
              progress_model_arm, options=ProgressModelOptions, fit_for_labels=fit_value_head,
              card=_progress_model_card),
):
    register_credit_arm(_arm)
del _arm

__all__ = ["CREDIT_ARMS", "MAX_ENUMERATED", "OBSERVED_STATE", "AnchorOptions", "ArmOptions", "CardText", "CreditArm",
           "CreditContext", "CreditResult", "CriticOptions", "LabelFit", "ExactOptions", "McOptions", "NoOptions",
           "OutcomeOptions", "Preparation", "PredictorOptions", "ProgressHardOptions", "ProgressModelOptions",
           "ProgressSoftOptions", "SolverOptions", "check_replacement_option", "credit_arm", "credit_names",
           "label_free_credits", "option", "register_credit_arm"]
