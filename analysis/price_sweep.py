"""The break-even label price of every label arm in a finished sweep (`jaxcredit price`).

Each label arm's attempts runs give its score and its main and label work per seed; the
reference arm's fixed-steps runs give its learning curve in each currency, seeds paired by index.
`sweep_prices` reads them and computes `p*` (`jaxcredit.analysis.price`) for the final and the
average success in env steps and in policy evaluations, over the prices the curve reaches;
`prices_markdown` writes the table and `plot_price_gaps` draws each arm's lead against the price. See docs/analysis.md#the-break-even-label-price-analysispricepy.
"""
from __future__ import annotations

import os

import numpy as np

from jaxcredit.analysis.price import PRICE_GRID, break_even_price, outcome_at
from jaxcredit.rundir_io import read_json, read_jsonl

CURRENCIES = {"env_steps": "env steps", "policy_evals": "policy evaluations"}
SCORES = {"final": "final success", "average": "average success"}


def _per_seed_rows(path: str) -> dict:
    """`{seed_index: [metrics rows in order]}` of one run directory."""
    rows = {}
    for row in read_jsonl(os.path.join(path, "metrics.jsonl")):
        rows.setdefault(row["seed_index"], []).append(row)
    return rows


def _curve(rows: list, currency: str) -> tuple:
    """A run's `(totals [E], success [E])`: its greedy success at each evaluation's total in `currency`."""
    totals = np.array([r[f"total_{currency}"] for r in rows], np.float64)
    success = np.array([r["success_greedy"] for r in rows], np.float64)
    return totals, success


def sweep_prices(sweep: str, *, reference: str = "outcome", regime: str = "attempts",
                 curve_regime: str = "fixed-steps", prices=PRICE_GRID) -> dict:
    """`p*` of every label arm of `sweep` against `reference`, per score and currency.

    Returns `{"reference", "regime", "curve_regime", "prices", "arms": {arm: {currency: {score:
    result}}}}`, each result `break_even_price`'s dict plus `"covered"` (the prices the reference's
    curve reaches for every seed) and `"num_evals"` (the reference curve's evaluations per seed).
    An arm is left out when it has no label work. Average success at a total T is the reference
    curve's mean at the arm's own number of evaluations, evenly spaced up to T, read by
    interpolation (the arm's average is over its evaluations after the first in the same way).
    """
    curve_dir = os.path.join(sweep, curve_regime, reference)
    if not os.path.isfile(os.path.join(curve_dir, "metrics.jsonl")):
        raise ValueError(f"{sweep}: no {curve_regime}/{reference} runs: the price needs the reference's long run")
    curves = _per_seed_rows(curve_dir)
    prices = np.asarray(prices, np.float64)
    result = {"reference": reference, "regime": regime, "curve_regime": curve_regime,
              "prices": prices.tolist(), "arms": {}}
    for arm in read_json(os.path.join(sweep, "sweep_spec.json"))["arm_order"]:
        run = os.path.join(sweep, regime, arm)
        if arm == reference or not os.path.isfile(os.path.join(run, "metrics.jsonl")):
            continue
        runs = _per_seed_rows(run)
        seeds = sorted(set(runs) & set(curves))
        if len(seeds) < 2:
            continue
        entry = {}
        for currency in CURRENCIES:
            last = [runs[s][-1] for s in seeds]
            main = np.array([r[f"main_{currency}"] for r in last], np.float64)
            label = np.array([r[f"total_{currency}"] for r in last], np.float64) - main
            if not np.any(label > 0):
                continue
            ends = np.array([curves[s][-1][f"total_{currency}"] for s in seeds], np.float64)
            covered = prices[np.all(main[:, None] + prices[None, :] * label[:, None] <= ends[:, None], axis=0)]
            entry[currency] = {score: _score_price(runs, curves, seeds, currency, score, main, label, covered)
                               for score in SCORES}
        if entry:
            result["arms"][arm] = entry
    return result


def _score_price(runs, curves, seeds, currency, score, main, label, covered) -> dict:
    """One arm's `p*` for one score in one currency over the covered prices."""
    num_evals = len(curves[seeds[0]])
    if len(covered) < 2:
        return {"covered": covered.tolist(), "num_evals": num_evals, "text": "not covered",
                "interval_text": "", "p_star": None}
    arm_evals = len(runs[seeds[0]]) - 1  # evaluations after the first
    gaps = []
    for i, s in enumerate(seeds):
        totals, success = _curve(curves[s], currency)
        success_arm = np.array([r["success_greedy"] for r in runs[s]], np.float64)
        budgets = main[i] + covered * label[i]
        if score == "final":
            gaps.append(success_arm[-1] - outcome_at(totals[None], success[None], budgets[None])[0])
        else:
            fractions = np.arange(1, arm_evals + 1) / arm_evals
            grid = budgets[:, None] * fractions[None, :]  # [P, evals]
            reference = outcome_at(np.tile(totals, (len(grid), 1)), np.tile(success, (len(grid), 1)), grid)
            gaps.append(success_arm[1:].mean() - reference.mean(axis=1))
    found = break_even_price(np.stack(gaps), covered)
    return {**found, "covered": covered.tolist(), "num_evals": num_evals}


def prices_markdown(record: dict) -> str:
    """The table of `sweep_prices`: one row per arm and currency, `p*` [interval] per score."""
    lines = [f"break-even label price p* of each label arm against `{record['reference']}` "
             f"({record['regime']} runs against {record['reference']}'s {record['curve_regime']} curve)", "",
             "| arm | currency | prices reached | " + " | ".join(f"p* ({s})" for s in SCORES.values()) + " |",
             "| --- | --- | --- |" + " --- |" * len(SCORES)]
    for arm, entry in record["arms"].items():
        for currency, by_score in entry.items():
            covered = next(iter(by_score.values()))["covered"]
            reach = f"{min(covered):.3g} to {max(covered):.3g}" if len(covered) >= 2 else "fewer than 2"
            cells = [f"{r['text']} {r['interval_text']}".strip() for r in by_score.values()]
            lines.append(f"| {arm} | {CURRENCIES[currency]} | {reach} | " + " | ".join(cells) + " |")
    n = {r["num_seeds"] for e in record["arms"].values() for c in e.values() for r in c.values() if "num_seeds" in r}
    lines += ["", f"n = {', '.join(str(x) for x in sorted(n))} paired seeds; intervals: where the 95% paired "
              "Student-t band of the arm's lead crosses 0; `> p` or `< p`: outside the prices the reference's curve "
              "reaches."]
    return "\n".join(lines)


def plot_price_gaps(record: dict, path: str) -> dict:
    """One panel per currency and score: each arm's mean lead over the reference against the price
    (log scale), with its 95% band and the zero line; `{"path", "lines": [arm, ...]}` of the first panel."""
    import matplotlib.pyplot as plt

    from jaxcredit.analysis.plots import save_figure

    panels = [(c, s) for c in CURRENCIES for s in SCORES]
    figure, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), squeeze=False)
    lines = []
    for ax, (currency, score) in zip(axes[0], panels):
        for arm, entry in record["arms"].items():
            result = entry.get(currency, {}).get(score)
            if not result or "mean_gap" not in result:  # fewer than 2 prices reached
                continue
            prices = result["covered"]
            (line,) = ax.plot(prices, result["mean_gap"], marker="o", label=arm)
            ax.fill_between(prices, result["gap_low"], result["gap_high"], color=line.get_color(), alpha=0.15)
            if ax is axes[0][0]:
                lines.append(arm)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(f"price per label unit ({CURRENCIES[currency]})")
        ax.set_title(f"{SCORES[score]}", fontsize=10)
    axes[0][0].set_ylabel(f"lead over {record['reference']} at equal total")
    axes[0][0].legend(fontsize=8)
    return {"path": save_figure(figure, path), "lines": lines}
