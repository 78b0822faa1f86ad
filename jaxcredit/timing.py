"""Wall-clock records of sweep cells: when each cell ran, for how long, and on which machine.

A sweep cell's run directory gets `timing.json` (`TIMING_NAME`), written by the sweep after each
session that ran the cell (the first run, then every resume):

    {"sessions": [{"started": "YYYY-MM-DDTHH:MM:SSZ", "wall_seconds": 812.4, "resumed": false,
                   "finished": true, "load_average": {"start": [...], "end": [...]},
                   "machine": {"host", "platform", "machine", "cpus", "cpu": {"model", "vector"},
                               "python", "jax_version", "jax_backend", "devices", "libraries"},
                   "program": {"version", "source", "location"}}]}

`program` is `jaxcredit.program.program_record`; records older versions wrote may lack `cpu`,
`libraries` and `program` (CHANGELOG.md). A session stopped by an error is recorded too
(`finished: false`); one killed outright keeps what its heartbeat (every `HEARTBEAT_SECONDS`)
last wrote. Results pages read it: see docs/analysis.md#results-pages.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import socket
import threading
import time
from collections.abc import Callable

from jaxcredit.program import program_record
from jaxcredit.rundir_io import LOCK_NAME, RunLocked, read_json, write_json_atomic

TIMING_NAME = "timing.json"
HEARTBEAT_SECONDS = 30.0


_LIBRARIES = ("jaxlib", "flax", "optax", "numpy", "orbax-checkpoint")
_VECTOR_FLAGS = ("avx2", "avx512f", "amx_tile", "neon", "sve")  # what changes XLA's CPU code most


def cpu_record() -> dict:
    """The processor: `model` (from `/proc/cpuinfo` where there is one, else `platform.processor()`)
    and `vector` (the vector instruction sets of `_VECTOR_FLAGS` it has, on Linux; `[]` elsewhere).
    The same code and seed can train to other numbers on another processor: XLA's CPU code differs
    in the last bits of a float (docs/reliability.md)."""
    model, flags = "", set()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model") and not model:
                    model = value.strip()
                elif key.strip() in ("flags", "Features"):
                    flags = set(value.split())
    return {"model": model or platform.processor() or "unknown",
            "vector": [flag for flag in _VECTOR_FLAGS if flag in flags]}


def library_versions() -> dict:
    """`{name: version}` of the libraries that compute a run's numbers (absent ones left out)."""
    from importlib import metadata

    versions = {}
    for name in _LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def machine_record() -> dict:
    """The machine this process runs on: host, platform, usable CPUs and the processor
    (`cpu_record`), Python, JAX and its devices, and the versions of the numeric libraries."""
    import jax

    devices = jax.devices()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"host": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "cpus": cpus, "cpu": cpu_record(), "python": platform.python_version(), "jax_version": jax.__version__,
            "jax_backend": jax.default_backend(), "devices": f"{len(devices)} x {devices[0].device_kind}",
            "libraries": library_versions()}


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


def _holds_lock(run_dir: str) -> bool:
    """Whether this process holds `run_dir`'s lock (its lock file names this pid and host)."""
    try:
        owner = read_json(os.path.join(run_dir, LOCK_NAME))
    except (OSError, ValueError):
        return False
    return isinstance(owner, dict) and owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname()


@contextlib.contextmanager
def timed_cell(run_dir: str, *, resumed: bool, heartbeat_seconds: float = HEARTBEAT_SECONDS,
               done: Callable[[], bool] | None = None):
    """Time the body (one session running the cell `run_dir`) and append it to `run_dir/timing.json`.

    `done()` says whether the work is finished (default: `run_dir/summary.json` exists; a suite
    passes its own test). Nothing is recorded when it had finished before, when the body
    was refused because another process holds the cell (`RunLocked`), or when the body never
    created the directory. While the body runs, the session's record is rewritten every
    `heartbeat_seconds` (`finished: false`) when this process holds the cell's lock, so a session
    killed without a chance to clean up still counts up to its last heartbeat.
    """
    if done is None:
        def done() -> bool:
            return os.path.exists(os.path.join(run_dir, "summary.json"))
    if done():
        yield
        return
    started = datetime.datetime.now(datetime.timezone.utc)
    began, load = time.perf_counter(), _load_average()
    earlier = read_timing(run_dir)
    machine, program = machine_record(), program_record()

    def write(finished: bool) -> None:
        session = {"started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "wall_seconds": round(time.perf_counter() - began, 3), "resumed": bool(resumed),
                   "finished": finished, "load_average": {"start": load, "end": _load_average()},
                   "machine": machine, "program": program}
        write_json_atomic(os.path.join(run_dir, TIMING_NAME), {"sessions": earlier + [session]})

    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(heartbeat_seconds):
            if _holds_lock(run_dir):
                write(finished=False)

    beating = threading.Thread(target=heartbeat, name=f"timing {run_dir}", daemon=True)
    beating.start()
    refused = False
    try:
        yield
    except RunLocked:
        refused = True
        raise
    finally:
        stop.set()
        beating.join()
        if not refused and os.path.isdir(run_dir):
            write(finished=done())
