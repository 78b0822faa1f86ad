"""Where a sweep's cells run: one after another here (`local`), or as tasks on a Ray cluster (`ray`).

Sweep cells are independent runs: each `run_training(config, cell_dir)` writes its own run
directory and returns its summary, and every random draw is a function of the config's seeds, so
the backend changes where a cell runs, never what it computes. The Ray backend (optional extra
`jaxcredit[ray]`) sends each cell as one `ray.remote` task; every node needs jaxcredit installed
and the sweep directory on a filesystem all nodes share (on one machine: any directory).
"""

from __future__ import annotations

from typing import NamedTuple

from jaxcredit.train.config import TrainConfig
from jaxcredit.train.driver import run_training

BACKENDS = ("local", "ray")


class Cell(NamedTuple):
    """One sweep cell to run: its key (e.g. `(regime, arm)`), config, run directory and resume flag."""

    key: tuple
    config: TrainConfig
    out: str
    resume: bool
    label: str


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
        return {cell.key: run_training(cell.config, cell.out, resume=cell.resume, progress=progress,
                                       label=cell.label) for cell in cells}
    return _run_cells_ray(cells, address=ray_address)


def _run_cells_ray(cells: list[Cell], *, address: str | None) -> dict:
    try:
        import ray
    except ImportError:
        raise ValueError("sweep backend 'ray' needs Ray: pip install 'jaxcredit[ray]'") from None
    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        remote_run = ray.remote(num_cpus=1)(_run_cell)
        refs = [remote_run.remote(cell.config, cell.out, cell.resume) for cell in cells]
        summaries = ray.get(refs)
    finally:
        if started:
            ray.shutdown()
    return {cell.key: summary for cell, summary in zip(cells, summaries)}


def _run_cell(config: TrainConfig, out: str, resume: bool) -> dict:
    # Progress bars from many workers would interleave on the driver's stderr: cells run quiet.
    return run_training(config, out, resume=resume, progress=False)
