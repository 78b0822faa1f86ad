"""Sweep design fields: seeds per regime, attempts read at several budgets from one run per seed, the
sign-flip test and bootstrap beside the t interval, and a claim stated before the first cell."""

import json
import os

import pytest

from jaxcredit.train import SweepSpec, TrainConfig, run_sweep, run_training

ROUTINE = {"horizon": 4, "density": 0.5, "num_choices": 2}
BASE = {"env": "routine", "env_overrides": ROUTINE, "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64,
        "problems_per_iteration": 4, "attempts_per_problem": 4, "eval_problems": 32, "validation_problems": 32,
        "num_seeds": 2, "num_evals": 2, "holdout_fraction": 0.0, "learning_rate": 0.03}
CLAIM = "Primary endpoint: mc - outcome in average greedy success at 64 attempts."
SPEC = SweepSpec(name="readings", description="seeds per regime, readings", base=BASE,
                 arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 1}},
                 budgets={"attempts": 64}, regimes=("attempts", "matched"),
                 regime_fields={"attempts": {"num_seeds": 3, "num_evals": 4}}, readings={"attempts": [32, 64]},
                 claim=CLAIM, nonparametric=True)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("readings") / "sweep")
    return out, run_sweep(SPEC, out, progress=False)


def test_seeds_per_regime_and_matched_targets_from_the_first_seeds(sweep):
    out, table = sweep
    attempts = json.load(open(os.path.join(out, "attempts", "mc", "config.json")))
    assert attempts["num_seeds"] == 3 and attempts["num_evals"] == 4
    matched = json.load(open(os.path.join(out, "matched", "outcome", "config.json")))
    assert matched["num_seeds"] == 2  # the base's seeds: the first two of the attempts runs'
    mc = json.load(open(os.path.join(out, "attempts", "mc", "summary.json")))
    view = json.load(open(os.path.join(out, "matched", "outcome", "to-mc", "matched.json")))
    assert view["targets"] == [s["total_env_steps"] for s in mc["seeds"]][:2]
    assert table["regimes"]["attempts"]["mc"]["num_seeds"] == 3 and table["regimes"]["matched"]["mc"]["num_seeds"] == 2


def test_a_reading_at_32_attempts_is_a_run_of_budget_32(sweep, tmp_path):
    out, table = sweep
    reading = table["readings"]["32"]["regimes"]["attempts"]["mc"]
    config = TrainConfig(**{**{k: v for k, v in BASE.items() if k != "env_overrides"}, "env_overrides": ROUTINE,
                            "credit": "mc", "credit_options": {"continuations": 1}, "num_seeds": 3, "num_evals": 2,
                            "budget": 32})
    alone = run_training(config, str(tmp_path / "alone"), progress=False)
    finals = [s["final_success"] for s in alone["seeds"]]
    averages = [s["average_success"] for s in alone["seeds"]]
    assert reading["final_success"] == pytest.approx(sum(finals) / 3)
    assert reading["average_success"] == pytest.approx(sum(averages) / 3)
    assert table["readings"]["64"]["regimes"]["attempts"]["mc"]["final_success"] == pytest.approx(
        table["regimes"]["attempts"]["mc"]["final_success"])


def test_nonparametric_tests_beside_the_t_interval(sweep):
    _, table = sweep
    test = table["regimes"]["attempts"]["mc"]["vs_reference"]["final_success"]
    assert {"p_value", "p_holm", "p_sign_flip", "p_sign_flip_holm", "bootstrap"} <= set(test)
    assert test["p_sign_flip"] >= 2 / 2**3  # three seeds: the smallest possible sign-flip p


def test_the_claim_is_stated_once_before_the_cells_and_cannot_change_on_resume(sweep):
    import dataclasses

    out, _ = sweep
    claim = json.load(open(os.path.join(out, "claim.json")))
    assert claim["claim"] == CLAIM
    started = min(json.load(open(os.path.join(out, "attempts", arm, "timing.json")))["sessions"][0]["started"]
                  for arm in ("outcome", "mc"))
    assert claim["stated"] <= started
    run_sweep(SPEC, out, resume=True, progress=False)
    assert json.load(open(os.path.join(out, "claim.json"))) == claim  # resuming keeps its date
    with pytest.raises(ValueError, match="differing: claim"):
        run_sweep(dataclasses.replace(SPEC, claim="another"), out, resume=True, progress=False)


def test_bad_regime_fields_and_readings_are_refused(tmp_path):
    import dataclasses

    for change, message in ((dict(regime_fields={"fixed-steps": {"num_seeds": 2}}), "regime_fields: 'fixed-steps'"),
                            (dict(regime_fields={"matched": {"num_seeds": 9}}), "more than the attempts runs"),
                            (dict(readings={"attempts": [0]}), "readings: 'attempts' must be"),
                            (dict(readings={"attempts": [128]}), "readings: 'attempts' must be")):
        with pytest.raises(ValueError, match=message):
            run_sweep(dataclasses.replace(SPEC, **change), str(tmp_path / "x"), progress=False)
    assert not os.path.exists(tmp_path / "x")


def test_the_page_states_the_claim_first_and_decides_by_the_sign_flip_test(sweep, tmp_path):
    """The results page of a sweep with a claim, readings and the sign-flip test: the claim above the
    findings with its date before the first study cell's start; findings decided by the
    Holm-adjusted sign-flip p; a table of the attempts runs at each reading; all in summary.json."""
    from jaxcredit.analysis import write_results_page

    out, table = sweep
    page = str(tmp_path / "readings.md")
    write_results_page(out, page, command="jaxcredit report SWEEP --page readings.md")
    text = open(page).read()
    stated = json.load(open(os.path.join(out, "claim.json")))["stated"]
    claim_at, findings_at = text.index("## Claim, stated before the run"), text.index("## Findings")
    assert claim_at < findings_at
    assert f"Stated {stated}" in text and "before the first study cell started" in text
    assert f"> {CLAIM}" in text
    test = table["regimes"]["attempts"]["mc"]["vs_reference"]["average_success"]
    word = "beats" if test["p_sign_flip_holm"] < 0.05 else "inconclusive"
    assert f"Holm p {test['p_sign_flip_holm']:.3f}" in text.split("## Reading")[0]
    assert word in text.split("## Findings")[1].split("## What")[0]
    assert "## At several budgets" in text
    assert "| 32 | mc | outcome | 3 |" in text and "| 64 | mc | outcome | 3 |" in text
    summary = json.load(open(os.path.join(tmp_path, "readings", "summary.json")))
    assert summary["claim"]["stated_before_cells"] is True
    assert summary["readings"]["32"]["regimes"]["attempts"]["mc"]["final_success"] == pytest.approx(
        table["readings"]["32"]["regimes"]["attempts"]["mc"]["final_success"])
