"""`report.md` for a sweep, a run or an audit directory: tables, CA-ID cards and plots.

`write_report(path)` finds out what `path` holds (`rundirs.kind_of`), writes the plots under
`path/plots/`, the cards as `card.md` and `card.json`, the numbers as `comparison.json` (sweeps)
and then `report.md`, which links only files that exist (checked before it is written).
"""

from __future__ import annotations

import math
import os
import re

from jaxcredit.analysis.audit_sampled import sampled_markdown
from jaxcredit.analysis.card import card_for_audit, card_for_config, cards_for_sweep, cards_markdown
from jaxcredit.analysis.classes import format_class_table
from jaxcredit.analysis.compare import compare_sweep, format_comparison_table, learning_curve
from jaxcredit.analysis.final_context import final_context_markdown
from jaxcredit.analysis.formatting import format_number
from jaxcredit.analysis.plots import plot_credit_by_type, plot_learning_curves, plot_mc_error
from jaxcredit.analysis.prepared import prepared_sections
from jaxcredit.analysis.rundirs import kind_of, read_json, read_jsonl, read_sweep_spec, seed_measures, sweep_cells
from jaxcredit.output_dirs import check_kind, write_kind
from jaxcredit.rundir_io import (
    RunLock,
    check_writable_dir,
    dumps_strict,
    is_finished,
    is_matched,
    refuse_failed,
    regime_meaning,
    write_text_atomic,
)
from jaxcredit.stats import interval_description, t_interval

CURVE_AXES = {"steps": "total_env_steps", "attempts": "main_episodes"}  # plot file suffix -> x axis


def _write(path: str, text: str) -> None:
    write_text_atomic(path, text)


def _write_json(path: str, obj) -> None:
    """Strict JSON (a NaN becomes null with a `<key>_reason`), atomically."""
    _write(path, dumps_strict(obj, indent=2, sort_keys=False, default=float) + "\n")


def markdown_links(text: str) -> list[str]:
    """The files the Markdown links and images in `text` point to (relative paths as written, without
    a `#section` anchor; links to a section of the same page are left out)."""
    return [target.split("#", 1)[0] for target in re.findall(r"\]\(([^)\s]+)\)", text) if not target.startswith("#")]


def _finish(path: str, text: str) -> str:
    missing = [link for link in markdown_links(text) if not os.path.exists(os.path.join(path, link))]
    if missing:
        raise ValueError(f"report for {path} would link missing files: {', '.join(missing)}")
    report = os.path.join(path, "report.md")
    _write(report, text)
    return report


def _write_cards(path: str, cards) -> list[str]:
    _write(os.path.join(path, "card.md"), cards_markdown(cards))
    _write_json(os.path.join(path, "card.json"), [card.to_dict() for card in cards])
    return ["Cards: [card.md](card.md), [card.json](card.json).", "", cards_markdown(cards)]


def curve_plots(path: str, runs: dict, *, prefix: str, title: str, link_prefix: str = "",
                y: str = "success_greedy") -> list[str]:
    """Learning curves of `runs` (arm -> run dir) against both cost axes, written as
    `path/plots/<prefix>curve-<axis>.png`; returns Markdown image lines linking
    `<link_prefix>plots/...` (the plots' path from the page that shows them). `y`: the metric drawn
    (e.g. `success_greedy/<family>`)."""
    lines = []
    for axis_name, x in CURVE_AXES.items():
        curves = {arm: learning_curve(read_jsonl(os.path.join(run, "metrics.jsonl")), x=x, y=y)
                  for arm, run in runs.items()}
        relative = f"plots/{prefix}curve-{axis_name}.png"
        plot_learning_curves(curves, os.path.join(path, relative), x=x, title=f"{title} vs {x}")
        lines += [f"![{title} against {x}]({link_prefix}{relative})", ""]
    return lines


def regime_curve_runs(cells: dict) -> dict:
    """`{regime: {line: run_dir}}` to draw per regime from `sweep_cells`: in `matched`, each label
    arm's `attempts` run is drawn with the runs given its total env steps (`<arm>/to-<label arm>`)."""
    out = {}
    for regime, runs in cells.items():
        if is_matched(regime):  # the label arms' side of the matched comparisons: their attempts runs
            label_runs = {name.split("/to-")[-1] for name in runs}
            runs = {**{arm: run for arm, run in cells.get("attempts", {}).items() if arm in label_runs}, **runs}
        out[regime] = runs
    return out


def _sweep_report(path: str) -> str:
    spec = read_sweep_spec(path)
    comparison = compare_sweep(path)
    _write_json(os.path.join(path, "comparison.json"), comparison)
    lines = [f"# Sweep report: {spec.get('name', os.path.basename(path))}", "", spec.get("description", ""), "",
             "Files: [sweep_spec.json](sweep_spec.json), [comparison.json](comparison.json)"
             + (", [table.md](table.md)" if os.path.exists(os.path.join(path, "table.md")) else "") + ".", "",
             "## Paired comparisons across seeds", "",
             format_comparison_table(comparison), "## Learning curves", "",
             "Mean greedy success over seeds against each cost axis; bands are Student-t intervals of the mean "
             "over seeds (the figure names n). In `matched`, each label arm's equal-attempts run is drawn with "
             "the runs given its total env steps (`<arm>/to-<label arm>`).", ""]
    cells = sweep_cells(path)
    for regime, runs in regime_curve_runs(cells).items():
        lines += [f"### Regime: {regime} ({regime_meaning(regime)})", ""]
        lines += curve_plots(path, runs, prefix=f"{regime}-", title=f"{regime} regime")
    lines += prepared_sections({f"{regime}/{arm}": run for regime, runs in cells.items() for arm, run in runs.items()})
    lines += ["## CA-ID cards", ""] + _write_cards(path, cards_for_sweep(spec, path))
    return _finish(path, "\n".join(lines))


def _run_report(path: str) -> str:
    config = read_json(os.path.join(path, "config.json"))
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    measures = seed_measures(rows)
    complete = is_finished(path)
    arm = config.get("credit", "run")
    lines = [f"# Run report: {arm} on {config.get('env', '?')}", "",
             "Files: [config.json](config.json), [metrics.jsonl](metrics.jsonl)"
             + (", [summary.json](summary.json)" if complete else " (unfinished: no summary.json)") + ".", "",
             "| seed | final success | average success |", "| --- | --- | --- |"]
    for seed, final, average in zip(measures["seeds"], measures["final_success"], measures["average_success"]):
        lines.append(f"| {seed} | {final:.3f} | {average:.3f} |")
    intervals = [t_interval(measures[m]) for m in ("final_success", "average_success")]
    lines += [f"| **mean** | {intervals[0][0]:.3f} | {intervals[1][0]:.3f} |",
              "| 95% interval | " + " | ".join(_interval_text(lo, hi) for _, lo, hi in intervals) + " |",
              "", "Interval: " + interval_description(len(measures["seeds"]), method="Student-t")
              + " (of the mean over seeds).", "", "## Learning curves", ""]
    lines += curve_plots(path, {arm: path}, prefix="", title=arm)
    lines += prepared_sections({f"run {arm}": path})
    lines += ["## CA-ID card", ""] + _write_cards(path, [card_for_config(config, subject=f"run {arm}")])
    return _finish(path, "\n".join(lines))


def _interval_text(low, high) -> str:
    return "n/a" if math.isnan(low) else f"[{low:.3f}, {high:.3f}]"


def audit_markdown_summary(audit: dict) -> str:
    """Markdown tables of an audit's reliability numbers: the forced mode's (with its Monte Carlo
    error by K) and the sampled mode's, whichever were run, their completion counts, and the
    FINAL-context rates of an arithmetic audit."""
    before = audit["credit_before_final"]
    lines = ["| measure | value |", "| --- | --- |",
             f"| states (one per episode) | {audit['num_states']} |",
             f"| episode success / mean length | {format_number(audit['episode_success'])} / "
             f"{format_number(audit['mean_episode_length'], '.2f')} |",
             f"| share of exact \\|Δ\\| before the final action | {format_number(before['exact'])} "
             f"(steps before final: {format_number(before['steps_before_final'])}) |"]
    for mode, count in audit.get("completions", {}).items():
        lines.append(f"| {mode} mode: completions total / per state | {count['total']} / {count['per_state']:g} |")
    lines += [f"| time: {' / '.join(audit['seconds'])} (s) | {' / '.join(map(str, audit['seconds'].values()))} |", ""]
    if "sign_agreement" in audit:  # the forced mode
        sign, half = audit["sign_agreement"], audit["split_half"]
        lines += ["| measure (forced: K continuations per legal action) | value |", "| --- | --- |",
                  f"| (state, action) pairs | {audit['num_state_actions']} |",
                  f"| continuations per action K (two halves) | {audit['num_continuations']} "
                  f"({audit['halves'][0]} + {audit['halves'][1]}) |",
                  f"| sign agreement of the largest credit, half vs half | {format_number(sign['agreement'])} "
                  f"({sign['num_compared']} states with a signal) |",
                  f"| sign agreement, exact top action vs full-K estimate | "
                  f"{format_number(audit['sign_agreement_vs_exact']['agreement'])} |",
                  f"| split-half correlation (Spearman-Brown, full K) | {format_number(half['correlation'])} "
                  f"({format_number(half['spearman_brown'])}) |",
                  f"| share of Monte Carlo \\|Δ̂\\| (sampled states) before the final action | "
                  f"{format_number(before['mc_sampled_states'])} |",
                  "", "| K | RMSE Q̂ | RMSE credit | Bernoulli sqrt(q(1-q)/K) |", "| --- | --- | --- | --- |"]
        lines += [f"| {r['k']} | {r['rmse_q']:.4f} | {r['rmse_credit']:.4f} | {r['bernoulli_rmse_q']:.4f} |"
                  for r in audit["mc_error"]]
        lines.append("")
    if "sampled" in audit:
        lines += [sampled_markdown(audit["sampled"])]
    if "final_context" in audit:
        lines += ["FINAL choice by context (every visited state of the audited episodes):", "",
                  final_context_markdown(audit["final_context"])]
    return "\n".join(lines).rstrip("\n") + "\n"


def _audit_report(path: str) -> str:
    audit = read_json(os.path.join(path, "audit.json"))
    policy = audit.get("policy", "policy")
    if "mc_error" in audit:  # the forced mode was run
        plot_mc_error(audit["mc_error"], os.path.join(path, "plots/mc-error.png"), title=f"{policy}: MC error vs K")
    plot_credit_by_type(audit["classes"], os.path.join(path, "plots/credit-by-type.png"),
                        title=f"{policy}: action classes and credit by type")
    thresholds = audit["thresholds"]
    lines = [f"# Audit report: {policy} on {audit['env']}", "", "Files: [audit.json](audit.json).", "",
             "## Label reliability", "", audit_markdown_summary(audit),
             *(["![Monte Carlo error against K](plots/mc-error.png)", ""] if "mc_error" in audit else []),
             "## Action classes (exact credit under the audited policy)", "",
             f"Tolerance: an action is decorative when |Δ| <= ε = max({thresholds['absolute']}, "
             f"{thresholds['relative']} · min(V(s), 1 − V(s))); load-bearing above it, harmful below −ε "
             "(harmful-but-recovered when the episode still succeeded).", "",
             format_class_table(audit["classes"]),
             "![Action classes and credit by action type](plots/credit-by-type.png)", "", "## CA-ID card", ""]
    lines += _write_cards(path, [card_for_audit(audit, policy=policy)])
    return _finish(path, "\n".join(lines))


def _report(path: str) -> str:
    kind = kind_of(path)
    return {"sweep": _sweep_report, "run": _run_report, "audit": _audit_report}[kind](os.path.abspath(path))


def write_report(path: str) -> str:
    """Write `report.md` (and its plots and cards) for the sweep, run or audit directory `path`;
    returns the report's path. Holds the directory's lock while writing (a run or sweep still
    being written refuses with one line naming its process). Raises `FileNotFoundError`/`ValueError`
    for anything else, and for a failed run or a sweep holding one (`rundir_io.refuse_failed`)."""
    kind_of(path)  # a directory of the right kind, before the lock is taken
    refuse_failed(path, "report")  # a run (or a sweep's cell) stopped at a non-finite iteration
    check_writable_dir(path, "report directory")
    with RunLock(path, "report"):
        return _report(path)


def write_audit(path: str, audit: dict, *, locked: bool = False) -> str:
    """Save an audit (the dict of `run_audit`, with a `policy` description) as `path/audit.json`
    (strict JSON) and write its report, under the directory's lock (`locked`: the caller already
    holds it, e.g. since before the audit's work); returns the report's path."""
    if locked:
        check_kind(path, "audit", "audit")
        write_kind(path, "audit")
        _write_json(os.path.join(path, "audit.json"), audit)
        return _report(path)
    check_writable_dir(path)
    with RunLock(path, "audit"):
        return write_audit(path, audit, locked=True)
