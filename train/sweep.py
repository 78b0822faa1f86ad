"""Budget-matched sweeps: every arm under three budget regimes, paired by seed, and their table.

A sweep is a base configuration, named arms (credit settings) and its regimes:
- `attempts`: equal main attempts (`budget_counter="main_episodes"`); label work is extra;
- `matched`: for each label arm X (mc, exact, solver, critic), the arms without label work
  (outcome, anchor) get exactly X's total env steps at the end of X's `attempts` run, seed by
  seed: additional main attempts equal to X's label work (`jaxcredit.train.matched`);
- `fixed-steps`: a fixed cap on total env steps (`budget_counter="total_env_steps"`), labels
  included; arms without label work get more main attempts until their total reaches it.
Each cell is a run directory `OUT/<regime>/<arm>` (matched: `OUT/matched/<arm>/to-<label arm>`).
Cells share seeds, so arms are paired (same initial parameters, same problem stream). The sweep
runs in two phases, `attempts` and `fixed-steps` first, then `matched` (it needs the attempts
totals), on either backend. The table (`jaxcredit.comparison`, shared with the analysis
report) gives per regime and row the final and average greedy success of both sides, the paired
difference with a paired Student-t interval over seeds, p-values (Holm-adjusted per reference)
and what budget each side got.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from jaxcredit.comparison import (
    arm_credits,
    arm_environments,
    comparison_pairs,
    finding_sentences,
    format_paired_table,
    label_arms,
    label_free_arms,
    paired_table,
)
from jaxcredit.output_dirs import check_kind, write_kind
from jaxcredit.rundir_io import (
    REGIME_BUDGET_COUNTERS,
    REGIME_MEANINGS,
    REGIMES,
    RENAMED_REGIMES,
    RunLock,
    check_writable_dir,
    matched_cell,
    remove_leftovers,
    write_text_atomic,
)
from jaxcredit.tracking import check_trackers
from jaxcredit.train.backends import Cell, backend_session, check_backend, run_cells
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.rundir import read_json, write_json_atomic

# Arms of the named presets renamed since (old -> new): a sweep directory written before keeps its
# old names (reports and comparisons read them from its sweep_spec.json); resuming it is refused
# with a line saying what changed.
RENAMED_ARMS = {"exact-uniform": "solver-uniform"}


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A sweep: `base` config fields, `arms` (name -> config fields), `budgets` (`attempts`: main
    attempts per run; `fixed-steps`: total env steps per run) and the `regimes` to run, in order
    (`matched` takes its budgets from the `attempts` runs)."""

    name: str
    description: str
    base: dict
    arms: dict
    budgets: dict
    reference_arm: str = "outcome"
    cpu_minutes: str = ""
    regimes: tuple = REGIMES

    def check(self) -> None:
        """Raise `ValueError` naming what is wrong with the regimes or budgets."""
        for regime in self.regimes:
            if regime in RENAMED_REGIMES:
                raise ValueError(f"budget regime {regime!r} is now called {RENAMED_REGIMES[regime]!r} "
                                 f"({REGIME_MEANINGS[RENAMED_REGIMES[regime]]})")
            if regime not in REGIMES:
                raise ValueError(f"unknown budget regime {regime!r}; choices: {', '.join(REGIMES)}")
        for regime in self.budgets:
            if regime not in REGIME_BUDGET_COUNTERS:
                raise ValueError(f"budgets: unknown regime {regime!r}; regimes with a budget: "
                                 f"{', '.join(REGIME_BUDGET_COUNTERS)} ('matched' takes the attempts runs' totals)")
        missing = [r for r in self.regimes if r in REGIME_BUDGET_COUNTERS and r not in self.budgets]
        if missing:
            raise ValueError(f"budgets: regime(s) {missing} need a budget")
        if "matched" in self.regimes and "attempts" not in self.regimes:
            raise ValueError("regime 'matched' needs regime 'attempts' (it matches the label arms' attempts runs)")

    def cell_configs(self, *, num_seeds: int | None = None) -> dict:
        """`{(regime, arm): TrainConfig}` for every cell with a budget of its own (`attempts`,
        `fixed-steps`; `matched_cells` gives the rest); raises `ValueError` on a bad field."""
        self.check()
        cells = {}
        for regime in self.regimes:
            if regime not in REGIME_BUDGET_COUNTERS:
                continue
            for arm in self.arms:
                cells[(regime, arm)] = self.arm_config(arm, num_seeds=num_seeds, budget=self.budgets[regime],
                                                       budget_counter=REGIME_BUDGET_COUNTERS[regime])
        return cells

    def arm_config(self, arm: str, *, num_seeds: int | None = None, **fields):
        """The `TrainConfig` of `arm`: base fields, the arm's fields, then `fields`."""
        values = {**self.base, **self.arms[arm], **fields}
        if num_seeds is not None:
            values["num_seeds"] = num_seeds
        return config_from_dict(values)

    @property
    def credits(self) -> dict:
        return arm_credits(self.base, self.arms)


def matched_cells(spec: SweepSpec, summaries: dict, out: str, *, resume: bool, num_seeds: int | None,
                  log: tuple = ()) -> list:
    """The matched regime's cells, one per label-free arm, targeting every label arm's per-seed
    total env steps from its `attempts` summary (in `summaries`)."""
    credits = spec.credits
    targets = {arm: [int(s["total_env_steps"]) for s in summaries[("attempts", arm)]["seeds"]]
               for arm in label_arms(credits)}
    if not targets:
        return []
    cells = []
    for arm in label_free_arms(credits, spec.reference_arm):
        config = spec.arm_config(arm, num_seeds=num_seeds, budget_counter="total_env_steps",
                                 budget=spec.budgets["attempts"])
        cell_dir = os.path.join(out, "matched", arm)
        cell_resume = resume and os.path.exists(os.path.join(cell_dir, "config.json"))
        cells.append(Cell(("matched", arm), config, cell_dir, cell_resume, f"matched/{arm}", targets, log))
    return cells


def run_sweep(spec: SweepSpec, out: str, *, resume: bool = False, num_seeds: int | None = None,
              progress: bool = True, backend: str = "local", ray_address: str | None = None, log=()) -> dict:
    """Run every cell of `spec` into `out` (finished cells are skipped on resume); returns the
    table dict (also written to `out/sweep.json` and `out/table.md`).

    `backend`: `"local"` runs the cells one after another; `"ray"` runs each as a Ray task (on the
    cluster at `ray_address`, or a local Ray); see `jaxcredit.train.backends`. Same results. Either
    way the `matched` cells start once the `attempts` and `fixed-steps` cells are done. `log`:
    tracking backends (`jaxcredit.tracking`), each cell logging into its own run directory.
    """
    check_backend(backend)
    log = check_trackers(log)
    cells = spec.cell_configs(num_seeds=num_seeds)  # every cell's config is valid before any work
    check_writable_dir(out)
    check_kind(out, "sweep", "sweep")
    with RunLock(out, f"sweep {spec.name}"):  # each cell's run also locks its own directory
        return _run_locked_sweep(spec, cells, out, resume=resume, num_seeds=num_seeds, progress=progress,
                                 backend=backend, ray_address=ray_address, log=log)


DOC_FIELDS = ("cpu_minutes", "description")  # words about a sweep, not its design: resuming may update them


def _design(spec_dict: dict) -> dict:
    """A `sweep_spec.json` dict without its `DOC_FIELDS`: what must match for `--resume`."""
    return {k: v for k, v in spec_dict.items() if k not in DOC_FIELDS}


def _run_locked_sweep(spec: SweepSpec, cells: dict, out: str, *, resume: bool, num_seeds: int | None,
                      progress: bool, backend: str, ray_address: str | None, log: tuple = ()) -> dict:
    sweep_path = os.path.join(out, "sweep_spec.json")
    # JSON files are written with sorted keys: the arms' order (the table's row order) is kept apart
    spec_dict = json.loads(json.dumps({**dataclasses.asdict(spec), "num_seeds": num_seeds,
                                       "arm_order": list(spec.arms)}))
    if os.path.exists(sweep_path) and not resume:
        raise ValueError(f"{out} already holds a sweep; pass --resume to continue it or choose another --out")
    if resume and os.path.exists(sweep_path) and _design(read_json(sweep_path)) != _design(spec_dict):
        old = read_json(sweep_path)
        renamed = {a: RENAMED_ARMS[a] for a in old.get("arm_order", []) if RENAMED_ARMS.get(a) in spec.arms}
        if renamed:
            raise ValueError(f"cannot resume {out}: it was written before these arms were renamed: "
                             f"{', '.join(f'{a!r} -> {b!r}' for a, b in renamed.items())}; report and compare "
                             "still read it under the old names; run the sweep again in a new --out")
        differ = sorted(k for k in set(_design(old)) | set(_design(spec_dict)) if old.get(k) != spec_dict.get(k))
        raise ValueError(f"cannot resume {out}: it holds a different sweep ({old.get('name')}; differing: "
                         f"{', '.join(differ)})")
    remove_leftovers(out)
    write_kind(out, "sweep")  # the kind first, once the sweep is known to be ours to write
    write_json_atomic(sweep_path, spec_dict)
    jobs = []
    for (regime, arm), config in cells.items():
        cell_dir = os.path.join(out, regime, arm)
        cell_resume = resume and os.path.isdir(cell_dir)  # a cell stopped at any point, even before its config
        jobs.append(Cell((regime, arm), config, cell_dir, cell_resume, f"{regime}/{arm}", log=log))
    with backend_session(backend, ray_address=ray_address):  # one Ray session for both phases
        summaries = run_cells(jobs, backend=backend, ray_address=ray_address, progress=progress)
        if "matched" in spec.regimes:  # phase 2: needs the attempts runs' totals
            matched = matched_cells(spec, summaries, out, resume=resume, num_seeds=num_seeds, log=log)
            results = run_cells(matched, backend=backend, ray_address=ray_address, progress=progress)
            for (_, arm), views in results.items():
                for label_arm, summary in views.items():
                    summaries[("matched", matched_cell(arm, label_arm))] = summary
    table = sweep_table(summaries, spec)
    write_json_atomic(os.path.join(out, "sweep.json"), table)
    write_text_atomic(os.path.join(out, "table.md"), format_table(table))
    return table


def summary_measures(summary: dict, *, family: str | None = None) -> dict:
    """A run summary's per-seed numbers in the form `jaxcredit.comparison.paired_table` takes
    (with `family`: that evaluation family's final and average success, from `by_family`)."""
    seeds = sorted(summary["seeds"], key=lambda s: s["seed_index"])
    out = {"seeds": [s["seed_index"] for s in seeds]}
    for key in ("final_success", "average_success", "main_episodes", "total_env_steps"):
        values = [s["by_family"][family][key] if family and key.endswith("_success") else s[key] for s in seeds]
        out[key] = np.asarray(values, np.float64)
    return out


def sweep_table(summaries: dict, spec: SweepSpec) -> dict:
    """The comparison table (`jaxcredit.comparison.paired_table`) of the cells in `summaries`
    (`{(regime, cell): summary}`); with runs evaluated on several families, also `families`:
    `{family: paired_table}` on each family's greedy success."""
    measures = {cell: summary_measures(summary) for cell, summary in summaries.items()}
    pairs = comparison_pairs(spec.regimes, spec.credits, spec.reference_arm,
                             environments=arm_environments(spec.base, spec.arms))
    table = paired_table(pairs, measures, budgets=spec.budgets, reference_arm=spec.reference_arm)
    families = list(dict.fromkeys(family for summary in summaries.values()
                                  for family in summary["seeds"][0].get("by_family", {})))
    if families:
        table["families"] = {
            family: paired_table(pairs, {cell: summary_measures(summary, family=family)
                                         for cell, summary in summaries.items()
                                         if family in summary["seeds"][0].get("by_family", {})},
                                 budgets=spec.budgets, reference_arm=spec.reference_arm)
            for family in families}
    return table


def format_table(table: dict) -> str:
    """Markdown: one table per regime (`jaxcredit.comparison.format_paired_table`), then one plain
    sentence per comparison (`jaxcredit.comparison.finding_sentences`), then, for runs evaluated on
    several families, the same tables per family."""
    sentences = finding_sentences(table)
    findings = ["", "Findings (final greedy success, arm − reference, 95% paired intervals; \"resolved\" means the "
                "interval excludes 0):", ""] + [f"- {s[0].upper()}{s[1:]}." for s in sentences] if sentences else []
    text = format_paired_table(table) + "\n".join(findings) + ("\n" if findings else "")
    families = table.get("families", {})
    if families:
        text += (f"\n## Per evaluation family\n\nThe tables above compare the mean over the {len(families)} "
                 f"evaluation families ({', '.join(families)}); here each family on its own.\n")
        for family, family_table in families.items():
            text += f"\n### Family: {family}\n\n" + format_paired_table(family_table, heading="####")
    return text
