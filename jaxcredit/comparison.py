"""The paired comparison table of a sweep: one builder for the trainer's table and the analysis report.

A sweep's cells are run directories `<regime>/<cell>` (the regimes, `matched_cell` and
`seed_measures`, one cell's per-seed numbers, are the run-directory format's, in
`jaxcredit.rundir_io`). `comparison_pairs` says which cell each row compares with which reference
cell in each regime (in `matched`, a label arm's equal-attempts run against a label-free arm's run
given exactly its total env steps); `paired_table` turns the cells' per-seed numbers
into the table (paired Student-t intervals, p-values, Holm-adjusted p-values per reference, what
each side spent) and `format_paired_table` into Markdown. `jaxcredit.train.sweep` and
`jaxcredit.analysis.compare` both call these, so a sweep's `table.md` and its report agree.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np

from jaxcredit.credit_arms import label_free_credits  # the registered arms that spend no label or critic work
from jaxcredit.rundir_io import MATCHED_COUNTERS, is_matched, matched_cell, regime_meaning
from jaxcredit.stats import (
    INTERVAL_METHOD,
    MIN_RELIABLE_SEEDS,
    holm,
    interval_description,
    paired_bootstrap,
    paired_t,
    sign_flip_p,
)

MEASURES = ("final_success", "average_success")


class Pair(NamedTuple):
    """One row: `arm` in cell `arm_cell` against `reference` in `reference_cell` (None: the
    reference arm's own row). Cells are `(regime directory, cell name)`."""

    regime: str
    arm: str
    arm_cell: tuple
    reference: str | None
    reference_cell: tuple | None


def arm_credits(base: dict, arms: dict) -> dict:
    """`{arm: credit}` of a sweep's arms (`base` fields overridden by each arm's fields)."""
    return {arm: {**base, **fields}.get("credit", "outcome") for arm, fields in arms.items()}


def label_arms(credits: dict) -> list:
    """The arms that pay label or critic work (every credit but `label_free_credits()`), in order."""
    free = label_free_credits()
    return [arm for arm, credit in credits.items() if credit not in free]


def label_free_arms(credits: dict, reference_arm: str) -> list:
    """The arms without label work, the reference arm first."""
    free = [arm for arm, credit in credits.items() if credit in label_free_credits()]
    return sorted(free, key=lambda arm: arm != reference_arm)


def arm_environments(base: dict, arms: dict) -> dict:
    """`{arm: key}`: the task each arm trains on (`env` and `env_overrides`, the arm's fields over
    `base`'s) as a canonical JSON string; arms with equal keys play the same environment."""
    merged = {arm: {**base, **fields} for arm, fields in arms.items()}
    return {arm: json.dumps([m.get("env", "mad"), m.get("env_overrides") or {}], sort_keys=True)
            for arm, m in merged.items()}


def arm_references(credits: dict, reference_arm: str, environments: dict | None = None) -> dict:
    """`{arm: the arm it is compared with, or None}` (None: the row is a reference itself).

    Without `environments` (or when every arm plays the reference arm's environment), every arm
    is compared with `reference_arm` (None for all when the sweep has no such arm). With arms on
    different environments (`arm_environments`, e.g. one arm per density), an arm is compared with
    the first arm of the reference arm's credit on its own environment, and stands alone when
    there is none: a paired comparison is only made within one task.
    """
    if reference_arm not in credits:
        return {arm: None for arm in credits}
    if environments is None or len({environments[arm] for arm in credits}) == 1:
        return {arm: (None if arm == reference_arm else reference_arm) for arm in credits}
    wanted = credits[reference_arm]
    out = {}
    for arm in credits:
        same = [other for other in credits if environments[other] == environments[arm]]
        if reference_arm in same:
            home = reference_arm
        else:
            home = next((other for other in same if credits[other] == wanted), None)
        out[arm] = None if home in (None, arm) else home
    return out


def comparison_pairs(regimes, credits: dict, reference_arm: str, *, environments: dict | None = None) -> list:
    """Every row of a sweep's table, as `Pair`s, regime by regime.

    `attempts` and `fixed-steps` (and the old `steps`): every arm against its reference
    (`arm_references`: `reference_arm`, or with `environments` the reference credit's arm on the
    same environment) in the same regime (a reference gets its own row). `matched`: every label
    arm's `attempts` cell against each label-free arm's `matched_cell` (on the same environment,
    when `environments` is given); `matched-policy-evals` likewise, its cells under its own name.
    """
    references = arm_references(credits, reference_arm, environments)
    pairs = []
    for regime in regimes:
        if is_matched(regime):
            for arm in label_arms(credits):
                for reference in label_free_arms(credits, reference_arm):
                    if environments is None or environments[reference] == environments[arm]:
                        pairs.append(Pair(regime, arm, ("attempts", arm), reference,
                                          (regime, matched_cell(reference, arm))))
            continue
        for arm in credits:
            reference = references[arm]
            cell = None if reference is None else (regime, reference)
            pairs.append(Pair(regime, arm, (regime, arm), reference, cell))
    return pairs


def _seed_subset(measures: dict, seeds) -> dict:
    """`measures` (`seed_measures`-shaped) on `seeds` only."""
    index = [list(measures["seeds"]).index(seed) for seed in seeds]
    return {k: (list(seeds) if k == "seeds" else np.asarray(v)[index] if isinstance(v, np.ndarray) and v.ndim == 1
                else v) for k, v in measures.items()}


def _spend(measures: dict) -> dict:
    spend = {"main_episodes": float(np.mean(measures["main_episodes"])),
             "total_env_steps": float(np.mean(measures["total_env_steps"]))}
    if "total_policy_evals" in measures:
        spend["total_policy_evals"] = float(np.mean(measures["total_policy_evals"]))
        if measures.get("policy_eval_flops") is not None:
            spend["policy_flops"] = spend["total_policy_evals"] * float(measures["policy_eval_flops"])
    return spend


def flops_text(flops: float) -> str:
    """`"2.6e12"`: a FLOP count to two significant figures."""
    mantissa, exponent = f"{flops:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _side(name: str, spend: dict, *, first: str = "attempts") -> str:
    """`name: 320 attempts = 1,500 env steps = 1,480 policy evals (3.1e9 FLOPs)`, the currency
    `first` (`attempts`, `steps` or `evals`) first; policy evaluations where the records hold them."""
    parts = {"attempts": f"{spend['main_episodes']:,.0f} attempts",
             "steps": f"{spend['total_env_steps']:,.0f} env steps"}
    if "total_policy_evals" in spend:
        flops = f" ({flops_text(spend['policy_flops'])} FLOPs)" if "policy_flops" in spend else ""
        parts["evals"] = f"{spend['total_policy_evals']:,.0f} policy evals{flops}"
    order = [first] + [k for k in parts if k != first]
    return f"{name}: " + " = ".join(parts[k] for k in order if k in parts)


def budget_text(pair: Pair, spend: dict, reference_spend: dict | None, budgets: dict) -> str:
    """What each side of a row got, in words (means over seeds)."""
    if is_matched(pair.regime):
        first = "evals" if MATCHED_COUNTERS[pair.regime] == "total_policy_evals" else "steps"
        return (_side(pair.reference, reference_spend, first=first) + f" (matched to {pair.arm}'s total, "
                f"per seed) vs {_side(pair.arm, spend)} ({budgets.get('attempts', 0):,} attempts budget)")
    first = "attempts" if pair.regime == "attempts" else "steps"
    cap = budgets.get(pair.regime)
    cap_text = "" if cap is None else (f" (budget {cap:,} attempts each)" if first == "attempts"
                                       else f" (cap {cap:,} env steps each)")
    text = _side(pair.arm, spend, first=first)
    if reference_spend is not None:
        text += " vs " + _side(pair.reference, reference_spend, first=first)
    return text + cap_text


def paired_table(pairs: list, measures: dict, *, budgets: dict, reference_arm: str,
                 confidence: float = 0.95, nonparametric: bool = False) -> dict:
    """The comparison table.

    Args:
      pairs: the rows (`comparison_pairs`); a row whose cells are missing from `measures` is skipped.
      measures: `{cell: seed_measures(...)}` for the cells on hand (`cell = (regime, name)`), each
        optionally with `policy_eval_flops` (one policy evaluation's FLOPs,
        `jaxcredit.policy.policy_eval_flops`) for the budget text.
      budgets: the sweep's budgets (`{"attempts": n, "fixed-steps": n}`), for the budget text.
      reference_arm: the sweep's reference arm.
      confidence: the intervals' coverage.
      nonparametric: also, per measure, the paired sign-flip permutation test (`p_sign_flip`, and
        `p_sign_flip_holm` over the same family as `p_holm`) and the paired bootstrap interval
        (`bootstrap`: `{"low", "high", ...}`), `jaxcredit.stats`.

    Returns:
      `{"method", "confidence", "reference_arm", "regimes": {regime: {row: entry}}, "notes":
      {regime: {"meaning", "num_seeds", "families"}}}`. A row is keyed by its arm, or
      `"<arm> vs <reference>"` when the reference is not the sweep's reference arm. An entry has
      `arm`, `reference`, `num_seeds`, each measure's mean for both sides (`final_success`,
      `reference_final_success`, ...), `spend` (mean main attempts, total env steps and, where
      recorded, total policy evaluations and their FLOPs of each side), `budget` (in words) and
      `vs_reference` (`{measure: paired_t(...)}` plus `p_holm`: Holm over the rows of the regime
      with the same reference, per measure).
    """
    regimes: dict = {}
    notes: dict = {}
    for pair in pairs:
        ours = measures.get(pair.arm_cell)
        theirs = measures.get(pair.reference_cell) if pair.reference_cell else None
        if ours is None or (pair.reference_cell is not None and theirs is None):
            continue
        if theirs is not None and is_matched(pair.regime) and set(theirs["seeds"]) < set(ours["seeds"]):
            ours = _seed_subset(ours, theirs["seeds"])  # matched runs may pair the first seeds of the attempts runs
        if theirs is not None and list(ours["seeds"]) != list(theirs["seeds"]):
            raise ValueError(f"{pair.arm} and {pair.reference} in regime {pair.regime} have different seeds "
                             f"({list(ours['seeds'])} vs {list(theirs['seeds'])}); paired comparison needs the same")
        spend = _spend(ours)
        entry = {"arm": pair.arm, "reference": pair.reference, "num_seeds": len(ours["seeds"]),
                 "spend": {"arm": spend}}
        for measure in MEASURES:
            entry[measure] = float(np.mean(ours[measure]))
        reference_spend = None
        if theirs is not None:
            reference_spend = _spend(theirs)
            entry["spend"]["reference"] = reference_spend
            entry["vs_reference"] = {}
            for measure in MEASURES:
                entry[f"reference_{measure}"] = float(np.mean(theirs[measure]))
                entry["vs_reference"][measure] = paired_t(ours[measure], theirs[measure], confidence=confidence)
                if nonparametric:
                    diff = np.asarray(ours[measure], np.float64) - np.asarray(theirs[measure], np.float64)
                    entry["vs_reference"][measure].update(
                        p_sign_flip=sign_flip_p(diff)["p_value"],
                        bootstrap=paired_bootstrap(diff, confidence=confidence))
        entry["budget"] = budget_text(pair, spend, reference_spend, budgets)
        key = pair.arm if pair.reference in (None, reference_arm) else f"{pair.arm} vs {pair.reference}"
        regimes.setdefault(pair.regime, {})[key] = entry
    for regime, rows in regimes.items():
        families: dict = {}
        for key, entry in rows.items():
            if entry["reference"] is not None:
                families.setdefault(entry["reference"], []).append(key)
        for keys in families.values():
            for measure in MEASURES:
                adjusted = holm([rows[k]["vs_reference"][measure]["p_value"] for k in keys])
                for k, p in zip(keys, adjusted):
                    rows[k]["vs_reference"][measure]["p_holm"] = p
                if nonparametric:
                    adjusted = holm([rows[k]["vs_reference"][measure]["p_sign_flip"] for k in keys])
                    for k, p in zip(keys, adjusted):
                        rows[k]["vs_reference"][measure]["p_sign_flip_holm"] = p
        notes[regime] = {"meaning": regime_meaning(regime),
                         "num_seeds": min(entry["num_seeds"] for entry in rows.values()),
                         "families": {ref: [rows[k]["arm"] for k in keys] for ref, keys in families.items()}}
    return {"method": INTERVAL_METHOD, "confidence": confidence, "reference_arm": reference_arm,
            "regimes": regimes, "notes": notes}


def _p(p) -> str:
    return "n/a" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def _delta(d: dict) -> str:
    interval = ("[n/a]" if d["low"] is None else f"[{d['low']:+.3f}, {d['high']:+.3f}]")
    return f"{d['mean_diff']:+.3f} {interval}"


def format_paired_table(table: dict, *, heading: str = "###") -> str:
    """Markdown: per regime, what it means, the interval method and n (with a warning below
    `MIN_RELIABLE_SEEDS`), which arms share a reference (Holm), and one row per comparison."""
    confidence = table.get("confidence", 0.95)
    level = f"{confidence:.0%}"
    lines = [f"Intervals: {level} {table.get('method', INTERVAL_METHOD)} confidence intervals of the mean "
             "per-seed difference (arm − reference; paired seeds share initial parameters and problems); p: "
             "two-sided paired t-test; Holm: p adjusted over the arms compared with the same reference in the "
             "regime. Final success: greedy success at the last evaluation; average: over the evaluations after "
             "the start (the same number, evenly spaced over each side's own budget). Spend: means over seeds.", ""]
    for regime, rows in table["regimes"].items():
        note = table["notes"][regime]
        lines += [f"{heading} Regime: {regime} ({note['meaning']})", "",
                  "Interval: " + interval_description(note["num_seeds"], confidence=confidence) + ".", ""]
        for reference, arms in note["families"].items():
            if len(arms) > 1:
                lines += [f"{len(arms)} arms are compared with {reference} here ({', '.join(arms)}): to claim any "
                          "one of them beats it, read the Holm-adjusted p.", ""]
        lines += [f"| arm | vs | n | final: arm / ref | Δ final [{level} CI] | p (Holm) | average: arm / ref "
                  f"| Δ average [{level} CI] | p (Holm) | seeds won/tied/lost (final) | budget |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for entry in rows.values():
            if entry["reference"] is None:
                lines.append(f"| {entry['arm']} | reference | {entry['num_seeds']} | {entry['final_success']:.3f} | "
                             f"reference | | {entry['average_success']:.3f} | reference | | | {entry['budget']} |")
                continue
            final, average = (entry["vs_reference"][m] for m in MEASURES)
            lines.append(
                f"| {entry['arm']} | {entry['reference']} | {entry['num_seeds']} | "
                f"{entry['final_success']:.3f} / {entry['reference_final_success']:.3f} | {_delta(final)} | "
                f"{_p(final['p_value'])} ({_p(final.get('p_holm'))}) | "
                f"{entry['average_success']:.3f} / {entry['reference_average_success']:.3f} | {_delta(average)} | "
                f"{_p(average['p_value'])} ({_p(average.get('p_holm'))}) | "
                f"{final['arm_wins']}/{final['ties']}/{final['baseline_wins']} | {entry['budget']} |")
        lines.append("")
    return "\n".join(lines)


REGIME_PHRASES = {"attempts": "at equal attempts", "fixed-steps": "at equal total env steps",
                  "steps": "at equal total env steps"}  # `matched`: at the label arm's own total


def is_resolved(d: dict) -> bool:
    """Whether a `paired_t` result's interval excludes 0 (False without an interval)."""
    return d["low"] is not None and (d["low"] > 0 or d["high"] < 0)


def finding_sentence(regime: str, entry: dict, *, measure: str = "final_success") -> str:
    """One plain sentence for one row of a `paired_table` regime: who wins by how much, with the
    interval and n, or that no difference is resolved (the interval spans 0 or is undefined).

    E.g. `"at equal attempts mc beats outcome by +0.312 [+0.101, +0.523], n = 8"`."""
    arm, reference, n = entry["arm"], entry["reference"], entry["num_seeds"]
    if is_matched(regime):
        where = f"at {arm}'s total {'policy evaluations' if regime == 'matched-policy-evals' else 'env steps'}"
    else:
        where = REGIME_PHRASES.get(regime, f"in {regime}")
    d = entry["vs_reference"][measure]
    if d["low"] is None:
        return f"{where} {arm} vs {reference}: no interval (n = {n}), no difference resolved"
    interval = f"[{d['low']:+.3f}, {d['high']:+.3f}], n = {n}"
    if d["low"] > 0:
        return f"{where} {arm} beats {reference} by {d['mean_diff']:+.3f} {interval}"
    if d["high"] < 0:
        flipped = f"[{-d['high']:+.3f}, {-d['low']:+.3f}], n = {n}"
        return f"{where} {reference} beats {arm} by {-d['mean_diff']:+.3f} {flipped}"
    return f"{where} {arm} vs {reference}: no difference resolved ({d['mean_diff']:+.3f} {interval})"


def finding_sentences(table: dict, *, measure: str = "final_success") -> list:
    """`finding_sentence` for every compared row of `table` (`paired_table`), regime by regime."""
    return [finding_sentence(regime, entry, measure=measure) for regime, rows in table["regimes"].items()
            for entry in rows.values() if entry.get("reference") is not None]


__all__ = ["MEASURES", "MIN_RELIABLE_SEEDS", "Pair", "arm_credits", "arm_environments",
           "arm_references", "budget_text", "comparison_pairs", "finding_sentence", "finding_sentences", "flops_text",
           "is_resolved", "format_paired_table", "label_arms", "label_free_arms", "paired_table"]
