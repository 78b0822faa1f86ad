"""Observation encodings for the adapters: what a trainer's network reads instead of raw token ids.

A jaxcredit observation is int32 `[L]` token ids in `[0, V)` (V = `env.vocab_size`). Token ids
are names, not magnitudes, so an MLP fed the ids learns little. The adapters encode:

- `"one_hot"` float32 `[L * V]`: position i's token t sets entry `i * V + t` to 1. What an MLP
  needs; the adapters' default.
- `"tokens"` int32 `[L]`: the raw ids (a sequence model with its own embedding table).
- `"embedding"` int32 `[L]`: `i * V + token_i`, ids in `[0, L * V)`, so one embedding table of
  `L * V` rows gives every (position, token) pair its own vector.

See docs/environments.md#observation-encodings (with rejax PPO's greedy success on each).

Shape letters: L observation length, V vocabulary size.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import Environment

ENCODINGS = ("one_hot", "tokens", "embedding")


def check_encoding(encoding: str) -> None:
    """Raise `ValueError` naming an unknown encoding and the choices."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown observation encoding {encoding!r}; choices: {', '.join(ENCODINGS)}")


def encode(env: Environment, tokens: jax.Array, encoding: str) -> jax.Array:
    """The encoded observation of int32 token ids `[L]` (see the module docstring)."""
    vocab = env.vocab_size
    if encoding == "one_hot":
        return jax.nn.one_hot(tokens, vocab, dtype=jnp.float32).reshape(-1)
    if encoding == "embedding":
        return tokens + vocab * jnp.arange(tokens.shape[-1], dtype=jnp.int32)
    return tokens


def encoded_spec(env: Environment, encoding: str) -> tuple[tuple[int, ...], np.dtype, int, int]:
    """`(shape, dtype, low, high)` of the encoded observation (bounds inclusive)."""
    length, vocab = env.observation_length, env.vocab_size
    if encoding == "one_hot":
        return (length * vocab,), np.dtype(np.float32), 0, 1
    if encoding == "embedding":
        return (length,), np.dtype(np.int32), 0, length * vocab - 1
    return (length,), np.dtype(np.int32), 0, vocab - 1
