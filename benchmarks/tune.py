"""`jaxcredit bench tune`: a tuning rung's points x seeds trained as separate runs and as one population.

Both sides train the same P points (learning rate x entropy bonus) x S seeds of the outcome arm to
the same budget, each point into a fresh run directory: `separate`, one `run_training` per point
(its S seeds vmapped: how the tuning phase runs without `tune.population`), and `population`, one
`run_population` of P x S members. Per side: wall seconds, this process's CPU seconds
(`time.process_time`, every thread) and compile seconds (JAX's trace, lowering and XLA compile
events). Each side starts from empty compile caches and pays its own compiles; the sides
alternate and each keeps its fastest round. The per-seed final successes must agree. `--quick`:
tiny MAD, 2 points x 2 seeds; `--sizes`: members per population (points x 2 seeds); `--out FILE`,
`--time-cap S`: the device script's form (`benchmarks/tune_accelerator.sh`). See
docs/training.md#population-programs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time

import jax
import numpy as np

from jaxcredit.benchmarks.common import machine_description, print_table
from jaxcredit.rundir_io import check_writable_dir, write_json_atomic
from jaxcredit.train import config_from_dict, run_training
from jaxcredit.train import driver as driver_module
from jaxcredit.train import guards as guards_module
from jaxcredit.train import population as population_module
from jaxcredit.train.population import run_population

QUICK_FIELDS = {"env_overrides": {"length": 4, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 6},
                "d_model": 16, "num_layers": 1, "num_heads": 2, "mlp_dim": 32, "problems_per_iteration": 4,
                "attempts_per_problem": 4, "budget": 64, "num_evals": 2, "eval_problems": 32,
                "validation_problems": 16, "holdout_fraction": 0.0}
FULL_FIELDS = {"budget": 640, "num_evals": 2, "eval_problems": 64, "validation_problems": 32}  # default MAD, 64/iter
QUICK_SIZES, FULL_SIZES = (4,), (12,)  # members: 2 points x 2 seeds; 6 points (3 x 2 grid) x 2 seeds
SEEDS = 2
COMPILE_EVENTS = ("jaxpr_trace_duration", "jaxpr_to_mlir_module_duration", "backend_compile_duration")


def layout(members: int) -> tuple[int, int]:
    """`(points, seeds)` of a population of `members` (points x 2 seeds; one member: 1 x 1)."""
    seeds = SEEDS if members >= SEEDS else 1
    return max(1, members // seeds), seeds


def grid_points(count: int) -> list[dict]:
    """`count` points, a grid of learning rates x entropy bonus {0, 0.01} as the tuning's: the
    rates spread log-uniformly over [3e-4, 1e-2] (one rate: 1e-3; 2 points: 1e-3 with both bonuses;
    6: 3e-4, 1.7e-3 and 1e-2 with both)."""
    count_rates = (count + 1) // 2
    rates = np.geomspace(3e-4, 1e-2, count_rates) if count_rates > 1 else np.asarray([1e-3])
    return [{"learning_rate": float(f"{rates[k // 2]:.2g}"), "entropy_coef": 0.01 * (k % 2)} for k in range(count)]


class _Compiles:
    """Seconds and number of XLA compiles JAX reports while in the `with` block."""

    def __enter__(self):
        self.seconds, self.compiles = 0.0, 0
        jax.monitoring.register_event_duration_secs_listener(self._record)
        return self

    def _record(self, event, seconds, **kwargs):
        if event.rsplit("/", 1)[-1] in COMPILE_EVENTS:
            self.seconds += seconds
            self.compiles += event.endswith("backend_compile_duration")

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._record)


@contextlib.contextmanager
def _cold():
    """Empty compile caches, in-process and persistent, for one side."""
    jax.clear_caches()
    driver_module._programs.cache_clear()
    population_module._programs.cache_clear()
    guards_module._CHECKED.clear()
    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", enabled)


def _time_side(side: str, configs: list, runs: int) -> dict:
    """One side's wall, CPU and compile seconds, and its per-seed final successes; `separate` trains
    only the first `runs` points (the caller scales up)."""
    with tempfile.TemporaryDirectory(prefix=f"jaxcredit-bench-tune-{side}-") as root, _cold(), _Compiles() as seen:
        wall, cpu = time.perf_counter(), time.process_time()
        outs = [os.path.join(root, f"p{k:02d}") for k in range(len(configs))]
        if side == "population":
            summaries = run_population(configs, outs, progress=False)
        else:
            summaries = [run_training(c, out, progress=False) for c, out in zip(configs[:runs], outs)]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finals = [[s["final_success"] for s in summary["seeds"]] for summary in summaries]
    return {"wall_seconds": wall, "cpu_seconds": cpu, "compile_seconds": seen.seconds, "xla_compiles": seen.compiles,
            "final_success": finals}


def measure(base, members: int, *, rounds: int, max_separate_runs: int, deadline: float) -> dict:
    """Both sides at one population size: each side's fastest of `rounds` (alternating), the
    separate side measured on at most `max_separate_runs` points and scaled to all of them."""
    points, seeds = layout(members)
    overrides = grid_points(points)
    configs = population_module.population_configs(
        config_from_dict({**base.to_dict(), "num_seeds": seeds}), overrides)
    runs = min(points, max_separate_runs)
    best: dict = {}
    for _ in range(rounds):
        for side in ("separate", "population"):
            if time.monotonic() > deadline and side in best:
                continue
            timed = _time_side(side, configs, runs)
            if side not in best or timed["wall_seconds"] < best[side]["wall_seconds"]:
                best[side] = timed
    scale = points / runs
    separate = {**best["separate"], **{k: best["separate"][k] * scale for k in
                                      ("wall_seconds", "cpu_seconds", "compile_seconds")}}
    if runs < points:
        separate["extrapolated_from_runs"] = runs
    measured = np.asarray(best["population"]["final_success"][:runs])
    same = bool(np.allclose(measured, np.asarray(best["separate"]["final_success"]), atol=1e-6))
    ratios = {what: separate[f"{what}_seconds"] / max(best["population"][f"{what}_seconds"], 1e-9)
              for what in ("wall", "cpu", "compile")}
    return {"members": points * seeds, "points": points, "seeds": seeds, "overrides": overrides,
            "separate": separate, "population": best["population"], "separate_vs_population": ratios,
            "same_final_success": same}


def run(args) -> dict:
    """Time separate runs against one population at each size, side by side; prints the table."""
    quick = bool(getattr(args, "quick", False))
    given = getattr(args, "sizes", None) if getattr(args, "suite", None) == "tune" else None  # not `all`'s sizes
    sizes = tuple(given or (QUICK_SIZES if quick else FULL_SIZES))
    out, cap = getattr(args, "out", None), getattr(args, "time_cap", None)
    if out is not None:
        check_writable_dir(os.path.dirname(os.path.abspath(out)), "--out")
    base = config_from_dict({"env": "mad", "credit": "outcome", **(QUICK_FIELDS if quick else FULL_FIELDS)})
    rounds = 2 if quick or out is None else 1
    start = time.monotonic()
    deadline = start + (cap if cap is not None else float("inf"))
    result = {"suite": "tune", "quick": quick, "arm": "outcome", "config": base.to_dict(), "rounds": rounds,
              "load_average": {"start": list(os.getloadavg())}, "sizes": [], "skipped_sizes": [],
              "machine": machine_description()}
    for members in sizes:
        if time.monotonic() > deadline:
            result["skipped_sizes"].append(members)
            continue
        result["sizes"].append(measure(base, members, rounds=rounds, max_separate_runs=8, deadline=deadline))
        if out is not None:  # the device script's file, rewritten after every size
            write_json_atomic(out, result)
    result["load_average"]["end"] = list(os.getloadavg())
    result["wall_seconds"] = time.monotonic() - start
    result["ratios"] = {f"tune:separate_vs_population_{what}@{row['members']}": row["separate_vs_population"][what]
                        for row in result["sizes"] for what in ("wall", "cpu", "compile")}
    size = "tiny MAD (quick)" if quick else "default MAD, 64 episodes/iteration, ~100k-parameter policy"
    print_table(f"tuning points x seeds: separate runs vs one population ({size}, outcome, {base.budget} attempts; "
                "fastest of the rounds)",
                ["members", "points x seeds", "side", "wall", "CPU", "compile", "XLA compiles"],
                [[row["members"], f"{row['points']} x {row['seeds']}", side,
                  f"{row[side]['wall_seconds']:.1f} s", f"{row[side]['cpu_seconds']:.1f} s",
                  f"{row[side]['compile_seconds']:.1f} s", row[side]["xla_compiles"]]
                 for row in result["sizes"] for side in ("separate", "population")])
    print_table("separate / population", ["members", "wall", "CPU", "compile", "same final success"],
                [[row["members"], *(f"{row['separate_vs_population'][w]:.2f}x" for w in ("wall", "cpu", "compile")),
                  row["same_final_success"]] for row in result["sizes"]])
    if out is not None:
        write_json_atomic(out, result)
    return result
