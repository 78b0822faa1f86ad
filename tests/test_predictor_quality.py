"""The predictor's label quality at several K (`jaxcredit.train.predictor_quality`): the dataset's
cost grows with K as the ledger's rule says, the chosen K is the cheapest tied with the best, and
bad requests are one-line errors."""

import pytest

from jaxcredit.analysis.predictor import predictor_quality_markdown
from jaxcredit.train import config_from_dict
from jaxcredit.train.predictor_quality import choose_continuations, predictor_quality
from tests.conftest import TINY_TRAIN

STATES = 16
CONFIG = {**TINY_TRAIN, "credit": "predictor", "num_seeds": 2,
          "credit_options": {"states": STATES, "steps": 20, "eval_states": 8}}


def test_the_dataset_cost_follows_k_and_every_seed_is_scored():
    """Tiny MAD: 4 legal actions per live state, so a dataset at K holds STATES x 4 x K
    continuations, each at least its forced step, and at most 5 steps (the turn limit); the
    visiting episodes add 1-5 steps per state."""
    record = predictor_quality(config_from_dict(CONFIG), [1, 2])
    assert [row["continuations"] for row in record["rows"]] == [1, 2]
    for row in record["rows"]:
        k = row["continuations"]
        assert row["labeller_env_steps"] == [0, 0]
        for steps in row["dataset_env_steps"]:
            assert STATES + STATES * 4 * k <= steps <= 5 * STATES + 5 * STATES * 4 * k
        assert len(row["sign_agreement"]) == 2 and all(0.0 <= v <= 1.0 for v in row["sign_agreement"])
    assert record["chosen"] in (1, 2)
    table = predictor_quality_markdown(record)
    assert f"| {record['chosen']} (chosen) |" in table and "n = 2 seeds" in table


def test_the_chosen_k_is_the_cheapest_tied_with_the_best():
    rows = [{"continuations": 1, "sign_agreement": [0.50, 0.52]},   # mean 0.51, se 0.01: below the best's tie
            {"continuations": 4, "sign_agreement": [0.70, 0.74]},   # mean 0.72, se 0.02: ties 8
            {"continuations": 8, "sign_agreement": [0.73, 0.75]}]   # the best mean, 0.74
    assert choose_continuations(rows) == 4
    rows[1]["sign_agreement"] = [0.60, 0.62]  # mean 0.61: 0.13 below, beyond sqrt(0.01² + 0.01²)
    assert choose_continuations(rows) == 8


@pytest.mark.parametrize("fields, ks, message", [
    ({"credit": "outcome", "credit_options": {}}, [1], "needs an arm that prepares a dataset"),
    ({}, [], "continuations must be a non-empty list"),
    ({"credit_options": {"eval_states": 0}}, [1], "credit_options.eval_states must be > 0"),
])
def test_bad_requests_are_one_line_errors(fields, ks, message):
    with pytest.raises(ValueError, match=message):
        predictor_quality(config_from_dict({**CONFIG, **fields}), ks)


def test_the_command_refuses_a_preset_without_the_arm(capsys):
    from jaxcredit.cli import main

    assert main(["quality", "--preset", "quick", "--arm", "predictor"]) == 2
    assert "preset 'quick' has no arm 'predictor'" in capsys.readouterr().err
