"""Run directories: what a training run writes, written so a crash never looks like a finish.

A run directory holds its kind marker (`.jaxcredit-kind`, written first), `config.json` (the
resolved `TrainConfig`), `metrics.jsonl` (one row per evaluation and seed), `checkpoints/` (orbax
checkpoints of the whole training state, with the pointers `latest.json` and `best.json`),
`policies/seed-i/` (each seed's final policy), `summary.json` (written last, only when the run
finished), `failed.json` instead when a non-finite iteration stopped it, and `.jaxcredit.lock`
while a process writes it. So a directory is `new`, `resumable`, `finished` or `failed`, read from
disk by `RunDir.status`. Every file is written to a temporary name and
renamed into place, and a checkpoint becomes `latest` only after orbax has committed it, so an
interrupted write leaves the previous complete state in charge. With several processes every
process saves and restores checkpoints and only process 0 touches pointers and old directories.
See docs/training.md#run-directory and docs/reliability.md.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

import jax
import orbax.checkpoint as ocp

from jaxcredit import rundir_io
from jaxcredit.checkpoint import quiet_orbax
from jaxcredit.output_dirs import check_kind, write_kind
from jaxcredit.rundir_io import FAILED_FILE, read_json, read_jsonl, write_json_atomic, write_jsonl_atomic

__all__ = ["RunDir", "read_json", "read_jsonl", "write_json_atomic", "write_jsonl_atomic"]

STATUSES = ("new", "resumable", "finished", "failed")


class RunDir:
    """Paths, state and atomic reads/writes of one run directory."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.config_path = os.path.join(self.path, "config.json")
        self.metrics_path = os.path.join(self.path, "metrics.jsonl")
        self.summary_path = os.path.join(self.path, "summary.json")
        self.failed_path = os.path.join(self.path, FAILED_FILE)
        self.checkpoint_root = os.path.join(self.path, "checkpoints")
        self.policies_path = os.path.join(self.path, "policies")
        self._checkpointer = None

    @property
    def checkpointer(self) -> ocp.StandardCheckpointer:
        """One orbax checkpointer for every save of this run (about half the cost of a new one per save)."""
        if self._checkpointer is None:
            self._checkpointer = ocp.StandardCheckpointer()
        return self._checkpointer

    def close(self) -> None:
        """Close the checkpointer (its threads); the next save opens a new one."""
        if self._checkpointer is not None:
            self._checkpointer, checkpointer = None, self._checkpointer
            checkpointer.close()

    @property
    def is_complete(self) -> bool:
        return os.path.exists(self.summary_path)

    def status(self) -> str:
        """`new`, `resumable`, `finished` or `failed` (see the module docstring)."""
        if os.path.exists(self.failed_path):
            return "failed"
        if self.is_complete:
            return "finished"
        return "resumable" if os.path.exists(self.config_path) else "new"

    def create(self, config_dict: dict) -> None:
        """Start the run: refuse a directory of another kind (`jaxcredit.output_dirs`), write the
        kind marker, then `checkpoints/` and `config.json`."""
        check_kind(self.path, "run", "train")
        write_kind(self.path, "run")
        rundir_io.make_dirs(self.checkpoint_root)
        write_json_atomic(self.config_path, config_dict)

    def remove_leftovers(self) -> None:
        """Remove what interrupted writers left: temporary files, and checkpoint directories no
        pointer names (half-written, or replaced but not yet removed). The caller holds the lock,
        so no writer is alive."""
        rundir_io.remove_leftovers(self.path)
        rundir_io.remove_leftovers(self.checkpoint_root)
        if not os.path.isdir(self.checkpoint_root):
            return
        for name in ("latest", "best"):
            info = self.checkpoint_info(name)
            keep = None if info is None else info["directory"]
            for entry in sorted(os.listdir(self.checkpoint_root)):
                if entry.startswith(f"{name}-") and entry != keep:
                    rundir_io.remove_path(os.path.join(self.checkpoint_root, entry))

    def _pointer(self, name: str) -> str:
        return os.path.join(self.checkpoint_root, f"{name}.json")

    def save_checkpoint(self, name: str, index: int, state: Any, info: dict, *, part: int | None = None) -> None:
        """Save `state` (any pytree of arrays) as checkpoint `name` (`latest` or `best`).

        The checkpoint lands in `checkpoints/{name}-{index}` (`{name}-{index}-{part}` for part
        `part` of the segment after evaluation `index`); then `{name}.json` is pointed at it; then
        the older `{name}-*` directories are removed.
        """
        target = os.path.join(self.checkpoint_root, f"{name}-{index}" + ("" if part is None else f"-{part}"))
        writer = jax.process_index() == 0
        if writer:
            rundir_io.remove_path(target)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(f"jaxcredit-checkpoint-{os.path.basename(target)}")
        if writer:
            rundir_io.before_file_operation("checkpoint", target)
        self.checkpointer.save(target, state)
        self.checkpointer.wait_until_finished()
        if not writer:
            return
        write_json_atomic(self._pointer(name), {"directory": os.path.basename(target), **info})
        for entry in sorted(os.listdir(self.checkpoint_root)):
            if entry.startswith(f"{name}-") and entry != os.path.basename(target):
                rundir_io.remove_path(os.path.join(self.checkpoint_root, entry))

    def checkpoint_info(self, name: str) -> dict | None:
        """The pointer of checkpoint `name`, or None when there is none; `ValueError` when it is
        not a pointer this module wrote (garbled, or naming another directory)."""
        pointer = self._pointer(name)
        if not os.path.exists(pointer):
            return None
        try:
            info = read_json(pointer)
        except (OSError, ValueError) as error:
            raise ValueError(f"corrupted checkpoint pointer {pointer}: {error}") from None
        directory = info.get("directory") if isinstance(info, dict) else None
        if not isinstance(directory, str) or not re.fullmatch(rf"{name}-[0-9]+(-[0-9]+)?", directory, re.ASCII):
            raise ValueError(f"corrupted checkpoint pointer {pointer}: 'directory' must be {name}-N or {name}-N-K, "
                             f"got {directory!r}")
        return info

    def restore_checkpoint(self, name: str, like: Any) -> tuple[Any, dict]:
        """Restore checkpoint `name` into the structure of `like`.

        Raises `FileNotFoundError` when there is none and `ValueError` when it cannot be read;
        nothing in the run directory is changed either way.
        """
        info = self.checkpoint_info(name)
        if info is None:
            raise FileNotFoundError(f"no {name} checkpoint in {self.path} (nothing to resume)")
        directory = os.path.join(self.checkpoint_root, info["directory"])
        if not os.path.isdir(directory):
            raise ValueError(f"corrupted checkpoint: {directory} is missing")
        abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, like)
        try:
            with quiet_orbax():
                state = self.checkpointer.restore(directory, abstract)
        except Exception as error:  # orbax raises many kinds; the user needs one clear line
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"corrupted checkpoint {directory}: {first[:300]}") from None
        return state, info


class Progress(NamedTuple):
    """A run's last evaluation, from its `metrics.jsonl`: its index, the mean greedy success over
    seeds, the slowest seed's share of the budget (None without a config or the budget counter),
    and the training segments' seconds up to it (None where the rows lack `segment_seconds`)."""

    last_eval: int
    success: float
    fraction: float | None
    seconds: float | None


def evaluation_progress(run_dir: str, config=None) -> Progress | None:
    """The `Progress` of run directory `run_dir` (its `TrainConfig` `config` gives the budget);
    None before its first evaluation. `metrics.jsonl` is written atomically after each evaluation,
    so it can be read while the run goes on."""
    path = os.path.join(run_dir, "metrics.jsonl")
    every = read_jsonl(path) if os.path.exists(path) else []
    if not every:
        return None
    last = max(row["eval_index"] for row in every)
    rows = [row for row in every if row["eval_index"] == last]
    success = sum(row["success_greedy"] for row in rows) / len(rows)
    fraction = None
    if config is not None and all(config.budget_counter in row for row in rows):
        fraction = min(1.0, min(row[config.budget_counter] for row in rows) / config.budget)
    per_eval = {row["eval_index"]: row["segment_seconds"] for row in every
                if isinstance(row.get("segment_seconds"), (int, float))}  # one per evaluation, on every seed's row
    return Progress(last, success, fraction, float(sum(per_eval.values())) if per_eval else None)
