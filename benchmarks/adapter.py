"""`jaxcredit bench adapter`: the gymnax adapter's auto-reset step against the raw batched step.

For each environment (default MAD and arithmetic) and batch size B, side by side in one run:
`raw` (`jax.vmap(env.step)`, no reset), `adapter` (`GymnaxAdapter(env, encoding="tokens")` with
automatic reset from the pool: the same observation, so the ratio is the price of the reset and
the gymnax interface), `adapter one_hot` (the default encoding), `fresh` (`reset_pool=0`, at
B = 4,096 only) and `raw carried` / `adapter carried` (each step's action computed at the end of
the previous step, as a trainer's policy output is). Each side runs T = 2 x `max_turns` steps in
one jitted `lax.scan`, from the same problems with the same random legal actions, and reads what a
trainer reads. Steps per second count `B x T`; the target is `adapter / raw` >= 0.5 at B = 4,096.
See docs/benchmarks.md#jaxcredit-bench-adapter.

Shape letters: B episodes, T steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.benchmarks.common import format_rate, machine_description, print_table, time_interleaved
from jaxcredit.benchmarks.envs import random_legal_action_jax
from jaxcredit.env import Environment
from jaxcredit.envs import make

FULL_SIZES = (1024, 4096, 16384)
QUICK_SIZES = (4096,)
FULL_REPEATS = 10
QUICK_REPEATS = 3
FRESH_SIZE = 4096  # the fresh-draw side is timed at this batch only (it is slow)
RESET_POOL = 65_536  # the adapter's default pool size
ENVIRONMENTS = ("mad", "arithmetic")
SEED = 0


def _scan_rollout(step, observe, carried: bool):
    """Jitted `(states [B], uniforms [T + 1, B], keys [T, B]) -> (states, summary)` over `T` steps.

    `step(states, actions, keys) -> (states, observation, reward, ended)`; `observe(states) ->
    (observation, legal mask)`. Step t takes the k-th legal action of `uniforms[t]`, computed inside
    the step (`carried=False`) or at the end of step t - 1 and carried (`carried=True`, from the
    observation and legal mask the previous step returned); `uniforms[T]` is unused.
    """

    def rollout(states, uniforms, keys):
        def turn(carry, inputs):
            states, total, action = carry
            u, u_next, step_keys = inputs
            if not carried:
                action = random_legal_action_jax(*observe(states), u)
            states, observation, reward, ended = step(states, action, step_keys)
            total = total + observation.sum(dtype=jnp.float32) + reward.sum() + ended.sum()
            if carried:
                action = random_legal_action_jax(*observe(states), u_next)
            return (states, total, action), None

        first = random_legal_action_jax(*observe(states), uniforms[0])
        (states, total, _), _ = jax.lax.scan(turn, (states, jnp.zeros((), jnp.float32), first),
                                             (uniforms[:-1], uniforms[1:], keys))
        return states, total

    return jax.jit(rollout)


def _raw_rollout(env: Environment, carried: bool = False):
    """`_scan_rollout` of `jax.vmap(env.step)` over jaxcredit states `[B]`."""

    def step(states, action, keys):
        del keys
        states = jax.vmap(env.step)(states, action)
        return states, states.observation, states.reward, states.done

    return _scan_rollout(step, lambda states: (states.observation, states.legal_action_mask), carried)


def _adapter_rollout(adapter, params, carried: bool = False):
    """`_scan_rollout` of `jax.vmap(adapter.step)` over gymnax states `[B]`."""
    batch_step = jax.vmap(adapter.step, in_axes=(0, 0, 0, None))

    def step(states, action, keys):
        observation, states, reward, terminated, truncated, _ = batch_step(keys, states, action, params)
        return states, observation, reward, terminated | truncated

    return _scan_rollout(step, lambda states: (states.state.observation, states.state.legal_action_mask), carried)


def bench_adapter(name: str, size: int, params, *, repeats: int, fresh: bool) -> dict:
    """Steps per second of each side for environment `name` at batch `size`; `params` are the
    adapter params with the pool (they do not depend on the encoding)."""
    from jaxcredit.envs.gymnax_adapter import GymnaxAdapter, GymnaxState

    env = make(name)
    num_steps = 2 * env.max_turns
    rng = np.random.default_rng(SEED)
    uniforms = jnp.asarray(rng.integers(0, 2**16, size=(num_steps + 1, size)).astype(np.float32) / 2**16)
    keys = jax.random.split(jax.random.key(SEED), num_steps * size).reshape(num_steps, size)
    start_keys = jax.random.split(jax.random.key(SEED + 1), size)
    raw_states = jax.jit(jax.vmap(env.init))(start_keys)

    sides = {"raw": (_raw_rollout(env), raw_states), "raw carried": (_raw_rollout(env, carried=True), raw_states)}
    variants = {"adapter": ({"encoding": "tokens"}, params, False),
                "adapter one_hot": ({"encoding": "one_hot"}, params, False),
                "adapter carried": ({"encoding": "tokens"}, params, True)}
    if fresh:
        variants["fresh"] = ({"encoding": "tokens", "reset_pool": 0}, None, False)
    adapter_states = GymnaxState(state=raw_states, time=raw_states.turn)  # the same first episodes
    for side, (options, side_params, carried) in variants.items():
        adapter = GymnaxAdapter(env, **options)
        sides[side] = (_adapter_rollout(adapter, side_params, carried), adapter_states)

    def call(side):
        fn, states = sides[side]
        return lambda: fn(states, uniforms, keys)

    timed = time_interleaved({side: call(side) for side in sides if side != "fresh"}, repeats=repeats)
    if fresh:  # slow: one timed call
        timed.update(time_interleaved({"fresh": call("fresh")}, repeats=1, min_sample_seconds=0.0))
    return {"rates": {side: size * num_steps / timed[side][0] for side in sides}, "steps": num_steps}


def _sizes(args) -> tuple[int, ...]:
    sizes = getattr(args, "sizes", None)
    if sizes is None:
        return QUICK_SIZES if getattr(args, "quick", False) else FULL_SIZES
    if not sizes or any(not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"bench adapter sizes must be positive integers, got {sizes!r}")
    return tuple(sizes)


def run(args) -> dict:
    """The `adapter` suite: prints a table to stderr, returns rates, `"ratios"` and `"machine"`."""
    try:
        import gymnax  # noqa: F401
    except ImportError:
        raise ValueError("bench adapter needs gymnax: pip install -e '.[gymnax]'") from None
    quick = bool(getattr(args, "quick", False))
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    from jaxcredit.envs.gymnax_adapter import GymnaxAdapter

    sizes = _sizes(args)
    fresh_size = FRESH_SIZE if FRESH_SIZE in sizes else sizes[0]
    rates, ratios, rows = {}, {}, []
    for name in ENVIRONMENTS:
        params = GymnaxAdapter(make(name), reset_pool=RESET_POOL).make_params(jax.random.key(SEED + 2))  # drawn once
        for size in sizes:
            result = bench_adapter(name, size, params, repeats=repeats, fresh=not quick and size == fresh_size)
            side_rates = result["rates"]
            for side, rate in side_rates.items():
                rates[f"{name}:{side.replace(' ', '_')}@{size}"] = rate
            raw = side_rates["raw"]
            ratios[f"{name}:adapter_vs_raw@{size}"] = side_rates["adapter"] / raw
            ratios[f"{name}:adapter_one_hot_vs_raw@{size}"] = side_rates["adapter one_hot"] / raw
            carried = side_rates["adapter carried"] / side_rates["raw carried"]
            ratios[f"{name}:adapter_carried_vs_raw_carried@{size}"] = carried
            fresh = side_rates.get("fresh")
            if fresh is not None:
                ratios[f"{name}:fresh_vs_raw@{size}"] = fresh / raw
            rows.append([name, size, format_rate(raw), format_rate(side_rates["adapter"]),
                         format_rate(side_rates["adapter one_hot"]), "-" if fresh is None else format_rate(fresh),
                         f"{side_rates['adapter'] / raw:.2f}", f"{side_rates['adapter one_hot'] / raw:.2f}",
                         format_rate(side_rates["raw carried"]), format_rate(side_rates["adapter carried"]),
                         f"{carried:.2f}"])
    machine = machine_description()
    print_table(
        f"gymnax adapter auto-reset step vs raw vmap(env.step), env steps/s, T = 2 x max_turns, best of "
        f"{repeats} ({machine['cores']} cores, {machine['backend']}, jax {machine['jax']})",
        ["env", "batch", "raw", "adapter (tokens)", "adapter (one_hot)", "fresh draws", "adapter/raw",
         "one_hot/raw", "raw (carried)", "adapter (carried)", "carried/carried"], rows)
    return {
        "suite": "adapter",
        "unit": "environment steps per second",
        "sizes": list(sizes),
        "repeats": repeats,
        "steps_per_second": rates,
        "ratios": ratios,
        "machine": machine,
    }
