"""What every `jaxcredit bench` suite shares: the machine description, timing, the human table.

Timings exclude warm-up (compilation, first-touch allocation); short calls are timed in
back-to-back samples of about 20 ms; the sides are timed in interleaved rounds, each call waited
on with `jax.block_until_ready`, and each side's best (shortest) sample is kept -- on a shared
machine the best sample is the least disturbed one.
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from jaxcredit.timing import cpu_record, library_versions


def machine_description() -> dict:
    """The machine a benchmark ran on: cores, the processor (`jaxcredit.timing.cpu_record`), JAX
    backend and devices, library versions."""
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_record(),
        "libraries": library_versions(),
        "backend": jax.default_backend(),
        "devices": [str(device) for device in jax.devices()],
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def time_interleaved(fns: dict[str, Callable[[], Any]], *, repeats: int, warmup: int = 1,
                     min_sample_seconds: float = 0.02) -> dict[str, tuple]:
    """`{name: (seconds, result)}`: for each function, its best time per call and its last result
    (so the caller can check what was computed).

    Each function is first called `warmup` times untimed (compilation, first touch); the last
    warm-up call also sizes its sample: `calls` back-to-back calls lasting about
    `min_sample_seconds`, so a sub-millisecond call is measured in steady state rather than
    dominated by waking threads and caches. Then `repeats` interleaved rounds time one sample of
    each function in turn, so a burst of load from other processes hits all sides alike; a
    side's time is its fastest sample divided by `calls`. Every call's result is waited on with
    `jax.block_until_ready` inside the timed region, so asynchronous dispatch is fully counted.
    """
    if repeats < 1 or warmup < 1:
        raise ValueError(f"repeats and warmup must be >= 1, got {repeats} and {warmup}")
    calls = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            start = time.perf_counter()
            jax.block_until_ready(fn())
            elapsed = time.perf_counter() - start
        calls[name] = max(1, min(1000, math.ceil(min_sample_seconds / max(elapsed, 1e-9))))
    best = {name: (float("inf"), None) for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls[name]):
                result = jax.block_until_ready(fn())
            per_call = (time.perf_counter() - start) / calls[name]
            best[name] = (min(best[name][0], per_call), result)
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
