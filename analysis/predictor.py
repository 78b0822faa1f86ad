"""The predictor arm's label accuracy as reports show it, read from what its runs wrote
(`predictor.json`, the arm's `prepared_record`): per seed, the fixed dataset's size and cost and
the fitted model's accuracy on held-out states against exact values of the labelling policy
(`jaxcredit.predictor.heldout_accuracy`). `analysis.prepared` gives it a section in reports and
results pages.
"""

from __future__ import annotations

import math


def predictor_accuracy_markdown(record: dict) -> str:
    """A Markdown table of one `predictor.json` (its JSON, a dict): one row per seed and the mean over seeds."""
    config = record.get("config", {})
    labeller = "the initial policy"
    if config.get("labeller"):
        steps = [s["labeller_env_steps"] for s in record.get("seeds", []) if "labeller_env_steps" in s]
        cost = f", {steps[0]:,.0f} env steps," if steps else ""
        labeller = (f"the final policy of `{config['labeller']}` (seed {config.get('labeller_seed', 0)}; its "
                    f"training{cost} charged with the dataset)")
    lines = [f"Dataset: {config.get('predictor_states')} states visited by {labeller}, every legal action "
             f"labelled by K={config.get('predictor_continuations')} continuations; fitted in "
             f"{config.get('predictor_steps')} Adam steps. Accuracy on held-out states against exact values "
             "(advantage `Q̂ − Σ π₀ Q̂` vs `Q^π₀ − V^π₀`; n = state-action pairs, sign over pairs with a nonzero "
             "exact advantage).", "",
             "| seed | dataset env steps | n | advantage Pearson r | sign agreement (n) | Q Pearson r | Q RMSE |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    seeds = record.get("seeds", [])

    def cell(x, spec=".3f"):
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)

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


def predictor_quality_markdown(record: dict) -> str:
    """A Markdown table of a predictor-quality record (`jaxcredit.train.predictor_quality`): per K,
    the dataset's env steps and the held-out measures, means ± standard errors over seeds, and the
    K chosen."""
    def mean_se(values):
        n = len(values)
        mean = sum(values) / n
        se = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 / n ** 0.5 if n > 1 else 0.0
        return f"{mean:.3f} ± {se:.3f}"

    rows = record["rows"]
    labeller = rows[0]["labeller_env_steps"] if rows else []
    lines = ["| K | dataset env steps (mean) | held-out sign agreement | advantage Pearson r | Q Pearson r |",
             "| --- | --- | --- | --- | --- |"]
    for row in rows:
        mark = " (chosen)" if row["continuations"] == record.get("chosen") else ""
        steps = sum(row["dataset_env_steps"]) / len(row["dataset_env_steps"])
        lines.append(f"| {row['continuations']}{mark} | {steps:,.0f} | {mean_se(row['sign_agreement'])} | "
                     f"{mean_se(row['advantage_pearson'])} | {mean_se(row['q_pearson'])} |")
    seeds = len(labeller)
    note = (f"n = {seeds} seeds (one dataset each), means ± standard errors; the chosen K is the smallest whose sign "
            "agreement ties the best within the standard error.")
    if any(labeller):
        note += f" The labeller's training adds {labeller[0]:,} env steps at every K."
    return "\n".join(lines + ["", note]) + "\n"
