"""Reading what training runs and sweeps wrote, as plain JSON (analysis never imports the trainer).

A run directory has `config.json`, `metrics.jsonl` (one row per evaluation and seed, with every
ledger counter), `summary.json` (when finished) and `policies/seed-i/`. A sweep directory has
`sweep_spec.json`, `sweep.json`, `table.md` and one run directory per cell,
`<regime>/<arm>/`. An audit directory has `audit.json`.
"""

from __future__ import annotations

import json
import os

import numpy as np

REGIME_MEANING = {"attempts": "equal main attempts", "steps": "equal total env steps"}


def read_json(path: str):
    """The JSON value in `path`; a missing file raises `FileNotFoundError` naming it."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no {os.path.basename(path)} in {os.path.dirname(path) or '.'}")
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error.msg} at line {error.lineno})") from None


def read_jsonl(path: str) -> list[dict]:
    """The rows of a JSON-lines file (blank lines skipped); a missing file raises `FileNotFoundError`."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no {os.path.basename(path)} in {os.path.dirname(path) or '.'}")
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    raise ValueError(f"{path} line {number} is not valid JSON") from None
    return rows


def kind_of(path: str) -> str:
    """`"sweep"`, `"run"` or `"audit"`: what the directory `path` holds; raises otherwise."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no directory {path}")
    if os.path.exists(os.path.join(path, "sweep_spec.json")):
        return "sweep"
    if os.path.exists(os.path.join(path, "config.json")) and os.path.exists(os.path.join(path, "metrics.jsonl")):
        return "run"
    if os.path.exists(os.path.join(path, "audit.json")):
        return "audit"
    raise ValueError(f"{path} is neither a sweep (sweep_spec.json), a run (config.json + metrics.jsonl) "
                     "nor an audit (audit.json) directory")


def seed_measures(rows: list[dict]) -> dict:
    """Per seed (sorted by seed index): `final_success` (the last evaluation's greedy success) and
    `average_success` (greedy success averaged over the evaluations after the start), as float
    arrays `[N]`, plus `seeds` (the seed indices)."""
    seeds = sorted({r["seed_index"] for r in rows})
    final, average = [], []
    for seed in seeds:
        mine = sorted((r for r in rows if r["seed_index"] == seed), key=lambda r: r["eval_index"])
        trained = [r for r in mine if r["eval_index"] > 0] or mine
        final.append(mine[-1]["success_greedy"])
        average.append(float(np.mean([r["success_greedy"] for r in trained])))
    return {"seeds": seeds, "final_success": np.array(final), "average_success": np.array(average)}


def sweep_cells(path: str) -> dict:
    """`{regime: {arm: run_dir}}` of a sweep directory, in the spec's order (cells on disk only)."""
    spec = read_json(os.path.join(path, "sweep_spec.json"))
    cells = {}
    for regime in spec.get("budgets", {}):
        for arm in spec.get("arms", {}):
            run = os.path.join(path, regime, arm)
            if os.path.exists(os.path.join(run, "metrics.jsonl")):
                cells.setdefault(regime, {})[arm] = run
    return cells
