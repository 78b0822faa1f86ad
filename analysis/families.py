"""Per evaluation family: an arithmetic run evaluated on several problem families reports each
family's greedy success (`success_greedy/<family>`) beside their mean (`success_greedy`); the
results page compares the arms on every family, not only on the mean.

`evaluation_families(rows)` finds the families in metrics rows, `family_rows(rows, family)` reads
a family's numbers in the place of the mean (so every measure, table and curve built on
`success_greedy` is that family's), and `family_comparisons` is the paired table per family.
"""

from __future__ import annotations

from jaxcredit.comparison import paired_table
from jaxcredit.rundir_io import seed_measures

_PREFIX = "success_greedy/"


def evaluation_families(rows_by_cell: dict) -> list:
    """The families of `{cell: metrics rows}`, in order of first appearance (`[]` when the runs were
    evaluated on one family: their keys carry no family)."""
    found: dict = {}
    for rows in rows_by_cell.values():
        for row in rows:
            for key in row:
                if key.startswith(_PREFIX):
                    found.setdefault(key[len(_PREFIX):], None)
    return list(found)


def family_rows(rows: list, family: str) -> list:
    """`rows` with each per-family metric of `family` (`<metric>/<family>`) in the place of its mean
    over families (`<metric>`)."""
    suffix = f"/{family}"
    return [{**row, **{key[: -len(suffix)]: value for key, value in row.items() if key.endswith(suffix)}}
            for row in rows]


def family_comparisons(pairs: list, rows_by_cell: dict, *, budgets: dict, reference_arm: str) -> dict:
    """`{family: paired_table}`: the comparison (`jaxcredit.comparison.paired_table`) of `pairs` on
    each family's greedy success; `rows_by_cell` is `{(regime, name): metrics rows}`."""
    out = {}
    for family in evaluation_families(rows_by_cell):
        measures = {cell: seed_measures(family_rows(rows, family)) for cell, rows in rows_by_cell.items()
                    if any(f"{_PREFIX}{family}" in row for row in rows)}
        out[family] = paired_table(pairs, measures, budgets=budgets, reference_arm=reference_arm)
    return out
