"""A results page's first two sections, generated from its paired comparison table.

`findings_lines` writes `## Findings`: one bullet per regime, each comparison in it as a plain
claim with its effect, interval and n (`jaxcredit.comparison.finding_sentence`: a side "beats" the
other only where the 95% paired interval excludes 0). `not_shown_lines` writes `## What this does
not show`: the limits that follow from the table itself (few seeds, unresolved rows, several arms
against one reference, unfinished cells, one task and one machine). Both read only the table dict
(`jaxcredit.comparison.paired_table`, kept in every page's `summary.json`), so a page's findings
can be rebuilt from its summary alone.
"""

from __future__ import annotations

from jaxcredit.comparison import finding_sentence, is_resolved
from jaxcredit.rundir_io import regime_meaning
from jaxcredit.stats import MIN_RELIABLE_SEEDS

MAX_FINDINGS = 6  # bullets: one per regime, so a page of three regimes has three
TEST_LEVEL = 0.05  # a Holm-adjusted sign-flip p below this supports a difference
MEASURE_WORDS = {"average_success": "average", "final_success": "final"}


def _is_tested(comparison: dict) -> bool:
    """Whether the table carries the sign-flip test with Holm (`paired_table(nonparametric=True)`)."""
    return any("p_sign_flip_holm" in entry["vs_reference"]["final_success"]
               for rows in comparison["regimes"].values() for entry in _compared(rows))


def tested_sentence(entry: dict, measure: str) -> str:
    """One comparison in one measure, decided by the Holm-adjusted sign-flip p: `"exact beats
    outcome in average by +0.208 [t +0.011, +0.405; bootstrap +0.05, +0.37], Holm p 0.012"`, or
    `"inconclusive"` with the same numbers."""
    d = entry["vs_reference"][measure]
    p, words = d["p_sign_flip_holm"], MEASURE_WORDS[measure]
    boot = d.get("bootstrap") or {}
    intervals = (f"[t {d['low']:+.3f}, {d['high']:+.3f}; bootstrap {boot.get('low', float('nan')):+.3f}, "
                 f"{boot.get('high', float('nan')):+.3f}]" if d["low"] is not None else "[no interval]")
    arm, reference = entry["arm"], entry["reference"]
    if p < TEST_LEVEL and d["mean_diff"] != 0:
        winner, loser = (arm, reference) if d["mean_diff"] > 0 else (reference, arm)
        return f"{winner} beats {loser} in {words} by {abs(d['mean_diff']):+.3f} {intervals}, Holm p {p:.3f}"
    return f"{arm} vs {reference} in {words}: inconclusive ({d['mean_diff']:+.3f} {intervals}, Holm p {p:.3f})"


def _compared(rows: dict) -> list:
    return [entry for entry in rows.values() if entry.get("reference") is not None]


def _unresolved_text(entries: list) -> str:
    def delta(d):
        return "no interval" if d["low"] is None else f"{d['mean_diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
    return ", ".join(f"{e['arm']} vs {e['reference']} ({delta(e['vs_reference']['final_success'])})"
                     for e in entries)


def findings_lines(comparison: dict, threshold_differences: dict | None = None, threshold: float = 0.9) -> list:
    """`## Findings` (Markdown lines) of a `paired_table` dict: a bullet per regime with
    comparisons, at most `MAX_FINDINGS`; then, given `threshold_differences`
    (`analysis.page.threshold_comparisons`), the resolved differences in time to `threshold`
    (`threshold_findings_lines`)."""
    if _is_tested(comparison):
        return _tested_findings_lines(comparison)
    lines = ["## Findings", "",
             "Final greedy success, arm − reference, mean over paired seeds with its 95% paired Student-t interval; "
             "a side beats the other only where the interval excludes 0.", ""]
    bullets = []
    for regime, rows in comparison["regimes"].items():
        entries = _compared(rows)
        if not entries:
            continue
        resolved = [finding_sentence(regime, e) for e in entries if is_resolved(e["vs_reference"]["final_success"])]
        open_rows = [e for e in entries if not is_resolved(e["vs_reference"]["final_success"])]
        claims = resolved + ([f"no difference resolved for {_unresolved_text(open_rows)}, n = "
                              f"{min(e['num_seeds'] for e in open_rows)}"] if open_rows else [])
        bullets.append(f"- **{regime}** ({regime_meaning(regime)}): {'; '.join(claims)}.")
    if not bullets:
        bullets = ["- No comparison is finished yet."]
    lines += bullets[:MAX_FINDINGS] + [""]
    timed = threshold_findings_lines(threshold_differences or {}, threshold)
    if timed:
        lines += [f"Time to greedy success {threshold:g}: the paired difference in the cost spent by the first "
                  "evaluation at it (a side is sooner only where the interval excludes 0; at the resolution of the "
                  "evaluations).", ""] + timed + [""]
    return lines


def _tested_findings_lines(comparison: dict) -> list:
    """`## Findings` of a table with the sign-flip test: per regime, every comparison in average and
    final greedy success, decided by the Holm-adjusted sign-flip p (`tested_sentence`)."""
    lines = ["## Findings", "",
             "Greedy validation success, arm − reference, mean over paired seeds with its 95% paired t and bootstrap "
             f"intervals. A side beats the other only where the paired sign-flip permutation test, Holm-adjusted over "
             f"the arms compared with the same reference in the regime and measure, gives p < {TEST_LEVEL:g}; "
             "otherwise the comparison is inconclusive.", ""]
    bullets = []
    for regime, rows in comparison["regimes"].items():
        entries = _compared(rows)
        if entries:
            claims = [tested_sentence(e, m) for m in ("average_success", "final_success") for e in entries]
            bullets.append(f"- **{regime}** ({regime_meaning(regime)}, n = {min(e['num_seeds'] for e in entries)}): "
                           f"{'; '.join(claims)}.")
    return lines + (bullets or ["- No comparison is finished yet."])[:MAX_FINDINGS] + [""]


def threshold_findings_lines(differences: dict, threshold: float) -> list:
    """Bullets (Markdown lines) for `## Findings` from `threshold_comparisons`: per regime, the paired
    differences in time to greedy success `threshold` whose interval excludes 0, over pairs where
    every seed reached it in both cells (the others are counted, not listed); regimes without one
    have no bullet."""
    units = {"main_episodes": "main attempts", "total_env_steps": "total env steps"}
    bullets = []
    for regime, pairs in differences.items():
        claims, others = [], 0
        for name, entry in pairs.items():
            complete = entry["arm_reached"] == entry["reference_reached"] == entry["seeds"] > 0
            for key, unit in units.items():
                d = entry.get(key)
                if complete and d is not None and is_resolved(d):
                    arm, reference = name.split(" vs ")
                    side = "sooner" if d["mean_diff"] < 0 else "later"
                    claims.append(f"{arm} reaches it {side} than {reference} by {abs(d['mean_diff']):,.0f} {unit} "
                                  f"({d['mean_diff']:+,.0f} [{d['low']:+,.0f}, {d['high']:+,.0f}])")
                else:
                    others += 1
        if claims:
            rest = (f"; the other {others} of {others + len(claims)} differences are not resolved, or not every "
                    "seed reached the threshold in both cells" if others else "")
            bullets.append(f"- **{regime}**, time to greedy success {threshold:g} (arm − reference, n = "
                           f"{max(e['seeds'] for e in pairs.values())}): " + "; ".join(claims) + rest + ".")
    return bullets


def not_shown_lines(comparison: dict, missing: list) -> list:
    """`## What this does not show` (Markdown lines): the limits the table itself implies; `missing`
    names the cells the tables lack."""
    lines = ["## What this does not show", ""]
    seeds = sorted({note["num_seeds"] for note in comparison.get("notes", {}).values()})
    if seeds:
        few = f" (fewer than {MIN_RELIABLE_SEEDS}: the intervals are wide and unstable)" if seeds[0] < \
            MIN_RELIABLE_SEEDS else ""
        lines.append(f"- Population-level effects: n = {', '.join(map(str, seeds))} paired seeds{few}. An interval "
                     "that spans 0 is inconclusive, not evidence of no difference.")
    unresolved = [f"{entry['arm']} vs {entry['reference']} ({regime})" for regime, rows in comparison["regimes"].items()
                  for entry in _compared(rows) if not is_resolved(entry["vs_reference"]["final_success"])]
    if unresolved:
        lines.append("- Which side is better in " + ", ".join(unresolved) + ": no difference is resolved there.")
    shared = sorted({ref for note in comparison.get("notes", {}).values()
                     for ref, arms in note.get("families", {}).items() if len(arms) > 1})
    if shared:
        lines.append(f"- A family-wise claim: several arms are compared with {', '.join(shared)} in a regime, so "
                     "one interval excluding 0 is one claim among several; the tables give Holm-adjusted p.")
    if missing:
        lines.append("- The cells that did not finish: " + ", ".join(missing) + ".")
    lines.append("- Other tasks, sizes or budgets than this sweep's, or seed-by-seed equality on another CPU (the "
                 "same seeds train to other numbers there; compare such runs by their intervals).")
    return lines + [""]


__all__ = ["MAX_FINDINGS", "findings_lines", "not_shown_lines", "threshold_findings_lines"]
