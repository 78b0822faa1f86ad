"""The budget ledger: accounts, totals, saturation instead of wrap-round, and bad input."""

import jax
import jax.numpy as jnp
import pytest

from jaxcredit.ledger import MAX_COUNT, Counts, init_ledger, ledger_to_dict, record


def test_accounts_and_totals_are_exact_under_jit():
    @jax.jit
    def spend(ledger):
        ledger = record(ledger, Counts(jnp.int32(130), jnp.int32(130), jnp.int32(16)), account="main")
        ledger = record(ledger, Counts(jnp.int32(5000), jnp.int32(4200), jnp.int32(576)), account="label")
        ledger = record(ledger, Counts(jnp.int32(7), jnp.int32(3), jnp.int32(1)), account="critic")
        ledger = record(ledger, Counts(jnp.int32(20), jnp.int32(11), jnp.int32(9)), account="predictor")
        return record(ledger, Counts(jnp.int32(12), jnp.int32(12), jnp.int32(1)), account="main")

    got = ledger_to_dict(spend(init_ledger()))
    assert got == {
        "main_env_steps": 142, "main_policy_evals": 142, "main_episodes": 17,
        "label_env_steps": 5000, "label_policy_evals": 4200,
        "critic_env_steps": 7, "critic_policy_evals": 3,
        "predictor_env_steps": 20, "predictor_policy_evals": 11,
        "afterstate_env_steps": 0, "total_env_steps": 5169, "total_policy_evals": 4356,
    }


def test_counter_saturates_and_host_read_raises():
    ledger = record(init_ledger(), Counts(jnp.int32(MAX_COUNT - 1), jnp.int32(0), jnp.int32(0)), account="label")
    assert ledger_to_dict(ledger)["label_env_steps"] == MAX_COUNT - 1
    ledger = record(ledger, Counts(jnp.int32(5), jnp.int32(0), jnp.int32(0)), account="label")
    assert int(ledger.label_env_steps) == MAX_COUNT and bool(ledger.overflowed)
    with pytest.raises(ValueError, match="overflowed"):
        ledger_to_dict(ledger)


def test_unknown_account_is_a_value_error():
    with pytest.raises(ValueError, match="unknown ledger account 'labels'"):
        record(init_ledger(), Counts.zeros(), account="labels")
