"""Aggregation of suite scores per tag, with rliable, and the scorecard's report and plot.

`scorecard.json` (schema `jaxcredit.scorecard/1`) holds the suite, its arms, every experiment
(kind, tags, seeds, settings, status, scores per score tag and arm, details), the aggregates per
tag and arm (`iqm`, `low`, `high`, `runs`, `tasks`), and the run time: `run_time_s` sums every run
of the suite that did work (`OUT/timing.json`), `runs` counts them and `machines` names their
processors. A tag's aggregate is the interquartile mean (IQM) over every (seed, experiment) score
of the finished experiments carrying it, with a 95% stratified-bootstrap interval (rliable's
`get_interval_estimates`, 2,000 resamples, seeded); tasks with fewer seeds than the most are left
out of that tag and named. Unfinished experiments and experiments not run (waiting for their
learnability gate) are listed, never scored. The schema field by field: docs/suite.md#output.
"""

from __future__ import annotations

import warnings

import numpy as np

SCHEMA = "jaxcredit.scorecard/1"
FINISHED, UNFINISHED, NOT_RUN = "finished", "unfinished", "not-run"  # an experiment's `status`
BOOTSTRAP_REPS = 2_000
BOOTSTRAP_SEED = 0


def _rliable():
    try:
        from rliable import library, metrics
    except ImportError as error:  # the `suite` extra
        raise ValueError(f"the suite's aggregation needs rliable: pip install 'jaxcredit[suite]' ({error})") from None
    return library, metrics


def tag_scores(experiments: dict, arms: list) -> dict:
    """`{tag: {arm: [runs, tasks] array}}` from finished experiments (see the module docstring)."""
    by_tag: dict = {}
    for name, record in experiments.items():
        if record["status"] != FINISHED:
            continue
        for score_tag, per_arm in record["scores"].items():
            for tag in (score_tag, *(f"{score_tag}/{t}" for t in record["tags"])):
                by_tag.setdefault(tag, {})[name] = per_arm
    out = {}
    for tag, tasks in by_tag.items():
        runs = max(len(per_arm[arms[0]]) for per_arm in tasks.values())
        kept = sorted(n for n, per_arm in tasks.items() if all(len(per_arm[a]) == runs for a in arms))
        out[tag] = {"tasks": kept, "left_out": sorted(set(tasks) - set(kept)),
                    "scores": {a: np.asarray([[tasks[n][a][r] for n in kept] for r in range(runs)], np.float64)
                               for a in arms}}
    return out


def aggregate(experiments: dict, arms: list) -> dict:
    """`{tag: {arm: {"iqm", "low", "high", "runs", "tasks"}, "_tasks": [...], "_left_out": [...]}}`."""
    library, metrics = _rliable()
    out = {}
    for tag, found in tag_scores(experiments, arms).items():
        if not found["tasks"]:
            continue
        with warnings.catch_warnings():  # arch deprecates the RandomState rliable passes it
            warnings.simplefilter("ignore", FutureWarning)
            point, interval = library.get_interval_estimates(
                found["scores"], lambda x: np.array([metrics.aggregate_iqm(x)]), reps=BOOTSTRAP_REPS,
                random_state=np.random.RandomState(BOOTSTRAP_SEED))
        entry = {a: {"iqm": float(point[a][0]), "low": float(interval[a][0, 0]), "high": float(interval[a][1, 0]),
                     "runs": int(found["scores"][a].shape[0]), "tasks": int(found["scores"][a].shape[1])}
                 for a in arms}
        out[tag] = {**entry, "_tasks": found["tasks"], "_left_out": found["left_out"]}
    return out


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def findings(card: dict) -> list[str]:
    """One plain sentence per score tag: which arm leads, and whether its interval separates it."""
    lines = []
    for tag in sorted(t for t in card["tags"] if "/" not in t):
        entry = {a: v for a, v in card["tags"][tag].items() if not a.startswith("_")}
        ranked = sorted(entry, key=lambda a: -entry[a]["iqm"])
        first, rest = ranked[0], ranked[1:]
        separated = [a for a in rest if entry[a]["high"] < entry[first]["low"]]
        overlapping = [a for a in rest if a not in separated]
        sentence = (f"**{tag}**: `{first}` has the highest IQM, {entry[first]['iqm']:.3f} "
                    f"[{entry[first]['low']:.3f}, {entry[first]['high']:.3f}] "
                    f"(n = {entry[first]['runs']} seeds x {entry[first]['tasks']} experiments)")
        if overlapping:
            names = ", ".join(f"`{a}`" for a in overlapping)
            sentence += f"; its interval overlaps {names}, so those are not separated"
        if separated:
            sentence += f"; it is above {', '.join(f'`{a}`' for a in separated)} (intervals disjoint)"
        if entry[first]["runs"] < 5:
            sentence += f"; with {entry[first]['runs']} seeds per experiment this is indicative only"
        lines.append(f"- {sentence}.")
    unfinished = [n for n, r in card["experiments"].items() if r["status"] not in (FINISHED, NOT_RUN)]
    if unfinished:
        lines.append(f"- Unfinished, not scored: {', '.join(unfinished)}.")
    for name, record in card["experiments"].items():
        if record["status"] == NOT_RUN:
            lines.append(f"- Not run: {name}, because {record.get('reason', 'no reason recorded')}.")
    return lines


def report_markdown(card: dict, plot_name: str | None = "scorecard.png") -> str:
    """The suite's `report.md`: findings, the per-tag table, each experiment's scores, how it was made."""
    arms = card["arms"]
    lines = [f"# Credit-assignment suite: {card['suite']}", "", "## Findings", "", *findings(card), "",
             "Scores are in [0, 1]: label quality is 1 − the normalised error against exact `Q^π − V^π`; learning "
             "is the area under the greedy-success curve relative to exact optimal success, at equal attempts and at "
             "equal total env steps. Aggregates are interquartile means with 95% stratified-bootstrap intervals "
             "(rliable).", ""]
    if plot_name:
        lines += [f"![scores per tag]({plot_name})", ""]
    if card.get("label_cost_plot"):
        lines += [f"![label error against label cost]({card['label_cost_plot']})", ""]
    lines += ["## Scores per tag", "", "IQM [95% stratified-bootstrap interval] per arm; n: seeds x experiments.", "",
              "| tag | n | " + " | ".join(arms) + " |", "|---|---|" + "---|" * len(arms)]
    for tag in sorted(card["tags"]):
        entry = card["tags"][tag]
        cells = [f"{entry[a]['iqm']:.3f} [{entry[a]['low']:.2f}, {entry[a]['high']:.2f}]" for a in arms]
        n = f"{entry[arms[0]]['runs']} x {entry[arms[0]]['tasks']}"
        lines.append(f"| {tag} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "## Experiments", ""]
    for name, record in card["experiments"].items():
        lines += [f"### {name} ({record['kind']}, {record['status']})", "", record.get("description", ""), "",
                  f"Tags: {', '.join(record['tags'])}; {record['seeds']} seeds; settings: "
                  f"{'; '.join(record['settings'])}; budget per arm and seed: {_budget_text(record)}.", ""]
        if record["status"] == NOT_RUN:
            lines += [f"Not run: {record.get('reason', 'no reason recorded')}.", ""]
        if record["status"] != FINISHED:
            continue
        lines += ["| score | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
        for score_tag, per_arm in record["scores"].items():
            lines.append(f"| {score_tag} | " + " | ".join(f"{np.mean(per_arm[a]):.3f}" for a in arms) + " |")
        lines.append("")
        if record["kind"] == "labels":
            lines += _label_table(record, arms)
    from jaxcredit.analysis.page import duration_text as duration

    runs = card.get("runs", 1)
    machines = "; ".join(card.get("machines") or [card.get("machine", "unknown")])
    lines += ["## How this was made", "", f"Machine{'s' if machines.count(';') else ''}: {machines}; run time "
              f"{duration(card.get('run_time_s', 0.0))} ({card.get('run_time_s', 0.0):.0f} s"
              f"{f' over {runs} runs, resumes included' if runs > 1 else ''}). "
              f"Command: `{card.get('command', 'jaxcredit suite')}`.", ""]
    return "\n".join(lines)


def _budget_text(record: dict) -> str:
    """What every arm got: the same main attempts (equal-attempts), the same total env steps with
    labels included (equal-cost), or the trained policy's attempts (labels)."""
    budgets = record.get("budgets")
    if not budgets:
        return "not recorded"
    if record["kind"] == "labels":
        fitted = (f"; a learned head fitted first for {budgets['fit_steps']:,} updates on the policy's own "
                  "episodes" if budgets.get("fit_steps") else "")
        return f"one batch of trajectories, the trained policy after {budgets['train_episodes']:,} attempts{fitted}"
    return (f"{budgets['attempts']:,} main attempts (equal-attempts), "
            f"{budgets['fixed-steps']:,} total env steps, labels included (equal-cost)")


def _label_table(record: dict, arms: list) -> list[str]:
    """Per arm: sign agreement, rank correlation and normalised error overall and per class, the
    label variance over repeated keys (where measured), and cost."""
    noise = all("label_variance" in record["details"]["arms"][arm] for arm in arms)
    lines = ["| arm | sign agreement | rank corr. | norm. error | load-bearing sign | harmful sign | "
             + ("label variance | " if noise else "") + "label env steps | label policy evals |",
             "|---|---|---|---|---|---|---|---|" + ("---|" if noise else "")]
    for arm in arms:
        d = record["details"]["arms"][arm]
        variance = f"{_fmt(d['label_variance'])} | " if noise else ""
        lines.append(f"| {arm} | {_fmt(d['sign_agreement'])} | {_fmt(d['rank_correlation'])} | "
                     f"{_fmt(d['normalised_error'])} | {_fmt(d['load-bearing_sign'])} | {_fmt(d['harmful_sign'])} | "
                     f"{variance}{d['env_steps']:,.0f} | {d['policy_evals']:,.0f} |")
    return lines + ["", "Means over seeds, policies and settings; costs per batch of trajectories"
                    + ("; label variance: the per-step variance of one arm's labels over independent keys, "
                       "averaged over the live steps" if noise else "") + ".", ""]


def plot_scorecard(card: dict, path: str) -> None:
    """A bar plot: per score tag, every arm's IQM with its interval."""
    from jaxcredit.analysis.plots import plt, save_figure  # pyplot on the Agg backend

    tags = sorted(t for t in card["tags"] if "/" not in t)
    arms = card["arms"]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(tags) * len(arms) / 3), 3.5))
    width = 0.8 / max(1, len(arms))
    for i, arm in enumerate(arms):
        x = np.arange(len(tags)) + (i - (len(arms) - 1) / 2) * width
        iqm = np.asarray([card["tags"][t][arm]["iqm"] for t in tags])
        low = np.asarray([card["tags"][t][arm]["low"] for t in tags])
        high = np.asarray([card["tags"][t][arm]["high"] for t in tags])
        ax.bar(x, iqm, width, yerr=[iqm - low, high - iqm], label=arm, capsize=2)
    ax.set_xticks(np.arange(len(tags)), tags)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("IQM score (95% CI)")
    ax.legend(fontsize=7, ncol=min(4, len(arms)))
    save_figure(fig, path, dpi=120)


def plot_label_cost(card: dict, path: str) -> bool:
    """Label experiments: every arm's normalised error against its label cost (env steps per batch,
    log scale); returns False (and writes nothing) when no label experiment has finished."""
    records = [(n, r) for n, r in card["experiments"].items() if r["kind"] == "labels" and r["status"] == "finished"]
    if not records:
        return False
    from jaxcredit.analysis.plots import plt, save_figure  # pyplot on the Agg backend

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    markers = "osD^v<>Px*"
    for k, (_, record) in enumerate(records):
        for i, arm in enumerate(card["arms"]):
            d = record["details"]["arms"][arm]
            if d["normalised_error"] is None:
                continue
            ax.scatter(max(1.0, d["env_steps"]), d["normalised_error"], marker=markers[k % len(markers)],
                       color=f"C{i % 10}", label=arm if k == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("label env steps per batch (1 = none)")
    ax.set_ylabel("normalised error (0 = exact)")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=7, ncol=2)
    save_figure(fig, path, dpi=120)
    return True
