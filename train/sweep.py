"""Budget-matched sweeps: every arm under both budget regimes, paired by seed, and their table.

A sweep is a base configuration, named arms (credit settings) and two regimes:
- `attempts`: equal main attempts (`budget_counter="main_episodes"`); label work is extra;
- `steps`: equal total environment steps (`budget_counter="total_env_steps"`); arms without
  label work get more main attempts until their total matches.
Each (regime, arm) cell is an independent run directory `OUT/<regime>/<arm>`; cells share
seeds, so arms are paired (same initial parameters, same problem stream). The table gives, per
regime and arm, final and average greedy success (mean over seeds) and the paired difference to
the reference arm (`outcome`) with a 95% bootstrap interval over seeds.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from jaxcredit.rundir_io import RunLock, check_writable_dir, remove_leftovers, write_text_atomic
from jaxcredit.stats import paired_bootstrap
from jaxcredit.train.backends import Cell, check_backend, run_cells
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.rundir import read_json, write_json_atomic

REGIMES = {"attempts": "main_episodes", "steps": "total_env_steps"}


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A sweep: `base` config fields, `arms` (name -> config fields), budget per regime."""

    name: str
    description: str
    base: dict
    arms: dict
    budgets: dict  # regime -> budget in that regime's counter
    reference_arm: str = "outcome"
    cpu_minutes: str = ""

    def cell_configs(self, *, num_seeds: int | None = None) -> dict:
        """`{(regime, arm): TrainConfig}` for every cell; raises `ValueError` on a bad field."""
        cells = {}
        for regime, budget in self.budgets.items():
            if regime not in REGIMES:
                raise ValueError(f"unknown budget regime {regime!r}; choices: {', '.join(REGIMES)}")
            for arm, fields in self.arms.items():
                values = {**self.base, **fields, "budget_counter": REGIMES[regime], "budget": budget}
                if num_seeds is not None:
                    values["num_seeds"] = num_seeds
                cells[(regime, arm)] = config_from_dict(values)
        return cells


def run_sweep(spec: SweepSpec, out: str, *, resume: bool = False, num_seeds: int | None = None,
              progress: bool = True, backend: str = "local", ray_address: str | None = None) -> dict:
    """Run every cell of `spec` into `out` (finished cells are skipped on resume); returns the
    table dict (also written to `out/sweep.json` and `out/table.md`).

    `backend`: `"local"` runs the cells one after another; `"ray"` runs each as a Ray task (on the
    cluster at `ray_address`, or a local Ray); see `jaxcredit.train.backends`. Same results.
    """
    check_backend(backend)
    cells = spec.cell_configs(num_seeds=num_seeds)  # every cell's config is valid before any work
    check_writable_dir(out)
    with RunLock(out, f"sweep {spec.name}"):  # each cell's run also locks its own directory
        return _run_locked_sweep(spec, cells, out, resume=resume, num_seeds=num_seeds, progress=progress,
                                 backend=backend, ray_address=ray_address)


def _run_locked_sweep(spec: SweepSpec, cells: dict, out: str, *, resume: bool, num_seeds: int | None,
                      progress: bool, backend: str, ray_address: str | None) -> dict:
    sweep_path = os.path.join(out, "sweep_spec.json")
    spec_dict = json.loads(json.dumps({**dataclasses.asdict(spec), "num_seeds": num_seeds}))
    if os.path.exists(sweep_path) and not resume:
        raise ValueError(f"{out} already holds a sweep; pass --resume to continue it or choose another --out")
    if resume and os.path.exists(sweep_path) and read_json(sweep_path) != spec_dict:
        raise ValueError(f"cannot resume {out}: it holds a different sweep ({read_json(sweep_path).get('name')})")
    remove_leftovers(out)
    write_json_atomic(sweep_path, spec_dict)
    jobs = []
    for (regime, arm), config in cells.items():
        cell_dir = os.path.join(out, regime, arm)
        cell_resume = resume and os.path.isdir(cell_dir)  # a cell stopped at any point, even before its config
        jobs.append(Cell((regime, arm), config, cell_dir, cell_resume, f"{regime}/{arm}"))
    summaries = run_cells(jobs, backend=backend, ray_address=ray_address, progress=progress)
    table = sweep_table(summaries, reference_arm=spec.reference_arm)
    write_json_atomic(os.path.join(out, "sweep.json"), table)
    write_text_atomic(os.path.join(out, "table.md"), format_table(table))
    return table


def sweep_table(summaries: dict, *, reference_arm: str) -> dict:
    """Per regime and arm: mean final/average success over seeds, mean total env steps, and the
    paired difference to `reference_arm` (bootstrap 95% interval, seed wins)."""
    table = {}
    for (regime, arm), summary in summaries.items():
        seeds = summary["seeds"]
        entry = {
            "final_success": float(np.mean([s["final_success"] for s in seeds])),
            "average_success": float(np.mean([s["average_success"] for s in seeds])),
            "total_env_steps": float(np.mean([s["total_env_steps"] for s in seeds])),
            "main_episodes": float(np.mean([s["main_episodes"] for s in seeds])),
            "num_seeds": len(seeds),
        }
        reference = summaries.get((regime, reference_arm))
        if reference is not None and arm != reference_arm:
            for measure in ("final_success", "average_success"):
                ours = np.array([s[measure] for s in seeds])
                theirs = np.array([s[measure] for s in reference["seeds"]])
                entry[f"{measure}_vs_{reference_arm}"] = paired_bootstrap(ours, theirs)
        table.setdefault(regime, {})[arm] = entry
    return table


def format_table(table: dict) -> str:
    """Markdown: one table per regime."""
    lines = []
    for regime, arms in table.items():
        meaning = "equal main attempts" if regime == "attempts" else "equal total env steps"
        lines += [f"### Regime: {regime} ({meaning})",
                  "", "| arm | final success | average success | Δ final vs ref [95% CI] (wins) "
                  "| Δ average vs ref [95% CI] (wins) | main episodes | total env steps |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for arm, e in arms.items():
            deltas = []
            for measure in ("final_success", "average_success"):
                d = next((v for k, v in e.items() if k.startswith(f"{measure}_vs_")), None)
                deltas.append("reference" if d is None else
                              f"{d['mean_diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] "
                              f"({d['arm_wins']}/{d['num_seeds']})")
            lines.append(f"| {arm} | {e['final_success']:.3f} | {e['average_success']:.3f} | {deltas[0]} | "
                         f"{deltas[1]} | {e['main_episodes']:.0f} | {e['total_env_steps']:.0f} |")
        lines.append("")
    return "\n".join(lines)
