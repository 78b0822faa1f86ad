"""The stages of `jaxcredit bench accelerator` (`benchmarks/accelerator.py` schedules them): sizes,
the out-of-memory and time checks of each point, and what each stage records.

A stage is `stage(context) -> dict`. A curve's point runs only if its predicted time fits before
`context.deadline` and its compiled program fits in the free memory (`free_bytes`); otherwise the
point is recorded with its reason (`"skipped: stage time budget"`, `"out of memory"`) and the larger
points after it are recorded as not run, so the curve stops cleanly where time or memory runs out.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.benchmarks.common import time_interleaved

ENV_BATCHES = tuple(2**k for k in range(10, 23, 2))  # 1,024 .. 4,194,304
QUICK_ENV_BATCHES = (64, 256)
# (states, force every legal first action, K continuations, chunk size): the large chunks first; the
# default chunk (512, comparable with `bench branch` on CPU) runs its ~680 chunks one after another, last
BRANCH_POINTS = ((605, False, 64, 512), (605, True, 64, 131072), (605, True, 64, 8192), (4840, True, 64, 131072),
                 (605, True, 64, 512))
QUICK_BRANCH_POINTS = ((8, False, 4, 16), (8, True, 4, 64))
TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY_NETWORK = {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}
CELL_PRESET, CELL_ARM = "mad-study", "mc"
CELL_BUDGET = 2_048  # main episodes: 32 iterations of 64, about a twentieth of the preset's `attempts` budget
# --quick: the tests' tiny task (tests/conftest.py TINY_TRAIN), two iterations of 32 episodes
QUICK_CELL = {"env_overrides": TINY_MAD, **TINY_NETWORK, "problems_per_iteration": 8, "attempts_per_problem": 4,
              "learning_rate": 3e-3, "credit_options.continuations": 2, "num_seeds": 2, "eval_problems": 64,
              "holdout_fraction": 0.0, "budget": 64}
REPEATS, QUICK_REPEATS = 5, 2
NOT_RUN = "not run: a smaller size ran out of memory"


@dataclasses.dataclass(frozen=True)
class StageContext:
    """What a stage is given: quick sizes or not, its deadline (`time.monotonic()` seconds), an
    optional memory limit in bytes replacing the device's free memory, and `record`: the stage's
    entry in the result, where it puts its curves as they grow (so a run stopped mid-stage keeps
    the points already measured)."""

    quick: bool
    deadline: float
    memory_limit: int | None = None
    record: dict = dataclasses.field(default_factory=dict)


def host_memory_bytes() -> int | None:
    """The host's physical memory in bytes (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def free_bytes(context: StageContext) -> int | None:
    """Bytes a point may use: `context.memory_limit`, else the device's limit minus what is in use
    (`memory_stats()`), else (CPU) half the host's memory; None if nothing is known."""
    if context.memory_limit is not None:
        return context.memory_limit
    stats = jax.devices()[0].memory_stats()
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    host = host_memory_bytes()
    return None if host is None else host // 2


def is_out_of_memory(error: BaseException) -> bool:
    """True for a host `MemoryError` or an XLA allocation failure (`RESOURCE_EXHAUSTED`, "out of memory")."""
    text = str(error)
    return isinstance(error, MemoryError) or "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def program_bytes(compiled) -> int | None:
    """Device bytes a compiled program needs: arguments + outputs + temporaries - aliased (None if unknown)."""
    stats = compiled.memory_analysis()
    if stats is None:
        return None
    return int(stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
               - stats.alias_size_in_bytes)


def _best_seconds(call, repeats: int) -> float:
    """Best seconds per call of `call` (already compiled): one timed call; calls under 20 ms are then
    timed by the shared interleaved timer (back-to-back samples), longer ones `repeats - 1` more times."""
    start = time.perf_counter()
    jax.block_until_ready(call())
    best = time.perf_counter() - start
    if best < 0.02:
        return time_interleaved({"call": call}, repeats=repeats)["call"][0]
    for _ in range(repeats - 1):
        start = time.perf_counter()
        jax.block_until_ready(call())
        best = min(best, time.perf_counter() - start)
    return best


def _curve(points, run_point, *, deadline: float, predict, rows: list) -> list[dict]:
    """Run `run_point(point) -> row` over `points` in order until time or memory runs out, appending
    each point's row to `rows` as it ends; returns `rows`.

    `predict(done_rows, point)` gives the seconds a point should take (None: unknown, run it). An
    out-of-memory point ends the curve; later points are recorded as not run.
    """
    stop = None
    for point in points:
        if stop is not None:
            rows.append({"point": point, "status": stop})
            continue
        predicted = predict([r for r in rows if r["status"] == "ok"], point)
        if predicted is not None and time.monotonic() + predicted > deadline:
            stop = "skipped: stage time budget"
            rows.append({"point": point, "status": stop, "predicted_seconds": predicted,
                         "seconds_left": max(deadline - time.monotonic(), 0.0)})
            continue
        started = time.monotonic()
        try:
            row = run_point(point)
        except Exception as error:  # noqa: BLE001 -- only an allocation failure is expected here
            if not is_out_of_memory(error):
                raise
            row = {"status": "out of memory", "error": str(error).splitlines()[0][:300]}
        gc.collect()
        row = {"point": point, **row, "wall_seconds": time.monotonic() - started}
        if row["status"] == "out of memory":
            stop = NOT_RUN
        rows.append(row)
    return rows


def _linear_predict(size_of):
    """Predict a point's seconds from the last point run: its fixed time (`fixed_seconds`: compiling,
    setting up) plus the rest of its wall time scaled by size (a conservative straight line)."""
    def predict(done, point):
        if not done:
            return None
        last = done[-1]
        fixed = last.get("fixed_seconds", 0.0)
        return fixed + max(last["wall_seconds"] - fixed, 0.0) * size_of(point) / size_of(last["point"])
    return predict


# ----- envs: steps/s vs batch --------------------------------------------------------------------------
def _env_point(env, context: StageContext, repeats: int, size: int) -> dict:
    from jaxcredit.benchmarks.envs import draw_inputs, jax_rollout

    keys = jax.ShapeDtypeStruct((size,), jax.random.key(0).dtype)
    problems_shape = jax.eval_shape(jax.vmap(env.sample_problem), keys)
    uniforms_shape = jax.ShapeDtypeStruct((env.max_turns, size), jnp.float32)
    started = time.monotonic()
    compiled = jax_rollout(env).lower(problems_shape, uniforms_shape).compile()
    compile_seconds = time.monotonic() - started
    need, free = program_bytes(compiled), free_bytes(context)
    row = {"batch": size, "compile_seconds": compile_seconds, "fixed_seconds": compile_seconds, "program_bytes": need,
           "free_bytes": free}
    if need is not None and free is not None and need > free:
        return {**row, "status": "out of memory", "error": f"predicted: the program needs {need} bytes, "
                                                            f"{free} are free"}
    started = time.monotonic()
    problems, uniforms = jax.device_put(draw_inputs(env, size))
    inputs_seconds = time.monotonic() - started  # mostly the sampler's compile at small sizes: counted as fixed
    seconds = _best_seconds(functools.partial(compiled, problems, uniforms), repeats)
    return {**row, "status": "ok", "inputs_seconds": inputs_seconds, "fixed_seconds": compile_seconds + inputs_seconds,
            "seconds_per_call": seconds, "steps_per_second": size * env.max_turns / seconds}


def envs_stage(context: StageContext) -> dict:
    """Env steps/s vs batch size for every `bench envs` environment (the JAX rollout), each env
    given an equal share of the time left."""
    from jaxcredit.benchmarks.envs import ENV_BENCHES

    sizes = QUICK_ENV_BATCHES if context.quick else ENV_BATCHES
    repeats = QUICK_REPEATS if context.quick else REPEATS
    result = {"unit": "environment steps per second (random legal actions, T = max_turns)", "batches": list(sizes),
              "repeats": repeats, "curves": {}}
    context.record.update(result)
    for i, spec in enumerate(ENV_BENCHES):
        env = spec.make_env()
        share = (context.deadline - time.monotonic()) / (len(ENV_BENCHES) - i)
        result["curves"][spec.name] = rows = []
        _curve(sizes, functools.partial(_env_point, env, context, repeats), deadline=time.monotonic() + share,
               predict=_linear_predict(lambda s: s), rows=rows)
    return result


# ----- branch continuations at large batch ------------------------------------------------------------
def branch_stage(context: StageContext) -> dict:
    """One `branch_returns` call per point (states, forced or not, K, chunk size), as in `bench branch`."""
    from jaxcredit.benchmarks.branch import _network, audit_states
    from jaxcredit.envs import make
    from jaxcredit.policy import PolicyConfig, count_parameters
    from jaxcredit.rollout import branch_returns

    quick = context.quick
    env = make("mad", **TINY_MAD) if quick else make("mad")
    policy_fn, params = _network(env, PolicyConfig(**TINY_NETWORK) if quick else None)
    repeats = QUICK_REPEATS if quick else 2
    states_of = {}

    def run_point(point):
        num_states, force, k, chunk = point
        started = time.monotonic()
        if num_states not in states_of:
            states_of[num_states] = jax.block_until_ready(audit_states(env, policy_fn, params, num_states))
        setup_seconds = time.monotonic() - started
        options = dict(num_continuations=k, force_first_actions=force, chunk_size=chunk,
                       max_legal_actions=env.length + 1 if force else None)

        def call():
            return branch_returns(env, policy_fn, params, states_of[num_states], jax.random.key(5), **options)

        started = time.monotonic()
        first = jax.block_until_ready(call())
        first_seconds = time.monotonic() - started
        seconds = _best_seconds(call, repeats)
        steps = int(first.counts.env_steps)
        return {"states": num_states, "forced": force, "continuations_per_state": k, "chunk_size": chunk,
                "status": "ok", "continuations": int(first.counts.episodes), "env_steps": steps,
                "policy_evals": int(first.counts.policy_evals), "setup_seconds": setup_seconds,
                "first_call_seconds": first_seconds, "compile_seconds": max(first_seconds - seconds, 0.0),
                "fixed_seconds": setup_seconds + max(first_seconds - seconds, 0.0), "seconds": seconds,
                "steps_per_second": steps / seconds}

    def continuations(point):
        num_states, force, k, _ = point
        return num_states * k * ((env.length + 1) if force else 1)

    result = {"unit": "live continuation environment steps per second", "policy_parameters": count_parameters(params),
              "env": env.config(), "repeats": repeats, "points": []}
    context.record.update(result)
    _curve(QUICK_BRANCH_POINTS if quick else BRANCH_POINTS, run_point, deadline=context.deadline,
           predict=_linear_predict(continuations), rows=result["points"])
    return result


# ----- one mad-study cell, end to end ------------------------------------------------------------------
def mad_study_cell_stage(context: StageContext) -> dict:
    """`run_training` of the mad-study preset's mc arm at `CELL_BUDGET` main episodes (2 evaluations),
    timed end to end in a temporary run directory; the per-segment times come from `metrics.jsonl`."""
    from jaxcredit.train import get_preset, run_training
    from jaxcredit.train.rundir import read_jsonl

    spec = get_preset(CELL_PRESET)
    fields = {"budget": CELL_BUDGET, "num_evals": 2, "budget_counter": "main_episodes",
              **(QUICK_CELL if context.quick else {})}
    config = spec.arm_config(CELL_ARM, **fields)
    with tempfile.TemporaryDirectory(prefix="jaxcredit-accelerator-") as tmp:
        started = time.monotonic()
        summary = run_training(config, os.path.join(tmp, "run"), progress=False)
        wall = time.monotonic() - started
        rows = read_jsonl(os.path.join(tmp, "run", "metrics.jsonl"))
    def total(key, j):  # a counter summed over seeds at evaluation j
        return int(np.sum([r[key] for r in rows if r["eval_index"] == j]))

    segments = [{"eval_index": j, "seconds": next(r["segment_seconds"] for r in rows if r["eval_index"] == j),
                 "iterations": (total("iteration", j) - total("iteration", j - 1)) // config.num_seeds,
                 "main_episodes": total("main_episodes", j) - total("main_episodes", j - 1)}
                for j in range(1, config.num_evals + 1)]
    steady = segments[-1]  # its programs were compiled in earlier segments
    full_budget = spec.budgets["attempts"]
    per_episode = steady["seconds"] / max(steady["main_episodes"], 1)  # all seeds' episodes
    return {
        "preset": CELL_PRESET, "arm": CELL_ARM, "config": config.to_dict(), "wall_seconds": wall,
        "segments": segments, "steady_seconds_per_iteration": steady["seconds"] / max(steady["iterations"], 1),
        "mean": summary["mean"],
        "full_cell_budget": full_budget,
        "full_cell_estimate_seconds": wall + per_episode * config.num_seeds * max(full_budget - config.budget, 0),
        "full_cell_estimate_note": "estimate, not measured: this run's wall time plus the steady segment's time "
                                   "per main episode times the episodes the preset's attempts cell has beyond it",
    }


# ----- the other suites at their default sizes -------------------------------------------------------------
def train_stage(context: StageContext) -> dict:
    """The `bench train` suite (`--quick` sizes with a quick context)."""
    from jaxcredit.benchmarks import train as train_bench

    return train_bench.run(argparse.Namespace(quick=context.quick))


def solver_stage(context: StageContext) -> dict:
    """Solver time and memory per problem vs size (the `bench solver` scaling points), each point
    given the free memory over 32 (8 problems per call, a working set of a few graphs each)."""
    from jaxcredit.benchmarks.scaling import (
        ARITHMETIC_COUNTS,
        MAD_LENGTHS,
        QUICK_ARITHMETIC_COUNTS,
        QUICK_MAD_LENGTHS,
        _solver_point,
    )
    from jaxcredit.envs import make

    free = free_bytes(context)
    budget = (2 * 2**30) if free is None else free // 32
    repeats = QUICK_REPEATS if context.quick else 3
    points = [("mad", n) for n in (QUICK_MAD_LENGTHS if context.quick else MAD_LENGTHS)]
    points += [("arithmetic", n) for n in (QUICK_ARITHMETIC_COUNTS if context.quick else ARITHMETIC_COUNTS)]

    def run_point(point):
        name, n = point
        env = make("mad", length=n, max_useful=min(4, n)) if name == "mad" else make("arithmetic", count=n)
        row = _solver_point(env, 8 if name == "mad" else 4, repeats=repeats, memory_budget=budget)
        if row["status"] != "ok":
            return {**row, "status": "out of memory", "error": row["status"]}
        return {**row, "compile_seconds": row["first_call_seconds"]}

    def predict(done, point):
        same = [r for r in done if r["point"][0] == point[0]]
        return None if not same else 4 * same[-1]["wall_seconds"]  # the next size: at least a few times more

    result = {"memory_budget_bytes_per_problem": budget, "points": []}
    context.record.update(result)
    for name in ("mad", "arithmetic"):  # each curve stops on its own
        _curve([p for p in points if p[0] == name], run_point, deadline=context.deadline, predict=predict,
               rows=result["points"])
    return result
