"""Wall-clock records of sweep cells: when each cell ran, for how long, and on which machine.

A sweep cell's run directory gets `timing.json` (`TIMING_NAME`), written by the sweep after each
session that ran the cell (the first run, then every resume; a cell already finished before the
session adds nothing):

    {"sessions": [{"started": "2026-12-01T05:50:12Z", "wall_seconds": 812.4, "resumed": false,
                   "finished": true, "load_average": {"start": [...], "end": [...]},
                   "machine": {"host", "platform", "machine", "cpus", "python", "jax_version",
                               "jax_backend", "devices"}}]}

A session stopped by an error or an interrupt is recorded too (`finished: false`), so the time a
cell took is the sum of its sessions. The results pages (`jaxcredit report --page`) read it;
sweeps written before it existed have none, and the pages say "not recorded".
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import socket
import time

from jaxcredit.rundir_io import RunLocked, read_json, write_json_atomic

TIMING_NAME = "timing.json"


def machine_record() -> dict:
    """The machine this process runs on: host, platform, usable CPUs, Python, JAX and its devices."""
    import jax

    devices = jax.devices()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"host": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "cpus": cpus, "python": platform.python_version(), "jax_version": jax.__version__,
            "jax_backend": jax.default_backend(), "devices": f"{len(devices)} x {devices[0].device_kind}"}


def read_timing(run_dir: str) -> list[dict]:
    """The recorded sessions of the run directory `run_dir` (`[]` when none were recorded)."""
    path = os.path.join(run_dir, TIMING_NAME)
    if not os.path.exists(path):
        return []
    sessions = read_json(path).get("sessions")
    if not isinstance(sessions, list):
        raise ValueError(f"{path} has no list of sessions")
    return sessions


def _load_average() -> list:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


@contextlib.contextmanager
def timed_cell(run_dir: str, *, resumed: bool):
    """Time the body (one session running the cell `run_dir`) and append it to `run_dir/timing.json`.

    Nothing is recorded when the cell had finished before (`summary.json` present), when the body
    was refused because another process holds the cell (`RunLocked`), or when the body never
    created the directory.
    """
    finished_before = os.path.exists(os.path.join(run_dir, "summary.json"))
    started = datetime.datetime.now(datetime.timezone.utc)
    began, load = time.perf_counter(), _load_average()
    refused = False
    try:
        yield
    except RunLocked:
        refused = True
        raise
    finally:
        if not (finished_before or refused) and os.path.isdir(run_dir):
            session = {"started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "wall_seconds": round(time.perf_counter() - began, 3), "resumed": bool(resumed),
                       "finished": os.path.exists(os.path.join(run_dir, "summary.json")),
                       "load_average": {"start": load, "end": _load_average()}, "machine": machine_record()}
            write_json_atomic(os.path.join(run_dir, TIMING_NAME), {"sessions": read_timing(run_dir) + [session]})
