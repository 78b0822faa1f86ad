"""Where a sweep's cells run: one after another here (`local`), or as tasks on a Ray cluster (`ray`).

Sweep cells are independent runs: each `run_training(config, cell_dir)` writes its own run
directory, and every random draw is a function of the config's seeds, so the backend changes where
a cell runs, never what it computes. A sweep calls `run_cells` once per phase (the matched cells
need the equal-attempts totals). The Ray backend (optional extra `jaxcredit[ray]`) sends each cell
as one `ray.remote` task with its config as JSON and the sweep's plugins; every node needs
jaxcredit installed and the sweep directory on a shared filesystem. Every worker computes with the
driver's program: Ray starts from the directory holding the driver's package, and each task
refuses to run under another program (`jaxcredit.program.program_record`). A population cell
(`population_cells`) trains several cells as one program (`jaxcredit.train.population`), here or
as one task. See docs/scale-out.md#ray-for-sweeps-bigger-than-one-machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import NamedTuple

from jaxcredit.plugins import load_plugins
from jaxcredit.program import program_record
from jaxcredit.timing import timed_cell
from jaxcredit.train.config import TrainConfig, config_from_dict
from jaxcredit.train.driver import run_training
from jaxcredit.train.population import population_key, run_population
from jaxcredit.train.rundir import evaluation_progress

BACKENDS = ("local", "ray")


class Cell(NamedTuple):
    """One sweep cell to run: its key (e.g. `(regime, arm)`), config, run directory and resume flag.

    `targets` (`{label_arm: [total per seed]}`, in the currency `match_on`: `env_steps` or
    `policy_evals`) makes it a matched-regime cell, run by `jaxcredit.train.matched.run_matched`
    (its result is then `{label_arm: summary}`). `stop_after_evals`: the run pauses after that
    many evaluations (resumable; its result is then `{"stopped_after": n}`).
    """

    key: tuple
    config: TrainConfig
    out: str
    resume: bool
    label: str
    targets: dict | None = None
    log: tuple = ()  # tracking backends (`jaxcredit.tracking`)
    match_on: str = "env_steps"
    stop_after_evals: int | None = None  # a tuning run paused at a rung (`jaxcredit.train.tuning`)
    members: tuple = ()  # a population (`population_cells`): these cells trained as one program


def population_cells(cells: list[Cell]) -> list[Cell]:
    """`cells` with those that can train as one population (`jaxcredit.train.population`: equal
    configs but for `VARYING_FIELDS`, the same `stop_after_evals`, not matched) gathered into one
    cell each, whose `members` they are, placed where its first member was; a cell alone stays as
    it is. A population cell's result is `{member key: summary}`."""
    groups: dict = {}
    for cell in cells:
        key = None if cell.targets is not None else (population_key(cell.config), cell.stop_after_evals)
        groups.setdefault(key if key is not None else id(cell), []).append(cell)
    out = []
    for group in groups.values():
        first = group[0]
        out.append(first if len(group) == 1 else first._replace(
            key=("population", *first.key), label=f"{first.label} population of {len(group)}",
            members=tuple(group)))
    return out


def run_cell(cell: Cell, *, progress: bool = True):
    """Run one cell here: its summary (a matched cell: `{label_arm: summary}`). The session's wall
    time and machine are appended to the cell's `timing.json` (`jaxcredit.timing`)."""
    if cell.members:
        with contextlib.ExitStack() as stack:  # each member's timing.json records the population's session
            for member in cell.members:
                stack.enter_context(timed_cell(member.out, resumed=member.resume))
            summaries = run_population([m.config for m in cell.members], [m.out for m in cell.members],
                                       resume=[m.resume for m in cell.members], progress=progress, label=cell.label,
                                       log=cell.log, stop_after_evals=cell.stop_after_evals)
        return {member.key: summary for member, summary in zip(cell.members, summaries)}
    with timed_cell(cell.out, resumed=cell.resume):
        if cell.targets is not None:
            from jaxcredit.train.matched import run_matched

            return run_matched(cell.config, cell.out, targets=cell.targets, resume=cell.resume, progress=progress,
                               label=cell.label, log=cell.log, match_on=cell.match_on)
        return run_training(cell.config, cell.out, resume=cell.resume, progress=progress, label=cell.label,
                            log=cell.log, stop_after_evals=cell.stop_after_evals)


def check_backend(backend: str) -> None:
    """Raise `ValueError` naming an unknown backend and the choices."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown sweep backend {backend!r}; choices: {', '.join(BACKENDS)}")


def run_cells(cells: list[Cell], *, backend: str = "local", ray_address: str | None = None,
              progress: bool = True, plugins: tuple = ()) -> dict:
    """Run every cell with `backend`; returns `{cell.key: summary}` in the order of `cells`.

    `plugins` (`jaxcredit.plugins`) are imported first, here and in every Ray task.

    `ray_address` is the cluster to join (`ray.init(address=...)`, e.g. `"auto"` or
    `"ray://head:10001"`); without it an already initialised Ray is used, else a local one is
    started for the sweep (and shut down after). Raises `ValueError` for an unknown backend or a
    missing Ray installation.
    """
    check_backend(backend)
    plugins = load_plugins(plugins)
    if backend == "local":
        results = {cell.key: run_cell(cell, progress=progress) for cell in cells}
    else:
        results = _run_cells_ray(cells, address=ray_address, progress=progress, plugins=plugins)
    for cell in cells:  # a population's result is its members'
        if cell.members:
            results.update(results.pop(cell.key))
    return results


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError("sweep backend 'ray' needs Ray: pip install 'jaxcredit[ray]'") from None
    return ray


@contextlib.contextmanager
def backend_session(backend: str, *, ray_address: str | None = None):
    """Keep one Ray session open across several `run_cells` calls (a sweep's phases): Ray is
    started here when not already initialised (and shut down on exit), from the directory holding
    the driver's jaxcredit, so that its workers import the same package. A no-op for `local`."""
    check_backend(backend)
    if backend != "ray":
        yield
        return
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        here = os.getcwd()
        os.chdir(program_record()["location"])  # Ray adds the driver's working directory to its workers' path
        try:
            ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
        finally:
            os.chdir(here)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


# ----- Ray ---------------------------------------------------------------------------------------
# Progress: workers run quiet (bars from many workers would interleave on the driver's stderr).
# Each task tells a small board actor when it starts; the driver polls the tasks, and reads each
# running cell's progress from the `metrics.jsonl` its run directory gets after every evaluation
# (the directory is on the filesystem the driver shares). Whenever that picture changes it prints
# one line to stderr: cells done / running / waiting / failed, then each running cell's budget
# fraction and its last evaluation (and at least every HEARTBEAT_SECONDS, with the time elapsed).
POLL_SECONDS = 2.0
HEARTBEAT_SECONDS = 60.0


def _run_cells_ray(cells: list[Cell], *, address: str | None, progress: bool = True, plugins: tuple = ()) -> dict:
    if not cells:
        return {}
    with backend_session("ray", ray_address=address):
        ray = _import_ray()
        board = ray.remote(num_cpus=0)(_Board).remote()
        remote_run = ray.remote(num_cpus=1)(_run_cell)
        # the config travels as JSON: a plugin's options class unpickles only once the plugin is imported
        cell_of = {remote_run.remote(_as_json(cell), plugins, board, program_record(), _driver_path()): cell
                   for cell in cells}
        summaries, failures, pending, shown = {}, {}, list(cell_of), None
        began = shown_at = time.monotonic()
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_SECONDS)
            for ref in ready:
                try:
                    summaries[cell_of[ref].key] = ray.get(ref)
                except Exception as error:  # reported with its cell, re-raised once every cell has ended
                    failures[cell_of[ref].key] = error
            if progress:
                line = progress_line(cells, summaries, failures, ray.get(board.started.remote()))
                now = time.monotonic()
                if line != shown or now - shown_at >= HEARTBEAT_SECONDS or not pending:
                    elapsed = int(now - began)
                    print(f"[{elapsed // 60}m{elapsed % 60:02d}s] {line}", file=sys.stderr, flush=True)
                    shown, shown_at = line, now
    if failures:
        labels = [cell.label for cell in cells if cell.key in failures]
        print(f"ray sweep: {len(failures)} cell(s) failed: {', '.join(labels)}", file=sys.stderr, flush=True)
        raise next(iter(failures.values()))
    return {cell.key: summaries[cell.key] for cell in cells}



class _Board:
    """A Ray actor: the labels of the cells whose task has started."""

    def __init__(self):
        self._started: list[str] = []

    def start(self, label: str) -> None:
        self._started.append(label)

    def started(self) -> list[str]:
        return list(self._started)


def check_program(driver: dict, worker: dict) -> None:
    """Raise `RuntimeError` when a worker's program (`program_record()`) is not the driver's: a
    different jaxcredit version or source would compute the cell with other code."""
    if (driver["version"], driver["source"]) != (worker["version"], worker["source"]):
        raise RuntimeError(
            f"a Ray worker imports jaxcredit {worker['version']} (source {worker['source']}) from "
            f"{worker['location']}, the sweep's driver jaxcredit {driver['version']} (source {driver['source']}) "
            f"from {driver['location']}: install the driver's jaxcredit on every node, and start Ray (or the "
            f"sweep) from a directory without another jaxcredit package in it")


def _driver_path() -> list[str]:
    """The driver's import path, absolute (where a plugin given as a module name is found)."""
    return [os.path.abspath(entry or os.curdir) for entry in sys.path]


def _as_json(cell: Cell) -> Cell:
    """`cell` (and its members) with the config as JSON and the directory absolute, as a task gets it."""
    return cell._replace(config=cell.config.to_dict(), out=os.path.abspath(cell.out),
                         members=tuple(_as_json(member) for member in cell.members))


def _from_json(cell: Cell) -> Cell:
    return cell._replace(config=config_from_dict(cell.config), members=tuple(map(_from_json, cell.members)))


def _run_cell(cell: Cell, plugins: tuple, board, driver_program: dict, driver_path: list):
    check_program(driver_program, program_record())
    sys.path.extend(entry for entry in driver_path if entry not in sys.path)  # after the package's own
    load_plugins(plugins)
    board.start.remote(cell.label)
    # workers run quiet: the driver prints one progress line
    return run_cell(_from_json(cell), progress=False)


def cell_progress(cell: Cell) -> str:
    """`"attempts/mc 40% (eval 2/5, success 0.31)"`: a running cell's budget fraction (the slowest
    seed's) and its last evaluation (`rundir.evaluation_progress`); `"<label> starting"` before the first."""
    progress = evaluation_progress(cell.out, cell.config)
    if progress is None:
        return f"{cell.label} starting"
    evaluation = f"eval {progress.last_eval}/{cell.config.num_evals}, success {progress.success:.2f}"
    if progress.fraction is None:
        return f"{cell.label} ({evaluation})"
    return f"{cell.label} {progress.fraction:.0%} ({evaluation})"


def progress_line(cells: list[Cell], summaries: dict, failures: dict, started: list[str]) -> str:
    """One line on the state of a Ray sweep: counts, then each running cell's `cell_progress`."""
    running = [c for c in cells if c.label in started and c.key not in summaries and c.key not in failures]
    waiting = len(cells) - len(summaries) - len(failures) - len(running)
    line = (f"ray sweep: {len(summaries)}/{len(cells)} cells done, {len(running)} running, {waiting} waiting, "
            f"{len(failures)} failed")
    return " | ".join([line, *(cell_progress(c) for c in running)])
