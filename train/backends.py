"""Where a sweep's cells run: one after another here (`local`), or as tasks on a Ray cluster (`ray`).

Sweep cells are independent runs: each `run_training(config, cell_dir)` writes its own run
directory and returns its summary, and every random draw is a function of the config's seeds, so
the backend changes where a cell runs, never what it computes. A sweep calls `run_cells` once per
phase: the matched regime's cells need the totals of the equal-attempts cells, so they run after.
The Ray backend (optional extra `jaxcredit[ray]`) sends each cell as one `ray.remote` task; every
node needs jaxcredit installed and the sweep directory on a filesystem all nodes share (on one
machine: any directory).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from jaxcredit.train.config import TrainConfig
from jaxcredit.train.driver import run_training

BACKENDS = ("local", "ray")


class Cell(NamedTuple):
    """One sweep cell to run: its key (e.g. `(regime, arm)`), config, run directory and resume flag.

    `targets` (`{label_arm: [total env steps per seed]}`) makes it a matched-regime cell, run by
    `jaxcredit.train.matched.run_matched` (its result is then `{label_arm: summary}`).
    """

    key: tuple
    config: TrainConfig
    out: str
    resume: bool
    label: str
    targets: dict | None = None


def run_cell(cell: Cell, *, progress: bool = True):
    """Run one cell here: its summary (a matched cell: `{label_arm: summary}`)."""
    if cell.targets is not None:
        from jaxcredit.train.matched import run_matched

        return run_matched(cell.config, cell.out, targets=cell.targets, resume=cell.resume, progress=progress,
                           label=cell.label)
    return run_training(cell.config, cell.out, resume=cell.resume, progress=progress, label=cell.label)


def check_backend(backend: str) -> None:
    """Raise `ValueError` naming an unknown backend and the choices."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown sweep backend {backend!r}; choices: {', '.join(BACKENDS)}")


def run_cells(cells: list[Cell], *, backend: str = "local", ray_address: str | None = None,
              progress: bool = True) -> dict:
    """Run every cell with `backend`; returns `{cell.key: summary}` in the order of `cells`.

    `ray_address` is the cluster to join (`ray.init(address=...)`, e.g. `"auto"` or
    `"ray://head:10001"`); without it an already initialised Ray is used, else a local one is
    started for the sweep (and shut down after). Raises `ValueError` for an unknown backend or a
    missing Ray installation.
    """
    check_backend(backend)
    if backend == "local":
        return {cell.key: run_cell(cell, progress=progress) for cell in cells}
    return _run_cells_ray(cells, address=ray_address)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError("sweep backend 'ray' needs Ray: pip install 'jaxcredit[ray]'") from None
    return ray


@contextlib.contextmanager
def backend_session(backend: str, *, ray_address: str | None = None):
    """Keep one Ray session open across several `run_cells` calls (a sweep's phases): Ray is
    started here when not already initialised (and shut down on exit). A no-op for `local`."""
    check_backend(backend)
    if backend != "ray":
        yield
        return
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def _run_cells_ray(cells: list[Cell], *, address: str | None) -> dict:
    if not cells:
        return {}
    with backend_session("ray", ray_address=address):
        ray = _import_ray()
        remote_run = ray.remote(num_cpus=1)(_run_cell)
        summaries = ray.get([remote_run.remote(cell) for cell in cells])
    return {cell.key: summary for cell, summary in zip(cells, summaries)}


def _run_cell(cell: Cell):
    # Progress bars from many workers would interleave on the driver's stderr: cells run quiet.
    return run_cell(cell, progress=False)
