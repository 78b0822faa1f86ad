"""Cards that can fail: each CA-ID card field's falsification control, run on a small shared subset.

`check_run(run_dir)` runs a run's credit arm, at its final policy (the initial network where the
run saved none), on fixed episodes of that policy, and marks each field of its card **passed**,
**failed** or **not applicable** with the reason. `check_audit(audit_dir)` does the same from an
audit's record. Each control and what its failure means: docs/analysis.md, "Card checks".

The controls, in card order, each against a stated tolerance (the constants below): the labels
under a second reference; text-matched against restored credit for the run's own observation;
the labels against exact restored `Q^π − V^π`; against exact credit under the stated continuation
policy and a second one; the labels repeated with independent keys, and the interval's width; the
matched-budget ablation of the run's sweep.

Shape letters: B episodes, T turns.
"""

from __future__ import annotations

import dataclasses
import os

import jax
import numpy as np

from jaxcredit.analysis.card import FIELDS, card_for_config, checked_card_markdown
from jaxcredit.analysis.classes import CLASSES, NOT_LIVE, classify_actions
from jaxcredit.analysis.exact import exact_credit, exact_step_values
from jaxcredit.analysis.label_measures import label_measures
from jaxcredit.checkpoint import load_policy, policy_checkpoint_path
from jaxcredit.credit_arms import credit_arm
from jaxcredit.rollout import rollout
from jaxcredit.rundir_io import is_matched, read_json, table_regimes
from jaxcredit.stats import wilson_interval

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not applicable"
REFERENCE_AGREEMENT = 0.8  # unit and estimand: the labels' signs survive a second reference
STATE_FLIP_SHARE = 0.05  # effective state: at most this share of visited steps flips sign when matched by text
PROTOCOL_SLACK = 0.02  # downstream protocol: agreement with π's credit may trail the second policy's by this much
HALF_WIDTH = 0.1  # support: the sign agreement's 95% Wilson half-width
REPEATS = 4  # support: independent-key repeats of the labels


def _result(status: str, text: str, **measures) -> dict:
    return {"status": status, "text": text, **measures}


def _agreement(label: np.ndarray, exact: np.ndarray, signed: np.ndarray) -> tuple[float, int, int]:
    """`(share, agreeing, compared)`: `label_measures`' sign agreement on the `signed` steps (a label of
    0 counts half), with the count it is a share of."""
    compared = int(signed.sum())
    share = label_measures(label[signed], exact[signed], np.ones(compared, bool))["sign_agreement"]
    return (float("nan"), 0, 0) if share is None else (share, int(round(share * compared)), compared)


@dataclasses.dataclass(frozen=True)
class _Subset:
    """The shared subset: fixed episodes of the run's policy and their exact credit."""

    trainer: object
    policy_fn: object
    params: object
    problems: object
    trajectory: object
    exact: np.ndarray  # [B, T], Q^π − V^π of the action taken
    exact_uniform: np.ndarray  # [B, T], the same under the uniform continuation policy
    signed: np.ndarray  # [B, T], live steps whose exact credit is not decorative
    live: np.ndarray


def _subset(run_dir: str, config: dict, *, seed_index: int, problems: int, seed: int) -> tuple[_Subset, str]:
    from jaxcredit.train.config import config_from_dict
    from jaxcredit.train.loop import make_train

    fields = {**config, "num_seeds": 1, "problems_per_iteration": problems}
    trainer = make_train(config_from_dict(fields))
    path = policy_checkpoint_path(run_dir, seed_index=seed_index)
    if os.path.isdir(os.path.join(run_dir, "policies")) and path != run_dir:
        policy_fn, params, _ = load_policy(path)
        policy = f"its final policy ({os.path.relpath(path, run_dir)})"
    else:
        policy_fn, params = trainer.policy_fn, trainer.init(seed).params
        policy = "its initial network (the run saved no final policy)"
    env = trainer.env
    batch, starts = trainer.draw_episodes(jax.random.key(seed))
    trajectory, _ = jax.jit(lambda p, s, k: rollout(env, policy_fn, p, s, k, num_turns=env.max_turns))(
        params, starts, jax.random.key(seed + 1))
    values = exact_step_values(env, trajectory, reference="policy", policy_fn=policy_fn, params=params)
    exact = exact_credit(trajectory, values)
    uniform = exact_credit(trajectory, exact_step_values(env, trajectory, reference="uniform"))
    live = np.asarray(trajectory.live)
    success = np.asarray(trajectory.episode_return) > 0
    classes = classify_actions(exact, values["v"], live, success)
    signed = live & (classes != CLASSES.index("decorative")) & (classes != NOT_LIVE)
    return _Subset(trainer, policy_fn, params, batch, trajectory, exact, uniform, signed, live), policy


def _labeller(subset: _Subset, config_fields: dict):
    """`labels(key) -> float64 [B, T]`: the arm of `config_fields` on the subset's episodes."""
    from jaxcredit.train.config import config_from_dict

    trainer = dataclasses.replace(subset.trainer, config=config_from_dict({**config_fields, "num_seeds": 1}))
    arm = credit_arm(trainer.config.credit)
    context = trainer._context(subset.params)._replace(policy_fn=subset.policy_fn)
    if arm.prepare is not None:  # one-time work (the predictor's dataset) on the same policy
        context = context._replace(prepared=arm.prepare(context, jax.random.key(7), trainer.draw_problem,
                                                        trainer.validation_set).state)
    compute = jax.jit(lambda t, p, k: arm.compute(context, t, p, k).advantage)
    return lambda key: np.asarray(compute(subset.trajectory, subset.problems, jax.random.key(key)), np.float64)


def _second_reference(config: dict) -> dict | None:
    """The run's config with its arm's other reference (uniform, or on-policy where it used another)."""
    if "replacement" not in credit_arm(config.get("credit", "outcome")).option_names:
        return None
    options = dict(config.get("credit_options") or {})
    current = options.get("replacement", "on-policy")
    options["replacement"] = "uniform" if current == "on-policy" else "on-policy"
    return {**config, "credit_options": options}


def _sweep_of(run_dir: str) -> str | None:
    """The sweep directory a run directory sits in (a parent with `sweep_spec.json`), or None."""
    path = os.path.abspath(run_dir)
    for _ in range(3):
        path = os.path.dirname(path)
        if os.path.isfile(os.path.join(path, "sweep_spec.json")):
            return path
    return None


def check_run(run_dir: str, *, seed_index: int = 0, problems: int = 16, seed: int = 0) -> dict:
    """Host: `{"card", "policy", "checks": {field: {"status", "text", ...measures}}}` for the run
    directory `run_dir` (its `config.json`), on `problems` x its attempts per problem episodes of
    its policy drawn with `seed`. Raises `FileNotFoundError` without a `config.json`."""
    from jaxcredit.analysis.identification_exact import run_identification

    config_path = os.path.join(run_dir, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{run_dir}: not a run directory (no config.json)")
    config = read_json(config_path)
    arm = credit_arm(config.get("credit", "outcome"))
    card = card_for_config(config, subject=f"run {os.path.basename(os.path.abspath(run_dir))} / arm {arm.name}")
    subset, policy = _subset(run_dir, config, seed_index=seed_index, problems=problems, seed=seed)
    labels = _labeller(subset, config)
    label = labels(seed + 2)
    share, agreeing, compared = _agreement(label, subset.exact, subset.signed)
    low, high = wilson_interval(agreeing, compared) if compared else (float("nan"),) * 2
    checks = {}

    second = _second_reference(config)
    if second is None:
        checks["unit_and_estimand"] = _result(NOT_APPLICABLE, f"not applicable, because {arm.name} has no "
                                              "reference (replacement) to vary")
    else:
        try:
            other = _labeller(subset, second)(seed + 2)
        except ValueError as error:  # e.g. mc's td variant cannot take the uniform replacement
            checks["unit_and_estimand"] = _result(NOT_APPLICABLE, f"not applicable, because the second reference "
                                                  f"is refused: {error}")
        else:
            kept, _, n = _agreement(other, label, subset.signed)
            replacement = second["credit_options"]["replacement"]
            checks["unit_and_estimand"] = _result(
                PASSED if kept >= REFERENCE_AGREEMENT else FAILED,
                f"sign agreement {kept:.3f} with the labels under the {replacement} reference on {n} steps "
                f"(passes at >= {REFERENCE_AGREEMENT})", sign_agreement=kept, steps=n)

    env = subset.trainer.env
    record = run_identification(env, subset.problems, policy_fn=subset.policy_fn, params=subset.params,
                                policy=policy)
    flips = record["views"][0]["measures"]["sign_flip_share"]
    checks["effective_state"] = _result(
        PASSED if flips <= STATE_FLIP_SHARE else FAILED,
        f"text-matched against restored credit for the run's own observation: {flips:.3f} of visited steps flip "
        f"sign (passes at <= {STATE_FLIP_SHARE}; exact, {record['problems']} problems)", sign_flip_share=flips)

    if arm.enumerates:
        checks["intervention_provenance"] = _result(NOT_APPLICABLE, "not applicable, because the labels are exact "
                                                    "restored replay (the solver over the complete graph)")
    else:
        above = compared > 0 and low > 0.5
        checks["intervention_provenance"] = _result(
            PASSED if above else FAILED,
            f"sign agreement with exact restored Q^π − V^π {share:.3f} [{low:.3f}, {high:.3f}] on {compared} "
            "non-decorative steps (passes when the 95% Wilson interval lies above 0.5)",
            sign_agreement=share, low=low, high=high, steps=compared)

    if arm.account is None:
        checks["downstream_protocol"] = _result(NOT_APPLICABLE, "not applicable, because the arm runs no "
                                                "continuation: its labels come from the main attempts themselves")
    else:
        uniform_share, _, _ = _agreement(label, subset.exact_uniform, subset.signed)
        checks["downstream_protocol"] = _result(
            PASSED if share >= uniform_share - PROTOCOL_SLACK else FAILED,
            f"sign agreement with exact credit under the stated continuation policy π {share:.3f}, under the "
            f"uniform policy {uniform_share:.3f} (passes when π's is at least the uniform's − {PROTOCOL_SLACK})",
            agreement_policy=share, agreement_uniform=uniform_share)

    again = np.stack([label] + [labels(seed + 2 + 1000 * (r + 1)) for r in range(REPEATS)])
    live = subset.live
    noise = float(np.std(again, axis=0, ddof=1)[live].mean())
    scale = float(np.abs(label[live]).mean()) if live.any() else 0.0
    half = (high - low) / 2 if compared else float("inf")
    quiet = noise <= scale
    checks["support_and_uncertainty"] = _result(
        PASSED if quiet and half <= HALF_WIDTH else FAILED,
        f"label noise std {noise:.4f} over {REPEATS + 1} independent keys against mean |label| {scale:.4f}; sign "
        f"agreement half-width {half:.3f} on {compared} steps (passes when the noise is at most the labels' "
        f"size and the half-width at most {HALF_WIDTH})", noise_std=noise, mean_abs_label=scale, half_width=half,
        repeats=REPEATS + 1)

    sweep = _sweep_of(run_dir)
    spec = read_json(os.path.join(sweep, "sweep_spec.json")) if sweep else {}
    matched = [r for r in table_regimes(spec.get("regimes") or [], spec.get("match_on")) if is_matched(r)]
    checks["optimization_interface"] = (
        _result(PASSED, f"the matched-budget ablation: {', '.join(os.path.join(sweep, r) for r in matched)}")
        if matched else _result(NOT_APPLICABLE, "not applicable, because the run is not part of a sweep with a "
                                "matched regime (no matched-budget ablation to point to)"))
    return {"card": card.to_dict(), "policy": policy, "episodes": int(live.shape[0]),
            "checks": {name: checks[name] for name in FIELDS}}


def check_audit(audit_dir: str) -> dict:
    """Host: the checked card of an audit directory (its `audit.json`, as `jaxcredit audit` writes it)."""
    from jaxcredit.analysis.card import card_for_audit

    path = os.path.join(audit_dir, "audit.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{audit_dir}: not an audit directory (no audit.json)")
    audit = read_json(path)
    card = card_for_audit(audit, policy=str(audit.get("policy", "the audited policy")))
    checks = {name: _result(NOT_APPLICABLE, "not applicable, because an audit measures one policy's labels "
                            "against exact values under one reference") for name in FIELDS}
    modes = [("forced", audit.get("sign_agreement_vs_exact"), audit.get("sign_agreement")),
             ("sampled", (audit.get("sampled") or {}).get("sign_agreement_vs_exact"),
              (audit.get("sampled") or {}).get("sign_agreement"))]
    texts, statuses, widths = [], [], []
    for mode, versus, halves in modes:
        if not versus:
            continue
        n = int(versus["num_compared"])
        low, high = wilson_interval(int(round(versus["agreement"] * n)), n)
        statuses.append(low > 0.5)
        widths.append((high - low) / 2)
        texts.append(f"{mode}: sign agreement with exact {versus['agreement']:.3f} [{low:.3f}, {high:.3f}] on {n} "
                     f"actions" + (f", between halves {halves['agreement']:.3f}" if halves else ""))
    if texts:
        checks["intervention_provenance"] = _result(PASSED if all(statuses) else FAILED, "; ".join(texts)
                                                    + " (passes when each Wilson interval lies above 0.5)")
        checks["support_and_uncertainty"] = _result(
            PASSED if max(widths) <= HALF_WIDTH else FAILED,
            f"largest sign-agreement half-width {max(widths):.3f} (passes at <= {HALF_WIDTH})")
    checks["optimization_interface"] = _result(NOT_APPLICABLE, "not applicable, because an audit does not train")
    return {"card": card.to_dict(), "policy": audit.get("policy"), "checks": checks}


def check_sweep(sweep_dir: str, **kwargs) -> dict:
    """`{"arms": {arm: check_run(...)}}`: every arm of a sweep, checked on its `attempts` cell (where
    it has one; `kwargs` as `check_run`'s). Written as the sweep's `checked-cards.json`, a results
    page shows each checked card."""
    spec = read_json(os.path.join(sweep_dir, "sweep_spec.json"))
    arms = {}
    for arm in spec.get("arm_order") or list(spec.get("arms", {})):
        run = os.path.join(sweep_dir, "attempts", arm)
        if os.path.isfile(os.path.join(run, "config.json")):
            arms[arm] = check_run(run, **kwargs)
            arms[arm]["card"]["subject"] = f"sweep {spec.get('name', '?')} / arm {arm}"
    if not arms:
        raise ValueError(f"{sweep_dir}: no attempts cell to check")
    return {"arms": arms}


def check_path(path: str, **kwargs) -> dict:
    """`check_audit` for a directory with `audit.json`, `check_sweep` for one with `sweep_spec.json`,
    else `check_run`."""
    if os.path.isfile(os.path.join(path, "audit.json")):
        return check_audit(path)
    if os.path.isfile(os.path.join(path, "sweep_spec.json")):
        return check_sweep(path, **kwargs)
    return check_run(path, **kwargs)


__all__ = ["FAILED", "NOT_APPLICABLE", "PASSED", "check_audit", "check_path", "check_run", "check_sweep",
           "checked_card_markdown"]
