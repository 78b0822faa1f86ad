"""Greedy play on the uniform reference's exact values, on a sweep's own evaluation problems.

The source study's claim about exact values under the uniform reference needs no training: play
each evaluation problem greedily on `Q^uniform` (`jaxcredit.solver_batch.greedy_reference_play`) and
count the wins. `write_reference_greedy(SWEEP)` does it for the evaluation sets of the sweep's
cells (every cell shares them: the same environment, `eval_families`, `eval_problems`,
`eval_seed` and holdout) and writes `SWEEP/reference/greedy.json`, which the sweep's results
page shows per family.
"""

from __future__ import annotations

import glob
import os
import time

import numpy as np

from jaxcredit.envs import make
from jaxcredit.rundir_io import read_json, write_json_atomic
from jaxcredit.solver_batch import greedy_reference_play
from jaxcredit.timing import machine_record
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.evaluation import evaluation_sets

REFERENCE_DIR, GREEDY_NAME, KIND = "reference", "greedy.json", "reference-greedy"
_SHARED = ("env", "env_overrides", "eval_families", "eval_problems", "eval_seed", "holdout_fraction")


def _cell_config(sweep_dir: str):
    found = sorted(glob.glob(os.path.join(sweep_dir, "*", "*", "config.json"))
                   + glob.glob(os.path.join(sweep_dir, "*", "*", "*", "config.json")))
    if not found:
        raise FileNotFoundError(f"{sweep_dir}: no cell's config.json yet (start the sweep first)")
    configs = [read_json(path, expect=dict) for path in found]
    first = {key: configs[0].get(key) for key in _SHARED}
    for path, values in zip(found, configs):
        mine = {key: values.get(key) for key in _SHARED}
        if mine != first:
            differs = next(key for key in _SHARED if mine[key] != first[key])
            raise ValueError(f"{path}: evaluation settings differ between cells ({differs}), so one greedy "
                             "record cannot serve them all")
    return config_from_dict(configs[0])


def reference_greedy_record(sweep_dir: str) -> dict:
    """Per evaluation family of the sweep's cells: problems, wins of greedy play on `Q^uniform`,
    problems some play solves (`V* > 0`), mean turns of the greedy episodes and the uniform
    policy's own mean success there. Returns the record `write_reference_greedy` writes."""
    config = _cell_config(sweep_dir)
    env = make(config.env, **config.env_kwargs)
    started = time.time()
    families = {}
    for family, problems in evaluation_sets(env, config).items():
        out = greedy_reference_play(env, problems)
        families[family] = {"problems": int(out["solvable"].size), "won": int(out["uniform_greedy_won"].sum()),
                            "solvable": int(out["solvable"].sum()),
                            "mean_turns": round(float(np.mean(out["uniform_greedy_turns"])), 4),
                            "uniform_success": round(float(np.mean(out["uniform_value"])), 4)}
    return {"kind": KIND, "version": 1, "policy": "uniform",
            "settings": {key: getattr(config, key) if key != "env_overrides" else dict(config.env_overrides)
                         for key in _SHARED},
            "max_turns": int(env.max_turns), "families": families,
            "run_seconds": round(time.time() - started, 3), "machine": machine_record()}


def write_reference_greedy(sweep_dir: str) -> tuple[str, dict]:
    """Compute `reference_greedy_record(sweep_dir)` and write it to `SWEEP/reference/greedy.json`
    (atomically); returns the path and the record."""
    record = reference_greedy_record(sweep_dir)
    os.makedirs(os.path.join(sweep_dir, REFERENCE_DIR), exist_ok=True)
    path = os.path.join(sweep_dir, REFERENCE_DIR, GREEDY_NAME)
    write_json_atomic(path, record)
    return path, record


def greedy_text(record: dict) -> str:
    """One line per family: greedy play on the uniform reference's values wins k of n."""
    return "\n".join(f"{family}: greedy play on exact uniform-reference values wins {f['won']} of {f['problems']} "
                     f"(solvable {f['solvable']}; the uniform policy itself {f['uniform_success']:.3f})"
                     for family, f in record["families"].items())
