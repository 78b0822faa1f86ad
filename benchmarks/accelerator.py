"""`jaxcredit bench accelerator --out FILE`: every suite at accelerator sizes, under a time cap, into one JSON file.

Stages, in order, each with its own time budget (`STAGES`; sizes in `benchmarks/accelerator_stages.py`):
`envs` (rollout steps/s, batch 2^10 to 2^22), `branch` (the `bench branch` workload at chunk
sizes 512 to 131,072), `mad_study_cell` (one `run_training` of `mad-study`'s mc arm, end to end),
`train` (the `bench train` suite) and `solver` (the solver scaling curve). The time cap
(`--time-cap`, default 450 s) is enforced per stage, per point (a point predicted to overrun is
skipped, with the larger ones after it) and by a watchdog thread that writes the file and ends the
process. A point whose compiled program does not fit the device's free memory, or fails with
`RESOURCE_EXHAUSTED`, is recorded as `"out of memory"` and ends that curve. The file is rewritten
atomically after every stage. `--quick` runs tiny sizes. See
docs/benchmarks.md#jaxcredit-bench-accelerator.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable

import jax

from jaxcredit.benchmarks import accelerator_stages as stages_module
from jaxcredit.benchmarks.common import machine_description
from jaxcredit.rundir_io import check_writable_dir, write_json_atomic

TIME_CAP = 450.0  # seconds; with the process start, under 8 minutes
QUICK_TIME_CAP = 300.0  # --quick on a loaded 2-core CPU takes 2-3 minutes
EXIT_AT_CAP = 124  # the process's exit code when the watchdog stops it (as `timeout`)


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage: `run(context) -> dict`, its time budget and the least time worth starting it with."""

    name: str
    run: Callable[[stages_module.StageContext], dict]
    budget_seconds: float
    min_seconds: float
    quick_budget_seconds: float = 30.0


STAGES: tuple[Stage, ...] = (
    Stage("envs", stages_module.envs_stage, 120.0, 20.0),
    Stage("branch", stages_module.branch_stage, 90.0, 20.0),
    Stage("mad_study_cell", stages_module.mad_study_cell_stage, 120.0, 60.0, quick_budget_seconds=60.0),
    Stage("train", stages_module.train_stage, 60.0, 40.0),
    Stage("solver", stages_module.solver_stage, 45.0, 20.0),
)


def device_info() -> dict:
    """The machine (`common.machine_description`) plus the accelerator: kind, count, platform
    version, memory statistics (None on CPU), host memory and the XLA/JAX environment variables."""
    device = jax.devices()[0]
    client = getattr(device, "client", None)
    return {
        **machine_description(),
        "device_platform": device.platform,
        "device_kind": getattr(device, "device_kind", None),
        "device_count": jax.device_count(),
        "platform_version": getattr(client, "platform_version", None),
        "memory_stats": device.memory_stats(),
        "host_memory_bytes": stages_module.host_memory_bytes(),
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith(("XLA_", "JAX_"))},
    }


class _Recorder:
    """The result object and its file: every write under one lock, so the watchdog and the main
    thread never interleave."""

    def __init__(self, out: str, result: dict, start: float):
        self.out, self.result, self.start, self.lock = out, result, start, threading.Lock()
        self.current: str | None = None

    def write(self) -> None:
        with self.lock:
            write_json_atomic(self.out, self.result)

    def stop_at_cap(self, names: list[str]) -> None:
        """Mark the running stage stopped (its points so far kept) and the rest skipped, write, and
        end the process."""
        with self.lock:
            stages = self.result["stages"]
            for name in names:
                if name == self.current:
                    stages[name]["status"] = "stopped: the time cap was reached mid-stage"
                elif name not in stages:
                    stages[name] = {"status": "skipped: time cap"}
            self.result["status"] = "stopped at the time cap"
            self.result["wall_seconds"] = time.monotonic() - self.start
            for _ in range(5):  # the running stage may append a point while this thread serialises
                try:
                    write_json_atomic(self.out, self.result)
                    break
                except RuntimeError:
                    time.sleep(0.01)
        os._exit(EXIT_AT_CAP)


def run_accelerator(out: str, *, quick: bool = False, time_cap: float | None = None,
                    memory_limit: int | None = None, stages: tuple[Stage, ...] = STAGES,
                    watchdog: bool = True) -> dict:
    """Run `stages` in order under `time_cap` seconds and write one JSON object to `out`; return it.

    `memory_limit` (bytes) replaces the device's free memory in the out-of-memory checks (tests use
    a small one); `watchdog=False` leaves out the thread that ends the process at the cap (only the
    stage and point checks remain).
    """
    if os.path.isdir(out):
        raise ValueError(f"--out {out} is a directory; give a file path for the JSON")
    check_writable_dir(os.path.dirname(os.path.abspath(out)), "--out")
    cap = float((QUICK_TIME_CAP if quick else TIME_CAP) if time_cap is None else time_cap)
    if not cap > 0:
        raise ValueError(f"--time-cap must be positive, got {time_cap}")
    start = time.monotonic()
    result = {"suite": "accelerator", "status": "running", "quick": quick, "time_cap_seconds": cap,
              "stage_order": [s.name for s in stages], "machine": device_info(), "stages": {}}
    recorder = _Recorder(out, result, start)
    timer = None
    if watchdog:
        timer = threading.Timer(max(cap - (time.monotonic() - start), 0.0), recorder.stop_at_cap,
                                args=([s.name for s in stages],))
        timer.daemon = True
        timer.start()
    try:
        for stage in stages:
            _run_stage(stage, recorder, start=start, cap=cap, quick=quick, memory_limit=memory_limit)
    finally:
        if timer is not None:
            timer.cancel()
    with recorder.lock:
        result["status"] = "complete"
        result["wall_seconds"] = time.monotonic() - start
    recorder.write()
    return result


def _run_stage(stage: Stage, recorder: _Recorder, *, start: float, cap: float, quick: bool,
               memory_limit: int | None) -> None:
    left = cap - (time.monotonic() - start)
    budget = min(stage.quick_budget_seconds if quick else stage.budget_seconds, left)
    needed = 0.0 if quick else stage.min_seconds
    stages = recorder.result["stages"]
    if left <= 0 or budget < needed:
        with recorder.lock:
            stages[stage.name] = {"status": "skipped: time cap",
                                  "reason": f"{max(left, 0):.1f} s left of the {cap:.0f} s cap; the stage needs "
                                            f"at least {needed:.0f} s"}
        recorder.write()
        return
    began = time.monotonic()
    record = {"status": "running", "budget_seconds": budget}  # the stage adds its curves as they grow
    context = stages_module.StageContext(quick=quick, deadline=began + budget, memory_limit=memory_limit,
                                         record=record)
    with recorder.lock:
        recorder.current = stage.name
        stages[stage.name] = record
    try:
        data = {"status": "ok", **stage.run(context)}
    except Exception as error:  # noqa: BLE001 -- recorded; the next stage still runs
        status = "out of memory" if stages_module.is_out_of_memory(error) else "failed"
        first_line = str(error).splitlines()[0] if str(error) else ""
        data = {"status": status, "error": f"{type(error).__name__}: {first_line}"}
    with recorder.lock:
        recorder.current = None
        stages[stage.name] = {**data, "budget_seconds": budget, "seconds": time.monotonic() - began}
    recorder.write()


def run(args) -> dict:
    """The `accelerator` suite for `jaxcredit bench`: `args.out` (required), `args.quick`, `args.time_cap`."""
    out = getattr(args, "out", None)
    if not out:
        raise ValueError("bench accelerator needs --out FILE (the JSON file it writes)")
    return run_accelerator(out, quick=bool(getattr(args, "quick", False)), time_cap=getattr(args, "time_cap", None))
