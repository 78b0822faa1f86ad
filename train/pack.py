"""Pack a sweep's (or a suite's) resumable state small enough to keep in a repository.

A long study can outlive the machine it runs on. `pack_sweep(SWEEP, OUT)` copies what resuming
it needs and what its results page and audits read, and leaves out what can be rebuilt: every
file of the sweep directory byte for byte; an unfinished cell's `checkpoints/`; a finished cell's
`policies/` (except in the tuning runs, whose scores are in `tuning.json`), without its
checkpoints; never locks or the leftovers of interrupted writes. `SWEEP` may also be a suite
directory, whose learning experiments are sweeps (`<experiment>/s<i>/`). Resume on any machine by
copying `OUT` to a working directory and running the same `jaxcredit sweep ... --resume` (or
`jaxcredit suite ... --resume`) there. See docs/training.md#run-directory (Moving a study to
another machine). Shape-free: this is file work only.
"""

from __future__ import annotations

import os
import shutil

from jaxcredit.output_dirs import KIND_NAME, infer_kind
from jaxcredit.rundir_io import LOCK_NAME, is_finished, is_leftover

TUNE_DIR = "tune"
PACKABLE = ("sweep", "suite")
_SKIPPED_PARTS = ("orbax-checkpoint-tmp",)  # an orbax save still in progress


def _skipped(name: str) -> bool:
    return name == LOCK_NAME or is_leftover(name) or any(part in name for part in _SKIPPED_PARTS)


def _cell_dirs(sweep_dir: str) -> list:
    """The run directories under `sweep_dir` (those with a `config.json`), relative paths."""
    cells = []
    for root, dirs, files in os.walk(sweep_dir):
        dirs[:] = sorted(d for d in dirs if d not in ("checkpoints", "policies") and not _skipped(d))
        if "config.json" in files and root != sweep_dir:
            cells.append(os.path.relpath(root, sweep_dir))
    return cells


def _is_tuning_run(top: str, cell: str) -> bool:
    """Whether the run `cell` (relative to `top`) lies in a sweep's `tune/` folder."""
    parts = cell.split(os.sep)
    return any(part == TUNE_DIR and infer_kind(os.path.join(top, *parts[:i])) == "sweep"
               for i, part in enumerate(parts))


def pack_sweep(sweep_dir: str, out_dir: str) -> dict:
    """Copy the resumable state of `sweep_dir` (a sweep or suite directory) into the new directory
    `out_dir` (see the module docstring). Returns `{"finished": [cells], "unfinished": [cells],
    "bytes": int}`, cells as paths relative to `sweep_dir`."""
    if infer_kind(sweep_dir) not in PACKABLE:
        raise ValueError(f"pack: {sweep_dir} is not a sweep or suite directory (no {KIND_NAME} of kind sweep or suite)")
    if os.path.lexists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise ValueError(f"pack: {out_dir} exists and is not empty: nothing written")
    out_real, sweep_real = os.path.realpath(out_dir), os.path.realpath(sweep_dir)
    if out_real == sweep_real or out_real.startswith(sweep_real + os.sep):
        raise ValueError(f"pack: {out_dir} is inside the sweep {sweep_dir}")
    cells = _cell_dirs(sweep_dir)
    finished = [c for c in cells if is_finished(os.path.join(sweep_dir, c))]
    drop = set()
    for cell in finished:
        drop.add(os.path.join(cell, "checkpoints"))
        if _is_tuning_run(sweep_dir, cell):
            drop.add(os.path.join(cell, "policies"))
    total = 0
    for root, dirs, files in os.walk(sweep_dir):
        rel = os.path.relpath(root, sweep_dir)
        dirs[:] = sorted(d for d in dirs if not _skipped(d) and os.path.normpath(os.path.join(rel, d)) not in drop)
        target = os.path.join(out_dir, rel)
        os.makedirs(target, exist_ok=True)
        for name in sorted(files):
            if _skipped(name):
                continue
            shutil.copy2(os.path.join(root, name), os.path.join(target, name))
            total += os.path.getsize(os.path.join(target, name))
    return {"finished": finished, "unfinished": [c for c in cells if c not in finished], "bytes": total}
