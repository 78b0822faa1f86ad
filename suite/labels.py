"""Label quality: each arm's per-step credit against the exact `Q^π − V^π`, with no training.

On fixed trajectories of a fixed policy π (the uniform policy, or the network after a fixed,
seeded amount of training), every arm labels the same steps, with the same key, under the same
π. The reference is the exact counterfactual credit `Δ_t = Q^π(s_t, a_t) − V^π(s_t)` from the
solver (`jaxcredit.analysis.exact`, a path independent of the `exact` arm's own code). Measures
over the live steps:

- **sign agreement**: the share of steps with a non-decorative exact label (`|Δ_t| > ε_t`, the
  action-class tolerance of `jaxcredit.analysis.classes`) whose label has the same sign
  (a label of exactly 0 counts as half agreement);
- **rank correlation**: Spearman's ρ between the labels and `Δ`;
- **normalised error**: `min_{α ≥ 0} ‖α c − Δ‖² / ‖Δ‖² = 1 − max(0, cos(c, Δ))²`, the error left
  after the best non-negative rescaling (arms label in different units: GRPO normalises, the
  exact arm is in success probability). 0 for exact labels, about 1 for labels unrelated to `Δ`.

The experiment's score is `1 − normalised error`, in [0, 1]. The same measures are given per
action class (load-bearing, decorative, harmful: harmful-but-recovered and harmful together),
and each arm's label cost per ledger account (env steps, policy evaluations).

Shape letters: B episodes, T turns.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxcredit.analysis.classes import CLASSES, NOT_LIVE, classify_actions
from jaxcredit.analysis.exact import exact_credit, exact_step_values
from jaxcredit.analysis.label_measures import label_measures  # the measures live in analysis
from jaxcredit.credit_arms import credit_arm
from jaxcredit.policy_fn import uniform_policy_fn
from jaxcredit.rollout import rollout
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.loop import make_train

LABEL_CLASSES = ("load-bearing", "decorative", "harmful")  # harmful: both harmful classes of CLASSES
POLICIES = ("uniform", "trained")


def _class_groups(classes: np.ndarray) -> dict:
    """`{class: bool [B, T]}` of `LABEL_CLASSES`, from `classify_actions`' indices."""
    return {
        "load-bearing": classes == CLASSES.index("load-bearing"),
        "decorative": classes == CLASSES.index("decorative"),
        "harmful": (classes == CLASSES.index("harmful")) | (classes == CLASSES.index("harmful-but-recovered")),
    }


@dataclasses.dataclass(frozen=True)
class LabelSetting:
    """One label-quality cell: the environment, the policy, the batch of trajectories.

    `config` holds `TrainConfig` fields shared by every arm (env, env_overrides, batch, network
    size); `policy` is `uniform` or `trained` (the network after `train_episodes` main attempts of
    `train_credit` training from `seed`: the same policy on every run on one machine).
    """

    config: dict
    policy: str = "uniform"
    seed: int = 0
    train_credit: str = "outcome"
    train_episodes: int = 512

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"label setting: unknown policy {self.policy!r}; choices: {', '.join(POLICIES)}")


def _fixed_policy(setting: LabelSetting, trainer):
    """`(policy_fn, params)`: the setting's fixed policy π, from the trainer of the `outcome` arm."""
    state = trainer.init(setting.seed)
    if setting.policy == "uniform":
        return uniform_policy_fn, state.params
    limits = trainer.limits(setting.train_episodes)
    state = jax.jit(trainer.run_until)(state, *limits)
    return trainer.policy_fn, state.params


def label_quality(setting: LabelSetting, arms: dict) -> dict:
    """Host: every arm's label measures on one batch of trajectories of the setting's fixed policy.

    `arms`: arm name -> `TrainConfig` fields of that arm (its `credit` and options). Returns
    `{"steps", "class_counts", "arms": {arm: {"overall": measures, "classes": {class: measures},
    "cost": {account: {"env_steps", "policy_evals"}}, "score"}}}`; `score` is `1 − normalised
    error` (0 when undefined).
    """
    base = config_from_dict({**setting.config, "credit": "outcome", "seed": setting.seed, "num_seeds": 1,
                             "budget_counter": "main_episodes"})
    trainer = make_train(base)
    policy_fn, params = _fixed_policy(setting, trainer)
    state = trainer.init(setting.seed)
    problems, starts = trainer.sample_episodes(state)
    key = jax.random.key(setting.seed + 1)
    trajectory, _ = jax.jit(lambda p, s, k: rollout(trainer.env, policy_fn, p, s, k, num_turns=trainer.env.max_turns)
                            )(params, starts, key)
    values = exact_step_values(trainer.env, trajectory, reference="policy", policy_fn=policy_fn, params=params)
    exact = exact_credit(trajectory, values)
    live = np.asarray(trajectory.live)
    success = np.asarray(trajectory.episode_return) > 0
    classes = classify_actions(exact, values["v"], live, success)
    groups = _class_groups(classes)
    signed = live & (classes != CLASSES.index("decorative")) & (classes != NOT_LIVE)
    out = {"steps": int(live.sum()), "class_counts": {k: int(v.sum()) for k, v in groups.items()}, "arms": {}}
    label_key = jax.random.key(setting.seed + 2)
    for name, fields in arms.items():
        # the arm's own config on the same environment and held-out sets (only credit fields differ)
        arm_config = config_from_dict({**setting.config, **fields, "seed": setting.seed, "num_seeds": 1})
        arm_trainer = dataclasses.replace(trainer, config=arm_config)
        context = arm_trainer._context(params)._replace(policy_fn=policy_fn)
        arm = credit_arm(arm_trainer.config.credit)
        charge = {}
        if arm.prepare is not None:  # one-time work on π's own states (predictor), charged to its account
            heldout = arm_trainer.validation_set  # the run's validation set, the arm picks its held-out problems
            preparation = jax.jit(lambda k, h, c=context, t=arm_trainer, a=arm: a.prepare(
                c, k, t.draw_problem, h))(jax.random.key(setting.seed + 3), heldout)
            context = context._replace(prepared=preparation.state)
            charge = dict(preparation.charge)
        result = jax.jit(lambda p, tr, pr, k, c=context, a=arm: a.compute(c._replace(params=p), tr, pr, k))(
            params, trajectory, problems, label_key)
        label = np.asarray(result.advantage, np.float64)
        for account, counts in result.charge.items():
            charge[account] = counts if account not in charge else charge[account] + counts
        cost = {account: {"env_steps": int(c.env_steps), "policy_evals": int(c.policy_evals)}
                for account, c in sorted(charge.items())}
        overall = label_measures(label[live], exact[live], signed[live])
        per_class = {cls: label_measures(label[mask], exact[mask], signed[mask]) for cls, mask in groups.items()}
        error = overall["normalised_error"]
        out["arms"][name] = {"overall": overall, "classes": per_class, "cost": cost,
                             "score": 0.0 if error is None else 1.0 - error}
    return out


__all__ = ["LABEL_CLASSES", "POLICIES", "LabelSetting", "label_measures", "label_quality"]
