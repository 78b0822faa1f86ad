"""Held-out problems: a fixed split of every environment's problem space into training,
validation and evaluation parts, so evaluation never scores a problem the policy trained on.

A problem's part is a pure function of the problem itself: its canonical form
(`env.problem_identity`) is hashed to 32 bits (FNV-1a over the int32 words, then the murmur3
finaliser), and the hash, read as a fraction `u` of 2^32, decides: `u < f / 2` evaluation,
`f / 2 <= u < f` validation, otherwise training, for the holdout fraction `f`. Any generator of
problems can be restricted to one part (the jittable training stream by rejection among a fixed
number of candidates, host-side evaluation sets by filtering a longer seeded stream), and the
parts stay disjoint whoever draws from them. See docs/training.md#held-out-evaluation.

Shape letters: K words of a problem's identity, N problems, C candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import Environment

SPLITS = ("train", "validation", "evaluation")
TRAIN, VALIDATION, EVALUATION = range(3)
NUM_CANDIDATES = 16  # training draws: all 16 fall outside the training part with probability f^16
_FNV_OFFSET, _FNV_PRIME = 2166136261, 16777619


def _check_fraction(holdout_fraction) -> float:
    ok = isinstance(holdout_fraction, (int, float)) and not isinstance(holdout_fraction, bool)
    if not ok or not 0 < holdout_fraction < 1:
        raise ValueError(f"holdout_fraction must be in (0, 1), got {holdout_fraction!r}")
    return float(holdout_fraction)


def identity_hash(identity: jax.Array) -> jax.Array:
    """uint32 `[]`: the hash of one problem's identity int32 `[K]` (vmap it for a batch)."""
    words = jnp.asarray(identity).astype(jnp.uint32)
    h = jnp.uint32(_FNV_OFFSET)
    for k in range(words.shape[0]):
        h = (h ^ words[k]) * jnp.uint32(_FNV_PRIME)
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def split_of(env: Environment, problem: Any, *, holdout_fraction: float) -> jax.Array:
    """int32 `[]`: `TRAIN` (0), `VALIDATION` (1) or `EVALUATION` (2) for one problem."""
    fraction = _check_fraction(holdout_fraction)
    u = identity_hash(env.problem_identity(problem)).astype(jnp.float32) / jnp.float32(2.0**32)
    return jnp.where(u < fraction / 2, EVALUATION, jnp.where(u < fraction, VALIDATION, TRAIN)).astype(jnp.int32)


def sample_in_split(env: Environment, key: jax.Array, split: int, *, holdout_fraction: float,
                    sample: Callable[[jax.Array], Any] | None = None,
                    num_candidates: int = NUM_CANDIDATES) -> Any:
    """One problem of part `split`, drawn by rejection (jittable, fixed shapes); consumes `key`.

    Draws `num_candidates` problems with `sample` (default `env.sample_problem`) from keys split
    off `key` and returns the first in `split`: exactly a draw from `sample`'s distribution
    conditioned on the part. If none is in it (for the training part, probability
    `holdout_fraction ** num_candidates`, about 7e-12 at 0.2), the first candidate is returned.
    """
    sample = env.sample_problem if sample is None else sample
    candidates = jax.vmap(sample)(jax.random.split(key, num_candidates))
    parts = jax.vmap(lambda p: split_of(env, p, holdout_fraction=holdout_fraction))(candidates)
    first = jnp.argmax(parts == split)
    return jax.tree_util.tree_map(lambda x: x[first], candidates)


def split_of_batch(env: Environment, problems: Any, *, holdout_fraction: float) -> np.ndarray:
    """Host: int32 `[N]`, the part of each problem of a batch (leaves `[N, ...]`)."""
    fn = jax.jit(jax.vmap(lambda p: split_of(env, p, holdout_fraction=holdout_fraction)))
    return np.asarray(fn(problems))


def first_in_split(env: Environment, draw: Callable[[int], Any], n: int, split: int, *,
                   holdout_fraction: float) -> Any:
    """Host: the first `n` problems of part `split` in the seeded stream `draw(m)` (the first `m`
    problems of a fixed stream, leaves `[m, ...]`; a longer stream must extend a shorter one).

    Draws longer prefixes (up to 32 times the draws the part's nominal share `holdout_fraction / 2`
    needs) until `n` problems of the part are found, else raises `ValueError`: the part of a small
    problem space may hold few problems, or none.
    """
    fraction = _check_fraction(holdout_fraction)
    m = max(64, int(2 * n / (fraction / 2)) + 64)
    max_draws = 16 * m
    while True:
        m = min(m, max_draws)
        drawn = draw(m)
        keep = np.flatnonzero(split_of_batch(env, drawn, holdout_fraction=fraction) == split)
        if keep.size >= n:
            return _rows(drawn, keep[:n])
        if m >= max_draws:
            raise ValueError(f"only {keep.size} of {m} drawn problems fall in the {SPLITS[split]} part "
                             f"(holdout_fraction {fraction}); the problem space is too small to hold out {n} "
                             f"problems: raise holdout_fraction or use a larger environment")
        m *= 4


def _rows(tree: Any, index: np.ndarray) -> Any:
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], tree)


def distinct_identities(env: Environment, problems: Any) -> set[bytes]:
    """Host: the set of distinct problem identities of a batch (leaves `[N, ...]`), as bytes."""
    identities = np.asarray(jax.jit(jax.vmap(env.problem_identity))(problems), np.int32)
    return {row.tobytes() for row in identities}
