"""Label quality: each arm's per-step credit against the exact `Q^π − V^π`, with no training.

On fixed trajectories of a fixed policy π (the uniform policy, or the network after a fixed,
seeded amount of training), every arm labels the same steps, with the same key, under the same
π. The reference is the exact counterfactual credit `Δ_t = Q^π(s_t, a_t) − V^π(s_t)` from the
solver (`jaxcredit.analysis.exact`, a path independent of the `exact` arm's code). Measures over
the live steps: **sign agreement** on the steps whose exact label is not decorative, **rank
correlation** (Spearman) and the **normalised error** after the best non-negative rescaling;
the score is `1 − normalised error`. The same measures are given per action class,
with each arm's label cost. An arm with a learned value head is fitted first (`fit_for_labels`),
the work charged to the arm. See docs/suite.md#label-quality-no-training.

Shape letters: B episodes, T turns.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxcredit.analysis.classes import CLASSES, NOT_LIVE, classify_actions
from jaxcredit.analysis.exact import exact_credit, exact_step_values
from jaxcredit.analysis.label_measures import label_measures  # the measures live in analysis
from jaxcredit.credit_arms import LabelFit, credit_arm
from jaxcredit.policy_fn import uniform_policy_fn
from jaxcredit.rollout import rollout
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.loop import make_train

LABEL_CLASSES = ("load-bearing", "decorative", "harmful")  # harmful: both harmful classes of CLASSES
POLICIES = ("uniform", "trained")
FIT_STEPS = 64  # updates of a learned head on the fixed policy's own episodes before it labels


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
    `fit_steps`: the updates an arm with a learned head (its `fit_for_labels` hook) fits it on π's
    own fresh episodes, one batch of the config's size each, before labelling (0: label with the
    head as π's parameters hold it). `noise_repeats` R > 0: each arm labels the same steps R more
    times with independent keys, and its `label_variance` is the per-step variance of the R + 1
    labels (ddof 1), averaged over the live steps: the label's noise floor.
    """

    config: dict
    policy: str = "uniform"
    seed: int = 0
    train_credit: str = "outcome"
    train_episodes: int = 512
    fit_steps: int = FIT_STEPS
    noise_repeats: int = 0

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"label setting: unknown policy {self.policy!r}; choices: {', '.join(POLICIES)}")
        for name in ("fit_steps", "noise_repeats"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"label setting: {name} must be an integer >= 0, got {value!r}")


def _add_charges(charge: dict, more: dict) -> dict:
    """`{account: Counts}` of both charges, summed per account."""
    out = dict(charge)
    for account, counts in more.items():
        out[account] = counts if account not in out else out[account] + counts
    return out


def make_labeller(setting: LabelSetting, arms: dict):
    """`labeller(seed) -> dict`: `label_quality` of `setting` at any seed (`setting.seed` is not
    read), its functions compiled once and shared by every seed (only arrays change with the seed).

    `arms`: arm name -> `TrainConfig` fields of that arm (its `credit` and options).
    """
    base = config_from_dict({**setting.config, "credit": "outcome", "num_seeds": 1,
                             "budget_counter": "main_episodes"})
    trainer = make_train(base)
    env = trainer.env
    policy_fn = uniform_policy_fn if setting.policy == "uniform" else trainer.policy_fn
    train = jax.jit(trainer.run_until)
    play = jax.jit(lambda p, s, k: rollout(env, policy_fn, p, s, k, num_turns=env.max_turns))
    labelled = {}
    for name, fields in arms.items():
        # the arm's own config on the same environment and held-out sets (only credit fields differ)
        arm_trainer = dataclasses.replace(trainer, config=config_from_dict({**setting.config, **fields,
                                                                             "num_seeds": 1}))
        arm = credit_arm(arm_trainer.config.credit)
        context = arm_trainer._context(None)._replace(policy_fn=policy_fn)
        prepare = fit = None
        if arm.prepare is not None:  # one-time work on π's own states (predictor), charged to its account
            prepare = jax.jit(lambda p, k, h, c=context, t=arm_trainer, a=arm: a.prepare(
                c._replace(params=p), k, t.draw_problem, h))
        if arm.fit_for_labels is not None and setting.fit_steps:  # a learned head: fitted on π's own episodes
            fit = jax.jit(lambda p, prepared, k, c=context, t=arm_trainer, a=arm: a.fit_for_labels(
                c._replace(params=p, prepared=prepared), k, t.draw_episodes, steps=setting.fit_steps))

        def labels(p, prepared, fitted, trajectory, problems, k, c=context, a=arm):
            c = c._replace(params=p, prepared=prepared)
            return a.compute(c if fitted is None else LabelFit(fitted, {}).labelling_context(c), trajectory,
                             problems, k)

        labelled[name] = (arm_trainer, prepare, fit, jax.jit(labels))

    def labeller(seed: int) -> dict:
        state = trainer.init(seed)
        params = state.params
        if setting.policy == "trained":
            params = train(state, *trainer.limits(setting.train_episodes)).params
        problems, starts = trainer.sample_episodes(state)
        trajectory, _ = play(params, starts, jax.random.key(seed + 1))
        values = exact_step_values(env, trajectory, reference="policy", policy_fn=policy_fn, params=params)
        exact = exact_credit(trajectory, values)
        live = np.asarray(trajectory.live)
        success = np.asarray(trajectory.episode_return) > 0
        classes = classify_actions(exact, values["v"], live, success)
        groups = _class_groups(classes)
        signed = live & (classes != CLASSES.index("decorative")) & (classes != NOT_LIVE)
        out = {"steps": int(live.sum()), "class_counts": {k: int(v.sum()) for k, v in groups.items()}, "arms": {}}
        for name, (arm_trainer, prepare, fit, labels) in labelled.items():
            charge, prepared, fitted = {}, None, None
            if prepare is not None:  # the run's validation set: the arm picks its held-out problems
                preparation = prepare(params, jax.random.key(seed + 3), arm_trainer.validation_set)
                prepared, charge = preparation.state, dict(preparation.charge)
            if fit is not None:
                found = fit(params, prepared, jax.random.key(seed + 4))
                fitted, charge = found.value_params, _add_charges(charge, found.charge)
            result = labels(params, prepared, fitted, trajectory, problems, jax.random.key(seed + 2))
            label = np.asarray(result.advantage, np.float64)
            noise = {}
            if setting.noise_repeats:  # the same steps labelled again with independent keys
                again = [np.asarray(labels(params, prepared, fitted, trajectory, problems,
                                           jax.random.fold_in(jax.random.key(seed + 2), r + 1)).advantage, np.float64)
                         for r in range(setting.noise_repeats)]
                variance = np.var(np.stack([label] + again), axis=0, ddof=1)
                noise = {"label_variance": float(variance[live].mean()), "noise_repeats": setting.noise_repeats}
            charge = _add_charges(charge, result.charge)
            cost = {account: {"env_steps": int(c.env_steps), "policy_evals": int(c.policy_evals)}
                    for account, c in sorted(charge.items())}
            overall = label_measures(label[live], exact[live], signed[live])
            per_class = {cls: label_measures(label[mask], exact[mask], signed[mask]) for cls, mask in groups.items()}
            error = overall["normalised_error"]
            out["arms"][name] = {"overall": overall, "classes": per_class, "cost": cost,
                                 "score": 0.0 if error is None else 1.0 - error, **noise}
        return out

    return labeller


def label_quality(setting: LabelSetting, arms: dict) -> dict:
    """Host: every arm's label measures on one batch of trajectories of the setting's fixed policy
    (`make_labeller(setting, arms)(setting.seed)`).

    `arms`: arm name -> `TrainConfig` fields of that arm (its `credit` and options). Returns
    `{"steps", "class_counts", "arms": {arm: {"overall": measures, "classes": {class: measures},
    "cost": {account: {"env_steps", "policy_evals"}}, "score"}}}` (and `label_variance`,
    `noise_repeats` with `setting.noise_repeats`); `score` is `1 − normalised error` (0 when undefined).
    """
    return make_labeller(setting, arms)(setting.seed)


__all__ = ["FIT_STEPS", "LABEL_CLASSES", "POLICIES", "LabelSetting", "label_measures", "label_quality",
           "make_labeller"]
