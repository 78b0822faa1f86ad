"""What every `jaxcredit bench` suite shares: the machine description, timing, the human table.

Timings exclude warm-up (compilation, first-touch allocation): each measured function is called
`warmup` times first, then the sides are timed in `repeats` interleaved rounds, each call waited
on with `jax.block_until_ready`, and each side's best (shortest) time is kept -- on a shared
machine the best repeat is the least disturbed one.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np


def machine_description() -> dict:
    """The machine a benchmark ran on: cores, JAX backend and devices, library versions."""
    return {
        "cores": os.cpu_count(),
        "backend": jax.default_backend(),
        "devices": [str(device) for device in jax.devices()],
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def time_interleaved(fns: dict[str, Callable[[], Any]], *, repeats: int, warmup: int = 1) -> dict[str, tuple]:
    """`{name: (seconds, result)}`: for each function, the fastest of `repeats` timed calls after
    `warmup` untimed ones, and its last result (so the caller can check what was computed).

    The sides are timed in interleaved rounds (each function once per round), so a burst of load
    from other processes hits all sides alike instead of one. Each call's result is waited on
    with `jax.block_until_ready` inside the timed region, so asynchronous JAX dispatch is fully
    counted; host (NumPy, Python) results pass through.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for fn in fns.values():
        for _ in range(warmup):
            jax.block_until_ready(fn())
    best = {name: (float("inf"), None) for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            result = jax.block_until_ready(fn())
            best[name] = (min(best[name][0], time.perf_counter() - start), result)
    return best


def format_rate(per_second: float) -> str:
    """`12_345_678.9` -> `"12.35M"`: a rate short enough for a table cell."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_second >= scale:
            return f"{per_second / scale:.2f}{suffix}"
    return f"{per_second:.1f}"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], *, file=None) -> None:
    """Print a left-aligned text table with a title to `file` (default stderr)."""
    file = sys.stderr if file is None else file
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    print(title, *lines, sep="\n", file=file)
