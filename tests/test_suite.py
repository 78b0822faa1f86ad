"""The credit-assignment suite: label measures, curve scores, aggregation, and a tiny suite run."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("rliable")

from jaxcredit.suite import experiments as suite_experiments  # noqa: E402
from jaxcredit.suite.experiments import Experiment  # noqa: E402
from jaxcredit.suite.labels import label_measures  # noqa: E402
from jaxcredit.suite.learning import curve_auc  # noqa: E402
from jaxcredit.suite.scorecard import aggregate, findings  # noqa: E402


def test_label_measures_by_hand():
    exact = np.array([0.5, -0.25, 0.0, 0.1])
    signed = np.array([True, True, False, True])
    same = label_measures(3.0 * exact, exact, signed)  # any positive multiple is exact
    assert same["sign_agreement"] == 1.0 and same["rank_correlation"] == pytest.approx(1.0)
    assert same["normalised_error"] == pytest.approx(0.0)
    flipped = label_measures(-exact, exact, signed)
    assert flipped["sign_agreement"] == 0.0 and flipped["normalised_error"] == pytest.approx(1.0)
    # labels (1, 0, 0, 0): cos = 0.5 / sqrt(0.25 + 0.0625 + 0.01) -> error 1 - 0.25 / 0.3225; a 0 label is half
    partial = label_measures(np.array([1.0, 0.0, 0.0, 0.0]), exact, signed)
    assert partial["normalised_error"] == pytest.approx(1 - 0.25 / 0.3225)
    assert partial["sign_agreement"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    constant = label_measures(np.zeros(4), exact, signed)
    assert constant["rank_correlation"] is None and constant["normalised_error"] == pytest.approx(1.0)


def test_random_labels_score_near_chance():
    rng = np.random.default_rng(0)
    exact = rng.normal(size=4000)
    measures = label_measures(rng.normal(size=4000), exact, np.ones(4000, bool))
    assert abs(measures["sign_agreement"] - 0.5) < 0.03
    assert abs(measures["rank_correlation"]) < 0.05
    assert measures["normalised_error"] > 0.99


def test_curve_auc_by_hand():
    rows = [{"seed_index": 0, "eval_index": i, "main_episodes": x, "success_greedy": y}
            for i, (x, y) in enumerate([(0, 0.0), (50, 1.0), (100, 1.0)])]
    assert curve_auc(rows, "main_episodes", 100)[0] == pytest.approx(0.75)
    # ended below its budget: the last value holds to x = 1; overshoot: cut at x = 1 by interpolation
    short = [{"seed_index": 1, "eval_index": i, "main_episodes": x, "success_greedy": y}
             for i, (x, y) in enumerate([(3, 0.0), (50, 1.0)])]
    assert curve_auc(short, "main_episodes", 100)[1] == pytest.approx(0.75)
    over = [{"seed_index": 0, "eval_index": i, "main_episodes": x, "success_greedy": y}
            for i, (x, y) in enumerate([(0, 0.0), (200, 1.0)])]
    assert curve_auc(over, "main_episodes", 100)[0] == pytest.approx(0.25)


def _record(scores: dict, status: str = "finished") -> dict:
    return {"kind": "learning", "tags": ["mad"], "seeds": 4, "settings": ["defaults"], "status": status,
            "scores": {"equal-attempts": scores}}


def test_aggregate_iqm_and_unfinished():
    records = {"a": _record({"x": [0.5] * 4, "y": [0.1, 0.2, 0.3, 0.4]}),
               "b": _record({"x": [0.5] * 4, "y": [0.1, 0.2, 0.3, 0.4]}),
               "c": _record({"x": [1.0] * 4, "y": [1.0] * 4}, status="unfinished")}
    tags = aggregate(records, ["x", "y"])
    entry = tags["equal-attempts"]
    assert entry["x"]["iqm"] == pytest.approx(0.5) and entry["x"]["low"] == pytest.approx(0.5)
    assert entry["y"]["iqm"] == pytest.approx(0.25)  # the middle half of (.1,.1,.2,.2,.3,.3,.4,.4)
    assert entry["_tasks"] == ["a", "b"] and "equal-attempts/mad" in tags
    lines = findings({"tags": tags, "experiments": records})
    assert any("`x` has the highest IQM" in line for line in lines)
    assert lines[-1] == "- Unfinished, not scored: c."


def _tiny_labels(problems: int = 4) -> Experiment:
    """A labels experiment on the 18-tape MAD of length 3, uniform policy only."""
    return Experiment("labels-tiny", "labels", ("mad",),
                      {"env": "mad", "problems_per_iteration": problems, "attempts_per_problem": 2, "d_model": 16,
                       "num_layers": 1, "num_heads": 2, "mlp_dim": 32, "holdout_fraction": 0.0,
                       "eval_problems": 4, "validation_problems": 4},
                      ({"length": 3, "num_tokens": 3, "min_useful": 1, "max_useful": 1, "max_turns": 4},), 1,
                      {"train_episodes": 16}, policies=("uniform",))


def test_tiny_suite_run_and_resume(tmp_path, monkeypatch, capsys):
    """One labels experiment on an 18-tape MAD through the command line: the exact arm's labels score 1."""
    from jaxcredit.cli import main

    monkeypatch.setitem(suite_experiments.SUITES, "quick", (_tiny_labels(),))
    out = str(tmp_path / "suite")
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress"]) == 0
    card = json.load(open(os.path.join(out, "scorecard.json")))
    assert card["schema"] == "jaxcredit.scorecard/1" and card["arms"] == ["exact", "outcome"]
    scores = card["experiments"]["labels-tiny"]["scores"]["label-quality"]
    assert scores["exact"] == [pytest.approx(1.0, abs=1e-5)]
    assert 0.0 <= scores["outcome"][0] <= 1.0
    report = os.path.join(out, "report.md")
    assert os.path.exists(report) and "## Findings" in open(report).read()
    capsys.readouterr()
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress"]) == 2
    assert "already holds a suite" in capsys.readouterr().err
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress", "--resume"]) == 0


RANDOM_ARM = """
import dataclasses

import jax

import jaxcredit


@dataclasses.dataclass(frozen=True)
class RandomOptions(jaxcredit.ArmOptions):
    arm = "random-credit"


def random_credit(context, trajectory, problems, key):
    noise = jax.random.normal(key, trajectory.live.shape)
    return jaxcredit.CreditResult(noise * trajectory.live, None, {})


jaxcredit.register_credit_arm(jaxcredit.CreditArm(
    name="random-credit", account=None, enumerates=False, description="credit drawn at random",
    compute=random_credit, options=RandomOptions))
"""


def test_a_plugin_arm_of_random_credit_scores_near_chance(tmp_path, monkeypatch):
    """A plugin file outside the package, scored by the suite: random labels land near chance."""
    from jaxcredit.arm_registry import CREDIT_ARMS
    from jaxcredit.cli import main

    plugin = tmp_path / "random_credit.py"
    plugin.write_text(RANDOM_ARM)
    monkeypatch.setitem(suite_experiments.SUITES, "quick", (_tiny_labels(problems=16),))
    monkeypatch.delitem(CREDIT_ARMS, "random-credit", raising=False)
    out = str(tmp_path / "suite")
    try:
        assert main(["suite", "--quick", "--out", out, "--plugin", str(plugin), "--arms", "exact,random-credit",
                     "--no-progress"]) == 0
    finally:
        CREDIT_ARMS.pop("random-credit", None)
    card = json.load(open(os.path.join(out, "scorecard.json")))
    record = card["experiments"]["labels-tiny"]
    assert record["scores"]["label-quality"]["exact"] == [pytest.approx(1.0, abs=1e-5)]
    assert record["scores"]["label-quality"]["random-credit"][0] < 0.15
    assert 0.3 <= record["details"]["arms"]["random-credit"]["sign_agreement"] <= 0.7
    assert json.load(open(os.path.join(out, "suite.json")))["plugins"] == [str(plugin)]
