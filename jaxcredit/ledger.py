"""The budget ledger: every environment step and policy evaluation, by what it was spent on.

Rollouts, branch continuations and the solver each return a `Counts` of what they spent;
`record(ledger, counts, account=...)` adds them to one of four accounts: `main` (the attempts the
policy learns from), `label` (work that produces credit labels), `critic` (data for a learned
value model) and `predictor` (the offline predictor's one dataset). `afterstate_env_steps`
counts, whatever the account, the steps an afterstate policy spends computing its input, and
`total_env_steps` includes them. Only live work is counted. Counters are int32, exact up to
`MAX_COUNT = 2**31 - 1`; past it a counter saturates and sets `overflowed`, and `ledger_to_dict`
raises `ValueError`. See docs/training.md#the-budget-ledger-jaxcreditledgerpy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

MAX_COUNT = 2**31 - 1
ACCOUNTS = ("main", "label", "critic", "predictor")


def _zero_count() -> jax.Array:
    return jnp.zeros((), jnp.int32)


@struct.dataclass
class Counts:
    """What one call spent (int32 scalars, or batched along leading axes).

    Attributes:
      env_steps: environment steps taken on live episodes.
      policy_evals: policy forward passes on live states (one per sampled action).
      episodes: episodes (or continuations) that were live at the start of the call.
      afterstate_env_steps: environment steps an afterstate policy spent computing its input
        (one per legal action of each state it was evaluated on; 0 for a token policy).
    """

    env_steps: jax.Array
    policy_evals: jax.Array
    episodes: jax.Array
    afterstate_env_steps: jax.Array = struct.field(default_factory=_zero_count)

    @classmethod
    def zeros(cls) -> Counts:
        """No work."""
        zero = jnp.zeros((), jnp.int32)
        return cls(zero, zero, zero, zero)

    def __add__(self, other: Counts) -> Counts:
        return jax.tree_util.tree_map(jnp.add, self, other)


@struct.dataclass
class Ledger:
    """int32 counters of the work spent, by account; `overflowed` is set if any counter saturated."""

    main_env_steps: jax.Array
    main_policy_evals: jax.Array
    main_episodes: jax.Array
    label_env_steps: jax.Array
    label_policy_evals: jax.Array
    critic_env_steps: jax.Array
    critic_policy_evals: jax.Array
    predictor_env_steps: jax.Array
    predictor_policy_evals: jax.Array
    afterstate_env_steps: jax.Array
    overflowed: jax.Array

    @property
    def total_env_steps(self) -> jax.Array:
        """int32 `[]`: environment steps over all accounts, afterstate steps included (saturating
        like the counters)."""
        total, _ = _saturating_add(self.main_env_steps, self.label_env_steps)
        total, _ = _saturating_add(total, self.critic_env_steps)
        total, _ = _saturating_add(total, self.predictor_env_steps)
        return _saturating_add(total, self.afterstate_env_steps)[0]

    @property
    def total_policy_evals(self) -> jax.Array:
        """int32 `[]`: policy evaluations over all accounts (saturating like the counters)."""
        total, _ = _saturating_add(self.main_policy_evals, self.label_policy_evals)
        total, _ = _saturating_add(total, self.critic_policy_evals)
        return _saturating_add(total, self.predictor_policy_evals)[0]


def init_ledger() -> Ledger:
    """An empty ledger (every counter zero)."""
    zero = jnp.zeros((), jnp.int32)
    counters = {name: zero for name in Ledger.__dataclass_fields__ if name != "overflowed"}
    return Ledger(**counters, overflowed=jnp.zeros((), bool))


def _saturating_add(count: jax.Array, delta: jax.Array) -> tuple[jax.Array, jax.Array]:
    count = jnp.asarray(count, jnp.int32)
    delta = jnp.asarray(delta, jnp.int32)
    over = delta > MAX_COUNT - count  # both are non-negative, so this comparison cannot wrap
    return jnp.where(over, MAX_COUNT, count + jnp.where(over, 0, delta)), over


def record(ledger: Ledger, counts: Counts, *, account: str) -> Ledger:
    """Add `counts` (int32 scalars) to `account` (`"main"`, `"label"`, `"critic"` or `"predictor"`).

    `counts.episodes` is recorded only for the main account (`main_episodes`);
    `counts.afterstate_env_steps` goes to `afterstate_env_steps`, whatever the account. Pure and
    jittable; `account` is static.
    """
    if account not in ACCOUNTS:
        raise ValueError(f"unknown ledger account {account!r}; choices: {', '.join(ACCOUNTS)}")
    updates = {
        f"{account}_env_steps": counts.env_steps,
        f"{account}_policy_evals": counts.policy_evals,
        "afterstate_env_steps": counts.afterstate_env_steps,
    }
    if account == "main":
        updates["main_episodes"] = counts.episodes
    overflowed = ledger.overflowed
    changes = {}
    for name, delta in updates.items():
        changes[name], over = _saturating_add(getattr(ledger, name), delta)
        overflowed = overflowed | over
    return ledger.replace(**changes, overflowed=overflowed)


def ledger_to_dict(ledger: Ledger) -> dict:
    """Host side: plain ints (with `total_env_steps`, `total_policy_evals`) for metrics and JSON.

    Raises `ValueError` if a counter passed the int32 limit `MAX_COUNT`.
    """
    if bool(np.asarray(ledger.overflowed)):
        raise ValueError(f"budget ledger overflowed: a counter passed the int32 limit {MAX_COUNT}")
    names = [name for name in Ledger.__dataclass_fields__ if name != "overflowed"]
    out = {name: int(np.asarray(getattr(ledger, name))) for name in names}
    out["total_env_steps"] = int(np.asarray(ledger.total_env_steps))
    out["total_policy_evals"] = int(np.asarray(ledger.total_policy_evals))
    return out
