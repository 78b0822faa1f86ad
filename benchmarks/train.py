"""`jaxcredit bench train`: environment steps per second through the whole training step, and
the policy forward pass's FLOP/s as a fraction of this machine's dense matrix-multiply FLOP/s.

Every number comes from the same run: one jitted training iteration per arm (outcome and mc on
default MAD, the ~100k-parameter policy), timed with the shared interleaved timer; the forward
pass over one iteration's observations, its FLOPs counted by XLA's cost analysis; and a dense
float32 matrix multiply (2n^3 FLOPs) as the machine's reference rate.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcredit.benchmarks.common import format_rate, machine_description, print_table, time_interleaved
from jaxcredit.rollout import rollout
from jaxcredit.train import config_from_dict, make_train


def _flops(compiled) -> float:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax returns one dict per computation
        analysis = analysis[0]
    return float(analysis.get("flops", 0.0))


def run(args) -> dict:
    """Time the training step of each arm and the forward pass vs a dense matmul."""
    quick = bool(getattr(args, "quick", False))
    repeats = 3 if quick else 5
    arms = {"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "mc_continuations": 4}}
    calls, env_steps, forward = {}, {}, None
    for arm, fields in arms.items():
        trainer = make_train(config_from_dict({**fields, "num_seeds": 1, "eval_problems": 16}))
        iterate = jax.jit(trainer.iterate)
        state = trainer.init(jnp.int32(0))
        env_steps[arm] = int(jax.block_until_ready(iterate(state)).ledger.total_env_steps)
        calls[arm] = functools.partial(iterate, state)
        if forward is None:
            _, starts = trainer.sample_episodes(state)
            trajectory, _ = rollout(trainer.env, trainer.policy_fn, state.params, starts, jax.random.key(1),
                                    num_turns=trainer.env.max_turns)
            forward = (jax.jit(trainer.policy_fn), state.params, trajectory.observation, trajectory.legal_action_mask)
    timing = time_interleaved(calls, repeats=repeats)
    seconds = {arm: timing[arm][0] for arm in arms}
    steps_per_second = {arm: env_steps[arm] / seconds[arm] for arm in arms}

    forward_fn, params, observation, mask = forward
    forward_flops = _flops(forward_fn.lower(params, observation, mask).compile())
    n = 512 if quick else 1024
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    matmul = jax.jit(jnp.matmul)
    timing = time_interleaved({"forward": lambda: forward_fn(params, observation, mask),
                               "matmul": lambda: matmul(a, b)}, repeats=repeats)
    forward_rate = forward_flops / timing["forward"][0]
    matmul_rate = 2 * n**3 / timing["matmul"][0]

    rows = [[arm, f"{seconds[arm] * 1e3:.1f} ms", format_rate(steps_per_second[arm])] for arm in arms]
    print_table("training step (default MAD, 64 episodes/iteration, ~100k-parameter policy)",
                ["arm", "time/iteration", "env steps/s"], rows)
    print_table("forward pass vs dense matmul", ["what", "FLOP/s"],
                [[f"forward [{observation.shape[0]}x{observation.shape[1]} sequences]", format_rate(forward_rate)],
                 [f"matmul {n}x{n} float32", format_rate(matmul_rate)],
                 ["forward / matmul", f"{forward_rate / matmul_rate:.3f}"]])
    return {
        "suite": "train",
        "steps_per_second": {f"train:{arm}": steps_per_second[arm] for arm in arms},
        "seconds_per_iteration": {f"train:{arm}": seconds[arm] for arm in arms},
        "flops_per_second": {"forward": forward_rate, f"matmul@{n}": matmul_rate},
        "forward_flops": forward_flops,
        "ratios": {f"train:forward_vs_matmul@{n}": forward_rate / matmul_rate,
                   "train:outcome_vs_mc_steps_per_second": steps_per_second["outcome"] / steps_per_second["mc"]},
        "machine": machine_description(),
    }
