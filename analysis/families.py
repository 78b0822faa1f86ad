"""Per evaluation family: an arithmetic run evaluated on several problem families reports each
family's greedy success (`success_greedy/<family>`) beside their mean (`success_greedy`); the
results page compares the arms on every family, not only on the mean.

`evaluation_families(rows)` finds the families in metrics rows and `family_rows(rows, family)`
reads a family's numbers in the place of the mean (both `jaxcredit.rundir_io`, shared with the
sweep's table); `family_comparisons` is the paired table per family.
"""

from __future__ import annotations

from jaxcredit.comparison import paired_table
from jaxcredit.rundir_io import FAMILY_PREFIX, evaluation_families, family_rows, seed_measures


def family_comparisons(pairs: list, rows_by_cell: dict, *, budgets: dict, reference_arm: str) -> dict:
    """`{family: paired_table}`: the comparison (`jaxcredit.comparison.paired_table`) of `pairs` on
    each family's greedy success; `rows_by_cell` is `{(regime, name): metrics rows}`."""
    families = list(dict.fromkeys(f for rows in rows_by_cell.values() for f in evaluation_families(rows)))
    out = {}
    for family in families:
        measures = {cell: seed_measures(family_rows(rows, family)) for cell, rows in rows_by_cell.items()
                    if any(f"{FAMILY_PREFIX}{family}" in row for row in rows)}
        out[family] = paired_table(pairs, measures, budgets=budgets, reference_arm=reference_arm)
    return out


__all__ = ["evaluation_families", "family_comparisons", "family_rows"]
