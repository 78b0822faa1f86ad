"""`jaxcredit bench branch`: branch continuations per second with the ~100k-parameter network.

The workload is the label-reliability audit's: 605 mid-episode states from the network policy's
own default-MAD episodes, and 64 continuations from each, run to the end of the episode under the
same network: `unforced` (605 x 64, Monte Carlo `V̂(s)`), `forced` (every one of the 9 legal first
actions forced, 605 x 9 x 64, the `Q̂(s, a)` an audit needs) and `unforced_k4` (605 x 4, where the
fixed cost per call shows). Each runs as ONE `branch_returns` call against the same continuations
run one state at a time (timed on a sample of states and extrapolated to all 605). The rate counts
live continuation steps (the ledger's `label_env_steps`); the batched call's process CPU time is
reported too, with the load average. Timing: `common.time_interleaved`. See
docs/benchmarks.md#jaxcredit-bench-branch.
"""

from __future__ import annotations

import os
import time

import jax
import numpy as np

from jaxcredit.benchmarks.common import format_rate, machine_description, print_table, time_interleaved
from jaxcredit.envs import make
from jaxcredit.policy import PolicyConfig, count_parameters, make_policy
from jaxcredit.rollout import branch_returns, rollout

NUM_STATES = 605
QUICK_STATES = 121
NUM_CONTINUATIONS = 64
PER_STATE_SAMPLE = 12
TARGET_SECONDS = 30.0
# (name, force every legal first action, K); few continuations per state show the per-call cost.
WORKLOADS = (("unforced", False, NUM_CONTINUATIONS), ("forced", True, NUM_CONTINUATIONS), ("unforced_k4", False, 4))
SEED = 0


def _network(env, policy_config: PolicyConfig | None = None):
    """The policy (default: the ~100k-parameter one) with a random (non-uniform) action head."""
    init_fn, policy_fn, _ = make_policy(PolicyConfig() if policy_config is None else policy_config, env)
    params = init_fn(jax.random.key(SEED))
    head = params["params"]["action_head"]
    head["kernel"] = 0.3 * jax.random.normal(jax.random.key(SEED + 1), head["kernel"].shape)
    return policy_fn, params


def audit_states(env, policy_fn, params, num_states: int):
    """The first `num_states` live states of the policy's own episodes (leaves `[N, ...]`)."""
    num_episodes = 2 * num_states // env.max_turns + 8
    starts = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(SEED + 2), num_episodes))
    trajectory, _ = rollout(env, policy_fn, params, starts, jax.random.key(SEED + 3), num_turns=env.max_turns)
    live = np.flatnonzero(np.asarray(trajectory.live).reshape(-1))
    if len(live) < num_states:
        raise ValueError(f"only {len(live)} live states in {num_episodes} episodes, need {num_states}")
    flat = jax.tree_util.tree_map(lambda x: np.asarray(x).reshape(-1, *x.shape[2:]), trajectory.states)
    return jax.tree_util.tree_map(lambda x: jax.numpy.asarray(x[live[:num_states]]), flat)


def _take(states, index):
    return jax.tree_util.tree_map(lambda x: x[index:index + 1], states)


def bench_workload(env, policy_fn, params, states, *, force: bool, num_continuations: int, repeats: int) -> dict:
    """Time one batched `branch_returns` call against the same work one state at a time."""
    num_states = states.turn.shape[0]
    options = dict(num_continuations=num_continuations, force_first_actions=force,
                   max_legal_actions=env.length + 1 if force else None)
    sample = np.linspace(0, num_states - 1, min(PER_STATE_SAMPLE, num_states)).astype(int)
    singles = [_take(states, int(i)) for i in sample]
    keys = jax.random.split(jax.random.key(SEED + 4), len(sample))

    cpu_seconds = []  # process CPU time (all threads) of each batched call: on a shared machine,
    # wall time depends on what else runs; CPU time bounds what an idle machine would take.

    def batched():
        start = time.process_time()
        result = jax.block_until_ready(
            branch_returns(env, policy_fn, params, states, jax.random.key(SEED + 5), **options))
        cpu_seconds.append(time.process_time() - start)
        return result

    def one_state_at_a_time():
        return [branch_returns(env, policy_fn, params, single, key, **options) for single, key in zip(singles, keys)]

    timed = time_interleaved({"batched": batched, "per_state": one_state_at_a_time}, repeats=repeats)
    batched_seconds, result = timed["batched"]
    sample_seconds, sample_results = timed["per_state"]
    steps = int(result.counts.env_steps)
    sample_steps = sum(int(r.counts.env_steps) for r in sample_results)
    per_state_seconds = sample_seconds / len(sample) * num_states  # extrapolated to every state
    return {
        "states": num_states,
        "continuations": int(result.counts.episodes),
        "env_steps": steps,
        "policy_evals": int(result.counts.policy_evals),
        "batched_seconds": batched_seconds,
        "batched_steps_per_second": steps / batched_seconds,
        "batched_cpu_seconds": min(cpu_seconds),
        "per_state_sample": len(sample),
        "per_state_sample_seconds": sample_seconds,
        "per_state_steps_per_second": sample_steps / sample_seconds,
        "per_state_seconds_extrapolated": per_state_seconds,
        "meets_target": batched_seconds <= TARGET_SECONDS,
    }


def run(args) -> dict:
    """The `branch` suite: prints a table to stderr, returns rates, `"ratios"` and `"machine"`.

    `args.quick` uses 121 states and one timed round (the 605-state target is then not judged).
    """
    quick = bool(getattr(args, "quick", False))
    num_states = QUICK_STATES if quick else NUM_STATES
    repeats = 1 if quick else 2
    env = make("mad")
    policy_fn, params = _network(env)
    start = time.perf_counter()
    states = audit_states(env, policy_fn, params, num_states)
    results, ratios, rows = {}, {}, []
    for name, force, k in WORKLOADS:
        result = bench_workload(env, policy_fn, params, states, force=force, num_continuations=k, repeats=repeats)
        results[name] = result
        shape = f"{num_states}x{env.length + 1}x{k}" if force else f"{num_states}x{k}"
        ratio = result["per_state_seconds_extrapolated"] / result["batched_seconds"]
        ratios[f"branch:batched_vs_per_state@{shape}"] = ratio
        rows.append([name, shape, result["continuations"], result["env_steps"],
                     f"{result['batched_seconds']:.2f} ({result['batched_cpu_seconds']:.1f} cpu)",
                     format_rate(result["batched_steps_per_second"]),
                     f"{result['per_state_seconds_extrapolated']:.1f} ({result['per_state_sample']} timed)",
                     f"{ratio:.1f}x", "yes" if result["meets_target"] else "NO"])
    machine = machine_description()
    print_table(
        f"branch continuations, {count_parameters(params)}-parameter policy, default MAD, "
        f"best of {repeats} ({machine['cores']} cores, {machine['backend']}, jax {machine['jax']})",
        ["workload", "states x [actions x] K", "continuations", "env steps", "batched s (cpu s)", "steps/s",
         "one state at a time s (extrapolated)", "batched/per-state", f"<= {TARGET_SECONDS:.0f} s"], rows)
    return {
        "suite": "branch",
        "unit": "live continuation environment steps per second",
        "policy_parameters": count_parameters(params),
        "num_continuations": NUM_CONTINUATIONS,
        "target_seconds": TARGET_SECONDS if not quick else None,
        "workloads": results,
        "ratios": ratios,
        "machine": machine,
        "load_average": list(os.getloadavg()),
        "wall_seconds": time.perf_counter() - start,
    }
