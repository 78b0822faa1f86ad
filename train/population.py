"""Population programs: grid points and seeds of one arm that share shapes, trained as one program.

A population is several configurations that differ only in what the update reads as traced inputs
(`loop.TRACED_FIELDS`: the learning rate and the entropy bonus) and in their seeds.
`run_population` trains every seed of every point as one member of a single jitted, vmapped
program (one compile for the whole population) and writes each point's run directory as
`run_training` does: its metrics rows, checkpoints, policies and summary. So each point resumes
alone or in a population, and reads the same to analysis, tuning and `jaxcredit status`. A member
computes what its separate run computes, to float tolerance (XLA may sum in another order for a
larger batch). See docs/training.md#population-programs.

Shape letters: M members (every point's seeds, point after point), N one point's seeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
from typing import Any

import jax
import numpy as np

from jaxcredit import rundir_io
from jaxcredit.arm_registry import options_to_dict
from jaxcredit.overrides import apply_overrides
from jaxcredit.rundir_io import RunLock, check_writable_dir
from jaxcredit.tracking import check_trackers, open_trackers
from jaxcredit.train.config import TrainConfig, config_from_dict
from jaxcredit.train.driver import (
    CHECKPOINT_SECONDS,
    _check_info,
    _check_same_config,
    _check_same_schedule,
    _metric_rows,
    _Pace,
    _Progress,
    _remove_unstarted,
    _replicated,
    _resumed_rows,
    _save_policies,
    _segment_calls,
    _to_host,
    _write_prepared_summary,
    evaluation_schedule,
    summarize,
)
from jaxcredit.train.guards import TrainingFailed, check_credit_shapes, checkpointed, restored, stop_if_nonfinite
from jaxcredit.train.loop import TRACED_FIELDS, Hyperparams, Trainer, budget_count, make_train
from jaxcredit.train.rundir import RunDir, read_json, write_json_atomic, write_jsonl_atomic

VARYING_FIELDS = (*TRACED_FIELDS, "seed", "num_seeds")  # all a population's points may differ in


def program_config(config: TrainConfig) -> TrainConfig:
    """`config` with what a population program does not depend on set to the defaults: the budget,
    the evaluation schedule, the seeds and the traced settings (`VARYING_FIELDS`)."""
    defaults = TrainConfig()
    return dataclasses.replace(config, budget=1, budget_counter="main_episodes", num_evals=1, num_seeds=1, seed=0,
                               **{name: getattr(defaults, name) for name in TRACED_FIELDS})


def _first_difference(name: str, a, b) -> tuple[str, Any, Any]:
    """`(dotted field, value in a, value in b)`: where two values of config field `name` differ
    (one key of `env_overrides` or one option of `credit_options` where that is all)."""
    if name == "env_overrides":
        a, b = dict(a), dict(b)
    elif name == "credit_options" and type(a) is type(b):
        a, b = options_to_dict(a), options_to_dict(b)
    else:
        return name, a, b
    key = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))[0]
    return f"{name}.{key}", a.get(key), b.get(key)


def population_key(config: TrainConfig) -> TrainConfig:
    """`config` with `VARYING_FIELDS` set to the defaults: configs with equal keys can train as one
    population (`check_population`)."""
    defaults = TrainConfig()
    return dataclasses.replace(config, **{name: getattr(defaults, name) for name in VARYING_FIELDS})


def check_population(configs) -> TrainConfig:
    """The program config (`program_config`) every one of `configs` shares; raises `ValueError`
    naming the first point and field that changes the program: anything but `VARYING_FIELDS`
    (the network's size, the credit arm or one of its options, the budget, the environment...)."""
    configs = list(configs)
    if not configs or not all(isinstance(c, TrainConfig) for c in configs):
        raise ValueError("a population needs at least one TrainConfig")
    first = configs[0]
    for k, config in enumerate(configs[1:], 1):
        for field in dataclasses.fields(TrainConfig):
            a, b = getattr(first, field.name), getattr(config, field.name)
            if field.name not in VARYING_FIELDS and a != b:
                name, a, b = _first_difference(field.name, a, b)
                raise ValueError(f"population point {k} changes {name} ({a!r} in point 0, {b!r} here): a "
                                 f"population's points share one program and may differ only in "
                                 f"{', '.join(VARYING_FIELDS)}")
    if first.shard_devices != 1:
        raise ValueError(f"a population runs on one device: shard_devices must be 1, got {first.shard_devices}")
    return program_config(first)


def population_configs(config: TrainConfig, points) -> list[TrainConfig]:
    """One `TrainConfig` per point: `config` with the point's overrides (`{dotted name: value}`,
    `jaxcredit.overrides.apply_overrides`), checked to share one program (`check_population`).
    Raises `ValueError` naming the point and the field: an unknown field, a bad value, or one that
    changes the program's shapes."""
    if not isinstance(points, (list, tuple)) or not points:
        raise ValueError(f"a population needs a non-empty list of points ({{field: value}} overrides), got {points!r}")
    configs = []
    for k, point in enumerate(points):
        if not isinstance(point, dict):
            raise ValueError(f"population point {k} must be an object {{field: value}}, got {point!r}")
        try:
            configs.append(config_from_dict(apply_overrides(config.to_dict(), point)))
        except ValueError as error:
            raise ValueError(f"population point {k}: {error}") from None
    check_population(configs)
    return configs


@functools.lru_cache(maxsize=8)
def _programs(program: TrainConfig):
    trainer = make_train(program)
    return jax.jit(jax.vmap(trainer.init)), jax.jit(jax.vmap(trainer.run_until)), jax.jit(jax.vmap(trainer.evaluate))


def population_programs(config: TrainConfig):
    """`(init, segment, evaluate)`, jitted and vmapped over members, shared by every config with
    the same `program_config`: `init(seeds int32 [M], hyperparams)` (a `Hyperparams` of float32
    `[M]`), `segment(state, main_episodes_limit, total_env_steps_limit, total_policy_evals_limit)`
    with int32 `[M]` limits, `evaluate(params)`."""
    return _programs(program_config(config))


@dataclasses.dataclass
class _Point:
    """One point of a running population: its run directory, config and where it stands."""

    run: RunDir
    config: TrainConfig
    trainer: Trainer
    resume: bool
    before: set | None = None  # the directory's entries before this call (None: it did not exist)
    status: str | None = None
    offset: int = 0
    info: dict | None = None
    rows: list = dataclasses.field(default_factory=list)
    next_eval: int = 1
    last_eval: int = 0
    best: float = -1.0
    part: int = 0
    carried: float = 0.0
    tracker: Any = None
    failure: TrainingFailed | None = None

    @property
    def members(self) -> slice:
        return slice(self.offset, self.offset + self.config.num_seeds)


def _of(tree, point: _Point):
    """`tree`'s leaves `[M, ...]` cut to `point`'s members, `[N, ...]`."""
    return jax.tree_util.tree_map(lambda x: x[point.members], tree)


def run_population(configs, outs, *, resume=False, progress: bool = True, label: str | None = None,
                   stop_after_evals: int | None = None, checkpoint_seconds: float | None = CHECKPOINT_SECONDS,
                   log=()) -> list[dict]:
    """Train `configs` (one per point, sharing one program: `check_population`) into the run
    directories `outs` (one each) as one population; returns each point's summary, in order.

    The members are every point's seeds, point after point: the state and the limits are `[M]`,
    point k's seeds the members from the sum of the earlier points' `num_seeds`. Each directory is
    checked, locked and written as `run_training` writes it (`resume`: a bool, or one per point,
    with its meaning there); a finished point returns its summary and trains nothing. Points may
    stand at different evaluations (a resumed population): each member runs to its own point's
    next evaluation. `stop_after_evals`, `checkpoint_seconds` and `log` are `run_training`'s.

    A point whose member hits a non-finite iteration is marked failed (`guards.stop_if_nonfinite`)
    while the others go on; once they end, its `TrainingFailed` is raised. One process only.
    """
    configs, outs = list(configs), [os.fspath(out) for out in outs]
    if not configs or len(configs) != len(outs):
        raise ValueError(f"a population needs one run directory per config: {len(configs)} configs, {len(outs)} "
                         "directories")
    if len({os.path.abspath(out) for out in outs}) != len(outs):
        raise ValueError("two points of a population share a run directory")
    resumes = [bool(resume)] * len(configs) if isinstance(resume, bool) else [bool(r) for r in resume]
    if len(resumes) != len(configs):
        raise ValueError(f"resume: one flag per point, got {len(resumes)} for {len(configs)} points")
    if jax.process_count() > 1:
        raise ValueError("a population runs in one process; with several processes train each point with "
                         "run_training")
    check_population(configs)
    log = check_trackers(log)
    for out in outs:
        check_writable_dir(out)
    base = make_train(configs[0])  # every check that needs the environment, before any work
    check_credit_shapes(base)
    points = [_Point(RunDir(out), config, dataclasses.replace(base, config=config), flag)
              for config, out, flag in zip(configs, outs, resumes)]
    for point in points:
        if point.resume and not os.path.isdir(point.run.path):
            raise FileNotFoundError(f"nothing to resume: {point.run.path} does not exist")
        point.before = set(os.listdir(point.run.path)) if os.path.isdir(point.run.path) else None
    pace = _Pace(checkpoint_seconds)
    locked = []  # the points whose directory this call holds
    try:
        with contextlib.ExitStack() as stack:
            try:
                for point in points:
                    stack.enter_context(RunLock(point.run.path, "train"))
                    stack.callback(point.run.close)
                    locked.append(point)
                return _run_locked(points, stack, pace, progress=progress, label=label,
                                   stop_after_evals=stop_after_evals, log=log)
            except Exception:
                if pace.calls == 0:  # nothing trained: remove what this call wrote into the points it started
                    for point in locked:
                        if point.status in (None, "new"):
                            _remove_unstarted(point.run, point.before)
                raise
    finally:
        for point in locked:
            if point.before is None and os.path.isdir(point.run.path) and not os.listdir(point.run.path):
                rundir_io.remove_path(point.run.path)  # made by this call and left empty: leave nothing


def _run_locked(points: list, stack: contextlib.ExitStack, pace: _Pace, *, progress: bool, label: str | None,
                stop_after_evals: int | None, log: tuple) -> list[dict]:
    """`run_population` under every point's lock: each point checked, the finished ones' summaries
    read, the others trained."""
    summaries = {}
    for k, point in enumerate(points):
        point.status = _checked_status(point)
        if point.status == "finished":
            summaries[k] = read_json(point.run.summary_path)
    active = [point for k, point in enumerate(points) if k not in summaries]
    for point in active if log else ():
        point.tracker = open_trackers(log, point.run.path, point.config.to_dict())
        stack.callback(point.tracker.close)
    results = iter(_train(active, pace, progress=progress, label=label, stop_after_evals=stop_after_evals)
                   if active else ())
    return [summaries[k] if k in summaries else next(results) for k in range(len(points))]


def train_population(config: TrainConfig, points, outs, **options) -> list[dict]:
    """`run_population` of `config` at each of `points` (`{dotted name: value}` overrides,
    `population_configs`) into `outs`, one run directory per point; returns the summaries.
    Each member's metrics are its point's `metrics.jsonl` rows (one per evaluation and seed), as
    a separate `run_training` of that point writes them."""
    return run_population(population_configs(config, points), outs, **options)


def _checked_status(point: _Point) -> str:
    """The point's `RunDir.status`, after `run_training`'s checks: a failed run is refused, a run
    there needs `resume` and the same config."""
    run, status = point.run, point.run.status()
    if status == "failed":
        message = read_json(run.failed_path).get("message", "")
        raise ValueError(f"{run.path} holds a failed run ({message}); start again in another directory")
    if status != "new":
        if not point.resume:
            raise ValueError(f"{run.path} already holds a run ({status}); pass resume to continue it or choose "
                             "another directory")
        _check_same_config(run, point.config)
        _check_same_schedule(run, None)
    return status


def _start(points: list[_Point]):
    """The population's first state `[M]`: fresh members, each resumed point's restored from its
    latest checkpoint; each point's rows, next evaluation and best score set (evaluation 0 of a
    new point evaluated, written and checkpointed)."""
    offset = 0
    for point in points:
        point.offset, offset = offset, offset + point.config.num_seeds
        point.info = point.run.checkpoint_info("latest") if point.status == "resumable" else None
        if point.info is not None:
            _check_info(point.run, point.info, point.config)
        elif point.status == "new":
            point.run.create(point.config.to_dict())  # from here on the directory is resumable
        else:
            rundir_io.make_dirs(point.run.checkpoint_root)  # stopped before its first checkpoint
    seeds = np.concatenate([np.arange(p.config.num_seeds) + p.config.seed for p in points]).astype(np.int32)
    hyperparams = Hyperparams(**{name: np.concatenate([np.full(p.config.num_seeds, getattr(p.config, name), np.float32)
                                                       for p in points]) for name in TRACED_FIELDS})
    init, _, evaluate = population_programs(points[0].config)
    fresh = _replicated(init(seeds, hyperparams), 1)
    state = fresh
    resumed = [p for p in points if p.info is not None]
    if resumed:  # each point's members replaced by its checkpoint, on the host: no program to compile
        host = jax.tree_util.tree_map(np.array, jax.device_get(checkpointed(fresh)))
        for point in resumed:
            checkpoint, point.info = point.run.restore_checkpoint("latest", checkpointed(_of(fresh, point)))
            jax.tree_util.tree_map(lambda h, c, p=point: h.__setitem__(p.members, np.asarray(c)), host,
                                   jax.device_get(checkpoint))
        state = _replicated(restored(host, fresh), 1)
    for point in points:
        mine = _of(state, point)
        point.run.remove_leftovers()
        _write_prepared_summary(point.run, point.config, mine)
        if point.info is not None:
            point.rows = _resumed_rows(point.run, point.info, mine, point.config)
            point.next_eval, point.best = point.info["eval_index"] + 1, point.info["best_success"]
            if "segment_part" in point.info:  # a checkpoint inside the segment after `eval_index`
                point.part, point.carried = point.info["segment_part"], point.info["segment_seconds"]
    new = [p for p in points if p.info is None]
    metrics = evaluate(state.params) if new else None
    for point in new:
        point.rows = _metric_rows(0, _of(metrics, point), _of(state, point))
        write_jsonl_atomic(point.run.metrics_path, point.rows)
        point.run.save_checkpoint("latest", 0, checkpointed(_of(state, point)), {"eval_index": 0, "best_success": -1.0})
    return state


def _train(points: list[_Point], pace: _Pace, *, progress: bool, label: str | None,
           stop_after_evals: int | None) -> list[dict]:
    """The population itself, under the points' locks: start, segments, evaluations, checkpoints,
    finish; each point's result in order (a summary, or `{"stopped_after": n}`)."""
    state = _start(points)
    config, trainer = points[0].config, points[0].trainer  # the budget counter and schedule all share
    _, segment, evaluate = population_programs(config)
    schedule = np.concatenate([evaluation_schedule(p.config) for p in points])  # [M, num_evals]
    for point in points:
        point.last_eval = config.num_evals if stop_after_evals is None else min(config.num_evals, stop_after_evals)

    def counts(state):
        return _to_host(budget_count(state.ledger, config.budget_counter)).astype(np.int64)

    done = counts(state)
    success = float(np.mean([r["success_greedy"] for p in points for r in p.rows
                             if r["eval_index"] == p.next_eval - 1]))
    bar = _Progress(config, label or f"{config.credit} population of {len(points)}", progress)
    bar.update(int(done.min()), success, int(np.max(_to_host(state.iteration))))
    try:
        while True:
            moving = [p for p in points if p.failure is None and p.next_eval <= p.last_eval]
            if not moving:
                break
            target = done.copy()  # a member of a point not moving stays where it is
            started = {}
            for point in moving:
                target[point.members] = schedule[point.members, point.next_eval - 1]
                started[id(point)] = time.perf_counter() - point.carried
            calls = _segment_calls(segment, trainer, pace, counts, state, done, target)
            for state, done, reached in calls:
                _mark_failed(moving, state, target, done)
                if reached:
                    break
                bar.update(int(done.min()), success, int(np.max(_to_host(state.iteration))))
                if pace.checkpoint_due():
                    for point in moving:
                        if point.failure is None:
                            point.part += 1
                            j = point.next_eval
                            point.run.save_checkpoint("latest", j - 1, checkpointed(_of(state, point)), {
                                "eval_index": j - 1, "best_success": point.best, "segment_part": point.part,
                                "segment_seconds": round(time.perf_counter() - started[id(point)], 3)},
                                part=point.part)
                    pace.saved()
            metrics = evaluate(state.params)
            scores = [_record_evaluation(p, _of(state, p), _of(metrics, p), started[id(p)])
                      for p in moving if p.failure is None]
            pace.saved()
            success = float(np.mean(scores)) if scores else success
            bar.update(int(done.min()), success, int(np.max(_to_host(state.iteration))))
    finally:
        bar.close()
    results = []
    for point in points:  # finishing is idempotent, as in `run_training`: policies, then the summary
        if point.failure is not None or point.next_eval <= config.num_evals:
            results.append({"stopped_after": stop_after_evals})
            continue
        _save_policies(point.run, point.trainer, _of(state, point))
        summary = summarize(point.rows, point.config.num_seeds)
        write_json_atomic(point.run.summary_path, summary)
        results.append(summary)
    failures = [p.failure for p in points if p.failure is not None]
    if failures:
        raise failures[0]
    return results


def _mark_failed(moving: list[_Point], state, target: np.ndarray, done: np.ndarray) -> None:
    """Mark each moving point with a non-finite member failed (`failed.json`, its last finite
    checkpoint kept); its members stop where they are (`target` set to `done` there)."""
    nonfinite = _to_host(state.nonfinite)
    for point in moving:
        if point.failure is None and np.any(nonfinite[point.members]):
            try:
                stop_if_nonfinite(point.run, point.config, _of(state, point), _to_host, writer=True)
            except TrainingFailed as failure:
                point.failure = failure
                target[point.members] = done[point.members]


def _record_evaluation(point: _Point, state, metrics, started: float) -> float:
    """Write a point's evaluation `point.next_eval` (its rows, its `best` checkpoint when the
    validation success improves, its `latest`) and move it to the next; returns its mean greedy
    success. `state` and `metrics` are the point's members'."""
    j = point.next_eval
    new_rows = _metric_rows(j, metrics, state)
    for row in new_rows:
        row["segment_seconds"] = round(time.perf_counter() - started, 3)
    point.rows = point.rows + new_rows
    write_jsonl_atomic(point.run.metrics_path, point.rows)
    if point.tracker is not None:
        point.tracker.log_rows(point.rows)
    success = float(np.mean([r["success_greedy"] for r in new_rows]))
    chosen_on = float(np.mean([r["validation_success_greedy"] for r in new_rows]))  # never the evaluation set
    if chosen_on > point.best:
        point.best = chosen_on
        point.run.save_checkpoint("best", j, state.params, {"eval_index": j, "validation_success_greedy": chosen_on,
                                                            "success_greedy": success})
    point.run.save_checkpoint("latest", j, checkpointed(state), {"eval_index": j, "best_success": point.best})
    point.next_eval, point.part, point.carried = j + 1, 0, 0.0
    return success
