"""Scaling one run past one device (`jax.sharding`) and past one machine (`jax.distributed`).

Every batch in jaxcredit has a leading axis of independent episodes (or continuations), so
scaling out is data parallelism over that axis: a 1-D `Mesh` named `"batch"` over the devices,
and a `NamedSharding(mesh, P("batch"))` that jitted code applies to the batch axis with
`jax.lax.with_sharding_constraint` (`constrain_batch`). Parameters stay replicated; XLA inserts
the few collectives needed. Per-row arithmetic is unchanged, so a sharded run matches the
one-device run to float tolerance (tested with 8 forced host devices). Many machines: call
`initialize_distributed(...)` (a thin wrapper of `jax.distributed.initialize`) in every process
before any other JAX call; `batch_mesh` then spans every process's devices. See docs/scale-out.md.

Shape letters: N batch rows (episodes or continuations).
"""

from __future__ import annotations

import os
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxcredit.validation import parse_int, require_int

BATCH_AXIS = "batch"

# Environment variables read by `initialize_distributed` when an argument is not given.
COORDINATOR_ENV = "JAXCREDIT_COORDINATOR"
NUM_PROCESSES_ENV = "JAXCREDIT_NUM_PROCESSES"
PROCESS_ID_ENV = "JAXCREDIT_PROCESS_ID"


def batch_mesh(num_devices: int | None = None) -> Mesh:
    """A 1-D `Mesh` with axis `"batch"` over the first `num_devices` of `jax.devices()` (all by default).

    With `jax.distributed` initialised, `jax.devices()` spans every process. Raises `ValueError`
    when more devices are asked for than exist.
    """
    devices = jax.devices()
    try:
        count = len(devices) if num_devices is None else require_int("shard devices", num_devices, 1, len(devices))
    except ValueError as error:
        raise ValueError(f"{error} (the devices JAX sees: {len(devices)} {devices[0].platform}); on CPU set "
                         f"XLA_FLAGS=--xla_force_host_platform_device_count=N before starting Python") from None
    return Mesh(devices[:count], (BATCH_AXIS,))


def batch_sharding(num_devices: int | None = None) -> NamedSharding:
    """`NamedSharding(batch_mesh(num_devices), P("batch"))`: leading axis split over the devices."""
    return NamedSharding(batch_mesh(num_devices), PartitionSpec(BATCH_AXIS))


def constrain_batch(tree: Any, sharding: NamedSharding | None, *, axis: int = 0) -> Any:
    """Inside `jit`: constrain every leaf's axis `axis` (`[..., N, ...]`) to be split by `sharding`.

    `sharding=None` returns `tree` unchanged (the one-device path). Scalars are left alone.
    Under `vmap` the mapped axis is left unsharded.
    """
    if sharding is None:
        return tree
    mesh = sharding.mesh

    def constrain(x):
        if x.ndim <= axis:
            return x
        spec = PartitionSpec(*([None] * axis), BATCH_AXIS)
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    return jax.tree_util.tree_map(constrain, tree)


def shard_batch(tree: Any, sharding: NamedSharding) -> Any:
    """Host side: place every leaf with its leading axis `[N, ...]` split by `sharding`
    (`jax.device_put`); N must divide by the number of devices."""
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, sharding), tree)


def initialize_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                           process_id: int | None = None, *, local_device_count: int | None = None) -> dict:
    """Join a multi-process JAX run (`jax.distributed.initialize`); call first, in every process.

    Arguments left `None` come from `JAXCREDIT_COORDINATOR` (`host:port` of process 0),
    `JAXCREDIT_NUM_PROCESSES` and `JAXCREDIT_PROCESS_ID`; if none of them is set either, JAX
    detects the cluster itself (SLURM, Open MPI, Cloud TPU). `local_device_count` forces that many
    CPU devices in this process (tests and CPU clusters). Returns `{"process_index",
    "process_count", "local_devices", "global_devices"}`. Raises `ValueError` for half-given or
    malformed settings.
    """
    coordinator_address = coordinator_address or os.environ.get(COORDINATOR_ENV) or None

    def number(value, env_name, field):
        value = value if value is not None else os.environ.get(env_name)
        if value is None:
            return None
        name = f"distributed {field}"
        return parse_int(name, value) if isinstance(value, str) else require_int(name, value)

    num_processes = number(num_processes, NUM_PROCESSES_ENV, "num_processes")
    process_id = number(process_id, PROCESS_ID_ENV, "process_id")
    given = [x is not None for x in (coordinator_address, num_processes, process_id)]
    if any(given) and not all(given):
        raise ValueError("distributed runs need all of coordinator address, number of processes and process id "
                         f"(or none, to let JAX detect the cluster); got coordinator={coordinator_address!r}, "
                         f"num_processes={num_processes!r}, process_id={process_id!r}")
    if all(given):
        if ":" not in coordinator_address:
            raise ValueError(f"distributed coordinator address must be host:port, got {coordinator_address!r}")
        if num_processes < 1 or not 0 <= process_id < num_processes:
            raise ValueError(f"distributed process_id must be in [0, num_processes), got {process_id} "
                             f"of {num_processes}")
    if local_device_count is not None:
        jax.config.update("jax_num_cpu_devices", local_device_count)
    jax.distributed.initialize(coordinator_address=coordinator_address, num_processes=num_processes,
                               process_id=process_id)
    return {"process_index": jax.process_index(), "process_count": jax.process_count(),
            "local_devices": jax.local_device_count(), "global_devices": jax.device_count()}
