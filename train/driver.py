"""Host side of a training run: seeds in one vmapped program, evaluations, checkpoints, resume.

`run_training(config, out)` runs `config.num_seeds` seeds at once (`jax.vmap` over the seed) in
segments that end when the budget counter crosses the next evaluation threshold. After each
segment it evaluates, rewrites `metrics.jsonl`, and checkpoints the whole state; a long segment
runs in calls of about `STEP_SECONDS` and is checkpointed inside too, at least every
`checkpoint_seconds`. Every random draw is a function of the seed and the iteration number, and
where a segment is cut changes nothing, so a resumed run (`resume=True`) produces exactly the
metrics of an uninterrupted one (tested). The run directory is validated, locked and written in an
order that leaves it `resumable` or `finished` at every point (`rundir.py`). Over several
processes (`jax.distributed`) every process runs this function, only process 0 writes files, and
all join orbax's checkpoints. See docs/reliability.md and docs/scale-out.md#hosts.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxcredit import rundir_io
from jaxcredit.arm_registry import credit_arm
from jaxcredit.checkpoint import save_policy
from jaxcredit.ledger import ledger_to_dict
from jaxcredit.policy import task_sizes
from jaxcredit.rundir_io import RunLock, check_writable_dir, evaluation_families, family_rows, seed_measures
from jaxcredit.sharding import batch_mesh
from jaxcredit.tracking import check_trackers, open_trackers
from jaxcredit.train.config import MAX_BUDGET, TrainConfig, config_from_dict
from jaxcredit.train.guards import check_credit_shapes, checkpointed, restored, stop_if_nonfinite
from jaxcredit.train.loop import Trainer, budget_count, make_train
from jaxcredit.train.rundir import RunDir, read_json, read_jsonl, write_json_atomic, write_jsonl_atomic
from jaxcredit.validation import require_float, require_int

CHECKPOINT_SECONDS = 300.0  # inside a long segment, checkpoint at least this often
STEP_SECONDS = 30.0  # a segment runs in calls of about this long (progress, Ctrl-C), at most the interval
FIRST_FRACTION = 1 / 8  # the first call of a session, before its pace is known: this much of the segment


# ----- several processes (jax.distributed) -------------------------------------------------------
def _to_host(tree):
    """`tree` as numpy on this host; with several processes, gathered from all of them first
    (the values are replicated, so this is a copy, not a concatenation)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


def _replicated(tree, num_devices: int):
    """`tree` replicated over the batch mesh's `num_devices` devices (committed to the one device on
    one), so the programs see the same layout before and after a segment, and after a resume (a
    restored checkpoint is committed), and compile once. With several
    processes: this process's copy (the same in every process) becomes one global array, which
    orbax and the sharded programs need."""
    if jax.process_count() == 1:
        if num_devices == 1:  # committed to the device, as a restored checkpoint is: a fresh and a
            return jax.device_put(tree, jax.devices()[0])  # resumed state share one compiled program
        return jax.device_put(tree, NamedSharding(batch_mesh(num_devices), PartitionSpec()))
    from jax.experimental import multihost_utils

    return multihost_utils.host_local_array_to_global_array(tree, batch_mesh(num_devices), PartitionSpec())


def _is_writer() -> bool:
    """Only process 0 writes the run directory's JSON files and policies."""
    return jax.process_index() == 0


def _sync(name: str) -> None:
    """Wait for every process (a no-op with one)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
# -------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _programs(program_config: TrainConfig):
    trainer = make_train(program_config)
    return (jax.jit(jax.vmap(trainer.init)),
            jax.jit(jax.vmap(trainer.run_until)),  # limits int32 [N]: one per seed
            jax.jit(jax.vmap(trainer.evaluate)))


def compiled_programs(config: TrainConfig):
    """`(init, segment, evaluate)`, jitted and vmapped over seeds, shared by every config that
    differs only in budget, seeds or evaluation schedule (so every regime of an arm compiles once).
    `segment(state, main_episodes_limit, total_env_steps_limit, total_policy_evals_limit)` takes int32
    `[N]` limits."""
    program = dataclasses.replace(config, budget=1, budget_counter="main_episodes", num_evals=1,
                                  num_seeds=1, seed=0)
    return _programs(program)


def _seed_slice(tree, i):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def _metric_rows(eval_index: int, metrics: dict, state) -> list[dict]:
    """One row per seed: the evaluation index, the iteration, every metric and ledger counter."""
    metrics, iteration, last_cost, ledger = _to_host(
        (metrics, state.iteration, state.last_iteration_env_steps, state.ledger))
    rows = []
    for i in range(iteration.shape[0]):
        row = {"eval_index": eval_index, "seed_index": i, "iteration": int(iteration[i]),
               "last_iteration_env_steps": int(last_cost[i])}
        row.update(ledger_to_dict(_seed_slice(ledger, i)))
        row.update({k: float(v[i]) for k, v in metrics.items()})
        rows.append(row)
    return rows


def summarize(rows: list[dict], num_seeds: int) -> dict:
    """Per seed: the comparison's measures (`jaxcredit.rundir_io.seed_measures`: final and
    average greedy success, the final ledger) plus the initial and final sampled success and the
    iterations run, and, for a run evaluated on several families, each family's final and average
    greedy success (`by_family`); and the means over seeds."""
    measures = seed_measures(rows)
    by_family = {family: seed_measures(family_rows(rows, family)) for family in evaluation_families(rows)}
    per_seed = []
    for k, i in enumerate(measures["seeds"]):
        mine = sorted((r for r in rows if r["seed_index"] == i), key=lambda r: r["eval_index"])
        per_seed.append({
            "seed_index": i,
            "initial_success": mine[0]["success_greedy"],
            "final_success": float(measures["final_success"][k]),
            "average_success": float(measures["average_success"][k]),
            "final_success_sampled": mine[-1]["success_sampled"],
            "iterations": mine[-1]["iteration"],
            "total_env_steps": int(measures["total_env_steps"][k]),
            "total_policy_evals": int(measures["total_policy_evals"][k]),
            "main_episodes": int(measures["main_episodes"][k]),
            **({"by_family": {family: {"final_success": float(m["final_success"][k]),
                                       "average_success": float(m["average_success"][k])}
                              for family, m in by_family.items()}} if by_family else {}),
        })
    if len(per_seed) != num_seeds:
        raise ValueError(f"metrics hold {len(per_seed)} seeds, expected {num_seeds}")
    keys = ("initial_success", "final_success", "average_success", "final_success_sampled", "total_env_steps")
    return {"seeds": per_seed, "mean": {k: float(np.mean([s[k] for s in per_seed])) for k in keys}}


class _Pace:
    """How far each call of the segment program goes, and when a within-segment checkpoint is due.

    `checkpoint_seconds` None: one call per segment and checkpoints at evaluations only (several
    processes always run so: the decisions are timed, and every process must make the same calls).
    Otherwise each call is sized from the measured rate (budget units per second, all seeds) to
    last about `min(STEP_SECONDS, checkpoint_seconds)`; 0 makes every call one iteration (tests).
    """

    def __init__(self, checkpoint_seconds: float | None):
        self.checkpoint_seconds = checkpoint_seconds
        self.step_seconds = None if checkpoint_seconds is None else min(STEP_SECONDS, checkpoint_seconds)
        self.rate = None
        self.last_save = time.monotonic()
        self.calls = 0  # calls of the segment program so far: none means no iteration ran

    def next_limits(self, done: np.ndarray, target: np.ndarray) -> np.ndarray:
        """int64 `[N]`: the budget-counter limits of the next call, given each seed's count `done`
        and the segment's `target` (both `[N]`); `target` itself ends the segment."""
        remaining = np.maximum(target - done, 0)
        if self.step_seconds is None or not remaining.any():
            return target
        fraction = FIRST_FRACTION if self.rate is None else self.step_seconds * self.rate / remaining.sum()
        if fraction >= 1:
            return target
        step = np.maximum(1, np.ceil(fraction * remaining)).astype(np.int64)
        return np.where(remaining > 0, np.minimum(done + step, target), target)

    def observe(self, units: np.ndarray, seconds: float) -> None:
        """A call advanced the seeds by `units` `[N]` in `seconds`."""
        self.calls += 1
        if seconds > 0 and units.sum() > 0:
            self.rate = float(units.sum()) / seconds

    def checkpoint_due(self) -> bool:
        return self.checkpoint_seconds is not None and time.monotonic() - self.last_save >= self.checkpoint_seconds

    def saved(self) -> None:
        self.last_save = time.monotonic()


class _Progress:
    """A tqdm bar on stderr over the budget counter (silent when disabled). It opens at the first
    `update`, at the count a resumed run starts from, so its rate and time left count this session."""

    def __init__(self, config: TrainConfig, label: str, enabled: bool):
        self.bar, self.config, self.label, self.enabled = None, config, label, enabled

    def update(self, done: int, success: float, iterations: int):
        if self.enabled and self.bar is None:
            from tqdm.auto import tqdm

            total = self.config.budget
            self.bar = tqdm(total=total, initial=min(done, total), desc=self.label, file=sys.stderr,
                            unit=" " + self.config.budget_counter.split("_")[-1], dynamic_ncols=True, leave=True)
        if self.bar is not None:
            self.bar.n = min(done, self.bar.total)
            self.bar.set_postfix(iters=iterations, success=f"{success:.2f}")
            self.bar.refresh()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def evaluation_schedule(config: TrainConfig, schedule=None) -> np.ndarray:
    """int64 `[N, num_evals]`: the budget-counter value each seed evaluates at (its own row).

    By default every seed evaluates at `budget * j / num_evals`, j = 1..num_evals. A given
    `schedule` (one row per seed, one column per evaluation, nondecreasing, each in
    `[1, MAX_BUDGET]`) is checked and returned; the matched regime passes per-seed budgets.
    """
    if schedule is None:
        thresholds = [config.budget * j // config.num_evals for j in range(1, config.num_evals + 1)]
        return np.tile(np.asarray(thresholds, np.int64), (config.num_seeds, 1))
    schedule = np.asarray(schedule, np.int64)
    if schedule.shape != (config.num_seeds, config.num_evals):
        raise ValueError(f"schedule must have shape (num_seeds, num_evals) = {(config.num_seeds, config.num_evals)}, "
                         f"got {schedule.shape}")
    if (schedule < 1).any() or (schedule > MAX_BUDGET).any() or (np.diff(schedule, axis=1) < 0).any():
        raise ValueError(f"schedule must be nondecreasing per seed and within [1, {MAX_BUDGET}]")
    return schedule


def _segment_calls(segment, trainer: Trainer, pace: _Pace, counts, state, done: np.ndarray, target: np.ndarray):
    """One segment toward the budget counts `target` (`[M]`), in calls sized by `pace`: yields
    `(state, done, reached)` after each call, `done` the counts `counts(state)` reached and
    `reached` whether this call's limits were `target` itself (the last call)."""
    while True:
        limits = pace.next_limits(done, target)
        called = time.perf_counter()
        state = segment(state, *trainer.limits(limits))
        after = counts(state)
        pace.observe(after - done, time.perf_counter() - called)
        done = after
        reached = bool(np.array_equal(limits, target))
        yield state, done, reached
        if reached:
            return


def run_training(config: TrainConfig, out: str, *, resume: bool = False, progress: bool = True,
                 label: str | None = None, stop_after_evals: int | None = None, schedule=None,
                 checkpoint_seconds: float | None = CHECKPOINT_SECONDS, on_evaluation=None, log=()) -> dict:
    """Run (or resume) one configuration's seeds into run directory `out`; returns the summary.

    Everything is checked before any work: the config against its environment, `out` (a writable
    directory or creatable as one), the arm's credit on the run's shapes
    (`guards.check_credit_shapes`), then the directory is locked (`RunLock`: a second process gets
    a one-line error naming this one) and its state read (`RunDir.status`). A fresh run refuses a
    directory that already holds a run. `resume=True` needs an existing directory; a `new` one is
    started, a `resumable` one continues from its latest checkpoint (or, without one, starts afresh
    from its own `config.json`), a `finished` one returns its summary; the saved config must equal
    `config`. `stop_after_evals` ends early after that many evaluations (tests use it to interrupt
    a run). `schedule` (int `[num_seeds, num_evals]`, see `evaluation_schedule`) gives each seed its
    own evaluation points (the last is its budget); it is saved as `schedule.json` before
    `config.json` and must match on resume. `checkpoint_seconds`: inside a segment, checkpoint
    at least this often (None: at evaluations only; ignored with several processes).
    `on_evaluation(rows)`, if given, is called by the writing process after each evaluation's
    rows are in `metrics.jsonl`, with every row so far (the matched regime writes its finished
    views with it). `log`: tracking backends (`jaxcredit.tracking.TRACKERS`) that receive every
    metrics row, per seed, with the config as parameters.

    A non-finite iteration stops the run (`guards.stop_if_nonfinite`: `failed.json`, the last
    finite checkpoint kept, `TrainingFailed`); a `failed` directory is refused. A run this call
    started that raises before its first iteration removes what it wrote.
    """
    log = check_trackers(log)
    run = RunDir(out)
    check_writable_dir(out)
    custom = schedule is not None
    schedule = evaluation_schedule(config, schedule)
    trainer = make_train(config)  # every check that needs the environment, before any work
    check_credit_shapes(trainer)  # the arm's credit traced on the run's shapes: no FLOPs, nothing written
    if resume and not os.path.isdir(run.path):
        raise FileNotFoundError(f"nothing to resume: {out} does not exist")
    before = set(os.listdir(run.path)) if os.path.isdir(run.path) else None
    pace = _Pace(checkpoint_seconds if jax.process_count() == 1 else None)
    unstarted = False  # set when a run this call started fails before its first iteration
    try:
        with _locked(run, "train"):
            status = run.status()
            if status == "failed":
                message = read_json(run.failed_path).get("message", "")
                raise ValueError(f"{out} holds a failed run ({message}); start again in another --out")
            if status != "new":
                if not resume:
                    raise ValueError(f"{out} already holds a run ({status}); pass --resume to continue it or choose "
                                     "another --out")
                _check_same_config(run, config)
                _check_same_schedule(run, schedule if custom else None)
                if status == "finished":
                    return read_json(run.summary_path)
            _sync("jaxcredit-run-checked")  # every process has looked before process 0 writes
            tracker = open_trackers(log, out, config.to_dict()) if log and _is_writer() else None
            if tracker is not None:
                def on_evaluation(rows, _then=on_evaluation):
                    tracker.log_rows(rows)
                    if _then is not None:
                        _then(rows)
            try:
                return _train(run, trainer, status, schedule, custom, progress=progress, label=label,
                              stop_after_evals=stop_after_evals, pace=pace, on_evaluation=on_evaluation)
            except Exception:
                unstarted = status == "new" and pace.calls == 0 and _is_writer()  # failed before iterating
                if unstarted:
                    _remove_unstarted(run, before)
                raise
            finally:
                if tracker is not None:
                    tracker.close()
                run.close()
    finally:
        if unstarted and before is None and os.path.isdir(run.path) and not os.listdir(run.path):
            rundir_io.remove_path(run.path)  # made by this call (its lock, now released): leave nothing


def _remove_unstarted(run: RunDir, before: set | None) -> None:
    """Remove what a run that never iterated wrote into its directory (entries that were not
    there before, `before`; the lock stays until it is released), so it blocks no later run."""
    for entry in sorted(os.listdir(run.path)):
        if entry != rundir_io.LOCK_NAME and (before is None or entry not in before):
            rundir_io.remove_path(os.path.join(run.path, entry))


@contextlib.contextmanager
def _locked(run: RunDir, command: str):
    """Hold `run`'s lock (process 0 holds it for all processes; the others learn whether it did)."""
    if jax.process_count() == 1:
        with RunLock(run.path, command):
            yield
        return
    from jax.experimental import multihost_utils

    lock, error = None, None
    if _is_writer():
        try:
            lock = RunLock(run.path, command).acquire()
        except ValueError as failure:
            error = failure
    taken = bool(multihost_utils.broadcast_one_to_all(np.int32(error is None)))
    if error is not None:
        raise error
    if not taken:
        raise ValueError(f"{run.path} is in use by another process (process 0 could not lock it)")
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def _check_same_config(run: RunDir, config: TrainConfig) -> None:
    """Raise `ValueError` naming the differing fields unless `run`'s config.json is `config`."""
    try:
        saved = config_from_dict(read_json(run.config_path))
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot resume {run.path}: its config.json is not a valid config ({error})") from None
    if saved != config:
        fields = [f.name for f in dataclasses.fields(config) if getattr(saved, f.name) != getattr(config, f.name)]
        differences = ", ".join(f"{k} (saved {getattr(saved, k)!r}, requested {getattr(config, k)!r})" for k in fields)
        raise ValueError(f"cannot resume {run.path}: its config.json differs from the requested config in "
                         f"{differences}")


def _schedule_path(run: RunDir) -> str:
    return os.path.join(run.path, "schedule.json")


def _check_same_schedule(run: RunDir, schedule) -> None:
    """Raise `ValueError` unless `run`'s saved evaluation schedule is `schedule` (None: the default)."""
    path = _schedule_path(run)
    saved = read_json(path)["schedule"] if os.path.exists(path) else None
    if saved != (None if schedule is None else schedule.tolist()):
        raise ValueError(f"cannot resume {run.path}: its schedule.json differs from the requested evaluation schedule")


def _check_info(run: RunDir, info: dict, config: TrainConfig) -> None:
    """Raise `ValueError` naming the file unless the latest checkpoint's pointer holds an evaluation
    index of this run and a best success in [-1, 1]."""
    where = f"corrupted checkpoint pointer {run.checkpoint_root}/latest.json"
    require_int(f"{where}: eval_index", info.get("eval_index"), 0, config.num_evals)
    require_float(f"{where}: best_success", info.get("best_success"), -1.0, 1.0)
    if "segment_part" in info:  # a checkpoint inside the segment after `eval_index`
        require_int(f"{where}: segment_part", info["segment_part"], 1, 2**31 - 1)
        require_float(f"{where}: segment_seconds", info.get("segment_seconds"), 0.0, float("inf"))
        if info["eval_index"] >= config.num_evals:
            raise ValueError(f"{where}: a checkpoint inside a segment after the last evaluation")


def _resumed_rows(run: RunDir, info: dict, state, config: TrainConfig) -> list[dict]:
    """The rows of `metrics.jsonl` up to the checkpoint's evaluation, checked against the
    checkpoint: every (evaluation, seed) row present once, and the checkpoint's rows describing the
    restored state. Rows past the checkpoint are dropped (the resumed run recomputes them)."""
    last = info["eval_index"]
    prefix = f"cannot resume {run.path}"
    try:
        rows = read_jsonl(run.metrics_path)
    except FileNotFoundError:
        raise ValueError(f"{prefix}: {run.metrics_path} is missing but the checkpoint is at evaluation {last}; "
                         "its rows cannot be rebuilt, start the run again in another directory") from None
    except ValueError as error:
        raise ValueError(f"{prefix}: {error}") from None
    kept = []
    for row in rows:
        if not isinstance(row.get("eval_index"), int) or not isinstance(row.get("seed_index"), int):
            raise ValueError(f"{prefix}: {run.metrics_path} holds a row without eval_index and seed_index")
        if row["eval_index"] <= last:
            kept.append(row)
    found = collections.Counter((r["eval_index"], r["seed_index"]) for r in kept)
    wanted = [(e, s) for e in range(last + 1) for s in range(config.num_seeds)]
    missing = sorted({e for e, s in wanted if found[(e, s)] == 0})
    if missing:
        raise ValueError(f"{prefix}: {run.metrics_path} lacks the rows of evaluation(s) {missing} (the checkpoint "
                         f"is at evaluation {last}); they cannot be rebuilt, start the run again in another directory")
    if len(kept) != len(wanted) or set(found) != set(wanted):
        raise ValueError(f"{prefix}: {run.metrics_path} holds duplicate or foreign rows up to evaluation {last}")
    iteration, ledger = _to_host((state.iteration, state.ledger))
    inside = "segment_part" in info  # the state is past evaluation `last`, on its way to the next
    for row in kept:
        if row["eval_index"] == last:
            s = row["seed_index"]
            steps = ledger_to_dict(_seed_slice(ledger, s))["total_env_steps"]
            saved, restored = (row.get("iteration"), row.get("total_env_steps")), (int(iteration[s]), steps)
            if inside:  # the row's counters must not be past the state's
                mismatch = not all(isinstance(v, int) for v in saved) or any(a > b for a, b in zip(saved, restored))
            else:
                mismatch = saved != restored
            if mismatch:
                raise ValueError(f"{prefix}: {run.metrics_path} does not match the checkpoint (seed {s} at evaluation "
                                 f"{last}: iteration {row.get('iteration')} vs {int(iteration[s])}, total env steps "
                                 f"{row.get('total_env_steps')} vs {steps})")
    return kept


def _train(run: RunDir, trainer: Trainer, status: str, schedule: np.ndarray, custom: bool, *, progress: bool,
           label: str | None, stop_after_evals: int | None, pace: _Pace, on_evaluation=None) -> dict:
    """The run itself, under the lock: restore or start, segments, evaluations, checkpoints, finish."""
    config = trainer.config
    info = run.checkpoint_info("latest") if status == "resumable" else None
    if info is not None:
        _check_info(run, info, config)
    if info is None and _is_writer():
        if status == "new":
            if custom:  # before config.json, so a resumable directory always has it
                rundir_io.make_dirs(run.path)
                write_json_atomic(_schedule_path(run), {"schedule": schedule.tolist()})
            run.create(config.to_dict())  # from here on the directory is resumable
        else:
            rundir_io.make_dirs(run.checkpoint_root)  # stopped before its first checkpoint
    seeds = jnp.arange(config.num_seeds, dtype=jnp.int32) + config.seed
    init, segment, evaluate = compiled_programs(config)
    state = _replicated(init(seeds), config.shard_devices)

    if info is not None:
        checkpoint, info = run.restore_checkpoint("latest", checkpointed(state))
        state = restored(checkpoint, state)  # laid out as a fresh state's: one compile
        rows = _resumed_rows(run, info, state, config)
        start, best = info["eval_index"] + 1, info["best_success"]
    if _is_writer():  # only now: a directory refused above is left exactly as it was
        run.remove_leftovers()
        _write_prepared_summary(run, config, state)
    if info is None:  # a new run, or one stopped before its first checkpoint: start from its config
        rows = _metric_rows(0, evaluate(state.params), state)
        if _is_writer():
            write_jsonl_atomic(run.metrics_path, rows)
        start, best = 1, -1.0
        run.save_checkpoint("latest", 0, checkpointed(state), {"eval_index": 0, "best_success": best})

    def counts(state):
        return _to_host(budget_count(state.ledger, config.budget_counter)).astype(np.int64)

    # a checkpoint inside segment `start`: its part number and the seconds already spent on it
    part, carried = (info["segment_part"], info["segment_seconds"]) if info and "segment_part" in info else (0, 0.0)
    success = float(np.mean([r["success_greedy"] for r in rows if r["eval_index"] == start - 1]))
    bar = _Progress(config, label or config.credit, progress)
    bar.update(int(counts(state).min()), success, int(np.max(_to_host(state.iteration))))
    try:
        for j in range(start, config.num_evals + 1):
            if stop_after_evals is not None and j > stop_after_evals:
                return {"stopped_after": stop_after_evals}
            started = time.perf_counter() - carried
            target = schedule[:, j - 1]
            done = counts(state)
            calls = _segment_calls(segment, trainer, pace, counts, state, done, target)
            for state, done, reached in calls:
                stop_if_nonfinite(run, config, state, _to_host, writer=_is_writer())  # before anything is saved
                if reached:
                    break
                bar.update(int(done.min()), success, int(np.max(_to_host(state.iteration))))
                if pace.checkpoint_due():
                    part += 1
                    run.save_checkpoint("latest", j - 1, checkpointed(state), {
                        "eval_index": j - 1, "best_success": best, "segment_part": part,
                        "segment_seconds": round(time.perf_counter() - started, 3)}, part=part)
                    pace.saved()
            part, carried = 0, 0.0
            metrics = evaluate(state.params)
            new_rows = _metric_rows(j, metrics, state)
            for r in new_rows:
                r["segment_seconds"] = round(time.perf_counter() - started, 3)
            rows = rows + new_rows
            if _is_writer():
                write_jsonl_atomic(run.metrics_path, rows)
                if on_evaluation is not None:
                    on_evaluation(rows)
            success = float(np.mean([r["success_greedy"] for r in new_rows]))
            # `best` is chosen on the held-out validation set, never on the evaluation set it is scored on
            chosen_on = float(np.mean([r["validation_success_greedy"] for r in new_rows]))
            if chosen_on > best:
                best = chosen_on
                run.save_checkpoint("best", j, state.params, {"eval_index": j, "validation_success_greedy": chosen_on,
                                                              "success_greedy": success})
            run.save_checkpoint("latest", j, checkpointed(state), {"eval_index": j, "best_success": best})
            pace.saved()
            bar.update(int(done.min()), success, int(np.max(_to_host(state.iteration))))
    finally:
        bar.close()

    # Finishing is idempotent: a run stopped in here resumes from its last checkpoint (the final
    # one), rewrites every policy and then writes the summary, the mark of a finished run.
    _save_policies(run, trainer, state)
    summary = summarize(rows, config.num_seeds)
    _sync("jaxcredit-run-finished")
    if _is_writer():
        write_json_atomic(run.summary_path, summary)
    return summary


def _write_prepared_summary(run: RunDir, config: TrainConfig, state) -> None:
    """An arm's record of its one-time work (`state.prepared["summary"]`, made once by `init` and
    kept in the checkpoint), as the arm's `prepared_file` (predictor: `predictor.json`, its dataset
    and held-out accuracy per seed); nothing for an arm without one. Written at every start and
    resume, from the (restored) state, so it always describes this run."""
    arm = credit_arm(config.credit)
    if arm.prepared_record is None or state.prepared is None or "summary" not in state.prepared:
        return
    summary, ledger = _to_host((state.prepared["summary"], state.ledger))
    counters = [ledger_to_dict(_seed_slice(ledger, i)) for i in range(config.num_seeds)]
    write_json_atomic(os.path.join(run.path, arm.prepared_file),
                      arm.prepared_record(config.credit_options, summary, counters))


def _save_policies(run: RunDir, trainer: Trainer, state) -> None:
    """Each seed's final policy as a standalone checkpoint (`policies/seed-i`), for `solve` and audits.
    Rewrites policies already there (a resumed finish) and removes what an interrupted save left."""
    env = trainer.env
    env_config = env.config()
    params = _to_host(state.params)
    wanted = [f"seed-{i}" for i in range(trainer.config.num_seeds)]
    if _is_writer() and os.path.isdir(run.policies_path):
        for entry in sorted(os.listdir(run.policies_path)):
            if entry not in wanted:
                rundir_io.remove_path(os.path.join(run.policies_path, entry))
    for i, name in enumerate(wanted):
        path = os.path.join(run.policies_path, name)
        if _is_writer():
            rundir_io.before_file_operation("checkpoint", path)
        save_policy(path, _seed_slice(params, i), policy_config=trainer.policy_config,
                    env_name=env.name, env_config=env_config, extra={"seed_index": i}, overwrite=True,
                    sizes=task_sizes(env))
