"""`jaxcredit card --check`: each CA-ID card field's control runs and can fail. The exact arm passes;
an arm whose labels are exact credit with the sign flipped fails its provenance control."""

import json
import shutil
from pathlib import Path

import pytest

import jaxcredit
from jaxcredit.arm_registry import CREDIT_ARMS
from jaxcredit.credit_arms import ExactOptions
from jaxcredit.suite.card_check import FAILED, NOT_APPLICABLE, PASSED, check_audit, check_run, checked_card_markdown
from jaxcredit.train.config import config_from_dict

ROOT = Path(__file__).resolve().parent.parent
TINY = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 1, "max_turns": 4}


def _flipped(context, trajectory, problems, key):
    exact = CREDIT_ARMS["exact"].compute(context, trajectory, problems, key)
    return jaxcredit.CreditResult(-exact.advantage, None, exact.charge)


@pytest.fixture(scope="module")
def flipped_arm():
    CREDIT_ARMS.pop("flipped-exact", None)
    jaxcredit.register_credit_arm(jaxcredit.CreditArm(
        name="flipped-exact", account="label", enumerates=False, description="exact credit, sign flipped",
        compute=_flipped, options=ExactOptions))  # the exact arm's options
    yield "flipped-exact"
    CREDIT_ARMS.pop("flipped-exact", None)


def _run(tmp_path, credit):
    run = tmp_path / credit
    run.mkdir()
    config = config_from_dict({"env": "mad", "env_overrides": TINY, "credit": credit, "d_model": 16, "num_layers": 1,
                               "num_heads": 2, "mlp_dim": 32, "holdout_fraction": 0.0, "attempts_per_problem": 4})
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    return str(run)


def _statuses(checked):
    return {field: check["status"] for field, check in checked["checks"].items()}


def test_the_exact_arm_passes_and_a_flipped_arm_fails_its_provenance(tmp_path, flipped_arm):
    exact = check_run(_run(tmp_path, "exact"), problems=8)
    assert FAILED not in _statuses(exact).values()
    assert _statuses(exact)["intervention_provenance"] == NOT_APPLICABLE  # the labels are exact replay
    assert exact["checks"]["unit_and_estimand"]["status"] == PASSED
    assert exact["checks"]["support_and_uncertainty"]["noise_std"] == 0.0  # exact labels have no noise
    assert exact["checks"]["effective_state"]["sign_flip_share"] == 0.0  # every state renders uniquely
    flipped = check_run(_run(tmp_path, flipped_arm), problems=8)
    provenance = flipped["checks"]["intervention_provenance"]
    assert provenance["status"] == FAILED and provenance["sign_agreement"] == 0.0 and provenance["steps"] > 20
    assert flipped["checks"]["downstream_protocol"]["agreement_policy"] == 0.0
    assert _statuses(flipped)["unit_and_estimand"] == PASSED  # flipped under both references alike
    assert "check: **failed**: sign agreement with exact restored" in checked_card_markdown(flipped)


def test_a_sweeps_arms_are_checked_and_its_results_page_shows_them(tmp_path):
    """`check_sweep` checks every arm's attempts cell; its `checked-cards.json` in the sweep directory
    puts each checked card on the sweep's results page, and the page's record keeps it."""
    from jaxcredit.analysis.page import write_results_page
    from jaxcredit.suite.card_check import check_sweep

    sweep = tmp_path / "sweep"
    (sweep / "attempts").mkdir(parents=True)
    shutil.move(_run(tmp_path, "exact"), sweep / "attempts" / "exact")
    (sweep / "sweep_spec.json").write_text(json.dumps({"name": "tiny", "arm_order": ["exact"],
                                                       "arms": {"exact": {"credit": "exact"}},
                                                       "regimes": ["attempts", "matched"]}))
    checked = check_sweep(str(sweep), problems=8)  # the shapes of the test above: its programs are cached
    assert list(checked["arms"]) == ["exact"]
    assert checked["arms"]["exact"]["card"]["subject"] == "sweep tiny / arm exact"
    assert checked["arms"]["exact"]["checks"]["optimization_interface"]["status"] == PASSED  # its matched regime
    page_sweep = tmp_path / "tiny-sweep"
    shutil.copytree(ROOT / "tests/data/tiny-sweep", page_sweep)
    (page_sweep / "checked-cards.json").write_text(json.dumps(checked))
    page = tmp_path / "pages" / "tiny.md"
    write_results_page(str(page_sweep), str(page))
    text = page.read_text()
    assert "## Checked CA-ID cards" in text and "### CA-ID card: sweep tiny / arm exact (checked)" in text
    assert (tmp_path / "pages" / "tiny" / "record" / "checked-cards.json").is_file()
    write_results_page(str(tmp_path / "pages" / "tiny" / "record"), str(page))  # from its record: the same page
    assert page.read_text() == text


def test_an_audit_is_checked_from_its_record_and_the_command_refuses_what_is_not_a_run(tmp_path, capsys):
    from jaxcredit.cli import main

    audit = tmp_path / "audit"
    shutil.copytree(ROOT / "docs/results/arithmetic-study/record/audits/matched-outcome", audit)
    checked = check_audit(str(audit))
    forced = checked["checks"]["intervention_provenance"]
    assert forced["status"] == PASSED  # forced 0.934 on 399 actions, sampled 0.672 on 332: both above 0.5
    assert "forced: sign agreement with exact 0.934" in forced["text"]
    assert _statuses(checked)["optimization_interface"] == NOT_APPLICABLE
    assert main(["card", "--check", str(audit), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"] == checked["checks"]
    assert main(["card", str(tmp_path / "missing")]) == 2
    assert "no such run or audit directory" in capsys.readouterr().err
    assert main(["card", str(audit)]) == 2
    assert "an audit's card needs --check" in capsys.readouterr().err


def test_the_card_command_prints_a_runs_card(tmp_path, capsys):
    from jaxcredit.cli import main

    assert main(["card", _run(tmp_path, "outcome")]) == 0
    assert capsys.readouterr().out.startswith("### CA-ID card: run outcome")
