"""Reading what training runs and sweeps wrote, as plain JSON (analysis never imports the trainer).

A run directory has `config.json`, `metrics.jsonl` (one row per evaluation and seed, with every
ledger counter), `summary.json` (when finished) and `policies/seed-i/`. A sweep directory has
`sweep_spec.json`, `sweep.json`, `table.md` and one run directory per cell, `<regime>/<arm>/`;
the matched regime's cells are views `matched/<arm>/to-<label arm>/` of one shared run
(`jaxcredit.rundir_io.matched_cell`). An audit directory has `audit.json`. The format's reading
functions, regimes and per-seed measures are `jaxcredit.rundir_io`'s.
"""

from __future__ import annotations

import os

from jaxcredit.comparison import arm_credits, label_arms, label_free_arms
from jaxcredit.output_dirs import infer_kind
from jaxcredit.plugins import load_plugins
from jaxcredit.rundir_io import is_finished, is_matched, matched_cell, read_json, read_jsonl, table_regimes
from jaxcredit.rundir_io import seed_measures as seed_measures

__all__ = ["kind_of", "policy_eval_flops_of", "read_json", "read_jsonl", "seed_measures", "sweep_cells",
           "sweep_credits", "sweep_regimes"]


def kind_of(path: str) -> str:
    """`"sweep"`, `"run"` or `"audit"`: what the directory `path` holds (its kind marker, else its
    contents: `jaxcredit.output_dirs.infer_kind`); raises `ValueError` naming any other kind."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no directory {path}")
    kind = infer_kind(path)
    if kind in ("sweep", "run", "audit"):
        return kind
    if kind in (None, "other"):
        raise ValueError(f"{path} is neither a sweep (sweep_spec.json), a run (config.json + metrics.jsonl) "
                         "nor an audit (audit.json) directory")
    raise ValueError(f"{path} is a {kind} directory, not a sweep, run or audit directory")


def sweep_credits(spec: dict) -> dict:
    """`{arm: credit}` of a sweep spec, in the sweep's order of arms (`arm_order`, as the trainer's
    table lists them; older sweeps: the order in the file)."""
    arms = spec.get("arms", {})
    order = [arm for arm in spec.get("arm_order", []) if arm in arms]
    ordered = {arm: arms[arm] for arm in order + [arm for arm in arms if arm not in order]}
    return arm_credits(spec.get("base", {}), ordered)


def sweep_regimes(spec: dict) -> list:
    """The regimes of a sweep's tables and directories, in order (older sweeps: the keys of their
    budgets): `matched` is one regime per currency of its `match_on` (`jaxcredit.rundir_io.table_regimes`)."""
    return table_regimes(spec.get("regimes") or spec.get("budgets", {}), spec.get("match_on"))


def policy_eval_flops_of(config: dict) -> int:
    """One policy evaluation's FLOPs (`jaxcredit.policy.policy_eval_flops`) for a run's `config.json`:
    its network sizes (the trainer's defaults where absent) on its environment."""
    from jaxcredit.envs import make
    from jaxcredit.policy import PolicyConfig, policy_eval_flops, task_sizes

    network = PolicyConfig(**{k: config[k] for k in ("d_model", "num_layers", "num_heads", "mlp_dim") if k in config})
    env = make(config.get("env", "mad"), **(config.get("env_overrides") or {}))
    return policy_eval_flops(network, task_sizes(env))


def read_sweep_spec(path: str) -> dict:
    """A sweep directory's `sweep_spec.json`, after importing the plugins it records (`plugins`:
    the files or modules whose credit arms its cells train, `jaxcredit.plugins`)."""
    spec = read_json(os.path.join(path, "sweep_spec.json"))
    load_plugins(spec.get("plugins"))
    return spec


def sweep_cells(path: str, *, finished_only: bool = False) -> dict:
    """`{regime: {cell: run_dir}}` of a sweep directory, in the spec's order (cells on disk only;
    `finished_only`: only cells whose `summary.json` reads as strict JSON; a torn one raises).

    Cells are arm names, and in `matched` the views `<label-free arm>/to-<label arm>`.
    """
    spec = read_sweep_spec(path)
    credits = sweep_credits(spec)
    cells = {}
    for regime in sweep_regimes(spec):
        if is_matched(regime):
            names = [matched_cell(free, arm) for arm in label_arms(credits)
                     for free in label_free_arms(credits, spec.get("reference_arm", "outcome"))]
        else:
            names = list(credits)
        for name in names:
            run = os.path.join(path, regime, name)
            finished = is_finished(run)  # a torn summary.json raises, finished or not
            if finished if finished_only else os.path.exists(os.path.join(run, "metrics.jsonl")):
                cells.setdefault(regime, {})[name] = run
    return cells
