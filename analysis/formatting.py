"""Number formatting shared by the Markdown tables of reports and audits."""

from __future__ import annotations

import math


def format_number(x, spec: str = ".3f") -> str:
    """`format(x, spec)`, or `n/a` for None and NaN (a measure that could not be computed)."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)
