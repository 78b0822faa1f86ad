"""Guards before and during training: an arm's credit traced on the run's shapes before anything is
written, and a run stopped at its first non-finite iteration, marked failed, its last finite
checkpoint kept.

`check_credit_shapes(trainer)` traces the arm's `compute` once on the run's shapes
(`jax.eval_shape`: no FLOPs) and refuses, in one line naming the arm, an advantage that is not
floating point `[B, T]` (or action values not `[B, T, A]`). During training every update checks
its credit, gradients and new parameters (`loop.NONFINITE`, `TrainState.nonfinite`);
`stop_if_nonfinite` reads that flag where the driver already syncs and, when it is set, writes
`failed.json` (`jaxcredit.rundir_io.FAILED_FILE`) and raises `TrainingFailed`. See
docs/training.md#guards.

Shape letters: B episodes per iteration, T turns, A actions, N seeds.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.arm_registry import CreditArm, CreditResult, credit_arm
from jaxcredit.rundir_io import FAILED_FILE, write_json_atomic
from jaxcredit.train.loop import NONFINITE, Trainer, TrainState


class CreditShapeError(ValueError):
    """An arm's `compute` does not return what the credit contract asks for, on the run's shapes."""


class TrainingFailed(ValueError):
    """A run stopped at a non-finite iteration; its directory is marked failed."""


def _shape(x) -> str:
    return f"{jnp.dtype(x.dtype).name}[{', '.join(map(str, x.shape))}]"


def _check_result(arm: CreditArm, result, trajectory, num_actions: int) -> None:
    """Raise `CreditShapeError` unless `result` (abstract) holds a floating `[B, T]` advantage and
    floating `[B, T, A]` action values or None."""
    where = f"credit arm {arm.name!r}"
    if not isinstance(result, CreditResult):
        raise CreditShapeError(f"{where}: compute must return a jaxcredit.CreditResult, got {type(result).__name__}")
    batch, turns = trajectory.live.shape
    expected = {"advantage": ((batch, turns), "[B, T]"), "action_values": ((batch, turns, num_actions), "[B, T, A]")}
    for name, (shape, letters) in expected.items():
        value = getattr(result, name)
        if value is None and name == "action_values":
            continue
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            raise CreditShapeError(f"{where}: its {name} must be an array, expected float{list(shape)} {letters}, "
                                   f"got {type(value).__name__}")
        if tuple(value.shape) != shape or not jnp.issubdtype(value.dtype, jnp.floating):
            raise CreditShapeError(f"{where}: its {name} must be float{list(shape)} {letters} ({batch} episodes per "
                                   f"iteration, {turns} turns), got {_shape(value)}")


_CHECKED: set = set()  # (program config, arm) pairs already traced: a sweep's regimes share one


def check_credit_shapes(trainer: Trainer) -> None:
    """Trace the arm's `compute` once on `trainer`'s shapes (the first iteration of seed 0, no
    FLOPs) and raise `CreditShapeError` (a `ValueError`, one line naming the arm, the expected and
    the actual shape) for a result that breaks the credit contract. Checked once per arm and
    configuration that differs only in budget, seeds or evaluations."""
    arm = credit_arm(trainer.config.credit)
    key = (dataclasses.replace(trainer.config, budget=1, budget_counter="main_episodes", num_evals=1, num_seeds=1,
                               seed=0), arm)
    if key in _CHECKED:
        return

    def first_credit(seed):
        state = trainer.init(seed)
        problems, trajectory, _, label_key = trainer.play(state)
        context = trainer._context(state.params, state.prepared)
        try:
            result = arm.compute(context, trajectory, problems, label_key)
        except Exception as error:  # a plugin's bug: one line naming the arm, the traceback chained
            first = str(error).splitlines()[0] if str(error) else ""
            raise CreditShapeError(f"credit arm {arm.name!r}: compute fails on the run's shapes (advantage "
                                   f"[B, T] = {list(trajectory.live.shape)}): {type(error).__name__}: "
                                   f"{first[:300]}") from error
        _check_result(arm, result, trajectory, trainer.env.num_actions)
        return ()

    jax.eval_shape(first_credit, jax.ShapeDtypeStruct((), jnp.int32))
    _CHECKED.add(key)


@struct.dataclass
class Checkpoint:
    """The training state as a checkpoint holds it: `TrainState`'s fields but its `hyperparams`
    (the run's config holds them), `nonfinite` always None. Orbax records the field names, so this
    is the one pytree every checkpoint has, whether its run trained alone or in a population."""

    params: Any
    opt_state: Any
    ledger: Any
    iteration: Any
    seed: Any
    last_iteration_env_steps: Any
    prepared: Any = None
    nonfinite: Any = None


def checkpointed(state: TrainState) -> Checkpoint:
    """`state` as checkpoints hold it (`Checkpoint`)."""
    return Checkpoint(params=state.params, opt_state=state.opt_state, ledger=state.ledger, iteration=state.iteration,
                      seed=state.seed, last_iteration_env_steps=state.last_iteration_env_steps,
                      prepared=state.prepared)


def restored(checkpoint: Checkpoint, fresh: TrainState) -> TrainState:
    """The state a `checkpoint` restores to: its fields, with `fresh`'s `nonfinite` flag and
    `hyperparams`, laid out as a fresh state's (a resumed run compiles nothing new)."""
    return fresh.replace(params=checkpoint.params, opt_state=checkpoint.opt_state, ledger=checkpoint.ledger,
                         iteration=checkpoint.iteration, seed=checkpoint.seed,
                         last_iteration_env_steps=checkpoint.last_iteration_env_steps, prepared=checkpoint.prepared)


def stop_if_nonfinite(run, config, state, to_host, *, writer: bool) -> None:
    """Raise `TrainingFailed` after writing `failed.json` (`writer` only) when a seed of `state`
    (batched `[N]`) hit a non-finite iteration. Nothing else is written: the latest checkpoint, the
    last finite state, stays `latest`."""
    nonfinite, iteration = to_host((state.nonfinite, state.iteration))
    failed = [int(i) for i in np.flatnonzero(np.asarray(nonfinite))]
    if not failed:
        return
    seeds = [{"seed_index": i, "seed": config.seed + i, "iteration": int(iteration[i]),
              "nonfinite": NONFINITE[int(nonfinite[i]) - 1]} for i in failed]
    first = min(seeds, key=lambda s: (s["iteration"], s["seed_index"]))
    latest = run.checkpoint_info("latest")
    kept = "no checkpoint" if latest is None else f"its last finite checkpoint (evaluation {latest['eval_index']})"
    path = os.path.join(run.path, FAILED_FILE)
    message = (f"credit arm {config.credit!r}: non-finite {first['nonfinite']} at iteration {first['iteration']} "
               f"(seed {first['seed_index']}); the run stopped, {kept} is kept and {path} marks it failed")
    if writer:
        write_json_atomic(path, {"credit": config.credit, "iteration": first["iteration"],
                                 "nonfinite": first["nonfinite"], "seeds": seeds,
                                 "checkpoint": None if latest is None else latest["directory"], "message": message})
    raise TrainingFailed(message)
