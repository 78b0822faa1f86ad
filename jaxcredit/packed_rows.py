"""A network applied to the kept rows of a fixed-shape batch only, with the same gradient.

An afterstate policy scores one encoding per action, but most actions of a state are illegal,
and an illegal row's score is masked away. `packed_rows(fn, params, rows, keep)` gathers the kept
rows to the front and applies `fn` to them `chunk` at a time in a `lax.while_loop` that stops
after the last one, so the work follows the number of kept rows, not the batch's fixed shape. The
rows not kept score 0. Reverse mode goes through a `jax.custom_vjp` whose backward pass walks the
same chunks again, recomputing each chunk's forward pass inside `jax.vjp`, so the gradient with
respect to `params` equals the dense one up to float summation order. `rows` and `keep` get no
gradient.

Shape letters: N rows, W tokens per row, C rows per chunk.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

MIN_CHUNK = 64  # rows per chunk at least: small enough to skip most illegal rows, large enough for the matmuls
CHUNKS = 16  # a batch is cut into about this many chunks when it is large


def chunk_size(rows: int) -> int:
    """C for a batch of `rows` rows: `rows / CHUNKS` rounded up, at least `MIN_CHUNK`, at most `rows`."""
    return min(rows, max(MIN_CHUNK, -(-rows // CHUNKS)))


def plan_chunks(keep: jax.Array, chunk: int) -> tuple[jax.Array, jax.Array]:
    """`(order int32 [ceil(N / C) * C], count int32 [])`: the kept rows' indices first (in row order),
    padded to whole chunks, and how many rows are kept (`keep` bool `[N]`)."""
    n = keep.shape[0]
    order = jnp.argsort(~keep, stable=True).astype(jnp.int32)
    return jnp.pad(order, (0, -(-n // chunk) * chunk - n)), jnp.sum(keep, dtype=jnp.int32)


def chunk_at(order: jax.Array, count: jax.Array, start: jax.Array, chunk: int) -> tuple[jax.Array, jax.Array]:
    """`(index int32 [C], valid bool [C])`: the rows of the chunk starting at `start`, and which are kept."""
    index = jax.lax.dynamic_slice(order, (start,), (chunk,))
    return index, start + jnp.arange(chunk) < count


def _as_float32(tree):
    return jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), tree)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 4))
def _packed(fn: Callable, params: Any, rows: jax.Array, keep: jax.Array, chunk: int) -> jax.Array:
    order, count = plan_chunks(keep, chunk)

    def body(carry):
        start, out = carry
        index, valid = chunk_at(order, count, start, chunk)
        where = jnp.where(valid, index, rows.shape[0])  # rows not kept: dropped
        return start + chunk, jax.tree_util.tree_map(lambda o, x: o.at[where].set(x.astype(o.dtype), mode="drop"),
                                                     out, fn(params, rows[index]))

    shapes = jax.eval_shape(fn, params, rows[:chunk])
    out = jax.tree_util.tree_map(lambda x: jnp.zeros(rows.shape[:1] + x.shape[1:], jnp.float32), shapes)
    return jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), out))[1]


def _packed_fwd(fn, params, rows, keep, chunk):
    return _packed(fn, params, rows, keep, chunk), (params, rows, keep)


def _packed_bwd(fn, chunk, residuals, cotangent):
    params, rows, keep = residuals
    order, count = plan_chunks(keep, chunk)

    def body(carry):
        start, total = carry
        index, valid = chunk_at(order, count, start, chunk)
        _, pullback = jax.vjp(lambda p: _as_float32(fn(p, rows[index])), params)
        (grads,) = pullback(jax.tree_util.tree_map(
            lambda c: jnp.where(valid.reshape(-1, *([1] * (c.ndim - 1))), c[index], 0.0), cotangent))
        return start + chunk, jax.tree_util.tree_map(jnp.add, total, grads)

    zero = jax.tree_util.tree_map(jnp.zeros_like, params)
    _, total = jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), zero))
    return total, None, None


_packed.defvjp(_packed_fwd, _packed_bwd)


def packed_rows(fn: Callable[[Any, jax.Array], jax.Array], params: Any, rows: jax.Array, keep: jax.Array,
                *, chunk: int | None = None) -> jax.Array:
    """float32 `[N, ...]`: `fn(params, rows[i])` where `keep[i]`, else 0, computing only the kept rows.

    `fn(params, rows int32 [C, W]) -> [C, ...]` (or a pytree of such arrays, returned the same
    way) maps a batch of rows, any `jax.grad`-able function of `params`; `rows` int32 `[N, W]`,
    `keep` bool `[N]`; `chunk` is C (default `chunk_size(N)`).
    Differentiable in `params` (the gradient of `fn` on the kept rows); jittable and vmappable.
    """
    chunk = chunk_size(rows.shape[0]) if chunk is None else int(chunk)
    if chunk < 1:
        raise ValueError(f"packed_rows: chunk must be >= 1, got {chunk}")
    return _packed(fn, params, rows, keep, chunk)
