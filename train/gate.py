"""The learnability gate: can the policy imitate the optimal policy at all, before any credit comparison?

A credit comparison on arithmetic means something only if the policy network, given perfect
labels, can learn to solve the study's problems. The gate trains exactly that: supervised
imitation of the optimal policy (`objective="hard"` on `credit="solver"` with
`credit_options.policy="optimal"` and `tie_break="fastest"`), on the study's family with the
turns left in the observation, and measures greedy success on the family's held-out evaluation
problems against `GATE_THRESHOLD` (0.9). `run_gate(config, out)` trains into `out` and writes
`out/gate.json` (`GATE_NAME`): the config, the rung, greedy success per family, whether it
passed, its cost, run time and machine. `gate_config(...)` builds the gate's `TrainConfig`.
Results pages read `SWEEP/gates/<rung>/gate.json` (`jaxcredit.analysis.gates`). See
docs/training.md#the-learnability-gate-jaxcredit-gate-traingatepy.
"""

from __future__ import annotations

import datetime
import os
import time

import numpy as np

from jaxcredit.rundir_io import read_json, read_jsonl, write_json_atomic
from jaxcredit.timing import machine_record
from jaxcredit.train.config import TrainConfig, config_from_dict
from jaxcredit.train.driver import run_training

GATE_NAME = "gate.json"
GATE_THRESHOLD = 0.9
GATE_VERSION = 1
# What makes the gate the gate: imitation of the tie-broken optimal policy. `gate_config` refuses
# overrides of these (and of `eval_families`: the gate evaluates on its own family).
GATE_FIXED = {"env": "arithmetic", "credit": "solver", "credit_options.policy": "optimal", "objective": "hard"}
# Defaults a caller may change (`--set`); the budget is in main attempts.
GATE_DEFAULTS = {"credit_options.tie_break": "fastest", "learning_rate": 1e-3, "problems_per_iteration": 8,
                 "attempts_per_problem": 2, "num_seeds": 1, "num_evals": 4, "eval_problems": 128,
                 "validation_problems": 64, "budget": 4_000, "clip_epsilon": 0.0}
RUNG_FIELDS = {"policy_input": "tokens", "afterstate_lookahead": 0}  # read when TrainConfig has them


def gate_config(*, count: int = 4, family: str = "default", fields: dict | None = None) -> TrainConfig:
    """The gate's `TrainConfig` for problems of `count` numbers of `family`: `GATE_FIXED`, then
    `GATE_DEFAULTS` updated by `fields` (any `TrainConfig` field but those of `GATE_FIXED`; an
    `env_overrides` is merged), with the turns left shown and evaluation on `family` only."""
    fields = dict(fields or {})
    fixed = sorted(set(fields) & (set(GATE_FIXED) | {"eval_families"}))
    if fixed:
        raise ValueError(f"the gate fixes {', '.join(fixed)} (imitation of the optimal policy); "
                         f"drop {'it' if len(fixed) == 1 else 'them'} from --set")
    overrides = fields.pop("env_overrides", {})
    if not isinstance(overrides, dict):
        raise ValueError(f"config.env_overrides must be a JSON object of environment fields, got {overrides!r}")
    env = {"count": count, "family": family, "include_turns_left": True, **overrides}
    return config_from_dict({**GATE_DEFAULTS, **fields, **GATE_FIXED, "env_overrides": env,
                             "eval_families": [env["family"]]})


def _last_rows(rows: list) -> dict:
    last = {}
    for row in rows:
        if row["seed_index"] not in last or row["eval_index"] > last[row["seed_index"]]["eval_index"]:
            last[row["seed_index"]] = row
    return dict(sorted(last.items()))


def gate_record(config: TrainConfig, rows: list, summary: dict, *, threshold: float, run_seconds: float) -> dict:
    """The `gate.json` record of a finished gate run (its config, metrics rows and summary)."""
    last = _last_rows(rows)
    families = list(config.eval_families)
    per_seed = {}
    for family in families:
        key = "success_greedy" if len(families) == 1 else f"success_greedy/{family}"
        per_seed[family] = [float(row[key]) for row in last.values()]
    success = {family: float(np.mean(values)) for family, values in per_seed.items()}
    env = dict(config.env_overrides)
    rung = {name: getattr(config, name, default) for name, default in RUNG_FIELDS.items()}
    rung.update(count=env.get("count", 4), family=env.get("family", "default"),
                include_turns_left=bool(env.get("include_turns_left", False)))
    cost = {key: float(np.mean([float(row.get(key, 0)) for row in last.values()]))
            for key in ("main_episodes", "total_env_steps", "label_env_steps")}
    return {"kind": "learnability-gate", "version": GATE_VERSION, "rung": rung, "config": config.to_dict(),
            "threshold": threshold, "success": success, "success_per_seed": per_seed,
            "passed": bool(all(v >= threshold for v in success.values())), "cost": cost,
            "final_success": summary["mean"]["final_success"], "run_seconds": round(run_seconds, 3),
            "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": machine_record()}


def run_gate(config: TrainConfig, out: str, *, threshold: float = GATE_THRESHOLD, resume: bool = False,
             progress: bool = True) -> dict:
    """Train the gate `config` (see `gate_config`) into the run directory `out`, then write and
    return `out/gate.json` (`gate_record`). Everything is checked before any work; a resumed run
    whose gate record exists returns it unchanged."""
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise ValueError(f"--threshold must be in (0, 1], got {threshold!r}")
    fixed = config_from_dict(GATE_FIXED)  # what imitation of the optimal policy is
    if (config.objective, config.credit, config.credit_options.policy) != (
            fixed.objective, fixed.credit, fixed.credit_options.policy):
        raise ValueError("a gate config imitates the optimal policy: objective 'hard', credit 'solver', "
                         "credit_options.policy 'optimal' (build it with gate_config)")
    path = os.path.join(out, GATE_NAME)
    if resume and os.path.exists(path):
        return read_json(path)
    began = time.perf_counter()
    summary = run_training(config, out, resume=resume, progress=progress, label="gate")
    rows = read_jsonl(os.path.join(out, "metrics.jsonl"))
    record = gate_record(config, rows, summary, threshold=float(threshold), run_seconds=time.perf_counter() - began)
    write_json_atomic(path, record)
    return record


def gate_text(record: dict, out: str) -> str:
    """One line: the rung, greedy success per family against the threshold, passed or failed."""
    rung = record["rung"]
    success = ", ".join(f"{family} {value:.3f}" for family, value in record["success"].items())
    return (f"learnability gate ({rung['policy_input']}, {rung['count']} numbers, {rung['family']}): held-out greedy "
            f"success {success} against {record['threshold']:g}: {'PASSED' if record['passed'] else 'FAILED'} "
            f"in {record['run_seconds']:.0f}s; {os.path.join(out, GATE_NAME)}")
