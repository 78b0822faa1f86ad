"""Plots with matplotlib (Agg backend, files only): learning curves, Monte Carlo error, credit by type.

Every function writes one PNG and returns what it drew: `{"path", "lines": [label, ...]}` counted
from the figure's own line objects before saving (the data lines, not the interval bands or
reference lines), so a caller or test can check one line per arm. Learning-curve bands are
Student-t intervals over seeds, named with their n in the figure's title.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxcredit.stats import MIN_RELIABLE_SEEDS  # noqa: E402

X_LABELS = {"total_env_steps": "total environment steps", "main_episodes": "main attempts (episodes)"}
LOG_SPREAD = 10.0  # a cost axis whose arms end more than this factor apart is drawn on a symlog scale


def save_figure(figure, path: str, *, dpi: int = 100) -> str:
    """Write `figure` as a PNG at `path` (its folder made if missing) with a tight layout, close it,
    and return `path`. Every PNG the package writes goes through here."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path


def _save(figure, path: str, data_lines: list) -> dict:
    labels = [line.get_label() for line in figure.axes[0].get_lines() if line in data_lines]
    return {"path": save_figure(figure, path), "lines": labels}


def band_label(curves: dict) -> str:
    """What the bands are: the interval method, its coverage and n (a warning below
    `MIN_RELIABLE_SEEDS` seeds), from the `learning_curve` dicts."""
    seeds = sorted({int(c.get("num_seeds", 0)) for c in curves.values()})
    confidence = next(iter(curves.values())).get("confidence", 0.95) if curves else 0.95
    n = "/".join(str(s) for s in seeds)
    text = f"band: {confidence:.0%} Student-t interval of the mean over n = {n} seeds"
    if seeds and min(seeds) < MIN_RELIABLE_SEEDS:
        text += f" (n < {MIN_RELIABLE_SEEDS}: wide, indicative)" if min(seeds) > 1 else " (one seed: no band)"
    return text


def plot_learning_curves(curves: dict, path: str, *, x: str = "total_env_steps", title: str = "") -> dict:
    """One line per arm (`curves`: arm -> `compare.learning_curve` dict) of mean greedy success
    against `x`, with its Student-t interval band; the figure says which interval and n
    (`band_label`, also returned under `"band"`).

    Against `total_env_steps`, when the arms' last points lie more than `LOG_SPREAD` times apart
    (label arms often spend 10-100x outcome's steps), the axis is symlog (linear below the smallest
    positive x, logarithmic above), so the cheap arms are not squeezed against 0; the returned
    `"xscale"` says which scale was drawn."""
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    lines = []
    for arm, curve in curves.items():
        (line,) = axis.plot(curve["x"], curve["mean"], marker="o", markersize=3, label=arm)
        axis.fill_between(curve["x"], curve["low"], curve["high"], alpha=0.2, color=line.get_color())
        lines.append(line)
    band = band_label(curves)
    label, scale = X_LABELS.get(x, x), "linear"
    ends = [float(curve["x"][-1]) for curve in curves.values() if len(curve["x"])]
    positive = [float(v) for curve in curves.values() for v in curve["x"] if v > 0]
    if x == "total_env_steps" and positive and min(ends) > 0 and max(ends) > LOG_SPREAD * min(ends):
        scale = "symlog"
        axis.set_xscale("symlog", linthresh=min(positive))
        label += " (symlog scale)"
    axis.set_xlabel(label)
    axis.set_ylabel("greedy success (mean over seeds)")
    axis.set_ylim(-0.02, 1.02)
    axis.set_title(f"{title}\n{band}" if title else band, fontsize=9)
    axis.legend()
    axis.grid(alpha=0.3)
    return {**_save(figure, path, lines), "band": band, "xscale": scale}


def plot_mc_error(mc_error: list[dict], path: str, *, title: str = "") -> dict:
    """RMSE of `Q̂` and of the credit against exact values versus K (log-log), with the Bernoulli
    `sqrt(q(1-q)/k)` reference dashed."""
    k = np.array([r["k"] for r in mc_error], float)
    figure, axis = plt.subplots(figsize=(5.6, 4.0))
    lines = [axis.plot(k, [r["rmse_q"] for r in mc_error], marker="o", label="Q̂ vs exact Q")[0],
             axis.plot(k, [r["rmse_credit"] for r in mc_error], marker="s", label="credit vs exact Δ")[0]]
    axis.plot(k, [r["bernoulli_rmse_q"] for r in mc_error], linestyle="--", color="gray",
              label="sqrt(q(1-q)/k)")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("continuations per action K")
    axis.set_ylabel("RMSE")
    axis.set_title(title)
    axis.legend()
    axis.grid(alpha=0.3, which="both")
    return _save(figure, path, lines)


def plot_credit_by_type(class_summary: dict, path: str, *, title: str = "") -> dict:
    """Bars per action type: the share of each action class (stacked) and, as a line on a second
    axis, the type's share of the total exact `|Δ|` mass."""
    from jaxcredit.analysis.classes import CLASSES

    types = list(class_summary["by_type"])
    position = np.arange(len(types))
    figure, axis = plt.subplots(figsize=(6.0, 4.0))
    bottom = np.zeros(len(types))
    for name in CLASSES:
        share = np.array([class_summary["by_type"][t]["fractions"][name] for t in types])
        axis.bar(position, share, bottom=bottom, label=name)
        bottom += share
    (line,) = axis.plot(position, [class_summary["by_type"][t].get("abs_credit_share", 0.0) for t in types],
                        color="black", marker="D", label="share of |Δ| mass")
    axis.set_xticks(position, types)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("fraction of the type's actions / share of |Δ|")
    axis.set_title(title)
    axis.legend(fontsize=8)
    return _save(figure, path, [line])
