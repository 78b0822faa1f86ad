"""Intervals over seeds: coverage by simulation, hand-checked values, Holm, the shared table builder."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from jaxcredit.comparison import comparison_pairs, format_paired_table, paired_table
from jaxcredit.rundir_io import matched_cell
from jaxcredit.stats import holm, interval_description, paired_t, t_interval


@pytest.mark.parametrize("num_seeds", [2, 5, 20])
def test_t_interval_covers_the_true_difference_95_percent(num_seeds):
    """20,000 simulated paired experiments (per-seed values share a seed effect; the difference has
    mean 0.1 and sd 0.15): the reported 95% interval covers the true difference 93-97% of the time."""
    rng = np.random.default_rng(num_seeds)
    experiments, true_difference = 20_000, 0.1
    seed_effect = rng.normal(0.5, 0.2, (experiments, num_seeds))
    baseline = seed_effect + rng.normal(0, 0.1, seed_effect.shape)
    arm = seed_effect + true_difference + rng.normal(0, 0.1, seed_effect.shape) + rng.normal(0, 0.1, seed_effect.shape)
    _, low, high = t_interval(arm - baseline, confidence=0.95)
    coverage = np.mean((low <= true_difference) & (true_difference <= high))
    assert 0.93 <= coverage <= 0.97, coverage
    # what the percentile bootstrap over seeds used to give with 2 seeds: [min, max] of the two
    if num_seeds == 2:
        diff = arm - baseline
        assert np.mean((diff.min(-1) <= true_difference) & (true_difference <= diff.max(-1))) == pytest.approx(0.5,
                                                                                                               abs=0.02)


def test_paired_t_hand_values_and_scipy():
    arm, baseline = np.array([0.5, 0.7, 0.6]), np.array([0.4, 0.4, 0.5])  # differences 0.1, 0.3, 0.1
    d = paired_t(arm, baseline)
    sd = np.sqrt(((0.1 - 0.5 / 3) ** 2 * 2 + (0.3 - 0.5 / 3) ** 2) / 2)  # 0.11547
    half = 4.302652729911275 * sd / np.sqrt(3)  # t(2, 0.975)
    assert d["mean_diff"] == pytest.approx(0.5 / 3)
    assert (d["low"], d["high"]) == pytest.approx((0.5 / 3 - half, 0.5 / 3 + half))
    assert d["p_value"] == pytest.approx(scipy_stats.ttest_rel(arm, baseline).pvalue)
    assert (d["arm_wins"], d["ties"], d["baseline_wins"], d["df"]) == (3, 0, 0, 2)
    assert d["method"] == "paired Student-t"
    one = paired_t([0.3], [0.1])  # one seed: a difference, no interval
    assert one["mean_diff"] == pytest.approx(0.2) and one["low"] is None and one["p_value"] is None
    same = paired_t([0.75, 0.5], [0.25, 0.0])  # no spread: the interval is the point, the test's limit
    assert same["low"] == same["high"] == 0.5 and same["p_value"] == 0.0 and same["t"] is None
    assert paired_t([0.1, 0.2], [0.1, 0.2])["p_value"] == 1.0
    with pytest.raises(ValueError, match="equal-length"):
        paired_t([0.1, 0.2], [0.1])


def test_holm_step_down():
    # sorted 0.01, 0.02, 0.04 with m = 3: 0.03, max(0.03, 0.04) = 0.04, max(0.04, 0.04) = 0.04
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, None, 0.9]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert holm([0.03]) == [0.03]


def test_interval_description_names_method_and_n_and_warns():
    assert "paired Student-t interval over n = 2 seed(s)" in interval_description(2)
    assert "WARNING: n < 5" in interval_description(4)
    assert "WARNING" not in interval_description(5)


def _measures(final, average, steps, episodes):
    n = len(final)
    return {"seeds": list(range(n)), "final_success": np.array(final), "average_success": np.array(average),
            "main_episodes": np.full(n, float(episodes)), "total_env_steps": np.full(n, float(steps))}


def test_one_table_builder_pairs_matched_cells_and_adjusts_per_reference():
    credits = {"outcome": "outcome", "mc": "mc", "exact": "exact", "anchor": "anchor"}
    pairs = comparison_pairs(["attempts", "matched"], credits, "outcome")
    matched = [(p.arm, p.arm_cell, p.reference, p.reference_cell) for p in pairs if p.regime == "matched"]
    assert matched == [("mc", ("attempts", "mc"), "outcome", ("matched", "outcome/to-mc")),
                       ("mc", ("attempts", "mc"), "anchor", ("matched", "anchor/to-mc")),
                       ("exact", ("attempts", "exact"), "outcome", ("matched", "outcome/to-exact")),
                       ("exact", ("attempts", "exact"), "anchor", ("matched", "anchor/to-exact"))]
    measures = {("attempts", "outcome"): _measures([0.1, 0.2, 0.3], [0.1, 0.1, 0.1], 100, 10),
                ("attempts", "mc"): _measures([0.5, 0.7, 0.6], [0.2, 0.3, 0.2], 1000, 10),
                ("attempts", "exact"): _measures([0.2, 0.2, 0.4], [0.1, 0.2, 0.1], 2000, 10),
                ("matched", matched_cell("outcome", "mc")): _measures([0.4, 0.4, 0.5], [0.3, 0.3, 0.3], 1010, 95),
                ("matched", matched_cell("outcome", "exact")): _measures([0.6, 0.6, 0.6], [0.4, 0.4, 0.4], 2020, 190)}
    table = paired_table(pairs, measures, budgets={"attempts": 10}, reference_arm="outcome")
    rows = table["regimes"]["matched"]
    assert list(rows) == ["mc", "exact"]  # the anchor cells are missing: those rows are skipped
    assert rows["mc"]["vs_reference"]["final_success"]["mean_diff"] == pytest.approx(0.5 / 3)
    p_mc = rows["mc"]["vs_reference"]["final_success"]["p_value"]
    p_exact = rows["exact"]["vs_reference"]["final_success"]["p_value"]
    assert [rows[a]["vs_reference"]["final_success"]["p_holm"] for a in ("mc", "exact")] == pytest.approx(
        holm([p_mc, p_exact]))
    assert table["notes"]["matched"]["families"] == {"outcome": ["mc", "exact"]}
    assert rows["mc"]["budget"] == ("outcome: 1,010 env steps = 95 attempts (matched to mc's total, per seed) vs "
                                    "mc: 10 attempts = 1,000 env steps (10 attempts budget)")
    text = format_paired_table(table)
    assert "paired Student-t interval over n = 3 seed(s)" in text and "WARNING: n < 5" in text
    assert "2 arms are compared with outcome here (mc, exact)" in text
