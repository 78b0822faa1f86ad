"""Budget-matched sweeps: every arm under three budget regimes, paired by seed, and their table.

A sweep is a base configuration, named arms (credit settings) and its regimes: `attempts` (equal
main attempts; label work is extra), `matched` (each arm without label work given exactly a label
arm's total env steps, or policy evaluations with `match_on`, seed by seed:
`jaxcredit.train.matched`) and `fixed-steps` (a fixed cap on total env steps, labels included).
Each cell is a run directory `OUT/<regime>/<arm>` (matched: `OUT/matched/<arm>/to-<label arm>`).
Cells share seeds, so arms are paired (same initial parameters, same problem stream). The sweep
runs in phases: with a `tune` grid, every arm's tuning runs first (`jaxcredit.train.tuning`); then
`attempts` and `fixed-steps`; then `matched`, on either backend. The table (`jaxcredit.comparison`)
gives per regime and row both sides' greedy success, the paired difference with its interval and
p-values, and each side's budget. See docs/training.md#training-and-budget-matched-sweeps.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import os

import numpy as np

import jaxcredit
from jaxcredit.arm_registry import dotted_options
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
from jaxcredit.overrides import apply_overrides
from jaxcredit.plugins import load_plugins
from jaxcredit.rundir_io import (
    CLAIM_FILE,
    MATCH_CURRENCIES,
    MATCHED_COUNTERS,
    MATCHED_REGIMES,
    REGIME_BUDGET_COUNTERS,
    REGIME_MEANINGS,
    REGIMES,
    RENAMED_REGIMES,
    RunLock,
    check_writable_dir,
    matched_cell,
    price_target,
    reading_measures,
    remove_leftovers,
    seed_measures,
    table_regimes,
    write_text_atomic,
)
from jaxcredit.tracking import check_trackers
from jaxcredit.train.backends import Cell, backend_session, check_backend, population_cells, run_cells
from jaxcredit.train.config import config_from_dict
from jaxcredit.train.rundir import read_json, read_jsonl, write_json_atomic
from jaxcredit.train.tuning import (
    RUN_FIELDS,
    check_tune,
    point_name,
    points_match,
    tune_points,
    tune_seeds,
    tuning_plan,
)

# Old arm names of the named presets (old -> new): a sweep directory written under an old name
# keeps it (reports and comparisons read the names from its sweep_spec.json); resuming it is
# refused with a line naming the new one.
RENAMED_ARMS = {"exact-uniform": "solver-uniform"}


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A sweep: `base` config fields, `arms` (name -> config fields), `budgets` (`attempts`: main
    attempts per run; `fixed-steps`: total env steps per run) and the `regimes` to run, in order
    (`matched` takes its budgets from the `attempts` runs). `match_on`: the currencies the matched
    regime matches in (`env_steps`, `policy_evals`, or both). `tune`: a grid every arm is tuned on
    before the study (`jaxcredit.train.tuning`; None: no tuning, every arm as written). `tuned`: a
    committed `tuning.json` whose chosen settings the arms run at instead ("": as written)."""

    name: str
    description: str
    base: dict
    arms: dict
    budgets: dict
    reference_arm: str = "outcome"
    cpu_minutes: str = ""
    regimes: tuple = REGIMES
    match_on: tuple = ("env_steps",)
    tune: dict | None = None
    regime_fields: dict | None = None
    readings: dict | None = None
    claim: str = ""
    nonparametric: bool = False
    tuned: str = ""
    prices: tuple | None = None

    def check(self) -> None:
        """Raise `ValueError` naming what is wrong with the regimes, budgets, `match_on`, `tune`,
        `regime_fields` or `readings`."""
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
        match_on = list(self.match_on) if isinstance(self.match_on, (list, tuple)) else None
        if not match_on or len(set(match_on)) != len(match_on) or not set(match_on) <= set(MATCH_CURRENCIES):
            raise ValueError(f"match_on must list one or both of {', '.join(MATCH_CURRENCIES)}, once each; "
                             f"got {self.match_on!r}")
        for regime, fields in (self.regime_fields or {}).items():
            if regime not in self.regimes or not isinstance(fields, dict):
                raise ValueError(f"regime_fields: {regime!r} must be one of the sweep's regimes "
                                 f"({', '.join(self.regimes)}) with an object of config fields")
        matched_seeds = (self.regime_fields or {}).get("matched", {}).get("num_seeds")
        if matched_seeds is not None and matched_seeds > self.regime_seeds("attempts"):
            raise ValueError(f"regime_fields: matched runs {matched_seeds} seeds, more than the attempts runs it "
                             f"matches ({self.regime_seeds('attempts')})")
        for regime, budgets in (self.readings or {}).items():
            if regime != "attempts" or not isinstance(budgets, (list, tuple)) or not budgets or any(
                    isinstance(b, bool) or not isinstance(b, int) or not 0 < b <= self.budgets.get(regime, 0)
                    for b in budgets):
                raise ValueError(f"readings: {regime!r} must be 'attempts' with a list of budgets in "
                                 f"(0, {self.budgets.get('attempts')}], got {budgets!r}")
        if self.prices is not None:
            prices = list(self.prices) if isinstance(self.prices, (list, tuple)) else None
            if (not prices or "matched" not in self.regimes or any(
                    isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1 for p in prices)
                    or sorted(set(prices)) != prices):
                raise ValueError(f"prices must be increasing label prices in (0, 1) (price 1 is the matched "
                                 f"regime's own target) and need regime 'matched'; got {self.prices!r}")
        if self.tuned and self.tune is not None:
            raise ValueError("tuned (a recorded tuning's choices) and tune (a tuning phase) exclude each other")
        if self.tune is not None:
            check_tune(self.tune, self.arms)
            if self.tune.get("budget") is None and "attempts" not in self.budgets:
                raise ValueError("tune needs a budget: tune.budget, or an 'attempts' budget to tune at")

    def regime_seeds(self, regime: str) -> int:
        """Paired seeds of `regime`'s cells: its `regime_fields` `num_seeds`, else the base's."""
        return int((self.regime_fields or {}).get(regime, {}).get("num_seeds", self.base.get("num_seeds", 1)))

    @property
    def tune_budget(self) -> int:
        """Main attempts per tuning run: `tune.budget`, else the `attempts` budget."""
        return int(self.tune.get("budget") or self.budgets["attempts"])

    def tuning_config(self, arm: str, overrides: dict, *, seed: int | None = None, num_seeds: int | None = None):
        """The `TrainConfig` of `arm`'s tuning run at grid point `overrides`: its tuning seeds (or
        `num_seeds` from `seed`), at the tuning budget in main attempts."""
        all_seeds, first = tune_seeds(self.tune)
        num_seeds, seed = num_seeds or all_seeds, first if seed is None else seed
        return self.arm_config(arm, overrides=overrides, num_seeds=num_seeds, seed=seed, budget=self.tune_budget,
                               budget_counter="main_episodes")

    def tuning_configs(self) -> dict:
        """`{(arm, point name): TrainConfig}` of every tuning run of the grid as written (`{}` without
        `tune`; extensions add points once the grid's runs are scored: `tuning_plan`); raises
        `ValueError` on a bad field at any grid point."""
        self.check()
        if self.tune is None:
            return {}
        return {(arm, point_name(k)): self.tuning_config(arm, overrides)
                for arm in self.arms for k, overrides in enumerate(tune_points(self.tune, arm))}

    def tuning_plan(self, out: str):
        """`jaxcredit.train.tuning.tuning_plan` for this sweep's tuning runs under `out`."""
        num_evals = {arm: self.tuning_config(arm, tune_points(self.tune, arm)[0]).num_evals for arm in self.arms}
        return tuning_plan(self.tune, self.arms, out, num_evals=num_evals, budget=self.tune_budget)

    def recorded_choice(self) -> dict | None:
        """`{arm: overrides}` from the `tuned` tuning record (None without one); raises `ValueError`
        when the file is missing or does not choose a setting for every arm."""
        if not self.tuned:
            return None
        path = self.tuned
        if not os.path.isabs(path) and not os.path.isfile(path):  # a committed record: from the repository root
            path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(jaxcredit.__file__))), path)
        if not os.path.isfile(path):
            raise ValueError(f"sweep {self.name}: its tuning record {self.tuned} does not exist (run from the "
                             "repository root)")
        arms = read_json(path).get("arms", {})
        missing = [arm for arm in self.arms if "overrides" not in arms.get(arm, {})]
        if missing:
            raise ValueError(f"sweep {self.name}: its tuning record {self.tuned} chooses no setting for {missing}")
        return {arm: arms[arm]["overrides"] for arm in self.arms}

    def cell_configs(self, *, num_seeds: int | None = None, chosen: dict | None = None) -> dict:
        """`{(regime, arm): TrainConfig}` for every cell with a budget of its own (`attempts`,
        `fixed-steps`; `matched_cells` gives the rest), each arm at its `chosen` overrides
        (`{arm: overrides}`, from tuning; none: the `tuned` record's, else as written); raises
        `ValueError` on a bad field."""
        self.check()
        chosen = self.recorded_choice() if chosen is None else chosen
        cells = {}
        for regime in self.regimes:
            if regime not in REGIME_BUDGET_COUNTERS:
                continue
            for arm in self.arms:
                fields = {**(self.regime_fields or {}).get(regime, {}), "budget": self.budgets[regime],
                          "budget_counter": REGIME_BUDGET_COUNTERS[regime]}
                if num_seeds is not None:
                    fields["num_seeds"] = num_seeds
                cells[(regime, arm)] = self.arm_config(arm, overrides=(chosen or {}).get(arm), **fields)
        return cells

    def arm_config(self, arm: str, *, num_seeds: int | None = None, overrides: dict | None = None, **fields):
        """The `TrainConfig` of `arm`: base fields, the arm's fields, its `overrides` (dotted names,
        `jaxcredit.overrides.apply_overrides`), then `fields` (a regime's `regime_fields` among them);
        `num_seeds`, where given, last."""
        values = {**apply_overrides({**self.base, **self.arms[arm]}, overrides or {}), **fields}
        if num_seeds is not None:
            values["num_seeds"] = num_seeds
        return config_from_dict(values)

    @property
    def credits(self) -> dict:
        return arm_credits(self.base, self.arms)


def _seed_totals(summary: dict, counter: str, cell_dir: str) -> list:
    """Per seed, a finished run's total in `counter` (its summary's; summaries written before
    `total_policy_evals` was kept: the last metrics rows')."""
    seeds = sorted(summary["seeds"], key=lambda s: s["seed_index"])
    if all(counter in s for s in seeds):
        return [int(s[counter]) for s in seeds]
    return [int(t) for t in seed_measures(read_jsonl(os.path.join(cell_dir, "metrics.jsonl")))[counter]]


def _priced_totals(totals: list, cell_dir: str, currency: str, prices) -> dict:
    """`{price: per seed main + price * label}` in `currency` of the finished run at `cell_dir` whose
    totals are `totals` (main: its last metrics rows' `main_<currency>`; label: the rest); its
    metrics are read once for every price."""
    last: dict = {}
    for row in read_jsonl(os.path.join(cell_dir, "metrics.jsonl")):
        if row["eval_index"] >= last.get(row["seed_index"], {}).get("eval_index", -1):
            last[row["seed_index"]] = row
    mains = [float(last[seed][f"main_{currency}"]) for seed in sorted(last)]
    return {price: [int(round(m + price * (t - m))) for m, t in zip(mains, totals)] for price in prices}


def matched_cells(spec: SweepSpec, summaries: dict, out: str, *, resume: bool, num_seeds: int | None,
                  log: tuple = (), chosen: dict | None = None) -> list:
    """The matched regime's cells: per currency of `spec.match_on`, one per label-free arm (at its
    `chosen` overrides), targeting every label arm's per-seed total in that currency from its
    `attempts` summary (in `summaries`), and with `spec.prices` its total with the label work at
    each price (`price_target`)."""
    credits = spec.credits
    cells = []
    for currency in spec.match_on:
        regime = MATCHED_REGIMES[currency]
        counter = MATCHED_COUNTERS[regime]
        fields = {k: v for k, v in (spec.regime_fields or {}).get("matched", {}).items() if k != "num_seeds"}
        seeds = num_seeds or spec.regime_seeds("matched")
        targets = {arm: _seed_totals(summaries[("attempts", arm)], counter, os.path.join(out, "attempts", arm))[:seeds]
                   for arm in label_arms(credits)}  # the matched runs' seeds are the first of the attempts runs'
        if not targets:
            return []
        for arm in list(targets) if spec.prices else ():
            priced = _priced_totals(targets[arm], os.path.join(out, "attempts", arm), currency, spec.prices)
            targets.update({price_target(arm, price): totals for price, totals in priced.items()})
        for arm in label_free_arms(credits, spec.reference_arm):
            config = spec.arm_config(arm, num_seeds=seeds, budget_counter=counter, budget=spec.budgets["attempts"],
                                     overrides=(chosen or {}).get(arm), **fields)
            cell_dir = os.path.join(out, regime, arm)
            cell_resume = resume and os.path.exists(os.path.join(cell_dir, "config.json"))
            cells.append(Cell((regime, arm), config, cell_dir, cell_resume, f"{regime}/{arm}", targets, log,
                              match_on=currency))
    return cells


def run_sweep(spec: SweepSpec, out: str, *, resume: bool = False, num_seeds: int | None = None,
              progress: bool = True, backend: str = "local", ray_address: str | None = None, log=(),
              plugins=()) -> dict:
    """Run every cell of `spec` into `out` (finished cells are skipped on resume); returns the
    table dict (also written to `out/sweep.json` and `out/table.md`).

    `backend`: `"local"` runs the cells one after another; `"ray"` runs each as a Ray task (on the
    cluster at `ray_address`, or a local Ray); see `jaxcredit.train.backends`. Same results. Either
    way the `matched` cells start once the `attempts` and `fixed-steps` cells are done. `log`:
    tracking backends (`jaxcredit.tracking`), each cell logging into its own run directory.
    `plugins`: files or modules registering arms (`jaxcredit.plugins`), imported first and recorded
    in `sweep_spec.json`; resuming without them imports the ones the sweep recorded.
    """
    check_backend(backend)
    log = check_trackers(log)
    recorded = os.path.join(out, "sweep_spec.json")
    if resume and not plugins and os.path.isfile(recorded):
        plugins = read_json(recorded).get("plugins", ())
    plugins = load_plugins(plugins)
    cells = spec.cell_configs(num_seeds=num_seeds)  # every cell's config is valid before any work
    spec.tuning_configs()  # and every tuning run's
    check_writable_dir(out)
    check_kind(out, "sweep", "sweep")
    with RunLock(out, f"sweep {spec.name}"):  # each cell's run also locks its own directory
        return _run_locked_sweep(spec, cells, out, resume=resume, num_seeds=num_seeds, progress=progress,
                                 backend=backend, ray_address=ray_address, log=log, plugins=plugins)


DOC_FIELDS = ("cpu_minutes", "description")  # words about a sweep, not its design: resuming may update them
# left out of sweep_spec.json at these values, so sweeps written before them read and resume as they were
_OPTIONAL_FIELDS = {"match_on": ["env_steps"], "tune": None, "regime_fields": None, "readings": None, "claim": "",
                    "nonparametric": False, "tuned": "", "prices": None}


TUNE_ORDER = "tune_order"  # the tuning axes' order where it is not sorted: it numbers the grid points


def _tune_order(tune: dict) -> dict:
    """`{"grid": [axis, ...], "arm_grid": {arm: [axis, ...]}}`: the order of `tune`'s axes wherever it
    is not sorted (empty where all are)."""
    order = {"grid": list(tune["grid"])} if list(tune["grid"]) != sorted(tune["grid"]) else {}
    arms = {arm: list(axes) for arm, axes in tune.get("arm_grid", {}).items() if list(axes) != sorted(axes)}
    return {**order, **({"arm_grid": arms} if arms else {})}


def spec_record(spec: SweepSpec, num_seeds: int | None) -> dict:
    """The `sweep_spec.json` dict of `spec`: its fields (`match_on` and `tune` only where they are
    not the defaults, so sweeps written before them read and resume as they were), `num_seeds`, the
    arms' order and, where it is not sorted, the tuning axes' order (`tune_order`): JSON files are
    written with sorted keys, so the table's row order and the grid points' numbering are kept apart."""
    record = json.loads(json.dumps({**dataclasses.asdict(spec), "num_seeds": num_seeds, "arm_order": list(spec.arms)}))
    order = _tune_order(spec.tune) if spec.tune else {}
    return {**{k: v for k, v in record.items() if k not in _OPTIONAL_FIELDS or v != _OPTIONAL_FIELDS[k]},
            **({TUNE_ORDER: order} if order else {})}


def _in_order(tune: dict, grid=None, arm_grid=None) -> dict:
    """`tune` with its grid's axes in the order `grid` and each arm's own in `arm_grid[arm]` (None:
    as they are)."""
    def ordered(axes, order):
        return {name: axes[name] for name in order} if order else dict(axes)
    out = {**tune, "grid": ordered(tune["grid"], grid)}
    if "arm_grid" in tune:
        out["arm_grid"] = {arm: ordered(axes, (arm_grid or {}).get(arm)) for arm, axes in tune["arm_grid"].items()}
    return out


def _infer_tune_order(tune: dict, arms, out: str) -> dict:
    """`tune` with its axes in the order under which the tuning runs under `out/tune/` were trained at
    their points' values (`points_match`), for a record written before `tune_order` was kept: the
    sorted order first, then the other orders of the grid's axes and of each arm's own."""
    for grid in itertools.permutations(sorted(tune["grid"])):
        arm_grid = {}
        for arm in arms:
            own = sorted(tune.get("arm_grid", {}).get(arm, {}))
            arm_grid[arm] = next((order for order in itertools.permutations(own)
                                  if points_match(_in_order(tune, grid, {arm: order}), arm, out)), None)
            if arm_grid[arm] is None:
                break
        else:
            return _in_order(tune, grid, arm_grid)
    return tune


def spec_from_record(record: dict, out: str | None = None) -> SweepSpec:
    """The `SweepSpec` of a `sweep_spec.json` dict: its arms in the recorded order and its tuning axes
    in `tune_order`'s; a record without one (written before it was kept) takes the order the tuning
    runs under `out` were trained in, where `out` is given (else the sorted order)."""
    values = {k: v for k, v in record.items() if k in {f.name for f in dataclasses.fields(SweepSpec)}}
    if "arm_order" in record:
        values["arms"] = {arm: record["arms"][arm] for arm in record["arm_order"]}
    for key in ("regimes", "match_on", "prices"):
        if key in values:
            values[key] = tuple(values[key])
    tune = values.get("tune")
    if tune and record.get(TUNE_ORDER) is not None:
        values["tune"] = _in_order(tune, record[TUNE_ORDER].get("grid"), record[TUNE_ORDER].get("arm_grid"))
    elif tune and out is not None and os.path.isdir(os.path.join(out, "tune")):
        values["tune"] = _infer_tune_order(tune, values.get("arms", {}), out)
    return SweepSpec(**values)


def _design(spec_dict: dict) -> dict:
    """A `sweep_spec.json` dict without its `DOC_FIELDS` and the tuning's `RUN_FIELDS` (how its
    runs are run: a population or not): what must match for `--resume`; the arms' options in one
    spelling (`credit_options.NAME`), so a sweep written with older flat field names resumes under
    the current ones."""
    design = {k: v for k, v in spec_dict.items() if k not in DOC_FIELDS + (TUNE_ORDER,)}  # a misnumbered point
    # is refused by its run's config (`tuning.points_match`); a sweep recorded before the order was kept resumes
    if isinstance(design.get("tune"), dict):
        design["tune"] = {k: v for k, v in design["tune"].items() if k not in RUN_FIELDS}
    base, arms = design.get("base", {}), design.get("arms", {})
    try:
        design["arms"] = {arm: dotted_options(fields, {**base, **fields}.get("credit", "outcome"))
                          for arm, fields in arms.items()}
    except ValueError:  # an arm no plugin registers: compared as written
        pass
    return design


def run_tuning(spec: SweepSpec, out: str, *, backend: str = "local", ray_address: str | None = None,
               progress: bool = True, log: tuple = (), plugins: tuple = ()) -> dict:
    """Run the tuning phase of `spec` into `out/tune/` until its plan (`SweepSpec.tuning_plan`) needs
    no more runs; returns the `tuning.json` record. Each pass runs the plan's pending runs through
    the backend, each to the evaluation its rung ends at (resumed where its directory exists), so
    an interrupted phase resumes from whatever its runs hold. With `tune.population`, an arm's
    pending runs that share one program train as one population (`backends.population_cells`),
    each in its own directory."""
    previous = None
    while True:
        plan = spec.tuning_plan(out)
        if not plan.pending:
            return plan.record
        if plan.pending == previous:
            raise RuntimeError(f"tuning makes no progress: tune/{plan.pending[0].arm}/{plan.pending[0].point} "
                               f"did not reach evaluation {plan.pending[0].evals}")
        previous = plan.pending
        cells = []
        for run in plan.pending:
            config = spec.tuning_config(run.arm, run.overrides, seed=run.seed, num_seeds=run.num_seeds)
            path = os.path.join(out, "tune", run.arm, run.run)
            cells.append(Cell(("tune", run.arm, run.run), config, path, os.path.isdir(path),
                              f"tune/{run.arm}/{run.run}", log=log,
                              stop_after_evals=None if run.evals >= config.num_evals else run.evals))
        if spec.tune.get("population", False):
            cells = population_cells(cells)
        run_cells(cells, backend=backend, ray_address=ray_address, progress=progress, plugins=plugins)


def _run_locked_sweep(spec: SweepSpec, cells: dict, out: str, *, resume: bool, num_seeds: int | None,
                      progress: bool, backend: str, ray_address: str | None, log: tuple = (),
                      plugins: tuple = ()) -> dict:
    sweep_path = os.path.join(out, "sweep_spec.json")
    recorded = {"plugins": list(plugins)} if plugins else {}  # only a sweep with plugins records them
    spec_dict = {**spec_record(spec, num_seeds), **recorded}
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
    claim_path = os.path.join(out, CLAIM_FILE)
    if spec.claim and not os.path.exists(claim_path):  # stated once, before any cell: resuming keeps the date
        stated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_json_atomic(claim_path, {"claim": spec.claim, "stated": stated})
    with backend_session(backend, ray_address=ray_address):  # one Ray session for every phase
        chosen = spec.recorded_choice()
        if spec.tune is not None:  # phase 0: every arm's grid, then each arm's chosen setting
            record = run_tuning(spec, out, backend=backend, ray_address=ray_address, progress=progress, log=log,
                                plugins=plugins)
            write_json_atomic(os.path.join(out, "tuning.json"), record)
            chosen = {arm: entry["overrides"] for arm, entry in record["arms"].items()}
            cells = spec.cell_configs(num_seeds=num_seeds, chosen=chosen)
        jobs = []
        for (regime, arm), config in cells.items():
            cell_dir = os.path.join(out, regime, arm)
            cell_resume = resume and os.path.isdir(cell_dir)  # a cell stopped at any point, even before its config
            jobs.append(Cell((regime, arm), config, cell_dir, cell_resume, f"{regime}/{arm}", log=log))
        summaries = run_cells(jobs, backend=backend, ray_address=ray_address, progress=progress, plugins=plugins)
        if "matched" in spec.regimes:  # then the matched regime: needs the attempts runs' totals
            matched = matched_cells(spec, summaries, out, resume=resume, num_seeds=num_seeds, log=log, chosen=chosen)
            results = run_cells(matched, backend=backend, ray_address=ray_address, progress=progress,
                                plugins=plugins)
            for (regime, arm), views in results.items():
                for label_arm, summary in views.items():
                    summaries[(regime, matched_cell(arm, label_arm))] = summary
    table = sweep_table(summaries, spec, out)
    write_json_atomic(os.path.join(out, "sweep.json"), table)
    write_text_atomic(os.path.join(out, "table.md"), format_table(table))
    return table


def summary_measures(summary: dict, *, policy_eval_flops: int | None = None, family: str | None = None) -> dict:
    """A run summary's per-seed numbers in the form `jaxcredit.comparison.paired_table` takes (with
    `total_policy_evals` where the summary keeps it, and `policy_eval_flops` as given; with
    `family`: that evaluation family's final and average success, from `by_family`)."""
    seeds = sorted(summary["seeds"], key=lambda s: s["seed_index"])
    out = {"seeds": [s["seed_index"] for s in seeds], "policy_eval_flops": policy_eval_flops}
    keys = ("final_success", "average_success", "main_episodes", "total_env_steps", "total_policy_evals")
    for key in keys:
        if all(key in s for s in seeds):
            values = [s["by_family"][family][key] if family and key.endswith("_success") else s[key] for s in seeds]
            out[key] = np.asarray(values, np.float64)
    return out


def config_policy_eval_flops(config) -> int:
    """One policy evaluation's FLOPs (`jaxcredit.policy.policy_eval_flops`) for a `TrainConfig`."""
    from jaxcredit.envs import make
    from jaxcredit.policy import PolicyConfig, policy_eval_flops, task_sizes

    network = PolicyConfig(config.d_model, config.num_layers, config.num_heads, config.mlp_dim)
    return policy_eval_flops(network, task_sizes(make(config.env, **config.env_kwargs)))


def sweep_table(summaries: dict, spec: SweepSpec, out: str | None = None) -> dict:
    """The comparison table (`jaxcredit.comparison.paired_table`) of the cells in `summaries`
    (`{(regime, cell): summary}`); with the sweep directory `out`, each cell's policy evaluations
    are priced in FLOPs from its `config.json`; with runs evaluated on several families, also
    `families`: `{family: paired_table}` on each family's greedy success."""
    measures, flops = {}, {}
    for cell, summary in summaries.items():
        config_path = None if out is None else os.path.join(out, *cell, "config.json")
        flops[cell] = (config_policy_eval_flops(config_from_dict(read_json(config_path)))
                       if config_path and os.path.exists(config_path) else None)
        measures[cell] = summary_measures(summary, policy_eval_flops=flops[cell])
    pairs = comparison_pairs(table_regimes(spec.regimes, spec.match_on), spec.credits, spec.reference_arm,
                             environments=arm_environments(spec.base, spec.arms))
    table = paired_table(pairs, measures, budgets=spec.budgets, reference_arm=spec.reference_arm,
                         nonparametric=spec.nonparametric)
    if spec.readings and out is not None:
        table["readings"] = reading_tables(spec, out, flops)
    families = list(dict.fromkeys(family for summary in summaries.values()
                                  for family in summary["seeds"][0].get("by_family", {})))
    if families:
        table["families"] = {
            family: paired_table(pairs, {cell: summary_measures(summary, policy_eval_flops=flops[cell], family=family)
                                         for cell, summary in summaries.items()
                                         if family in summary["seeds"][0].get("by_family", {})},
                                 budgets=spec.budgets, reference_arm=spec.reference_arm)
            for family in families}
    return table


def reading_tables(spec: SweepSpec, out: str, flops: dict) -> dict:
    """`{budget: paired_table}` of the `attempts` cells read at each of `spec.readings["attempts"]`."""
    pairs = comparison_pairs(("attempts",), spec.credits, spec.reference_arm,
                             environments=arm_environments(spec.base, spec.arms))
    tables = {}
    for budget in spec.readings["attempts"]:
        measures = {}
        for arm in spec.arms:
            path = os.path.join(out, "attempts", arm, "metrics.jsonl")
            if os.path.exists(path):
                measures[("attempts", arm)] = {**reading_measures(read_jsonl(path), "main_episodes", budget),
                                               "policy_eval_flops": flops.get(("attempts", arm))}
        tables[str(budget)] = paired_table(pairs, measures, budgets={"attempts": budget},
                                           reference_arm=spec.reference_arm, nonparametric=spec.nonparametric)
    return tables


def format_table(table: dict) -> str:
    """Markdown: one table per regime (`jaxcredit.comparison.format_paired_table`), then one plain
    sentence per comparison (`jaxcredit.comparison.finding_sentences`), then, for runs evaluated on
    several families, the same tables per family."""
    sentences = finding_sentences(table)
    findings = ["", "Findings (final greedy success, arm − reference, 95% paired intervals; \"resolved\" means the "
                "interval excludes 0):", ""] + [f"- {s[0].upper()}{s[1:]}." for s in sentences] if sentences else []
    text = format_paired_table(table) + "\n".join(findings) + ("\n" if findings else "")
    for budget, reading in table.get("readings", {}).items():
        text += f"\n## Attempts read at {int(budget):,}\n\n" + format_paired_table(reading, heading="###")
    families = table.get("families", {})
    if families:
        text += (f"\n## Per evaluation family\n\nThe tables above compare the mean over the {len(families)} "
                 f"evaluation families ({', '.join(families)}); here each family on its own.\n")
        for family, family_table in families.items():
            text += f"\n### Family: {family}\n\n" + format_paired_table(family_table, heading="####")
    return text
