"""Run directories: what a training run writes, written so a crash never looks like a finish.

A run directory holds:

- `config.json`: the resolved `TrainConfig`;
- `metrics.jsonl`: one row per evaluation and seed, with every ledger counter;
- `checkpoints/`: orbax checkpoints of the whole training state (every seed), `latest.json`
  pointing at the newest complete one and `best.json` at the best evaluation's;
- `summary.json`: written last, only when the run finished; its presence means "complete".

Every file is written to a temporary name and renamed into place; a checkpoint becomes
`latest` only after orbax has committed it, so an interrupted write leaves the previous
complete state in charge. With several processes (`jax.distributed`) every process calls
`save_checkpoint` and `restore_checkpoint` (orbax coordinates the write; the directory must be on
a filesystem all processes share) and only process 0 touches pointers and old directories.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import jax
import orbax.checkpoint as ocp


def write_json_atomic(path: str, obj: Any) -> None:
    """Write `obj` as JSON to `path` through a temporary file and a rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_jsonl_atomic(path: str, rows: list[dict]) -> None:
    """Write `rows`, one JSON object per line, through a temporary file and a rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> Any:
    with open(path) as f:
        return json.load(f)


def read_jsonl(path: str) -> list[dict]:
    """Rows of a JSON-lines file (an absent file has none)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class RunDir:
    """Paths and atomic reads/writes of one run directory."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.config_path = os.path.join(self.path, "config.json")
        self.metrics_path = os.path.join(self.path, "metrics.jsonl")
        self.summary_path = os.path.join(self.path, "summary.json")
        self.checkpoint_root = os.path.join(self.path, "checkpoints")

    @property
    def is_complete(self) -> bool:
        return os.path.exists(self.summary_path)

    def create(self, config_dict: dict) -> None:
        os.makedirs(self.checkpoint_root, exist_ok=True)
        write_json_atomic(self.config_path, config_dict)

    def _pointer(self, name: str) -> str:
        return os.path.join(self.checkpoint_root, f"{name}.json")

    def save_checkpoint(self, name: str, index: int, state: Any, info: dict) -> None:
        """Save `state` (any pytree of arrays) as checkpoint `name` (`latest` or `best`).

        The checkpoint lands in `checkpoints/{name}-{index}`; then `{name}.json` is pointed at
        it; then the older `{name}-*` directories are removed.
        """
        target = os.path.join(self.checkpoint_root, f"{name}-{index}")
        writer = jax.process_index() == 0
        if writer and os.path.exists(target):
            shutil.rmtree(target)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(f"jaxcredit-checkpoint-{name}-{index}")
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(target, state)
        checkpointer.wait_until_finished()
        checkpointer.close()
        if not writer:
            return
        write_json_atomic(self._pointer(name), {"directory": os.path.basename(target), **info})
        for entry in os.listdir(self.checkpoint_root):
            if entry.startswith(f"{name}-") and entry != os.path.basename(target):
                shutil.rmtree(os.path.join(self.checkpoint_root, entry), ignore_errors=True)

    def checkpoint_info(self, name: str) -> dict | None:
        """The pointer of checkpoint `name`, or None when there is none."""
        pointer = self._pointer(name)
        if not os.path.exists(pointer):
            return None
        try:
            return read_json(pointer)
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"corrupted checkpoint pointer {pointer}: {error}") from None

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
            checkpointer = ocp.StandardCheckpointer()
            state = checkpointer.restore(directory, abstract)
            checkpointer.close()
        except Exception as error:  # orbax raises many kinds; the user needs one clear line
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"corrupted checkpoint {directory}: {first[:300]}") from None
        return state, info
