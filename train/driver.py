"""Host side of a training run: seeds in one vmapped program, evaluations, checkpoints, resume.

`run_training(config, out)` runs `config.num_seeds` seeds at once (`jax.vmap` over the seed) in
segments that end when the budget counter crosses the next evaluation threshold. After each
segment it evaluates, rewrites `metrics.jsonl`, and checkpoints the whole state, so a resumed
run (`resume=True`) continues from the last segment and produces exactly the metrics of an
uninterrupted one: every random draw is a function of the seed and the iteration number.
Ctrl-C lands between segments or inside one; either way the last complete segment is on disk.

Several processes (`jax.distributed`, one run over every process's devices): every process runs
this same function over the same config; values are gathered to every host before they become
numbers, only process 0 writes the run directory's files, and every process joins orbax's
checkpoint saves and restores (orbax coordinates them). See "several processes" below.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxcredit.checkpoint import save_policy
from jaxcredit.ledger import ledger_to_dict
from jaxcredit.sharding import batch_mesh
from jaxcredit.train.config import TrainConfig, config_from_dict
from jaxcredit.train.loop import Trainer, budget_count, make_train
from jaxcredit.train.rundir import RunDir, read_json, read_jsonl, write_json_atomic, write_jsonl_atomic


# ----- several processes (jax.distributed) -------------------------------------------------------
def _to_host(tree):
    """`tree` as numpy on this host; with several processes, gathered from all of them first
    (the values are replicated, so this is a copy, not a concatenation)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


def _replicated(tree, num_devices: int):
    """`tree` replicated over the batch mesh's `num_devices` devices (unchanged on one), so the
    programs see the same layout before and after a segment and compile once. With several
    processes: this process's copy (the same in every process) becomes one global array, which
    orbax and the sharded programs need."""
    if jax.process_count() == 1:
        if num_devices == 1:
            return tree
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
            jax.jit(jax.vmap(trainer.run_until, in_axes=(0, None, None))),
            jax.jit(jax.vmap(trainer.evaluate)))


def compiled_programs(config: TrainConfig):
    """`(init, segment, evaluate)`, jitted and vmapped over seeds, shared by every config that
    differs only in budget, seeds or evaluation schedule (so both regimes of an arm compile once)."""
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
    """Per seed: final greedy success, success averaged over the evaluations after the start,
    and the final ledger; plus the means over seeds."""
    per_seed = []
    for i in range(num_seeds):
        mine = sorted((r for r in rows if r["seed_index"] == i), key=lambda r: r["eval_index"])
        trained = [r for r in mine if r["eval_index"] > 0]
        per_seed.append({
            "seed_index": i,
            "initial_success": mine[0]["success_greedy"],
            "final_success": mine[-1]["success_greedy"],
            "average_success": float(np.mean([r["success_greedy"] for r in trained])),
            "final_success_sampled": mine[-1]["success_sampled"],
            "iterations": mine[-1]["iteration"],
            "total_env_steps": mine[-1]["total_env_steps"],
            "main_episodes": mine[-1]["main_episodes"],
        })
    keys = ("initial_success", "final_success", "average_success", "final_success_sampled", "total_env_steps")
    return {"seeds": per_seed, "mean": {k: float(np.mean([s[k] for s in per_seed])) for k in keys}}


class _Progress:
    """A tqdm bar on stderr over the budget counter (silent when disabled)."""

    def __init__(self, config: TrainConfig, label: str, enabled: bool):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=config.budget, desc=label, unit=" " + config.budget_counter.split("_")[-1],
                            file=sys.stderr, dynamic_ncols=True, leave=True)

    def update(self, done: int, success: float, iterations: int):
        if self.bar is not None:
            self.bar.n = min(done, self.bar.total)
            self.bar.set_postfix(iters=iterations, success=f"{success:.2f}")
            self.bar.refresh()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run_training(config: TrainConfig, out: str, *, resume: bool = False, progress: bool = True,
                 label: str | None = None, stop_after_evals: int | None = None) -> dict:
    """Run (or resume) one configuration's seeds into run directory `out`; returns the summary.

    A fresh run refuses a directory that already holds a run; `resume=True` needs one, checks its
    config matches, restores the latest checkpoint and goes on. A finished run is not re-run.
    `stop_after_evals` ends early after that many evaluations (tests use it to interrupt a run).
    """
    run = RunDir(out)
    if resume:
        if not os.path.exists(run.config_path):
            raise FileNotFoundError(f"nothing to resume: {out} has no config.json")
        saved = config_from_dict(read_json(run.config_path))
        if saved != config:
            raise ValueError(f"cannot resume {out}: its config.json differs from the requested config")
        if run.is_complete:
            return read_json(run.summary_path)
    elif os.path.exists(run.config_path):
        raise ValueError(f"{out} already holds a run; pass --resume to continue it or choose another --out")
    _sync("jaxcredit-run-checked")  # every process has looked before process 0 writes

    trainer = make_train(config)
    seeds = jnp.arange(config.num_seeds, dtype=jnp.int32) + config.seed
    init, segment, evaluate = compiled_programs(config)
    state = _replicated(init(seeds), config.shard_devices)

    if resume:
        state, info = run.restore_checkpoint("latest", state)
        rows = read_jsonl(run.metrics_path)
        rows = [r for r in rows if r["eval_index"] <= info["eval_index"]]
        start, best = info["eval_index"] + 1, info.get("best_success", -1.0)
    else:
        if _is_writer():
            run.create(config.to_dict())
        rows = _metric_rows(0, evaluate(state.params), state)
        if _is_writer():
            write_jsonl_atomic(run.metrics_path, rows)
        start, best = 1, -1.0
        run.save_checkpoint("latest", 0, state, {"eval_index": 0, "best_success": best})

    bar = _Progress(config, label or config.credit, progress)
    thresholds = trainer.thresholds()
    try:
        for j in range(start, config.num_evals + 1):
            if stop_after_evals is not None and j > stop_after_evals:
                return {"stopped_after": stop_after_evals}
            started = time.perf_counter()
            state = segment(state, *trainer.limits(thresholds[j - 1]))
            metrics = evaluate(state.params)
            new_rows = _metric_rows(j, metrics, state)
            for r in new_rows:
                r["segment_seconds"] = round(time.perf_counter() - started, 3)
            rows = rows + new_rows
            if _is_writer():
                write_jsonl_atomic(run.metrics_path, rows)
            success = float(np.mean([r["success_greedy"] for r in new_rows]))
            # `best` is chosen on the held-out validation set, never on the evaluation set it is scored on
            chosen_on = float(np.mean([r["validation_success_greedy"] for r in new_rows]))
            if chosen_on > best:
                best = chosen_on
                run.save_checkpoint("best", j, state.params, {"eval_index": j, "validation_success_greedy": chosen_on,
                                                              "success_greedy": success})
            run.save_checkpoint("latest", j, state, {"eval_index": j, "best_success": best})
            done = int(np.min(_to_host(budget_count(state.ledger, config.budget_counter))))
            bar.update(done, success, int(np.max(_to_host(state.iteration))))
    finally:
        bar.close()

    _save_policies(run, trainer, state)
    summary = summarize(rows, config.num_seeds)
    _sync("jaxcredit-run-finished")
    if _is_writer():
        write_json_atomic(run.summary_path, summary)
    return summary


def _save_policies(run: RunDir, trainer: Trainer, state) -> None:
    """Each seed's final policy as a standalone checkpoint (`policies/seed-i`), for `solve` and audits."""
    env = trainer.env
    env_config = {k: v for k, v in vars(env).items() if k != "name"}
    params = _to_host(state.params)
    for i in range(trainer.config.num_seeds):
        path = os.path.join(run.path, "policies", f"seed-{i}")
        save_policy(path, _seed_slice(params, i), policy_config=trainer.policy_config,
                    env_name=env.name, env_config=env_config, extra={"seed_index": i})
