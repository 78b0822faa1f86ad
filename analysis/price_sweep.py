"""The break-even label price of every label arm in a finished sweep (`jaxcredit price`).

Each label arm's attempts runs give its score and its main and label work per seed. The
reference arm's success at the arm's total at price p comes, where the sweep has `prices`, from
the reference's matched runs at each price (each a run of exactly `main + p * label`, evaluated
evenly over it); otherwise from its fixed-steps curve, read by interpolation. Seeds are paired
by index. `sweep_prices` computes `p*` (`jaxcredit.analysis.price`) for the final and the average
success in env steps and in policy evaluations; `prices_markdown` writes the table and
`plot_price_gaps` draws each arm's lead against the price. See
docs/analysis.md#the-break-even-label-price-analysispricepy.
"""
from __future__ import annotations

import os

import numpy as np

from jaxcredit.analysis.price import PRICE_GRID, break_even_price, outcome_at
from jaxcredit.rundir_io import MATCHED_REGIMES, price_target, read_json, read_jsonl

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
    spec = read_json(os.path.join(sweep, "sweep_spec.json"))
    curve_dir = os.path.join(sweep, curve_regime, reference)
    curves = _per_seed_rows(curve_dir) if os.path.isfile(os.path.join(curve_dir, "metrics.jsonl")) else {}
    if not curves and not spec.get("prices"):
        raise ValueError(f"{sweep}: no {curve_regime}/{reference} runs: the price needs the reference's long run")
    prices = np.asarray(prices, np.float64)
    result = {"reference": reference, "regime": regime, "curve_regime": curve_regime,
              "prices": prices.tolist(), "arms": {}}
    for arm in spec["arm_order"]:
        run = os.path.join(sweep, regime, arm)
        if arm == reference or not os.path.isfile(os.path.join(run, "metrics.jsonl")):
            continue
        runs = _per_seed_rows(run)
        entry = {}
        for currency in CURRENCIES:
            viewed = _priced_views(sweep, spec, reference, arm, currency, runs)
            seeds = viewed["seeds"] if viewed else sorted(set(runs) & set(curves))
            if len(seeds) < 2:
                continue
            last = [runs[s][-1] for s in seeds]
            main = np.array([r[f"main_{currency}"] for r in last], np.float64)
            label = np.array([r[f"total_{currency}"] for r in last], np.float64) - main
            if not np.any(label > 0):
                continue
            if viewed:
                entry[currency] = {score: _view_price(runs, seeds, score, viewed) for score in SCORES}
                continue
            ends = np.array([curves[s][-1][f"total_{currency}"] for s in seeds], np.float64)
            covered = prices[np.all(main[:, None] + prices[None, :] * label[:, None] <= ends[:, None], axis=0)]
            entry[currency] = {score: _score_price(runs, curves, seeds, currency, score, main, label, covered)
                               for score in SCORES}
        if entry:
            result["arms"][arm] = entry
    return result


def _priced_views(sweep: str, spec: dict, reference: str, arm: str, currency: str, runs: dict) -> dict | None:
    """The reference's matched views of `arm` at every price of a sweep with `prices`
    (`train.sweep.price_target`; price 1: the plain view), where all are finished: `{"prices" [P],
    "seeds", score: float [N, P]}` of the reference's own success there, seeds paired with `runs`;
    None otherwise (the price is then read off the reference's long curve)."""
    if not spec.get("prices"):
        return None
    grid = [float(p) for p in spec["prices"]] + [1.0]
    root = os.path.join(sweep, MATCHED_REGIMES[currency], reference)
    views = [os.path.join(root, f"to-{arm if p == 1.0 else price_target(arm, p)}", "summary.json") for p in grid]
    if not all(os.path.isfile(v) for v in views):
        return None
    per_view = [{s["seed_index"]: s for s in read_json(v)["seeds"]} for v in views]
    seeds = sorted(set(runs).intersection(*per_view))
    return {"prices": grid, "seeds": seeds,
            **{score: np.array([[view[s][f"{score}_success"] for view in per_view] for s in seeds], np.float64)
               for score in SCORES}}


def _view_price(runs: dict, seeds: list, score: str, viewed: dict) -> dict:
    """One arm's `p*` for one score from the reference's runs matched to it at each price: each a
    run of that total, evaluated evenly over it as the arm was over its attempts."""
    arm = np.array([_run_score(runs[s], score) for s in seeds], np.float64)
    found = break_even_price(arm[:, None] - viewed[score], viewed["prices"])
    return {**found, "covered": viewed["prices"], "num_evals": None, "source": "matched views"}


def _run_score(rows: list, score: str) -> float:
    """A run's final greedy success, or its mean over the evaluations after the first."""
    success = [r["success_greedy"] for r in rows]
    return float(success[-1] if score == "final" else np.mean(success[1:] or success))

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
    viewed = any(r.get("source") == "matched views" for e in record["arms"].values() for c in e.values()
                 for r in c.values())
    against = (f"{record['reference']}'s matched runs at each price" if viewed
               else f"{record['reference']}'s {record['curve_regime']} curve")
    lines = [f"break-even label price p* of each label arm against `{record['reference']}` "
             f"({record['regime']} runs against {against})", "",
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
