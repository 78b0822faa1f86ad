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
    from jaxcredit.timing import read_timing

    gated = Experiment("learn-gated", "learning", ("mad",), {"env": "mad"}, ({},), 1,
                       {"attempts": 8, "fixed-steps": 8}, requires_gate="no-such-gates.json")
    monkeypatch.setitem(suite_experiments.SUITES, "quick", (_tiny_labels(), gated))
    out = str(tmp_path / "suite")
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress"]) == 0
    card = json.load(open(os.path.join(out, "scorecard.json")))
    assert card["schema"] == "jaxcredit.scorecard/1" and card["arms"] == ["exact", "outcome"]
    scores = card["experiments"]["labels-tiny"]["scores"]["label-quality"]
    assert scores["exact"] == [pytest.approx(1.0, abs=1e-5)]
    assert 0.0 <= scores["outcome"][0] <= 1.0
    not_run = card["experiments"]["learn-gated"]  # listed with its reason, never scored
    assert not_run["status"] == "not-run" and "no record" in not_run["reason"] and "scores" not in not_run
    assert not os.path.exists(os.path.join(out, "learn-gated", "result.json"))
    report = os.path.join(out, "report.md")
    assert os.path.exists(report) and "## Findings" in open(report).read()
    assert "- Not run: learn-gated, because its learnability gate" in open(report).read()
    capsys.readouterr()
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress"]) == 2
    assert "already holds a suite" in capsys.readouterr().err
    assert main(["suite", "--quick", "--out", out, "--arms", "exact,outcome", "--no-progress", "--resume"]) == 0
    # the gated experiment keeps the suite unfinished: each resume is a run, and the run time is theirs
    resumed = json.load(open(os.path.join(out, "scorecard.json")))
    assert card["runs"] == 1 and resumed["runs"] == 2 and resumed["run_time_s"] >= card["run_time_s"]
    assert resumed["machines"] == [card["machine"]] and "over 2 runs, resumes included" in open(report).read()
    capsys.readouterr()
    assert main(["status", out]) == 0  # `jaxcredit status` names the wait and its reason
    assert "  learn-gated (learning): not run: its learnability gate (tokens input" in capsys.readouterr().out
    # its packed state (`jaxcredit pack`) resumes elsewhere to the same scores, its runs carried along
    packed = str(tmp_path / "packed")
    assert main(["pack", out, "--out", packed]) == 0
    assert main(["suite", "--quick", "--out", packed, "--arms", "exact,outcome", "--no-progress", "--resume"]) == 0
    again = json.load(open(os.path.join(packed, "scorecard.json")))
    assert again["experiments"] == resumed["experiments"] and again["tags"] == resumed["tags"] and again["runs"] == 3
    # a finished suite: resuming rewrites its scorecard and adds no run
    done = str(tmp_path / "done")
    assert main(["suite", "--quick", "--out", done, "--arms", "exact", "--experiments", "labels-tiny",
                 "--no-progress"]) == 0
    first = json.load(open(os.path.join(done, "scorecard.json")))
    assert main(["suite", "--quick", "--out", done, "--arms", "exact", "--experiments", "labels-tiny",
                 "--no-progress", "--resume"]) == 0
    recorded = round(sum(r["wall_seconds"] for r in read_timing(done)), 1)  # to the end of its one run
    assert json.load(open(os.path.join(done, "scorecard.json"))) == {**first, "run_time_s": recorded}
    assert first["runs"] == 1 and len(read_timing(done)) == 1 and recorded >= first["run_time_s"]


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


def test_learned_heads_are_fitted_on_the_policy_before_labelling():
    """critic and progress-model fit their value head on the uniform policy's own episodes first
    (deterministic: two arms of the same fields get the same labels and cost). Fitting raises
    progress-model's score and the critic's sign agreement; the critic's score (GAE at λ = 0.95,
    close to the episode's return minus V̂) stays near its unfitted one, so it is not asserted."""
    from jaxcredit.suite.labels import LabelSetting, label_quality

    tiny = _tiny_labels(problems=16)
    config = {**tiny.config, "env_overrides": dict(tiny.settings[0])}
    arms = {"critic": {"credit": "critic"}, "progress-model": {"credit": "progress-model"}}
    unfitted = label_quality(LabelSetting(config, fit_steps=0), arms)["arms"]
    fitted = label_quality(LabelSetting(config, fit_steps=16), {**arms, "critic-again": {"credit": "critic"}})["arms"]
    assert fitted["progress-model"]["score"] > unfitted["progress-model"]["score"] + 0.03
    assert (fitted["critic"]["overall"]["sign_agreement"]
            > unfitted["critic"]["overall"]["sign_agreement"] + 0.1)
    assert fitted["critic-again"] == fitted["critic"]
    # the fitting episodes are charged to the arm (main data), beside the critic's own labels
    assert "main" not in unfitted["critic"]["cost"] and fitted["critic"]["cost"]["main"]["env_steps"] > 0
    assert fitted["progress-model"]["cost"]["main"] == fitted["critic"]["cost"]["main"]
    assert fitted["critic"]["cost"]["critic"]["env_steps"] > unfitted["critic"]["cost"]["critic"]["env_steps"]


def test_routine_and_arithmetic_experiments(tmp_path):
    """learn-routine: D = 2 at H = 2, 8, 32 (quick: H = 8); learn-arithmetic waits for its gate,
    with the reason from the published records, and runs once a passing record of its rung is there."""
    from jaxcredit.envs import make
    from jaxcredit.suite.experiments import gate_reason, get_suite

    full = {e.name: e for e in get_suite("full")}
    quick = {e.name: e for e in get_suite("quick")}
    routine = full["learn-routine"]
    envs = [make("routine", **setting) for setting in routine.settings]
    assert [(e.horizon, e.num_decisions, e.cue, e.failure) for e in envs] == [
        (h, 2, "index", "fatal") for h in (2, 8, 32)]
    assert [make("routine", **setting).horizon for setting in quick["learn-routine"].settings] == [8]
    assert routine.config["holdout_fraction"] == 0.0 and set(routine.tags) == {"routine", "horizon"}
    assert "learn-arithmetic" not in quick  # full only: its afterstate policy costs minutes a cell
    arithmetic = full["learn-arithmetic"]
    assert arithmetic.config["policy_input"] == "afterstate"
    assert gate_reason(arithmetic) is None and gate_reason(routine) is None  # afterstate-3-60k passed
    rung = {"policy_input": "afterstate", "afterstate_lookahead": 0, "count": 3, "family": "default"}
    (tmp_path / arithmetic.requires_gate).write_text(json.dumps({"afterstate-3": {"rung": rung, "passed": False}}))
    assert "does not pass on its rung" in gate_reason(arithmetic, str(tmp_path))
    (tmp_path / arithmetic.requires_gate).write_text(json.dumps({"tokens-3": {"rung": rung, "passed": True}}))
    assert gate_reason(arithmetic, str(tmp_path)) is None
    (tmp_path / arithmetic.requires_gate).write_text(json.dumps({"tokens-4": {"rung": {**rung, "count": 4},
                                                                              "passed": True}}))
    assert "no learnability gate" in gate_reason(arithmetic, str(tmp_path))


def test_label_noise_over_repeated_keys_and_the_cheap_label_arms():
    """`noise_repeats`: exact labels have no noise, Monte Carlo labels do, fewer continuations more of
    it; the cheap-label arms are named for `--arms` and cost what their options say."""
    from jaxcredit.suite.experiments import suite_arms
    from jaxcredit.suite.labels import LabelSetting, label_quality

    tiny = _tiny_labels(problems=16)
    config = {**tiny.config, "env_overrides": dict(tiny.settings[0])}
    arms = suite_arms(["exact", "mc-k1", "mc-k8", "mc-select-0.25"])
    assert arms["mc-k8"] == {"credit": "mc", "credit_options.continuations": 8}
    found = label_quality(LabelSetting(config, noise_repeats=2), arms)["arms"]
    assert found["exact"]["label_variance"] == 0.0 and found["exact"]["noise_repeats"] == 2
    assert found["mc-k1"]["label_variance"] > found["mc-k8"]["label_variance"] > 0.0
    label_steps = {a: found[a]["cost"]["label"]["env_steps"] for a in ("mc-k1", "mc-k8", "mc-select-0.25")}
    assert label_steps["mc-select-0.25"] < label_steps["mc-k8"] and label_steps["mc-k1"] < label_steps["mc-k8"]
    assert "label_variance" not in label_quality(LabelSetting(config), {"exact": arms["exact"]})["arms"]["exact"]
    with pytest.raises(ValueError, match="noise_repeats must be an integer >= 0"):
        LabelSetting(config, noise_repeats=-1)
