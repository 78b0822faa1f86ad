"""The files of a transcript audit: JSON, per-turn labels, Markdown report, CA-ID card and plots.

`write_transcript_audit(out, audit, source=...)` writes, in `out`: `audit.json` (the summary and
one entry per transcript), `turns.jsonl` (every turn's labels), `credit_labels.jsonl` (the
training export, `lm_audit.credit_labels`), `card.md` / `card.json`, `plots/classes-<ref>.png`,
`plots/gap-by-turn.png` and `report.md`, and the kind marker `.jaxcredit-kind`
(`transcript-audit`). `audit_transcript_file` builds them beside `out` and publishes them whole.
"""

from __future__ import annotations

import os

from jaxcredit.analysis.card import CAIDCard, cards_markdown
from jaxcredit.analysis.classes import format_class_table
from jaxcredit.analysis.intent import CATEGORIES
from jaxcredit.analysis.lm_audit import audit_transcripts, credit_labels
from jaxcredit.analysis.plots import plot_credit_by_type, plt, save_figure  # pyplot on the Agg backend
from jaxcredit.envs.transcripts import read_transcripts
from jaxcredit.output_dirs import check_kind, published
from jaxcredit.rundir_io import (
    check_writable_dir,
    make_dirs,
    write_json_atomic,
    write_jsonl_atomic,
    write_text_atomic,
)

REFERENCE_TEXT = {"uniform": "the uniform policy over legal actions", "optimal": "optimal play",
                  "policy": "the checkpoint's network"}


def card_for_transcripts(audit: dict, *, source: str) -> CAIDCard:
    """The CA-ID card of a transcript audit."""
    s = audit["summary"]
    refs = ", ".join(REFERENCE_TEXT[r] for r in audit["references"])
    return CAIDCard(
        subject=f"transcript audit of {source} on {audit['env']}",
        unit_and_estimand=f"unit: one reply (turn) of the agent in {audit['env']}; estimand: Q^μ(s, a) − V^μ(s) of "
                          f"the action the reply played (a refused reply: one turn used) for μ = {refs}; and the gap "
                          "V*(s) − Q*(s, a) to the exact-best action",
        effective_state="the full environment state replayed from the transcript's problem and replies, and the "
                        "turns left (the agent saw only the prompt text)",
        intervention_provenance="exact, solver over complete graph of each transcript's problem",
        downstream_protocol="after the reply, μ plays in expectation for the turns left; reward: the environment's "
                            "success reward (the agent's own continuation is what the outcome records)",
        support_and_uncertainty=f"{s['transcripts']} transcripts, {s['turns']} turns; the values are exact (no "
                                "sampling error); rates over transcripts carry the sampling error of the problems "
                                "played, not estimated here",
        optimization_interface="none: an audit measures; credit_labels.jsonl exports the per-turn advantages and "
                               "classes with the prompt and reply text for training elsewhere")


def _gap_plot(audit: dict, path: str) -> None:
    by_turn = audit["summary"]["gap"]["by_turn"]
    figure, axis = plt.subplots(figsize=(6.0, 3.6))
    axis.bar(range(len(by_turn)), by_turn, color="tab:red")
    axis.set_xlabel("turn")
    axis.set_ylabel("mean gap V*(s) − Q*(s, a)")
    axis.set_title("what the agent's choices cost, by turn (0 = an optimal choice)")
    save_figure(figure, path)


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def transcript_audit_markdown(audit: dict, *, source: str) -> str:
    """The report's tables (without the card and plots)."""
    s = audit["summary"]
    lines = [f"- transcripts: {s['transcripts']}, turns: {s['turns']}, success: {_pct(s['success_rate'])}, "
             f"agent errors: {s['errors']}", "",
             "### Invalid commands", "", "| category | count | share of turns | intended action type | examples |",
             "| --- | --- | --- | --- | --- |"]
    for c in CATEGORIES:
        entry = s["invalid"][c]
        intended = ", ".join(f"{k} {v}" for k, v in entry["intended"].items()) or "-"
        examples = "; ".join("`" + e.replace("`", "'").replace("|", "\\|") + "`" for e in entry["examples"]) or "-"
        lines.append(f"| {c} | {entry['count']} | {_pct(entry['share_of_turns'])} | {intended} | {examples} |")
    for name in audit["references"]:
        lines += ["", f"### Action classes under {REFERENCE_TEXT[name]}", "", format_class_table(s["classes"][name])]
    r = s["repairs"]
    lines += [f"### {r['type'] or 'repair'} use", "",
              f"{r['count']} ({_pct(r['share_of_turns'])} of turns), in {r['transcripts_using']} of "
              f"{s['transcripts']} transcripts.", "",
              "### Answer context", "", "| target | turns | answer chosen | agent's rate | uniform reference's rate |",
              "| --- | --- | --- | --- | --- |"]
    for context, entry in s["answers"].items():
        lines.append(f"| {context} | {entry['turns']} | {entry['answer_chosen']} | {_pct(entry['rate'])} | "
                     f"{_pct(entry['uniform_rate'])} |")
    g = s["gap"]
    lines += ["", "### Gap to the exact-best action", "",
              f"Optimal choices: {_pct(g['optimal_choice_rate'])} of turns; mean gap V*(s) − Q*(s, a): "
              f"{g['mean']:.4f}." if g["mean"] is not None else "No turns.", "",
              "| action type | mean gap |", "| --- | --- |"]
    lines += [f"| {t} | {v:.4f} |" for t, v in g["by_type"].items()]
    lines += ["", "### Per transcript", "", "| id | success | turns | unparseable | misformatted | illegal | "
              "first suboptimal turn | total gap |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in audit["transcripts"]:
        inv = e["invalid"]
        first = "-" if e["first_suboptimal_turn"] is None else e["first_suboptimal_turn"]
        lines.append(f"| {e['id']} | {'yes' if e['success'] else 'no'} | {e['turns']} | {inv['unparseable']} | "
                     f"{inv['misformatted']} | {inv['illegal']} | {first} | {e['total_gap_optimal']:.3f} |")
    return "\n".join(lines) + "\n"


def write_transcript_audit(out: str, audit: dict, *, source: str) -> str:
    """Write the audit's files into `out` (see the module docstring); returns the report's path."""
    make_dirs(os.path.join(out, "plots"))
    write_json_atomic(os.path.join(out, "audit.json"), {key: audit[key] for key in audit if key != "turns"})
    write_jsonl_atomic(os.path.join(out, "turns.jsonl"), audit["turns"])
    write_jsonl_atomic(os.path.join(out, "credit_labels.jsonl"), credit_labels(audit))
    card = card_for_transcripts(audit, source=source)
    write_text_atomic(os.path.join(out, "card.md"), cards_markdown([card]))
    write_json_atomic(os.path.join(out, "card.json"), [card.to_dict()])
    plots = []
    for name in audit["references"]:
        plot_credit_by_type(audit["summary"]["classes"][name], os.path.join(out, "plots", f"classes-{name}.png"),
                            title=f"action classes under {REFERENCE_TEXT[name]}")
        plots.append(f"![action classes under {name}](plots/classes-{name}.png)")
    _gap_plot(audit, os.path.join(out, "plots", "gap-by-turn.png"))
    plots.append("![gap by turn](plots/gap-by-turn.png)")
    text = (f"# Transcript audit: {source} on {audit['env']}\n\nFiles: [audit.json](audit.json), "
            "[turns.jsonl](turns.jsonl), [credit_labels.jsonl](credit_labels.jsonl), [card.md](card.md).\n\n"
            + transcript_audit_markdown(audit, source=source) + "\n## Plots\n\n" + "\n\n".join(plots) + "\n\n"
            + cards_markdown([card]))
    path = os.path.join(out, "report.md")
    write_text_atomic(path, text)
    return path


def audit_transcript_file(path: str, out: str, *, policy=None, progress=None) -> dict:
    """Read, audit and write: `read_transcripts(path)`, `audit_transcripts`, then
    `write_transcript_audit` into a staging directory beside `out`, published whole in its place
    (`jaxcredit.output_dirs.published`) under `out`'s lock. `out` must be new or a transcript
    audit; an error leaves it as it was. Returns the audit with `report` (its path)."""
    out = check_writable_dir(out)
    check_kind(out, "transcript-audit", "audit transcripts")
    transcripts = read_transcripts(path)
    audit = audit_transcripts(transcripts, policy=policy, progress=progress)
    agents = sorted({str(t.get("agent") or "agent") for t in transcripts})
    with published(out, "transcript-audit", "audit transcripts") as staged:
        write_transcript_audit(staged, audit, source=", ".join(agents))
    audit["report"] = os.path.join(out, "report.md")
    return audit
