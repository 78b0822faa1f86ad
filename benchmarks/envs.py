"""`jaxcredit bench envs`: environment steps per second, JAX vs NumPy vs plain Python, side by side.

For each environment (one `EnvBench` entry) and batch size B, implementations of the same rules
run the same episodes with the same random legal actions: `jax` (jitted and vmapped, one
`lax.scan`), `jax carried` (each turn's action computed at the end of the previous turn, as a
trainer's policy output is), `numpy` (vectorized `[B, ...]` arrays) and `python` (the reference,
on the first `min(B, PYTHON_EPISODES)` episodes). Random numbers are not what is measured: one
table of uniform floats `[T, B]` on a 2**-16 grid is drawn before timing, and each side turns it
into the k-th legal action in its own idiom, so every side takes the same actions. The
rate counts every step over the best per-call time of interleaved rounds. See
docs/benchmarks.md#jaxcredit-bench-envs.

Shape letters: B episodes, T turns, A actions, L observation length.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.benchmarks.arithmetic_numpy import ArithmeticNumpy
from jaxcredit.benchmarks.common import format_rate, machine_description, print_table, time_interleaved
from jaxcredit.benchmarks.mad_numpy import MadNumpy
from jaxcredit.benchmarks.scaling import ENV_SIZES as SCALING_SIZES
from jaxcredit.benchmarks.scaling import QUICK_ENV_SIZES as QUICK_SCALING_SIZES
from jaxcredit.benchmarks.scaling import env_scaling
from jaxcredit.env import Environment
from jaxcredit.envs import ArithmeticReference, MadReference, make

FULL_SIZES = (1024, 16384, 262144)
QUICK_SIZES = (1024, 16384)
FULL_REPEATS = 10
QUICK_REPEATS = 3
PYTHON_EPISODES = 2048
SAMPLE_BLOCKS = (256, 4096, 65536)  # problems drawn per call of the compiled sampler
SEED = 0
_GRID = 2**16  # uniform floats are multiples of 1/_GRID: `u * num_legal` is exact for any A < 128


@dataclasses.dataclass(frozen=True)
class EnvBench:
    """One environment in the suite: adding an environment is adding one of these.

    `numpy_cls` and `reference_cls` are built with the environment's configuration as keywords.
    NumPy contract: `reset(problems) -> batch`, `step(batch, actions [B]) -> batch`, where
    `problems` is the batched problem pytree (`[B, ...]` NumPy leaves) and `batch` has
    `observation` `[B, L]`, `legal_action_mask` bool `[B, A]`, `reward` `[B]`, `turn` `[B]`.
    Reference contract: the one `jaxcredit.conformance` uses (`reset(problem)`, `step(action)`).
    """

    name: str
    make_env: Callable[[], Environment]
    numpy_cls: type
    reference_cls: type


ENV_BENCHES: tuple[EnvBench, ...] = (
    EnvBench("mad", functools.partial(make, "mad"), MadNumpy, MadReference),
    EnvBench("arithmetic", functools.partial(make, "arithmetic"), ArithmeticNumpy, ArithmeticReference),
)


# ----- the random legal action, once per side ---------------------------------------------------
def random_legal_action_jax(observation: jax.Array, legal_action_mask: jax.Array, u: jax.Array) -> jax.Array:
    """int32 `[B]`: the k-th legal action (from 0), `k = floor(u * num_legal)`.

    `observation` `[B, L]` is unused (a learned policy would read it); `legal_action_mask` bool
    `[B, A]` (A < 128); `u` float32 `[B]` in `[0, 1)`. A row with no legal action (an ended
    episode) gets action A, which the absorbing end ignores.
    """
    del observation
    num_actions = legal_action_mask.shape[-1]
    # The mask packed into 32-bit words (one short reduction per word), then the k-th set bit
    # found by population counts: the word holding it, then a binary search of 16, 8, 4, 2, 1
    # bits, all elementwise on `[B]`. A prefix sum over `[B, A]` (a broadcast compare-and-sum,
    # `A**2` per row, or log-step shifted adds) costs several times more under XLA on CPU.
    words, counts = [], []
    for start in range(0, num_actions, 32):
        bits = legal_action_mask[:, start:start + 32].astype(jnp.uint32)
        word = jnp.sum(bits << jnp.arange(bits.shape[1], dtype=jnp.uint32), axis=1, dtype=jnp.uint32)
        words.append(word)
        counts.append(jax.lax.population_count(word).astype(jnp.int32))
    k = jnp.floor(u * sum(counts)).astype(jnp.int32)
    word, base, rest, before = words[0], jnp.zeros_like(k), k, counts[0]
    for w in range(1, len(words)):
        later = k >= before
        word = jnp.where(later, words[w], word)
        base = jnp.where(later, 32 * w, base)
        rest = jnp.where(later, k - before, rest)
        before = before + counts[w]
    for width in (16, 8, 4, 2, 1):
        below = jax.lax.population_count(word & jnp.uint32((1 << width) - 1)).astype(jnp.int32)
        skip = rest >= below
        rest = rest - jnp.where(skip, below, 0)
        base = base + jnp.where(skip, width, 0)
        word = jnp.where(skip, word >> width, word)
    return jnp.where(before == 0, num_actions, base)


def random_legal_action_numpy(observation: np.ndarray, legal_action_mask: np.ndarray, u: np.ndarray) -> np.ndarray:
    """int `[B]`: as `random_legal_action_jax`, in NumPy's fastest idiom (an int8 cumulative sum)."""
    del observation
    rank = np.cumsum(legal_action_mask, axis=1, dtype=np.int8)
    k = (u * rank[:, -1]).astype(np.int8)
    return (rank > k[:, None]).argmax(axis=1)


def random_legal_action_python(observation: list, legal_action_mask: list, u: float) -> int:
    """As `random_legal_action_jax`, for one episode in plain Python."""
    del observation
    k = int(u * sum(legal_action_mask))
    for action, legal in enumerate(legal_action_mask):
        if legal:
            if k == 0:
                return action
            k -= 1
    return len(legal_action_mask)


# ----- the three rollouts (what is timed) -------------------------------------------------------
@functools.cache  # one jitted function per environment: the scaling curve reuses the suite's compiles
def jax_rollout(env: Environment) -> Callable:
    """Jitted `(problems [B, ...], uniforms [T, B]) -> (final State [B], returns [B])`."""

    def rollout(problems, uniforms):
        state = jax.vmap(env.init_problem)(problems)

        def turn(carry, u):
            state, returns = carry
            action = random_legal_action_jax(state.observation, state.legal_action_mask, u)
            state = jax.vmap(env.step)(state, action)
            return (state, returns + state.reward), None

        returns = jnp.zeros(uniforms.shape[1], jnp.float32)
        (state, returns), _ = jax.lax.scan(turn, (state, returns), uniforms)
        return state, returns

    return jax.jit(rollout)


@functools.cache
def jax_carried_rollout(env: Environment) -> Callable:
    """As `jax_rollout`, with turn t's action computed at the end of turn t - 1 (from `uniforms[t]`)
    and carried through the scan."""

    def rollout(problems, uniforms):
        state = jax.vmap(env.init_problem)(problems)
        first = random_legal_action_jax(state.observation, state.legal_action_mask, uniforms[0])

        def turn(carry, u_next):
            state, returns, action = carry
            state = jax.vmap(env.step)(state, action)
            action = random_legal_action_jax(state.observation, state.legal_action_mask, u_next)
            return (state, returns + state.reward, action), None

        returns = jnp.zeros(uniforms.shape[1], jnp.float32)
        following = jnp.concatenate([uniforms[1:], uniforms[:1]])  # the last turn's is drawn and unused
        (state, returns, _), _ = jax.lax.scan(turn, (state, returns, first), following)
        return state, returns

    return jax.jit(rollout)


def numpy_rollout(numpy_env, problems, uniforms: np.ndarray):
    """`(final batch, returns [B])` of the NumPy env over `uniforms` `[T, B]`."""
    batch = numpy_env.reset(problems)
    returns = np.zeros(uniforms.shape[1], np.float32)
    for u in uniforms:
        batch = numpy_env.step(batch, random_legal_action_numpy(batch.observation, batch.legal_action_mask, u))
        returns += batch.reward
    return batch, returns


def python_rollout(reference, problems: list, uniforms: list[list[float]]):
    """`(returns, final turns, final observations)`, one entry per episode, run serially.

    `problems` holds one problem per episode; `uniforms[i]` the T floats of episode i.
    """
    returns, turns, observations = [], [], []
    for problem, draws in zip(problems, uniforms):
        ref = reference.reset(problem)
        total = 0.0
        for u in draws:
            ref.step(random_legal_action_python(ref.observation, ref.legal_action_mask, u))
            total += ref.reward
        returns.append(total)
        turns.append(ref.turn)
        observations.append(ref.observation)
    return returns, turns, observations


@functools.cache  # one jitted sampler per environment: it compiles once per block size
def _problem_sampler(env: Environment) -> Callable:
    """Jitted `key data uint32 [block, 2] -> problems [block, ...]`."""
    return jax.jit(lambda data: jax.vmap(env.sample_problem)(jax.random.wrap_key_data(data)))


def sample_problems(env: Environment, keys: jax.Array):
    """The problems of `vmap(env.sample_problem)(keys)` (NumPy leaves `[B, ...]`), drawn in blocks of
    the largest `SAMPLE_BLOCKS` size <= B (the last block padded), so a batch-size sweep compiles the
    sampler at most `len(SAMPLE_BLOCKS)` times, not once per size."""
    data = np.asarray(jax.random.key_data(keys))
    count = data.shape[0]
    block = max([b for b in SAMPLE_BLOCKS if b <= count] or SAMPLE_BLOCKS[:1])
    padded = np.zeros((-(-count // block) * block, *data.shape[1:]), data.dtype)
    padded[:count] = data
    sampler = _problem_sampler(env)
    blocks = [jax.tree_util.tree_map(np.asarray, sampler(padded[start:start + block]))
              for start in range(0, len(padded), block)]
    return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves)[:count], *blocks)


def draw_inputs(env: Environment, batch_size: int, *, seed: int = SEED):
    """`(problems, uniforms)`: `batch_size` problems (NumPy leaves `[B, ...]`) and the shared
    float table `[T, B]` (float32 on a 2**-16 grid in `[0, 1)`), `T = env.max_turns`."""
    problems = sample_problems(env, jax.random.split(jax.random.key(seed), batch_size))
    rng = np.random.default_rng(seed)
    uniforms = rng.integers(0, _GRID, size=(env.max_turns, batch_size)).astype(np.float32) / np.float32(_GRID)
    return problems, uniforms


def _check_same_episodes(name: str, size: int, jax_out, numpy_out, python_out) -> None:
    """The three sides took the same actions: equal returns, final turns and observations."""
    (jax_state, jax_returns), (numpy_batch, numpy_returns) = jax_out, numpy_out
    returns, turns, observations = (np.asarray(x) for x in python_out)
    n = len(returns)
    sides = {
        "jax": (np.asarray(jax_returns), np.asarray(jax_state.turn), np.asarray(jax_state.observation)),
        "numpy": (numpy_returns, numpy_batch.turn, numpy_batch.observation),
    }
    for side, (r, t, o) in sides.items():
        if not (np.array_equal(r[:n], returns) and np.array_equal(t[:n], turns)
                and np.array_equal(o[:n], observations)):
            raise AssertionError(f"bench envs: {name} {side} and python episodes differ at batch {size}")
    jax_returns, _, jax_observation = sides["jax"]
    if not (np.array_equal(jax_returns, numpy_returns) and np.array_equal(jax_observation, numpy_batch.observation)):
        raise AssertionError(f"bench envs: {name} jax and numpy episodes differ at batch {size}")


def bench_env(spec: EnvBench, size: int, *, repeats: int) -> dict:
    """Steps per second of the three sides of `spec` at batch `size`, checked to do the same work."""
    env = spec.make_env()
    if env.num_actions >= 128:
        raise ValueError(f"bench envs: {spec.name} has {env.num_actions} actions; the int8 action rank needs < 128")
    problems, uniforms = draw_inputs(env, size)
    num_turns = env.max_turns
    sample = min(size, PYTHON_EPISODES)

    jax_problems, jax_uniforms = jax.device_put((problems, uniforms))
    rollout, carried = jax_rollout(env), jax_carried_rollout(env)
    numpy_env = spec.numpy_cls(**env.config())
    reference = spec.reference_cls(**env.config())
    episode_problems = [jax.tree_util.tree_map(lambda x, i=i: x[i], problems) for i in range(sample)]
    episode_uniforms = uniforms[:, :sample].T.tolist()
    timed = time_interleaved({
        "jax": lambda: rollout(jax_problems, jax_uniforms),
        "jax carried": lambda: carried(jax_problems, jax_uniforms),
        "numpy": lambda: numpy_rollout(numpy_env, problems, uniforms),
        "python": lambda: python_rollout(reference, episode_problems, episode_uniforms),
    }, repeats=repeats)
    (jax_s, jax_out), (numpy_s, numpy_out), (python_s, python_out) = timed["jax"], timed["numpy"], timed["python"]
    carried_s, carried_out = timed["jax carried"]

    _check_same_episodes(spec.name, size, jax_out, numpy_out, python_out)
    _check_same_episodes(spec.name, size, carried_out, numpy_out, python_out)
    return {
        "jax": size * num_turns / jax_s,
        "jax_carried": size * num_turns / carried_s,
        "numpy": size * num_turns / numpy_s,
        "python": sample * num_turns / python_s,
        "python_episodes": sample,
        "turns": num_turns,
    }


def _sizes(args) -> tuple[int, ...]:
    sizes = getattr(args, "sizes", None)
    if sizes is None:
        return QUICK_SIZES if args.quick else FULL_SIZES
    if not sizes or any(not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"bench envs sizes must be positive integers, got {sizes!r}")
    return tuple(sizes)


def run(args) -> dict:
    """The `envs` suite: prints a table to stderr, returns rates, `"ratios"` and `"machine"`.

    `args.quick` selects batches 1,024 and 16,384 with fewer repeats; `args.sizes` (a list of
    ints, optional) overrides the batch sizes.
    """
    sizes = _sizes(args)
    repeats = QUICK_REPEATS if args.quick else FULL_REPEATS
    rates, ratios, python_episodes, rows = {}, {}, {}, []
    for spec in ENV_BENCHES:
        for size in sizes:
            result = bench_env(spec, size, repeats=repeats)
            for side in ("jax", "jax_carried", "numpy", "python"):
                rates[f"{spec.name}:{side}@{size}"] = result[side]
            python_episodes[f"{spec.name}@{size}"] = result["python_episodes"]
            ratios[f"{spec.name}:jax_vs_numpy@{size}"] = result["jax"] / result["numpy"]
            ratios[f"{spec.name}:jax_vs_python@{size}"] = result["jax"] / result["python"]
            ratios[f"{spec.name}:jax_carried_vs_numpy@{size}"] = result["jax_carried"] / result["numpy"]
            python = f"{format_rate(result['python'])} ({result['python_episodes']} ep)"
            rows.append([spec.name, size, format_rate(result["jax"]), format_rate(result["jax_carried"]),
                         format_rate(result["numpy"]), python, f"{result['jax'] / result['numpy']:.1f}x",
                         f"{result['jax_carried'] / result['numpy']:.1f}x", f"{result['jax'] / result['python']:.1f}x"])
    machine = machine_description()
    print_table(
        f"env steps/s, random legal actions, T = max_turns, best of {repeats} "
        f"({machine['cores']} cores, {machine['backend']}, jax {machine['jax']})",
        ["env", "batch", "jax", "jax (carried)", "numpy", "python (serial sample)", "jax/numpy", "carried/numpy",
         "jax/python"], rows)
    scaling_sizes = tuple(sizes) if getattr(args, "sizes", None) is not None else (
        QUICK_SCALING_SIZES if args.quick else SCALING_SIZES)
    curves = env_scaling(scaling_sizes, repeats=repeats)
    return {
        "suite": "envs",
        "unit": "environment steps per second",
        "sizes": list(sizes),
        "repeats": repeats,
        "steps_per_second": rates,
        "python_episodes": python_episodes,
        "ratios": ratios,
        "scaling": {"batch": curves},
        "machine": machine,
    }
