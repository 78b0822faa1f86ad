"""`jaxcredit bench solver`: exact uniform values of many problems, JAX graph solver vs plain Python.

Also the exact credit arm's network values, evaluated where needed vs everywhere
(`benchmarks/exact_arm.py`), with their ratio.

Ours: `jaxcredit.solver.solve_batch` (graph enumeration with the environment's own jitted step,
then backward induction, vmapped over a chunk of problems). Baseline: the memoised recursive
solver over the plain-Python reference environment (`benchmarks/python_solver.py`), run in the
same process on the first few of the same problems (it is far slower; its rate per problem is
what is compared). Both compute V and Q of the start position under the uniform policy with the
episode's full turn limit; the largest disagreement is reported next to the rates.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from jaxcredit import solver_batch
from jaxcredit.benchmarks.common import machine_description, print_table, time_interleaved
from jaxcredit.benchmarks.exact_arm import bench_exact_arm
from jaxcredit.benchmarks.python_solver import solve_start
from jaxcredit.benchmarks.scaling import solver_scaling


def _take(problems, count: int):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[:count], problems)


def _problem(problems, i: int):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[i], problems)


def _working_bytes(env, problems, *, chunk_size: int, horizon: int, num_valid: int, num_edges: int) -> int | None:
    """XLA's temporary buffers plus outputs of one compiled chunk, both stages, at the padded sizes
    of the largest problem (`num_valid` positions, `num_edges` moves); None where unknown."""
    chunk = jax.tree_util.tree_map(lambda x: np.asarray(x)[:chunk_size], problems)
    sizes = {"rows": solver_batch.compact_size(env, num_valid), "edges": solver_batch.edge_size(env, num_edges)}
    try:
        build = solver_batch.build_chunk.lower(env, chunk, **sizes).compile()
        graphs = jax.eval_shape(lambda p: solver_batch.build_chunk(env, p, **sizes), chunk)
        solve = solver_batch.solve_chunk.lower(graphs, policy="uniform", horizon=horizon).compile()
        return int(sum(c.memory_analysis().temp_size_in_bytes + c.memory_analysis().output_size_in_bytes
                       for c in (build, solve)))
    except Exception:  # memory analysis is optional on some backends
        return None


def bench_one(env, reference, problems, *, label: str, chunk_size: int, python_problems: int,
              repeats: int) -> dict:
    """Time both solvers on `problems` (leading axis `[B]`) and return raw numbers for one env."""
    num_problems = int(jax.tree_util.tree_leaves(problems)[0].shape[0])
    horizon = env.max_turns

    def python_solve():
        return [solve_start(reference, _problem(problems, i), turns_left=horizon) for i in range(python_problems)]

    start = time.perf_counter()  # the first call compiles (one shape per compacted size): reported apart
    jax.block_until_ready(solver_batch.solve_batch(env, problems, chunk_size=chunk_size))
    first_call = time.perf_counter() - start
    timed = time_interleaved({
        "jax": lambda: solver_batch.solve_batch(env, problems, chunk_size=chunk_size),
        "python": python_solve,
    }, repeats=repeats)
    (seconds, batch), (python_seconds, python_values) = timed["jax"], timed["python"]
    worst = max(max(abs(value - float(batch.start_value[i])),
                    float(np.max(np.abs(np.asarray(q) - np.asarray(batch.start_q[i])))))
                for i, (value, q) in enumerate(python_values))
    memory = solver_batch.memory_per_problem(env, horizon=horizon)
    working = _working_bytes(env, problems, chunk_size=min(chunk_size, num_problems), horizon=horizon,
                             num_valid=int(np.max(np.asarray(batch.num_positions))),
                             num_edges=int(np.max(np.asarray(batch.num_edges))))
    jax_rate = num_problems / seconds
    python_rate = python_problems / python_seconds
    return {
        "env": label,
        "problems": num_problems,
        "chunk_size": chunk_size,
        "horizon": horizon,
        "jax_seconds": seconds,
        "jax_first_call_seconds": first_call,
        "jax_problems_per_s": jax_rate,
        "python_problems": python_problems,
        "python_seconds": python_seconds,
        "python_problems_per_s": python_rate,
        "ratio": jax_rate / python_rate,
        "max_abs_diff": worst,
        "positions_per_problem": float(np.mean(np.asarray(batch.num_positions))),
        "max_positions": env.num_positions,
        "actions": env.num_actions,
        # the label cost a ledger charges: legal moves of the positions reached from the start
        "env_steps_per_problem": float(np.mean(np.asarray(batch.env_steps))),
        "legal_moves_per_problem": float(np.mean(np.asarray(batch.num_edges))),
        "graph_bytes_per_problem": memory["graph_bytes"],
        "values_bytes_per_problem": memory["values_bytes"],
        "working_bytes_per_problem": None if working is None else working // min(chunk_size, num_problems),
        "mean_start_value": float(np.mean(np.asarray(batch.start_value))),
    }


# the environments the solver benchmark times, with their problems and sizes (problems, chunk size, and how
# many the plain-Python recursion solves): MAD's 4,096 tapes, arithmetic's problems spread over its families
SOLVER_CASES = {"mad": lambda quick: (4096, {"chunk_size": 512, "python_problems": 8 if quick else 32}),
                "arithmetic": lambda quick: (64 if quick else 1000, {"chunk_size": 32,
                                                                     "python_problems": 1 if quick else 3})}


def _case(name: str, quick: bool):
    """`(env, reference, problems, sizes)` of the environment `name`, or None when it is not registered."""
    from jaxcredit.envs import ENVIRONMENTS, make, make_reference

    if name not in ENVIRONMENTS:
        return None
    env = make(name)
    num_problems, sizes = SOLVER_CASES[name](quick)
    return env, make_reference(env), env.problem_mix(num_problems, seed=0), sizes


def run(args) -> dict:
    """`jaxcredit bench solver [--quick]`: the human table on stderr; returns the JSON object."""
    quick = bool(getattr(args, "quick", False))
    repeats = 1 if quick else 2
    results, exact_results, ratios, skipped = {}, {}, {}, {}
    for label in SOLVER_CASES:
        case = _case(label, quick)
        if case is None:
            skipped[label] = "environment not registered"
            continue
        env, reference, problems, sizes = case
        result = bench_one(env, reference, problems, label=label, repeats=repeats, **sizes)
        results[label] = result
        ratios[f"solver:jax_vs_python@{label}"] = result["ratio"]
        exact = bench_exact_arm(env, label=label, num_problems=2 if quick else 8, repeats=repeats)
        exact_results[label] = exact
        ratios[f"solver:exact_reached_vs_everywhere@{label}"] = exact["ratio"]
    rows = [[r["env"], r["problems"], f"{r['jax_problems_per_s']:.1f}", r["python_problems"],
             f"{r['python_problems_per_s']:.2f}", f"{r['ratio']:.0f}x", f"{r['positions_per_problem']:.0f}",
             f"{r['graph_bytes_per_problem'] / 1e6:.2f}+{r['values_bytes_per_problem'] / 1e6:.2f} MB",
             f"{r['max_abs_diff']:.1e}"] for r in results.values()]
    print_table("exact uniform start values: jax graph solver vs plain-Python recursion",
                ["env", "problems", "jax/s", "py problems", "py/s", "ratio", "positions", "graph+values",
                 "max diff"], rows)
    rows = [[r["env"], r["problems"], r["positions_per_problem"], f"{r['reached_per_problem']:.0f}",
             f"{r['evals_per_problem']:.0f}", f"{r['everywhere_seconds']:.3f}", f"{r['reached_seconds']:.3f}",
             f"{r['ratio']:.1f}x", f"{r['max_abs_diff']:.1e}"] for r in exact_results.values()]
    print_table("exact arm's network values: network at distinct reached rows vs at every position",
                ["env", "problems", "positions", "reached", "evals", "everywhere s", "reached s", "ratio", "max diff"],
                rows)
    scaling = solver_scaling(quick=quick, repeats=repeats)
    return {"suite": "solver", "results": results, "exact_arm": exact_results, "skipped": skipped, "ratios": ratios,
            "scaling": scaling,
            "machine": machine_description()}
