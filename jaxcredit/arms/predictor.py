"""The `predictor` credit arm: `Q̂(s_t, a_t) - Σ_a π₀(a|s_t) Q̂(s_t, a)` from a frozen model of the
initial policy's action values, fitted once before training on one fixed dataset of Monte Carlo
labels (`jaxcredit.predictor`; charged once, to `predictor`). Its record in the run directory is
`predictor.json` (rendered by `jaxcredit.analysis.predictor`). Design: `docs/training.md`
(The offline action-value predictor).

Shape letters: B episodes, T turns, A actions, V validation problems, N seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.arm_registry import (
    ArmOptions,
    CardText,
    CreditArm,
    CreditContext,
    CreditResult,
    Preparation,
    credit_arm,
    option,
    register_credit_arm,
)
from jaxcredit.arms.shared import MAX_ENUMERATED, q_advantage
from jaxcredit.env import Environment
from jaxcredit.policy import PolicyConfig, PolicyFunctions, make_policy
from jaxcredit.predictor import (
    PREDICTOR_COUNTS,
    PREDICTOR_FILE,
    load_labeller,
    predicted_action_values,
    prepare_predictor,
    scored_problems,
)
from jaxcredit.rollout import Trajectory


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
    labeller: str = option("", doc="a training run directory whose final policy labels the dataset (its states, "
                                   "continuations and action values), its training charged once with the dataset; "
                                   "empty: the initial network labels it")
    labeller_seed: int = option(0, low=0, doc="the seed of the labeller run whose final policy is read")

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.labeller, str):
            raise ValueError(f"credit_options.labeller of credit 'predictor' must be a path (a string), "
                             f"got {self.labeller!r}")


def predictor_network(context: CreditContext) -> PolicyFunctions:
    """The predictor's model: a fresh copy of the policy Transformer (`config.d_model`, ...) whose
    action head, read on legal actions, is `Q̂(s, ·)`."""
    c = context.config
    return make_policy(PolicyConfig(d_model=c.d_model, num_layers=c.num_layers, num_heads=c.num_heads,
                                    mlp_dim=c.mlp_dim), context.env)


def predictor_prepare(context: CreditContext, key: jax.Array, draw_problem: Callable[[jax.Array], Any],
                      validation_problems: Any = None) -> Preparation:
    """The predictor's dataset and model, once (`predictor.prepare_predictor`): `states` training
    problems (`draw_problem(key)`), one state each visited by the labelling policy, every legal
    action labelled by `continuations` continuations, then `steps` Adam steps (`learning_rate`).
    The labelling policy is the `labeller` run's final policy (`predictor.load_labeller`), else the
    initial network. With `validation_problems` (leaves `[V, ...]`) and `eval_states` > 0, the
    summary holds `predictor.heldout_accuracy` on `eval_states` of them too. Charged to
    `predictor`: the dataset, and the labeller's training once."""
    o = context.options
    labelling_params, labeller_cost = context.params, None
    if o.labeller:
        labeller = load_labeller(o.labeller, seed_index=o.labeller_seed, env=context.env, params=context.params)
        labelling_params = jax.tree_util.tree_map(jnp.asarray, labeller.params)
        labeller_cost = labeller.cost
    state, counts = prepare_predictor(
        context.env, context.policy_fn, labelling_params, predictor_network(context), key, draw_problem,
        num_states=o.states, num_continuations=o.continuations, steps=o.steps, learning_rate=o.learning_rate,
        heldout_problems=scored_problems(validation_problems, eval_states=o.eval_states), sharding=context.sharding)
    if labeller_cost is not None:
        counts = counts + labeller_cost
        state["summary"]["labeller_env_steps"] = labeller_cost.env_steps.astype(jnp.float32)
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


def check_environment(options: PredictorOptions, env: Environment) -> None:
    """Scoring against exact values (`eval_states` > 0) needs an environment small enough to enumerate."""
    if options.eval_states and env.num_positions * env.num_actions > MAX_ENUMERATED:
        raise ValueError(f"credit_options.eval_states of credit 'predictor': scoring the predictor against exact "
                         f"values enumerates {env.num_positions} positions x {env.num_actions} actions per problem, "
                         "too large; set credit_options.eval_states=0")


def prepared_record(options: PredictorOptions, summary: dict, counters: list) -> dict:
    """`predictor.json`: the dataset's settings, and per seed its size, cost and held-out accuracy
    (`summary`: numpy `[N]` per key; `counters`: each seed's ledger counters)."""
    seeds = []
    for i, ledger in enumerate(counters):
        row = {"seed_index": i}
        row.update({k: int(v[i]) if k in PREDICTOR_COUNTS else float(v[i]) for k, v in sorted(summary.items())})
        row.update({k: ledger[k] for k in ("predictor_env_steps", "predictor_policy_evals")})
        seeds.append(row)
    settings = {field: getattr(options, name) for field, name in credit_arm("predictor").legacy_fields.items()}
    if options.labeller:
        settings.update(labeller=options.labeller, labeller_seed=options.labeller_seed)
    return {"config": settings, "seeds": seeds}


def card(options: PredictorOptions, config: dict) -> CardText:
    """What the CA-ID card of a predictor run says."""
    labeller = (f"the final policy of {options.labeller} (seed {options.labeller_seed}; its training charged "
                "with the dataset)" if options.labeller else "the initial policy")
    return CardText(f"per action: Q̂(s_t, a_t) − Σ_a π₀(a|s_t) Q̂(s_t, a), Q̂ a frozen model of Q^π₀ of π₀, {labeller}, "
                    "fitted once before training (a fixed label per state and action)",
                    "the network's observation (what the predictor reads)",
                    f"learned action values, fitted offline on one fixed dataset of {options.states} states visited "
                    f"by π₀, every legal action labelled by K={options.continuations} continuations (charged once, "
                    "before the first iteration)",
                    "continuations under π₀ from the forced action to the episode's end (for the dataset only; none "
                    "during training)")


ARM = register_credit_arm(CreditArm(
    "predictor", "predictor", False,
    "action values from a frozen model fitted once, offline, on a fixed dataset of Monte Carlo labels",
    predictor_arm, prepare=predictor_prepare, options=PredictorOptions, check_environment=check_environment,
    card=card, prepared_file=PREDICTOR_FILE, prepared_record=prepared_record))
