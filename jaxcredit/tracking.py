"""Experiment tracking: a run's `metrics.jsonl` scalars, per seed, sent to TensorBoard or MLflow.

`open_trackers(kinds, run_dir, config)` returns one `Tracker` that the trainer calls after each
evaluation with every metrics row so far (`run_training(..., log=("tensorboard",))`, the CLI's
`--log`). Each backend logs every numeric field of each new row, at step `eval_index`, under one
run per seed, with the run's config as parameters:

- `tensorboard`: event files under `RUN_DIR/tensorboard/seed-<i>/` (tensorboardX's writer), read by
  TensorBoard (`tensorboard --logdir RUN_DIR/tensorboard`);
- `mlflow`: a local SQLite store `RUN_DIR/mlflow.db`, experiment = the run directory's name, one
  MLflow run per seed named `seed-<i>` (`mlflow ui --backend-store-uri sqlite:///RUN_DIR/mlflow.db`).

The rows already logged are counted in `RUN_DIR/tracking.json`, so a resumed run logs each row
once. The backends are optional dependencies (the `tracking` extra); naming one that is not
installed is a clear error before any training.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time

TRACKERS = ("tensorboard", "mlflow")
_MODULES = {"tensorboard": "tensorboardX", "mlflow": "mlflow"}
STATE_FILE = "tracking.json"


def check_trackers(kinds) -> tuple:
    """`kinds` as a tuple, each known and installed; raises `ValueError` naming the problem."""
    kinds = tuple(kinds or ())
    for kind in kinds:
        if kind not in TRACKERS:
            raise ValueError(f"--log must be one of {', '.join(TRACKERS)}, got {kind!r}")
        if importlib.util.find_spec(_MODULES[kind]) is None:
            raise ValueError(f"--log {kind} needs the package {_MODULES[kind]}: pip install 'jaxcredit[tracking]'")
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"--log names a backend twice: {', '.join(kinds)}")
    return kinds


def flat_params(config: dict, prefix: str = "") -> dict:
    """`config` flattened to `{"a.b": "value"}` strings (nested dicts joined by dots)."""
    out = {}
    for key, value in sorted(config.items()):
        if isinstance(value, dict):
            out.update(flat_params(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = json.dumps(value) if not isinstance(value, str) else value
    return out


def _scalars(row: dict) -> dict:
    return {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            and k not in ("seed_index", "eval_index")}


class _TensorBoard:
    def __init__(self, run_dir: str, config: dict):
        self._writers, self._root, self._config = {}, os.path.join(run_dir, "tensorboard"), config

    def _writer(self, seed: int):
        if seed not in self._writers:
            from tensorboardX import SummaryWriter

            # a resumed run opens a second event file: a unique suffix keeps the first (same second, same host)
            writer = SummaryWriter(os.path.join(self._root, f"seed-{seed}"), filename_suffix=f".{time.time_ns()}")
            writer.add_text("config", json.dumps(self._config, sort_keys=True), 0)
            self._writers[seed] = writer
        return self._writers[seed]

    def log(self, row: dict) -> None:
        writer = self._writer(int(row["seed_index"]))
        for key, value in _scalars(row).items():
            writer.add_scalar(key, value, int(row["eval_index"]))

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()


class _MLflow:
    def __init__(self, run_dir: str, config: dict):
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=f"sqlite:///{os.path.abspath(run_dir)}/mlflow.db")
        name = os.path.basename(os.path.abspath(run_dir))
        found = self._client.get_experiment_by_name(name)
        self._experiment = found.experiment_id if found else self._client.create_experiment(name)
        self._params, self._runs = flat_params(config), {}

    def _run(self, seed: int) -> str:
        if seed not in self._runs:
            named = self._client.search_runs([self._experiment], filter_string=f"tags.seed_index = '{seed}'")
            if named:
                self._runs[seed] = named[0].info.run_id
            else:
                run = self._client.create_run(self._experiment, run_name=f"seed-{seed}",
                                              tags={"seed_index": str(seed)})
                for key, value in self._params.items():
                    self._client.log_param(run.info.run_id, key, value[:6000])
                self._runs[seed] = run.info.run_id
        return self._runs[seed]

    def log(self, row: dict) -> None:
        run = self._run(int(row["seed_index"]))
        for key, value in _scalars(row).items():
            self._client.log_metric(run, key, value, step=int(row["eval_index"]))

    def close(self) -> None:
        for run in self._runs.values():
            self._client.set_terminated(run, status="FINISHED")


_BACKENDS = {"tensorboard": _TensorBoard, "mlflow": _MLflow}


class Tracker:
    """Logs each metrics row once to every backend named; `log_rows(rows)` takes every row so far."""

    def __init__(self, kinds, run_dir: str, config: dict):
        self._kinds = check_trackers(kinds)
        self._path = os.path.join(run_dir, STATE_FILE)
        self._logged = 0
        if os.path.exists(self._path):
            with open(self._path) as f:
                self._logged = int(json.load(f).get("rows_logged", 0))
        self._run_dir, self._config, self._backends = run_dir, config, None

    def log_rows(self, rows: list) -> None:
        """Send `rows[n:]` to every backend, `n` the rows logged before; then record the count.
        The backends open on the first call, once the run directory holds its run."""
        if not self._kinds or len(rows) <= self._logged:
            return
        if self._backends is None:
            self._backends = [_BACKENDS[kind](self._run_dir, self._config) for kind in self._kinds]
        for row in rows[self._logged:]:
            for backend in self._backends:
                backend.log(row)
        self._logged = len(rows)
        tmp = f"{self._path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({"rows_logged": self._logged, "backends": list(self._kinds)}, f)
        os.replace(tmp, self._path)

    def close(self) -> None:
        for backend in self._backends or ():
            backend.close()


def open_trackers(kinds, run_dir: str, config: dict) -> Tracker:
    """A `Tracker` for the backends `kinds` (`TRACKERS`) of the run in `run_dir`."""
    return Tracker(kinds, run_dir, config)


__all__ = ["STATE_FILE", "TRACKERS", "Tracker", "check_trackers", "flat_params", "open_trackers"]
