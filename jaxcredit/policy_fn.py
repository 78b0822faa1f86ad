"""The one policy contract every consumer uses (rollouts, branches, the solver, training).

A policy is `policy_fn(params, observation, legal_action_mask) -> logits`, batched over any
leading axes: `observation` int32 `[..., L]`, `legal_action_mask` bool `[..., A]`, logits
float32 `[..., A]`. Illegal actions are masked by `masked_logits` / `action_probabilities`,
never by the policy itself, so the uniform policy and a network are interchangeable.

What the policy reads is its input (`policy_input`). A plain `PolicyFn` reads the observation
tokens of the state. An `AfterstatePolicy` reads afterstates instead: its `observation` argument
is the encoding of the state each action leads to, int32 `[..., A * W]`
(`jaxcredit.afterstate.afterstate_observations`; with its `lookahead`, each afterstate's legal
successors summarized too), and it scores each legal action's afterstate with one network.
Consumers never build either input by hand: `jaxcredit.afterstate.policy_observations(env,
policy_fn, states)` gives what `policy_fn` reads at `states`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.packed_rows import packed_rows

PolicyFn = Callable[[Any, jax.Array, jax.Array], jax.Array]

_MASKED = -1e9  # finite, so no NaN appears even when every action is masked


def uniform_policy_fn(params: Any, observation: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """The uniform reference policy: equal logits for every action (`params` is ignored)."""
    del params, observation
    return jnp.zeros(legal_action_mask.shape, jnp.float32)


def masked_logits(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: logits with illegal actions pushed to a large negative value.

    A row with no legal action (an ended episode) keeps its logits unmasked, so sampling and
    probabilities stay finite; what is sampled there is ignored by the absorbing end.
    """
    any_legal = legal_action_mask.any(axis=-1, keepdims=True)
    keep = legal_action_mask | ~any_legal
    return jnp.where(keep, logits, _MASKED).astype(jnp.float32)


def action_probabilities(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: softmax over legal actions; exactly 0 on illegal ones (if any legal)."""
    any_legal = legal_action_mask.any(axis=-1, keepdims=True)
    probs = jax.nn.softmax(masked_logits(logits, legal_action_mask), axis=-1)
    return jnp.where(legal_action_mask | ~any_legal, probs, 0.0)


def log_probabilities(logits: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
    """float32 `[..., A]`: log-softmax over legal actions (finite everywhere)."""
    return jax.nn.log_softmax(masked_logits(logits, legal_action_mask), axis=-1)


@dataclasses.dataclass(frozen=True)
class AfterstatePolicy:
    """A `PolicyFn` that scores afterstates: `logits[a]` is `score_fn` of the state action `a` leads to.

    Attributes:
      score_fn: `score_fn(params, afterstate int32 [..., W]) -> float32 [...]`, one score per
        afterstate encoding (`jaxcredit.afterstate.encode_afterstate`).
      width: W, the tokens of one afterstate encoding.
      lookahead: 0, or 1 for encodings that summarize each afterstate's legal successors
        (`jaxcredit.afterstate`; what `policy_observations` computes for this policy).
      logits_transform: None, or a function of `(logits [..., A], legal_action_mask [..., A])`
        applied last (e.g. the greedy policy of evaluation); a module-level function, so equal
        policies hash equal under `jax.jit`'s static arguments.
      packed: score only the legal actions' afterstates (`jaxcredit.packed_rows`: the work follows
        the legal count, about 30% of the rows on arithmetic with 3 numbers), the default; False
        scores every row, the dense reference. Both give the same logits and gradients up to float
        summation order: an illegal action's logit is masked either way.

    Calling it is the `PolicyFn` contract with `observation` int32 `[..., A * W]`: the `A`
    afterstate encodings of each state, concatenated. Frozen and hashable (a static argument).
    """

    score_fn: Callable[[Any, jax.Array], jax.Array]
    width: int
    lookahead: int = 0
    logits_transform: Callable[[jax.Array, jax.Array], jax.Array] | None = None
    packed: bool = True

    policy_input = "afterstate"

    def __call__(self, params: Any, observation: jax.Array, legal_action_mask: jax.Array) -> jax.Array:
        afterstates = observation.reshape(*legal_action_mask.shape, self.width)
        if self.packed:
            rows = afterstates.reshape(-1, self.width)
            scores = packed_rows(self.score_fn, params, rows, legal_action_mask.reshape(-1))
            scores = scores.reshape(legal_action_mask.shape)
        else:
            scores = self.score_fn(params, afterstates)
        logits = masked_logits(scores, legal_action_mask)
        if self.logits_transform is not None:
            logits = self.logits_transform(logits, legal_action_mask)
        return logits


def policy_input_of(policy_fn: PolicyFn) -> str:
    """`"afterstate"` for an `AfterstatePolicy`, `"tokens"` for any other `PolicyFn`."""
    return getattr(policy_fn, "policy_input", "tokens")


def afterstate_lookahead_of(policy_fn: PolicyFn) -> int:
    """The steps an `AfterstatePolicy` looks ahead past each afterstate (0 or 1); 0 for any other `PolicyFn`."""
    return int(getattr(policy_fn, "lookahead", 0)) if policy_input_of(policy_fn) == "afterstate" else 0
