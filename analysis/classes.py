"""Action classes from exact counterfactual credit: load-bearing, decorative, harmful.

Each live action of an episode gets the exact credit `Δ_t = Q(s_t, a_t) − V(s_t)` under a chosen
policy π (`jaxcredit.analysis.exact`): how much taking `a_t` in `s_t`, then following π, changes
the chance of success compared with drawing the action from π itself. With the state's tolerance
`ε_t = max(absolute_tolerance, relative_tolerance · min(V(s_t), 1 − V(s_t)))` (defaults 1e-6 and
0.01):

- **load-bearing**: `Δ_t > ε_t`, the action raised the chance of success;
- **decorative**: `|Δ_t| <= ε_t`, it changed (almost) nothing;
- **harmful-but-recovered**: `Δ_t < −ε_t` in an episode that still succeeded;
- **harmful**: `Δ_t < −ε_t` in an episode that failed.

Why `Q − V` rather than the difference of two returns, and why the tolerance scales with the
smaller of the chances of success and failure: see docs/analysis.md#action-classes-analysisclassespy.

Shape letters: B episodes, T turns.
"""

from __future__ import annotations

import numpy as np

CLASSES = ("load-bearing", "decorative", "harmful-but-recovered", "harmful")
NOT_LIVE = -1


RELATIVE_TOLERANCE = 0.01
ABSOLUTE_TOLERANCE = 1e-6


def decorative_tolerance(value: np.ndarray, *, absolute_tolerance: float = ABSOLUTE_TOLERANCE,
                         relative_tolerance: float = RELATIVE_TOLERANCE) -> np.ndarray:
    """float64, the shape of `value`: `ε = max(absolute, relative · min(V, 1 − V))` (see the module)."""
    if not (absolute_tolerance >= 0 and relative_tolerance >= 0):
        raise ValueError(f"tolerances must be >= 0, got absolute {absolute_tolerance!r}, "
                         f"relative {relative_tolerance!r}")
    value = np.clip(np.asarray(value, np.float64), 0.0, 1.0)
    return np.maximum(absolute_tolerance, relative_tolerance * np.minimum(value, 1.0 - value))


def classify_actions(credit: np.ndarray, value: np.ndarray, live: np.ndarray, success: np.ndarray, *,
                     absolute_tolerance: float = ABSOLUTE_TOLERANCE,
                     relative_tolerance: float = RELATIVE_TOLERANCE) -> np.ndarray:
    """int32 `[B, T]`: the index in `CLASSES` of every live action, `NOT_LIVE` (-1) elsewhere.

    `credit` float `[B, T]` (exact `Δ_t`), `value` float `[B, T]` (exact `V(s_t)`, a success
    probability: the scale of the relative tolerance), `live` bool `[B, T]`, `success` bool `[B]`.
    """
    credit = np.asarray(credit, np.float64)
    live = np.asarray(live, bool)
    success = np.asarray(success, bool)
    shapes_ok = credit.shape == live.shape == np.shape(value) and credit.ndim == 2
    if not shapes_ok or success.shape != credit.shape[:1]:
        raise ValueError(f"classify_actions needs credit, value and live [B, T] and success [B], got "
                         f"{credit.shape}, {np.shape(value)}, {live.shape}, {success.shape}")
    epsilon = decorative_tolerance(value, absolute_tolerance=absolute_tolerance,
                                   relative_tolerance=relative_tolerance)
    harmful = np.where(success[:, None], CLASSES.index("harmful-but-recovered"), CLASSES.index("harmful"))
    classes = np.where(credit > epsilon, CLASSES.index("load-bearing"),
                       np.where(credit < -epsilon, harmful, CLASSES.index("decorative")))
    return np.where(live, classes, NOT_LIVE).astype(np.int32)


def class_summary(classes: np.ndarray, action_type: np.ndarray, type_names: tuple[str, ...],
                  credit: np.ndarray | None = None) -> dict:
    """Counts and fractions of each class, overall and per action type.

    `classes` int32 `[B, T]` from `classify_actions`, `action_type` int `[B, T]` (an index into
    `type_names`). With `credit` `[B, T]`, each type also gets its mean credit, mean `|Δ|` and
    its share of the total `|Δ|` mass. Returns
    `{"total", "counts", "fractions", "by_type": {type: {"total", "counts", "fractions", ...}}}`.
    """
    classes = np.asarray(classes)
    action_type = np.asarray(action_type)
    live = classes != NOT_LIVE

    def tally(mask):
        total = int(mask.sum())
        counts = {name: int((mask & (classes == i)).sum()) for i, name in enumerate(CLASSES)}
        fractions = {name: (count / total if total else 0.0) for name, count in counts.items()}
        return {"total": total, "counts": counts, "fractions": fractions}

    out = tally(live)
    mass = float(np.abs(credit)[live].sum()) if credit is not None else 0.0
    if credit is not None:
        out["mean_credit"] = float(np.asarray(credit)[live].mean()) if live.any() else 0.0
    out["by_type"] = {}
    for i, name in enumerate(type_names):
        mask = live & (action_type == i)
        entry = tally(mask)
        if credit is not None:
            values = np.asarray(credit)[mask]
            entry["mean_credit"] = float(values.mean()) if values.size else 0.0
            entry["mean_abs_credit"] = float(np.abs(values).mean()) if values.size else 0.0
            entry["abs_credit_share"] = float(np.abs(values).sum() / mass) if mass > 0 else 0.0
        out["by_type"][name] = entry
    return out


def format_class_table(summary: dict) -> str:
    """Markdown: one row per action type (and all), counts and fractions of each class."""
    header = "| action type | actions | " + " | ".join(CLASSES) + " | mean Δ | share of \\|Δ\\| |"
    lines = [header, "|" + " --- |" * (len(CLASSES) + 4)]

    def row(name, entry):
        cells = [f"{entry['counts'][c]} ({entry['fractions'][c]:.1%})" for c in CLASSES]
        extra = [f"{entry.get('mean_credit', 0.0):+.4f}", f"{entry.get('abs_credit_share', 1.0):.1%}"]
        return f"| {name} | {entry['total']} | " + " | ".join(cells + extra) + " |"

    for name, entry in summary["by_type"].items():
        lines.append(row(name, entry))
    lines.append(row("**all**", summary))
    return "\n".join(lines) + "\n"
