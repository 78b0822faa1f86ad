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
