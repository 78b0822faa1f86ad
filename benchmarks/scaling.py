"""Scaling curves for `jaxcredit bench`: how cost grows with work, and where memory runs out.

- `env_scaling`: the jitted, vmapped environments' steps per second against batch size (the
  `bench envs` rollout, JAX side only), one compile per size.
- `solver_scaling`: the exact graph solver's time per problem and memory per problem against MAD
  tape length and arithmetic number count. Memory is the full graph plus the values of one
  problem (`solver_batch.memory_per_problem`, exact from the shapes); a size whose memory exceeds
  `memory_budget` bytes is reported with its memory and not run.
- `save_plots`: PNG plots of every curve in a result (matplotlib, headless).

The training-step curve (time against episodes per iteration) lives in `benchmarks/train.py`.
"""

from __future__ import annotations

import functools
import os
import time

import jax

from jaxcredit import solver_batch
from jaxcredit.benchmarks.common import format_rate, print_table, time_interleaved

ENV_SIZES = (1024, 4096, 16384, 65536, 262144)
QUICK_ENV_SIZES = (256, 1024)
MAD_LENGTHS = (4, 8, 12, 16)
ARITHMETIC_COUNTS = (3, 4, 5)
QUICK_MAD_LENGTHS = (3, 4)
QUICK_ARITHMETIC_COUNTS = (3,)
MEMORY_BUDGET = 2 * 2**30  # bytes per problem; larger sizes are reported, not run


def env_scaling(sizes, *, repeats: int) -> dict:
    """`{env: [{"batch", "steps_per_second"}]}` of the JAX rollout of `bench envs` at each batch size."""
    from jaxcredit.benchmarks.envs import ENV_BENCHES, draw_inputs, jax_rollout

    curves = {}
    for spec in ENV_BENCHES:
        env = spec.make_env()
        rollout = jax_rollout(env)
        rows = []
        for size in sizes:
            problems, uniforms = jax.device_put(draw_inputs(env, size))
            call = functools.partial(rollout, problems, uniforms)
            seconds = time_interleaved({"jax": call}, repeats=repeats)["jax"][0]
            rows.append({"batch": size, "steps_per_second": size * env.max_turns / seconds})
        curves[spec.name] = rows
    print_table("env steps/s vs batch size (jax, random legal actions, T = max_turns)",
                ["env"] + [str(s) for s in sizes],
                [[name] + [format_rate(r["steps_per_second"]) for r in rows] for name, rows in curves.items()])
    return curves


def _solver_point(env, count: int, *, repeats: int, memory_budget: int) -> dict:
    memory = solver_batch.memory_per_problem(env)
    point = {"positions": env.num_positions, "actions": env.num_actions,
             "graph_bytes": memory["graph_bytes"], "values_bytes": memory["values_bytes"],
             "bytes_per_problem": memory["graph_bytes"] + memory["values_bytes"]}
    if point["bytes_per_problem"] > memory_budget:
        return {**point, "status": f"not run: over the {memory_budget / 2**30:.1f} GiB per-problem budget"}
    problems = jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(0), count))
    start = time.perf_counter()
    jax.block_until_ready(solver_batch.solve_batch(env, problems, chunk_size=count))
    first = time.perf_counter() - start
    seconds = time_interleaved({"solve": lambda: solver_batch.solve_batch(env, problems, chunk_size=count)},
                               repeats=repeats)["solve"][0]
    return {**point, "status": "ok", "problems": count, "first_call_seconds": first,
            "seconds_per_problem": seconds / count}


def solver_scaling(*, quick: bool, repeats: int, memory_budget: int = MEMORY_BUDGET) -> dict:
    """`{"mad": [...], "arithmetic": [...]}`: solver time and memory per problem at each size."""
    from jaxcredit.envs import make

    lengths = QUICK_MAD_LENGTHS if quick else MAD_LENGTHS
    counts = QUICK_ARITHMETIC_COUNTS if quick else ARITHMETIC_COUNTS
    curves = {"mad": [], "arithmetic": []}
    for length in lengths:
        env = make("mad", length=length, max_useful=min(4, length))
        curves["mad"].append({"length": length, **_solver_point(env, 8, repeats=repeats, memory_budget=memory_budget)})
    for number_count in counts:
        env = make("arithmetic", count=number_count)
        curves["arithmetic"].append({"count": number_count, **_solver_point(env, 4 if quick else 8, repeats=repeats,
                                                                            memory_budget=memory_budget)})
    rows = []
    for name, key in (("mad", "length"), ("arithmetic", "count")):
        for r in curves[name]:
            timing = (f"{r['seconds_per_problem'] * 1e3:.2f} ms" if r["status"] == "ok" else r["status"])
            first = f"{r['first_call_seconds']:.1f} s" if r["status"] == "ok" else "-"
            rows.append([name, f"{key} {r[key]}", r["positions"], f"{r['bytes_per_problem'] / 2**20:.2f} MiB",
                         timing, first])
    print_table("exact solver vs problem size (uniform policy, full turn limit)",
                ["env", "size", "positions", "memory/problem", "time/problem", "first call (compile)"], rows)
    return curves


def save_plots(result: dict, directory: str) -> list[str]:
    """Write a PNG for every scaling curve found in `result` (one suite's object, or `bench all`'s)
    into `directory` (created); returns the paths written."""
    from jaxcredit.analysis.plots import plt, save_figure  # pyplot on the Agg backend

    suites = result["suites"] if "suites" in result else {result.get("suite", "suite"): result}
    os.makedirs(directory, exist_ok=True)
    written = []

    def figure(name, title, xlabel, ylabel, series):
        fig, ax = plt.subplots(figsize=(4.5, 3.2), dpi=90)
        for label, xs, ys in series:
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.grid(True, which="both", alpha=0.3)
        if len(series) > 1:
            ax.legend()
        written.append(save_figure(fig, os.path.join(directory, f"{name}.png"), dpi=90))

    envs = suites.get("envs", {}).get("scaling", {}).get("batch")
    if envs:
        figure("env_steps_vs_batch", "env steps/s vs batch (jax)", "batch size", "steps/s",
               [(name, [r["batch"] for r in rows], [r["steps_per_second"] for r in rows])
                for name, rows in envs.items()])
    solver = suites.get("solver", {}).get("scaling")
    if solver:
        for name, key in (("mad", "length"), ("arithmetic", "count")):
            ok = [r for r in solver.get(name, []) if r["status"] == "ok"]
            if ok:
                figure(f"solver_{name}_vs_{key}", f"solver, {name}: cost vs {key}", f"{key} (log2 axis)", "per problem",
                       [("seconds", [r[key] for r in ok], [r["seconds_per_problem"] for r in ok]),
                        ("GiB", [r[key] for r in solver[name]],
                         [r["bytes_per_problem"] / 2**30 for r in solver[name]])])
    train = suites.get("train", {}).get("scaling", {}).get("episodes_per_iteration")
    if train:
        figure("train_time_vs_episodes", "outcome iteration time", "episodes per iteration", "seconds",
               [("outcome", [r["episodes"] for r in train], [r["seconds"] for r in train])])
    return written

