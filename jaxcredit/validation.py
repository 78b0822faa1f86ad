"""Validation of user-given numbers: one integer check, one float check, one strict integer reader.

Every configuration value (environment fields, training config, command-line options) goes
through these three, so every bad value is refused the same way, before any work, with a
`ValueError` naming the field and the allowed range. Integers must be integers (not `1.5`, not
`True`, not `1e3`); floats must be finite; text is read as ASCII decimal digits only (never
`"٣"`, `"³"`, `" 3"` or `"1_000"`, which Python's `int` accepts).
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
_DECIMAL = re.compile(r"[+-]?[0-9]{1,20}", re.ASCII)


def _allowed(low: int | float | None, high: int | float | None) -> str:
    """The allowed range as words after "must be": "in [low, high]", ">= low", "<= high" or ""."""
    if low is not None and high is not None:
        return f"in [{low}, {high}]"
    if low is not None:
        return f">= {low}"
    return f"<= {high}" if high is not None else ""


def require_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """`value` as a Python int; raises `ValueError` naming `name` unless it is an integer (a
    Python or NumPy integer, not a bool or a float) with `low <= value <= high`."""
    allowed = _allowed(low, high)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer {allowed}".rstrip() + f", got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {allowed}, got {value}")
    return value


def require_float(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """`value` as a Python float; raises `ValueError` naming `name` unless it is a finite real
    number (an int or a float, not a bool, NaN or infinity) with `low <= value <= high`."""
    allowed = _allowed(low, high)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number {allowed}".rstrip() + f", got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number {allowed}".rstrip() + f", got {value}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {allowed}, got {value:g}")
    return value


def parse_int(name: str, text: str, low: int | None = None, high: int | None = None) -> int:
    """The integer written in `text` (an optional sign and 1-20 ASCII digits, nothing else), checked
    with `require_int`; raises `ValueError` naming `name` otherwise."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise ValueError(f"{name} must be an integer written in ASCII digits, got {text!r}")
    return require_int(name, int(text), low, high)
