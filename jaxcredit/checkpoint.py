"""The policy checkpoint format: network parameters plus what is needed to rebuild everything.

A checkpoint is one orbax directory with two items: `params` (the parameter pytree, orbax's
standard format) and `info` (JSON: the format tag, the `PolicyConfig`, the task sizes, the
environment's name and configuration, and any `extra` the caller adds). Orbax writes into a
temporary directory and renames it when complete, so a checkpoint is either whole or absent.
`load_policy` rebuilds the network from `info` alone (no environment import), so
`jaxcredit solve --policy DIR` and the analysis can evaluate a saved policy;
`load_policy_checkpoint` also rebuilds the environment it was trained on (with the caller's
`make`, e.g. `jaxcredit.envs.make`) and checks that the network fits it.

Errors are user errors, never orbax tracebacks: a missing directory raises `FileNotFoundError`
naming it; a partial, garbled or mismatched one raises `ValueError("corrupted checkpoint ...")`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxcredit.policy import PolicyConfig, TaskSizes, make_policy_from_sizes, task_sizes
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.validation import require_int

FORMAT = "jaxcredit.policy/1"


def _checkpointer():
    import orbax.checkpoint as ocp

    return ocp, ocp.Checkpointer(ocp.CompositeCheckpointHandler())


def _sizes_from_params(params: Any) -> TaskSizes:
    inner = params["params"]
    vocab_size = inner["token_embedding"]["embedding"].shape[0]
    observation_length = inner["position_embedding"].shape[0]
    num_actions = inner["action_head"]["kernel"].shape[1]
    return TaskSizes(int(vocab_size), int(observation_length), int(num_actions))


def _checked_sizes(params: Any, policy_config: PolicyConfig, sizes: TaskSizes | None) -> TaskSizes:
    """The task sizes of `params`: read from the shapes, or `sizes` when given (checked against them)."""
    if policy_config.policy_input == "afterstate" and sizes is None:
        raise ValueError("save_policy: an afterstate network's parameters do not hold the number of actions; "
                         "pass sizes=task_sizes(env)")
    if sizes is None:
        return _sizes_from_params(params)
    expected = jax.tree_util.tree_map(lambda x: tuple(x.shape), jax.eval_shape(
        make_policy_from_sizes(policy_config, sizes).init_fn, jax.random.key(0)))
    if jax.tree_util.tree_map(lambda x: tuple(np.shape(x)), params) != expected:
        raise ValueError(f"save_policy: the parameters do not match policy_config and sizes {sizes}")
    return sizes


def _to_jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x)))


def save_policy(
    path: str | os.PathLike,
    params: Any,
    *,
    policy_config: PolicyConfig,
    env_name: str,
    env_config: dict,
    extra: dict | None = None,
    overwrite: bool = False,
    sizes: TaskSizes | None = None,
) -> str:
    """Write a policy checkpoint to the directory `path` (atomically); returns its absolute path.

    `params` is the network's parameter pytree (from `make_policy`'s `init_fn` or training);
    the task sizes are read from its shapes, except for an afterstate network
    (`policy_config.policy_input == "afterstate"`), whose parameters do not hold the number of
    actions: pass its `sizes` (`task_sizes(env)`), checked against the shapes. `env_config` is the environment's keyword
    configuration (JSON-able), `extra` any JSON-able metadata (e.g. the training step).
    An existing `path` raises `ValueError` unless `overwrite`.
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not overwrite:
        raise ValueError(f"checkpoint {path} already exists (pass overwrite=True to replace it)")
    sizes = _checked_sizes(params, policy_config, sizes)
    info = {
        "format": FORMAT,
        "policy_config": policy_config.to_dict(),
        "task_sizes": {"vocab_size": sizes.vocab_size, "observation_length": sizes.observation_length,
                       "num_actions": sizes.num_actions},
        "env_name": env_name,
        "env_config": _to_jsonable(dict(env_config)),
        "extra": _to_jsonable(extra or {}),
    }
    ocp, checkpointer = _checkpointer()
    params = jax.tree_util.tree_map(np.asarray, params)
    try:
        checkpointer.save(path, args=ocp.args.Composite(params=ocp.args.StandardSave(params),
                                                        info=ocp.args.JsonSave(info)), force=overwrite)
    finally:
        checkpointer.close()
    return path


def _ignore_closed_event_loops() -> None:
    """Drop one kind of unraisable exception, process-wide: `RuntimeError("Event loop is closed")`.
    After a failed read, tensorstore still delivers the results of the reads orbax stopped waiting
    for to the event loop orbax has closed; each delivery raises this inside tensorstore's thread
    and Python prints it as a traceback. It is never about anything but that closed loop."""
    previous = sys.unraisablehook
    if getattr(previous, "ignores_closed_event_loops", False):
        return

    def hook(unraisable):
        error = unraisable.exc_value
        if not (isinstance(error, RuntimeError) and str(error) == "Event loop is closed"):
            previous(unraisable)

    hook.ignores_closed_event_loops = True
    sys.unraisablehook = hook


@contextlib.contextmanager
def quiet_orbax():
    """Keep orbax's noise out of a read, so a bad checkpoint is our one line: absl logging (orbax's
    own tracebacks) is off inside the block, and "Event loop is closed" tracebacks that tensorstore's
    threads print after a failed read are dropped (`_ignore_closed_event_loops`)."""
    _ignore_closed_event_loops()
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        absl_logger.setLevel(level)


def _corrupted(path: str, why: str) -> ValueError:
    return ValueError(f"corrupted checkpoint {path}: {why}")


def load_policy(path: str | os.PathLike) -> tuple[PolicyFn, Any, dict]:
    """Read a checkpoint written by `save_policy`: `(policy_fn, params, info)`.

    `info` holds `format`, `policy_config` (a `PolicyConfig`), `task_sizes`, `env_name`,
    `env_config`, `extra`, and `value_fn`. Raises `FileNotFoundError` for a missing directory
    and `ValueError("corrupted checkpoint ...")` for anything unreadable or inconsistent.
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no policy checkpoint at {path}")
    ocp, checkpointer = _checkpointer()
    if not ocp.utils.is_checkpoint_finalized(path):
        raise _corrupted(path, "the write never finished (an orbax temporary directory)")
    if not any(os.path.isdir(os.path.join(path, item)) for item in ("info", "params")):
        raise FileNotFoundError(f"no policy checkpoint at {path}: the directory holds neither its info nor its params")
    try:
        try:
            with quiet_orbax():
                info = checkpointer.restore(path, args=ocp.args.Composite(info=ocp.args.JsonRestore()))["info"]
        except Exception as error:  # noqa: BLE001 - any orbax failure here is a bad checkpoint
            raise _corrupted(path, f"cannot read its info ({type(error).__name__})") from None
        if not isinstance(info, dict) or info.get("format") != FORMAT:
            raise _corrupted(path, f"info is not a {FORMAT} record")
        if not isinstance(info.get("env_name"), str) or not isinstance(info.get("env_config"), dict):
            raise _corrupted(path, "info needs env_name (a string) and env_config (an object)")
        try:  # an edited info can hold anything: every failure to rebuild the network is one line
            config = PolicyConfig(**info["policy_config"])
            sizes = TaskSizes(**info["task_sizes"])
            for field, value in dataclasses.asdict(sizes).items():
                require_int(f"task_sizes.{field}", value, 1, 2**31 - 1)
            init_fn, policy_fn, value_fn = make_policy_from_sizes(config, sizes)
            abstract = jax.eval_shape(init_fn, jax.random.key(0))
        except (KeyError, TypeError, ValueError, AssertionError) as error:
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise _corrupted(path, f"bad policy config or task sizes ({why})") from None
        try:
            with quiet_orbax():
                params = checkpointer.restore(path, args=ocp.args.Composite(params=ocp.args.StandardRestore(abstract)))
            params = params["params"]
        except Exception as error:  # noqa: BLE001
            raise _corrupted(path, f"cannot read its parameters ({type(error).__name__})") from None
    finally:
        checkpointer.close()
    shapes = jax.tree_util.tree_map(lambda x: tuple(x.shape), params)
    if shapes != jax.tree_util.tree_map(lambda x: tuple(x.shape), abstract):
        raise _corrupted(path, "parameter shapes do not match its policy config")
    if not all(np.isfinite(np.asarray(x)).all() for x in jax.tree_util.tree_leaves(params)):
        raise _corrupted(path, "parameters hold NaN or infinity")
    info = dict(info, policy_config=config, value_fn=value_fn)
    return policy_fn, params, info


class PolicyCheckpoint(NamedTuple):
    """A loaded policy checkpoint and the environment it was trained on (`load_policy_checkpoint`).

    Attributes:
      path: the checkpoint directory read (a run directory's `policies/seed-i` when given a run).
      policy_fn: the network's `PolicyFn`.
      params: its parameter pytree.
      info: `load_policy`'s info (`policy_config`, `task_sizes`, `env_name`, `env_config`, `extra`, `value_fn`).
      env: the environment `info` describes, built with the caller's `make`.
    """

    path: str
    policy_fn: PolicyFn
    params: Any
    info: dict
    env: Any


def policy_checkpoint_path(path: str | os.PathLike, *, seed_index: int = 0) -> str:
    """`path` itself when it is a checkpoint, or a run directory's final policy of seed
    `seed_index` (`policies/seed-<seed_index>`) when `path` is a run directory that has one."""
    path = os.fspath(path)
    seed_policy = os.path.join(path, "policies", f"seed-{require_int('seed_index', seed_index, 0)}")
    if not os.path.exists(os.path.join(path, "_CHECKPOINT_METADATA")) and os.path.isdir(seed_policy):
        return seed_policy
    return path


def seed_policy_paths(path: str | os.PathLike) -> list[str]:
    """`[path]` when `path` is a policy checkpoint, else a run directory's final policies
    `policies/seed-k`, all of them in seed order (`[]`: neither)."""
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, "_CHECKPOINT_METADATA")):
        return [path]
    policies = os.path.join(path, "policies")
    seeds = sorted((entry for entry in os.listdir(policies) if entry.startswith("seed-")
                    and entry[5:].isdigit()), key=lambda entry: int(entry[5:])) if os.path.isdir(policies) else []
    return [os.path.join(policies, seed) for seed in seeds]


def load_policy_checkpoint(path: str | os.PathLike, *, make, env_name: str | None = None,
                           seed_index: int = 0) -> PolicyCheckpoint:
    """Load the policy checkpoint at `path` (or a run directory's, `policy_checkpoint_path`) and
    rebuild its environment with `make(env_name, **env_config)`.

    Raises `FileNotFoundError` when there is no such directory, and `ValueError` with one line
    when the checkpoint cannot be read, was trained on another environment than `env_name`
    (None: any), holds an `env_config` that `make` refuses, or a network whose task sizes are
    not its environment's.
    """
    path = policy_checkpoint_path(path, seed_index=seed_index)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no checkpoint directory {path!r}")
    try:
        policy_fn, params, info = load_policy(path)
    except (ValueError, FileNotFoundError):
        raise
    except Exception as error:  # noqa: BLE001 - a damaged checkpoint: still one line, never a traceback
        raise ValueError(f"cannot load checkpoint {path!r}: {type(error).__name__}: {error}") from None
    if env_name is not None and info["env_name"] != env_name:
        raise ValueError(f"checkpoint {path!r} was trained on {info['env_name']!r}, not {env_name!r}")
    try:
        env = make(info["env_name"], **info["env_config"])
    except (TypeError, ValueError) as error:
        raise _corrupted(path, f"its env_config cannot build {info['env_name']!r} ({error})") from None
    expected = dataclasses.asdict(task_sizes(env))
    if expected != info["task_sizes"]:
        raise _corrupted(path, f"its network has task sizes {info['task_sizes']} but its environment "
                               f"{env.name} has {expected}")
    return PolicyCheckpoint(path, policy_fn, params, info, env)
