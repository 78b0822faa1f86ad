"""Sweeps: the three regimes, the matched regime's spend, one shared matched run equal to separate
runs, resume, and one table builder for the trainer's table and the analysis report.

Configurations are those of `test_train.py`'s budget-matching test (same fields, so the driver's
compiled programs are shared within a session).
"""

import dataclasses
import json
import os

import numpy as np
import pytest

from jaxcredit.analysis import compare_sweep, format_comparison_table
from jaxcredit.train import SweepSpec, config_from_dict, run_sweep, run_training
from jaxcredit.train.matched import matched_config, matched_schedule, run_matched, view_config
from jaxcredit.train.rundir import read_jsonl

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY = {"env": "mad", "env_overrides": TINY_MAD, "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64,
        "problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 64,
        "num_seeds": 2, "num_evals": 2, "budget": 256, "mc_continuations": 2, "holdout_fraction": 0.0}
SPEC = SweepSpec(name="tiny", description="outcome vs mc, three regimes", base=TINY,
                 arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc"}},
                 budgets={"attempts": 96, "fixed-steps": 600})


def rows_without_timing(path):
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in rows]


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sweep") / "tiny")
    return out, run_sweep(SPEC, out, progress=False)


def test_sweep_prints_three_regimes_and_matched_spend_is_within_one_iteration(tiny_sweep):
    out, table = tiny_sweep
    assert list(table["regimes"]) == ["attempts", "matched", "fixed-steps"]
    mc_rows = read_jsonl(os.path.join(out, "attempts", "mc", "metrics.jsonl"))
    matched_rows = read_jsonl(os.path.join(out, "matched", "outcome", "to-mc", "metrics.jsonl"))
    for seed in range(TINY["num_seeds"]):
        mc_total = [r for r in mc_rows if r["seed_index"] == seed][-1]["total_env_steps"]
        mine = [r for r in matched_rows if r["seed_index"] == seed]
        assert [r["eval_index"] for r in mine] == [0, 1, 2]  # as many evaluations as mc's run
        last = mine[-1]  # the outcome side ends within one of its iterations past mc's total
        assert mc_total <= last["total_env_steps"] < mc_total + last["last_iteration_env_steps"]
        assert last["label_env_steps"] == 0 and last["main_episodes"] > 96  # more attempts instead of labels
        # evenly spaced over its own budget: the first evaluation is the first iteration past half of it
        half = [r for r in mine if r["eval_index"] == 1][0]
        assert mc_total // 2 <= half["total_env_steps"] < mc_total // 2 + half["last_iteration_env_steps"]
    row = table["regimes"]["matched"]["mc"]
    assert row["reference"] == "outcome"
    assert row["spend"]["arm"]["total_env_steps"] <= row["spend"]["reference"]["total_env_steps"]
    text = open(os.path.join(out, "table.md")).read()
    assert "(matched to mc's total, per seed) vs mc: 96 attempts =" in text
    assert text.count("paired Student-t interval over n = 2 seed(s)") == 3 and "WARNING: n < 5" in text
    # the analysis report's table is built by the same code from the run directories
    comparison = compare_sweep(out)
    assert comparison == json.loads(open(os.path.join(out, "sweep.json")).read())
    table_text, findings = text.split("\nFindings (")
    assert format_comparison_table(comparison).replace("####", "###") == table_text
    assert findings.count("\n- ") == 3  # one sentence per comparison, regime by regime


def test_sweep_resume_skips_finished_cells_and_refuses_other_targets(tiny_sweep, tmp_path):
    out, table = tiny_sweep
    assert run_sweep(SPEC, out, progress=False, resume=True) == table
    # words about the sweep (its run time, its description) may change between sessions: resume, update them
    reworded = dataclasses.replace(SPEC, description="reworded", cpu_minutes="12 measured")
    assert run_sweep(reworded, out, progress=False, resume=True) == table
    assert json.load(open(os.path.join(out, "sweep_spec.json")))["cpu_minutes"] == "12 measured"
    with pytest.raises(ValueError, match=r"holds a different sweep \(tiny; differing: budgets\)"):
        run_sweep(dataclasses.replace(SPEC, budgets={"attempts": 97, "fixed-steps": 600}), out, progress=False,
                  resume=True)
    assert run_sweep(SPEC, out, progress=False, resume=True) == table
    targets = {"mc": [100, 200]}  # not what the attempts runs gave
    with pytest.raises(ValueError, match="matched to other totals"):
        run_matched(config_from_dict({**TINY, "credit": "outcome"}), os.path.join(out, "matched", "outcome"),
                    targets=targets, resume=True, progress=False)
    with pytest.raises(ValueError, match="now called 'fixed-steps'"):
        run_sweep(SweepSpec(name="x", description="", base=TINY, arms={"outcome": {}}, budgets={"attempts": 9},
                            regimes=("attempts", "steps")), str(tmp_path / "x"), progress=False)


def test_a_matched_view_is_written_once_its_points_are_evaluated(tmp_path):
    """The label arm with the small totals gets its final view while the shared run goes on; a
    resume then writes the other, and both equal an uninterrupted run's views."""
    config = config_from_dict({**TINY, "credit": "outcome"})
    targets = {"a": [300, 260], "b": [700, 900]}
    _, stops = matched_schedule(targets, num_seeds=2, num_evals=2)
    assert stops == [[("a", 1), ("a", 2), ("b", 1), ("b", 2)]] * 2  # a's points all come first
    full = str(tmp_path / "full")
    run_matched(config, full, targets=targets, progress=False)
    out = str(tmp_path / "cut")
    assert run_matched(config, out, targets=targets, progress=False, stop_after_evals=3) == {"stopped_after": 3}
    assert os.path.exists(os.path.join(out, "to-a", "summary.json")) and not os.path.exists(os.path.join(out, "to-b"))
    for name in ("metrics.jsonl", "summary.json", "config.json", "matched.json"):
        if name == "metrics.jsonl":
            assert rows_without_timing(os.path.join(out, "to-a")) == rows_without_timing(os.path.join(full, "to-a"))
        else:
            assert open(os.path.join(out, "to-a", name)).read() == open(os.path.join(full, "to-a", name)).read(), name
    views = run_matched(config, out, targets=targets, progress=False, resume=True)
    assert set(views) == {"a", "b"}
    for arm in targets:
        view = f"to-{arm}"
        assert rows_without_timing(os.path.join(out, view)) == rows_without_timing(os.path.join(full, view))


def test_one_shared_matched_run_equals_separate_runs(tmp_path):
    """Stopping at more evaluation points changes nothing after them: each view of the shared run
    equals a separate run given that label arm's budgets."""
    config = config_from_dict({**TINY, "credit": "outcome"})
    targets = {"a": [700, 410], "b": [380, 900]}  # per-seed totals of two label arms
    schedule, stops = matched_schedule(targets, num_seeds=2, num_evals=2)
    assert schedule.tolist() == [[190, 350, 380, 700], [205, 410, 450, 900]]
    assert stops[0] == [("b", 1), ("a", 1), ("b", 2), ("a", 2)]
    out = str(tmp_path / "shared")
    views = run_matched(config, out, targets=targets, progress=False)
    assert matched_config(config, targets).num_evals == 4
    with pytest.raises(ValueError, match="schedule.json differs"):
        run_training(matched_config(config, targets), out, resume=True, progress=False, schedule=schedule + 1)
    for arm, seeds in targets.items():
        separate = str(tmp_path / f"separate-{arm}")
        own = np.asarray([[t * j // 2 for j in (1, 2)] for t in seeds])
        summary = run_training(view_config(config, seeds), separate, progress=False, schedule=own)
        assert rows_without_timing(os.path.join(out, f"to-{arm}")) == rows_without_timing(separate)
        assert views[arm] == summary


def test_finding_sentences_say_who_wins_only_where_the_interval_excludes_zero():
    from jaxcredit.comparison import finding_sentence

    def entry(mean, low, high):
        return {"arm": "mc", "reference": "outcome", "num_seeds": 8,
                "vs_reference": {"final_success": {"mean_diff": mean, "low": low, "high": high}}}

    assert finding_sentence("attempts", entry(0.3, 0.1, 0.5)) == \
        "at equal attempts mc beats outcome by +0.300 [+0.100, +0.500], n = 8"
    assert finding_sentence("fixed-steps", entry(-0.9, -1.0, -0.8)) == \
        "at equal total env steps outcome beats mc by +0.900 [+0.800, +1.000], n = 8"
    assert finding_sentence("matched", entry(0.1, -0.2, 0.4)) == \
        "at mc's total env steps mc vs outcome: no difference resolved (+0.100 [-0.200, +0.400], n = 8)"
    assert "no difference resolved" in finding_sentence("attempts", entry(0.0, None, None))
