"""The ranking study's tables and plot (`jaxcredit.analysis.ranking.run_ranking`'s result).

`ranking_markdown(result)` gives, per policy: the class counts, the mean label each label kind
gives each class (with the share of decorative steps above the median load-bearing step), one
table per replacement with each progress label's sign agreement and rank correlation against Δ
per class, and the disagreements. `plot_ranking(result, path)` draws the mean label per class
per label kind as grouped bars, one panel per policy.
"""

from __future__ import annotations

from jaxcredit.analysis.ranking import PROGRESS_LABELS, RANK_CLASSES, reference_name


def _number(x, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _spread_text(spread: dict, signed: bool) -> str:
    if spread["mean"] is None:
        return "–"
    if spread["low"] is None:
        return f"{_number(spread['mean'], signed)} (n = {spread['n']})"
    return (f"{_number(spread['mean'], signed)} [{_number(spread['low'], signed)}, {_number(spread['high'], signed)}]"
            f" (n = {spread['n']})")


def _kinds(entry: dict) -> list[str]:
    return [*PROGRESS_LABELS, *(reference_name(r) for r in entry["replacements"])]


def policy_markdown(name: str, entry: dict) -> str:
    """Markdown of one policy's entry of `run_ranking`'s `policies`."""
    counts = entry["class_counts"]
    present = [c for c in RANK_CLASSES if counts[c]]
    env = ", ".join(f"{k}={v}" for k, v in entry["env"].items() if k != "name")
    lines = [f"## {name}", "",
             f"{len(entry['checkpoints'])} checkpoint(s), {entry['env']['name']} ({env}); {entry['steps']} live steps: "
             + ", ".join(f"{c} {counts[c]}" for c in RANK_CLASSES) + ".", "",
             "### Mean label per class", ""]
    kinds = _kinds(entry)
    lines += ["| class | steps | " + " | ".join(kinds) + " |", "|" + " --- |" * (len(kinds) + 2)]
    for c in present:
        lines.append(f"| {c} | {counts[c]} | " + " | ".join(_number(entry["mean_label"][k][c], True) for k in kinds)
                     + " |")
    lines.append("| decorative above the median load-bearing step | | "
                 + " | ".join(_number(entry["decorative_above_median"][k]) for k in kinds) + " |")
    across = entry.get("across_checkpoints")
    if across and across["n"] >= 2:
        lines += ["", f"### Across the {across['n']} checkpoints", "",
                  "Each checkpoint on its own (an independent training seed), then the mean over checkpoints with "
                  "its 95% Student-t interval (n: checkpoints with steps of that class).", "",
                  "| measure | " + " | ".join(kinds) + " |", "|" + " --- |" * (len(kinds) + 1)]
        rows = [("decorative above the median load-bearing step", across["decorative_above_median"], False)]
        rows += [(f"mean label, {c}", {k: across["mean_label"][k][c] for k in kinds}, True)
                 for c in ("load-bearing", "decorative") if c in present]
        for title, spreads, signed in rows:
            lines.append(f"| {title} | " + " | ".join(_spread_text(spreads[k], signed) for k in kinds) + " |")
    for replacement in entry["replacements"]:
        lines += ["", f"### Against Δ {replacement}: sign agreement / rank correlation", "",
                  "| class | steps | " + " | ".join(PROGRESS_LABELS) + " |",
                  "|" + " --- |" * (len(PROGRESS_LABELS) + 2)]
        for c in ["all", *present]:
            cells = []
            for label in PROGRESS_LABELS:
                m = entry["measures"][label][replacement][c]
                cells.append(f"{_number(m['sign_agreement'])} / {_number(m['rank_correlation'], True)}")
            lines.append(f"| {c} | {entry['measures'][PROGRESS_LABELS[0]][replacement][c]['steps']} | "
                         + " | ".join(cells) + " |")
    lines += ["", "### Where they disagree most", "",
              "Rank gap: the class's mean percentile rank under the label minus under Δ (positive: the label ranks "
              "it higher).", "", "| label | against | top class | rank gap | sign disagreement | classes by gap |",
              "| --- | --- | --- | --- | --- | --- |"]
    for label in PROGRESS_LABELS:
        for replacement in entry["replacements"]:
            d = entry["disagreement"][label][replacement]
            top = d["top"]
            order = ", ".join(f"{c} {d['rank_gap'][c]:+.3f}" for c in d["order"])
            lines.append(f"| {label} | Δ {replacement} | {top or '–'} | "
                         f"{_number(d['rank_gap'].get(top), True)} | {_number(d['sign_disagreement'].get(top))} | "
                         f"{order} |")
    return "\n".join(lines) + "\n"


def ranking_markdown(result: dict) -> str:
    """`ranking.md`: the configuration, then `policy_markdown` of every policy."""
    c = result["config"]
    head = ["# Ranking: progress labels against counterfactual credit", "",
            f"{c['episodes']} episodes per checkpoint, N = {c['continuations']} continuations per state (soft and "
            f"hard from the same ones), the learned label's value head fitted for {c['fit_steps']} Adam steps "
            f"(learning rate {c['fit_learning_rate']:g}) on another {c['episodes']} episodes; seed {c['seed']}; "
            f"{result['seconds']} s.", ""]
    return "\n".join(head) + "\n" + "\n".join(policy_markdown(n, e) for n, e in result["policies"].items())


def plot_ranking(result: dict, path: str) -> str:
    """Write `path`: per policy, the mean label per class (x) per label kind (bars). Returns `path`."""
    import numpy as np

    from jaxcredit.analysis.plots import plt, save_figure  # pyplot on the Agg backend

    names = list(result["policies"])
    figure, axes = plt.subplots(len(names), 1, figsize=(8, 3.2 * len(names)), squeeze=False)
    for axis, name in zip(axes[:, 0], names):
        entry = result["policies"][name]
        present = [c for c in RANK_CLASSES if entry["class_counts"][c]]
        kinds = _kinds(entry)
        width = 0.8 / len(kinds)
        x = np.arange(len(present))
        for i, kind in enumerate(kinds):
            means = [entry["mean_label"][kind][c] for c in present]
            axis.bar(x + (i - (len(kinds) - 1) / 2) * width, [np.nan if m is None else m for m in means], width,
                     label=kind, hatch="//" if kind.startswith("Δ") else None)
        axis.axhline(0.0, color="black", lw=0.6)
        axis.set_xticks(x, [f"{c}\n(n={entry['class_counts'][c]})" for c in present], fontsize=8)
        axis.set_ylabel("mean label")
        axis.set_title(name, fontsize=9)
        axis.legend(fontsize=7, ncol=3)
    return save_figure(figure, path, dpi=120)


__all__ = ["plot_ranking", "policy_markdown", "ranking_markdown"]
