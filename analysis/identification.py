"""Text-matched credit: the exact credit of states pooled by what an observer sees, against each state's own.

A label computed from logged text averages over every state that renders the same way. Given the
exact credit `Q^π − V^π` of each visited (state, action) pair, its expected visits under π and
its group (the pairs whose state has the same observation key and whose action is the same),
`matched_credit` is the visitation-weighted mean credit of each group, and
`identification_measures` compares it with the restored (state's own) credit: the share of
visited steps whose sign differs or flips, the share whose group holds both signs, and the
weighted rank correlation, overall and per action class. The exact pairs come from the solver
(`jaxcredit.analysis.identification_exact`). See docs/analysis.md#text-matched-credit-analysisidentificationpy.

Shape letters: n visited (state, action) pairs.
"""

from __future__ import annotations

import numpy as np

from jaxcredit.analysis.classes import decorative_tolerance

# Action classes of a pair by its restored credit (classes.py's, harmful ones merged: a pair has no
# single episode outcome to split them by).
ID_CLASSES = ("load-bearing", "decorative", "harmful")
MEASURE_NAMES = ("sign_flip_share", "sign_differs_share", "mixed_group_share", "rank_correlation")


def matched_credit(credit: np.ndarray, weight: np.ndarray, group: np.ndarray) -> np.ndarray:
    """float64 `[n]`: each pair's group's visitation-weighted mean credit.

    `credit` float `[n]` (exact `Q − V` of each pair), `weight` float `[n]` (its expected visits,
    > 0), `group` int `[n]` (its group: same observation key, same action). A group whose credits
    are all equal (a group of one included) gets exactly that credit, with no rounding.
    """
    credit = np.asarray(credit, np.float64)
    weight = np.asarray(weight, np.float64)
    _, group = np.unique(np.asarray(group), return_inverse=True)
    total = np.bincount(group, weight)
    mean = np.bincount(group, weight * credit) / np.where(total > 0, total, 1.0)
    low = np.full(total.shape, np.inf)
    high = np.full(total.shape, -np.inf)
    np.minimum.at(low, group, credit)
    np.maximum.at(high, group, credit)
    return np.where((low == high)[group], credit, mean[group])


def signs(credit: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """int8 `[n]`: +1 above `tolerance` (float `[n]`), −1 below `−tolerance`, 0 within (decorative)."""
    credit = np.asarray(credit, np.float64)
    return np.where(credit > tolerance, 1, np.where(credit < -np.asarray(tolerance), -1, 0)).astype(np.int8)


def _midranks(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """float64 `[n]`: weighted mid-ranks, the weight below each value plus half the weight tied with it."""
    values, inverse = np.unique(x, return_inverse=True)
    tied = np.bincount(inverse, weight, minlength=values.size)
    below = np.cumsum(tied) - tied
    return (below + tied / 2)[inverse]


def weighted_rank_correlation(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> float | None:
    """Spearman's ρ under the weights: the weighted Pearson correlation of the weighted mid-ranks of
    `x` and `y` (float `[n]`, `weight` float `[n]` > 0). With equal weights it is Spearman's ρ. None
    when either side is constant."""
    x, y, weight = (np.asarray(a, np.float64) for a in (x, y, weight))
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    rx, ry = _midranks(x, weight), _midranks(y, weight)
    w = weight / weight.sum()
    rx, ry = rx - np.dot(w, rx), ry - np.dot(w, ry)
    var_x, var_y = np.dot(w, rx * rx), np.dot(w, ry * ry)
    return float(np.clip(np.dot(w, rx * ry) / np.sqrt(var_x * var_y), -1.0, 1.0))


def identification_measures(credit: np.ndarray, weight: np.ndarray, group: np.ndarray,
                            tolerance: np.ndarray) -> dict:
    """Text-matched against restored credit on the visited pairs, overall and per `ID_CLASSES`.

    `credit`, `weight`, `group` as in `matched_credit`; `tolerance` float `[n]`, the decorative
    tolerance of each pair's state (`pair_tolerance`). Each share is of visited steps (weighted by
    expected visits): `sign_flip_share`, the matched credit has the opposite sign (+ against −);
    `sign_differs_share`, its three-way sign (+, decorative, −) differs; `mixed_group_share`, the
    pair's group holds pairs of both signs. `rank_correlation` is `weighted_rank_correlation`
    (matched against restored). Classes are by restored credit. Returns those four, `pairs`,
    `pair_groups`, and `by_class` (each class's `step_share` and its four measures).
    """
    credit = np.asarray(credit, np.float64)
    weight = np.asarray(weight, np.float64)
    tolerance = np.asarray(tolerance, np.float64)
    _, group = np.unique(np.asarray(group), return_inverse=True)
    matched = matched_credit(credit, weight, group)
    exact_sign, matched_sign = signs(credit, tolerance), signs(matched, tolerance)
    positive = np.bincount(group, exact_sign > 0) > 0
    negative = np.bincount(group, exact_sign < 0) > 0
    mixed = (positive & negative)[group]
    flip = exact_sign * matched_sign.astype(np.int16) < 0
    differs = exact_sign != matched_sign
    pair_class = np.where(exact_sign > 0, 0, np.where(exact_sign < 0, 2, 1))
    total = weight.sum()

    def measures(mask):
        w = weight[mask]
        mass = w.sum()
        if mass <= 0:
            return {name: None for name in MEASURE_NAMES}
        return {"sign_flip_share": float(w[flip[mask]].sum() / mass),
                "sign_differs_share": float(w[differs[mask]].sum() / mass),
                "mixed_group_share": float(w[mixed[mask]].sum() / mass),
                "rank_correlation": weighted_rank_correlation(matched[mask], credit[mask], w)}

    out = {"pairs": int(credit.size), "pair_groups": int(group.max() + 1) if credit.size else 0,
           **measures(np.ones(credit.shape, bool)), "by_class": {}}
    for index, name in enumerate(ID_CLASSES):
        mask = pair_class == index
        out["by_class"][name] = {"step_share": float(weight[mask].sum() / total) if total > 0 else 0.0,
                                 **measures(mask)}
    return out


def pair_tolerance(value: np.ndarray) -> np.ndarray:
    """float64, the shape of `value`: the decorative tolerance of a state of exact value `V`
    (`classes.decorative_tolerance`, default tolerances)."""
    return decorative_tolerance(value)


def state_counts(state: np.ndarray, state_group: np.ndarray, weight: np.ndarray) -> dict:
    """How much a key merges: `states` (distinct `state` ids, int `[n]`), `groups` (distinct keys
    among them, `state_group` int `[n]`), `merged_states` (states sharing their key with another) and
    `merged_step_share` (the share of visited steps, `weight` `[n]`, at merged states)."""
    states, first = np.unique(np.asarray(state), return_index=True)
    groups_of_states = np.asarray(state_group)[first]
    _, group_index, size = np.unique(groups_of_states, return_inverse=True, return_counts=True)
    merged_state = size[group_index] > 1  # [states]
    _, state_index = np.unique(np.asarray(state), return_inverse=True)
    weight = np.asarray(weight, np.float64)
    total = weight.sum()
    return {"states": int(states.size), "groups": int(size.size), "merged_states": int(merged_state.sum()),
            "merged_step_share": float(weight[merged_state[state_index]].sum() / total) if total > 0 else 0.0}


def _cell(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def identification_markdown(record: dict) -> str:
    """Markdown: per view, one line of counts and a table (all, then each class) of the measures."""
    lines = [f"text-matched credit on {record['env']} ({record['env_text']}), {record['policy']}, "
             f"{record['problems']} problems, key {record['key']}, scope {record['scope']}", ""]
    for view in record["views"]:
        m = view["measures"]
        lines += [f"### {view['view']}", "",
                  f"{m['states']} visited states in {m['groups']} groups ({m['merged_states']} merged, "
                  f"{m['merged_step_share']:.1%} of steps); {m['pairs']} visited pairs in {m['pair_groups']} groups",
                  "", "| steps | share | sign flips | sign differs | group holds both signs | rank corr. |",
                  "| --- | --- | --- | --- | --- | --- |"]
        rows = [("all", {**m, "step_share": 1.0})] + list(m["by_class"].items())
        for name, entry in rows:
            lines.append(f"| {name} | {entry['step_share']:.1%} | {_cell(entry['sign_flip_share'], '.2%')} | "
                         f"{_cell(entry['sign_differs_share'], '.2%')} | {_cell(entry['mixed_group_share'], '.2%')} | "
                         f"{_cell(entry['rank_correlation'], '.3f')} |")
        lines.append("")
    lines += [f"- {note}" for note in record.get("notes", [])]
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["ID_CLASSES", "MEASURE_NAMES", "identification_markdown", "identification_measures", "matched_credit",
           "pair_tolerance", "signs", "state_counts", "weighted_rank_correlation"]
