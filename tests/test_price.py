"""The break-even label price on hand-built curves (`jaxcredit.analysis.price`)."""
import dataclasses
import json
import math
import os
import pathlib
import shutil

import numpy as np
import pytest

from jaxcredit.analysis.price import PRICE_GRID, break_even_price, outcome_at, price_gaps, price_text
from jaxcredit.analysis.price_sweep import plot_price_gaps, prices_markdown, sweep_prices

# outcome's success rises linearly with its total: s(t) = t / 100 on [0, 100], three paired seeds
TOTALS = np.tile(np.linspace(0.0, 100.0, 11), (3, 1))
SUCCESS = TOTALS / 100.0


def test_the_grid_runs_from_one_64th_to_one_in_seven_prices():
    assert PRICE_GRID[0] == 1 / 64 and PRICE_GRID[-1] == 1 and len(PRICE_GRID) == 7


def test_p_star_on_a_grid_price_equals_its_hand_computed_value():
    # arm 0.5 at main 10 + p * label 80: gap 0.5 - (10 + 80 p) / 100 = 0.4 - 0.8 p, zero at p = 1/2
    gaps = price_gaps([0.5, 0.5, 0.5], [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS)
    np.testing.assert_allclose(gaps[0], 0.4 - 0.8 * np.asarray(PRICE_GRID))
    result = break_even_price(gaps)
    assert result["p_star"] == pytest.approx(0.5) and result["text"] == "0.5"
    assert result["num_seeds"] == 3


def test_p_star_between_grid_prices_is_interpolated_in_log_price():
    # gap 0.3 - 0.8 p: +0.1 at p = 1/4 and -0.1 at p = 1/2, so log p* is halfway: p* = 2^-1.5
    gaps = price_gaps([0.4] * 3, [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS)
    assert break_even_price(gaps)["p_star"] == pytest.approx(2 ** -1.5)


def test_the_interval_is_where_the_band_crosses_zero():
    # seeds at 0.35, 0.4, 0.45: gaps 0.25 - 0.8 p, 0.3 - 0.8 p, 0.35 - 0.8 p
    gaps = price_gaps([0.35, 0.4, 0.45], [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS)
    result = break_even_price(gaps)
    half = 4.302652729911275 * 0.05 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    prices = np.asarray(PRICE_GRID)
    low = 0.3 - half - 0.8 * prices  # the band's lower edge crosses first
    i = int(np.flatnonzero(low <= 0)[0])
    expected = math.exp(math.log(prices[i - 1]) + low[i - 1] / (low[i - 1] - low[i])
                        * (math.log(prices[i]) - math.log(prices[i - 1])))
    assert result["low"] == pytest.approx(expected)
    assert result["low"] < result["p_star"] < result["high"]


def test_outside_the_measured_range_p_star_is_stated_as_a_bound():
    always_ahead = price_gaps([0.99] * 3, [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS)
    result = break_even_price(always_ahead)
    assert result["p_star"] == math.inf and result["text"] == "> 1"
    never_ahead = price_gaps([0.05] * 3, [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS)
    result = break_even_price(never_ahead)
    assert result["p_star"] == -math.inf and result["text"] == "< 0.0156"
    assert price_text(0.25, PRICE_GRID) == "0.25"


def test_a_curve_that_does_not_reach_a_total_is_refused_by_name():
    with pytest.raises(ValueError, match="seed 0 ends at 100, but a price needs 210"):
        price_gaps([0.5] * 3, [10.0] * 3, [200.0] * 3, TOTALS, SUCCESS)
    with pytest.raises(ValueError, match="must increase"):
        outcome_at(TOTALS[:, ::-1], SUCCESS, np.ones((3, 2)))
    with pytest.raises(ValueError, match="at least 2 paired seeds"):
        break_even_price(np.ones((1, 7)))
    with pytest.raises(ValueError, match="prices must be"):
        price_gaps([0.5] * 3, [10.0] * 3, [80.0] * 3, TOTALS, SUCCESS, prices=[0.5, 0.25])


def _write_rows(path, rows):
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def price_sweep(tmp_path):
    """A hand-built sweep: outcome's fixed-steps curve s(t) = t / 100 (11 evaluations), and an
    `exact` whose attempts runs end at 0.5 (average 0.4) after 10 main and 80 label env steps."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep_spec.json").write_text(json.dumps({"arm_order": ["outcome", "exact"]}))
    curve, arm = [], []
    for seed in range(3):
        for t in np.linspace(0.0, 100.0, 11):
            curve.append({"seed_index": seed, "success_greedy": t / 100, "total_env_steps": t,
                          "main_env_steps": t, "total_policy_evals": t, "main_policy_evals": t})
        for i, success in enumerate((0.0, 0.3, 0.5)):
            arm.append({"seed_index": seed, "success_greedy": success, "main_env_steps": 5 * i,
                        "total_env_steps": 45 * i, "main_policy_evals": 5 * i, "total_policy_evals": 5 * i})
    _write_rows(sweep / "fixed-steps" / "outcome", curve)
    _write_rows(sweep / "attempts" / "exact", arm)
    return str(sweep)


def test_a_sweeps_price_table_equals_its_hand_computed_values(price_sweep):
    record = sweep_prices(price_sweep)
    assert list(record["arms"]) == ["exact"] and list(record["arms"]["exact"]) == ["env_steps"]
    by_score = record["arms"]["exact"]["env_steps"]
    assert by_score["final"]["p_star"] == pytest.approx(0.5)  # 0.5 - (10 + 80 p) / 100 = 0
    # average: 0.4 against outcome's mean at B / 2 and B, 0.0075 B: gap 0.325 - 0.6 p, +0.025 at
    # p = 1/2 and -0.275 at p = 1, so log p* = log 1/2 + (0.025 / 0.3) log 2
    assert by_score["average"]["p_star"] == pytest.approx(0.5 * 2 ** (1 / 12))
    assert by_score["final"]["covered"] == list(PRICE_GRID)
    # identical seeds: the band is the mean itself
    assert "| exact | env steps | 0.0156 to 1 | 0.5 [0.5, 0.5] | 0.53 [0.53, 0.53] |" in prices_markdown(record)


def test_jaxcredit_price_prints_the_table_and_refuses_what_is_not_a_sweep(price_sweep, tmp_path, capsys):
    from jaxcredit.cli import main

    assert main(["price", price_sweep, "--out", str(tmp_path / "price.json"), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0
    assert "| exact | env steps |" in capsys.readouterr().out
    assert json.loads((tmp_path / "price.json").read_text())["arms"]["exact"]["env_steps"]["final"]["p_star"] == 0.5
    assert main(["price", str(tmp_path)]) == 2
    assert "no sweep_spec.json" in capsys.readouterr().err


def test_the_price_plot_draws_one_line_per_arm(price_sweep, tmp_path):
    drawn = plot_price_gaps(sweep_prices(price_sweep), str(tmp_path / "price.png"))
    assert drawn["lines"] == ["exact"] and os.path.getsize(drawn["path"]) > 0


def _write_view(root, name, final, average):
    view = root / f"to-{name}"
    view.mkdir(parents=True)
    seeds = [{"seed_index": s, "final_success": final, "average_success": average} for s in range(3)]
    (view / "summary.json").write_text(json.dumps({"seeds": seeds}))


def test_p_star_from_the_reference_matched_at_each_price(price_sweep):
    """With `prices`, the reference's success at each price is its own run of that total (a matched
    view), not the long curve: exact's 0.5 against outcome's 0.3, 0.5 and 0.9 at p = 1/4, 1/2, 1
    crosses at 1/2; its average 0.4 against 0.2, 0.3, 0.5 crosses between 1/2 and 1."""
    sweep = pathlib.Path(price_sweep)
    (sweep / "sweep_spec.json").write_text(json.dumps({"arm_order": ["outcome", "exact"], "prices": [0.25, 0.5]}))
    root = sweep / "matched" / "outcome"
    for name, final, average in (("exact@0.25", 0.3, 0.2), ("exact@0.5", 0.5, 0.3), ("exact", 0.9, 0.5)):
        _write_view(root, name, final, average)
    by_score = sweep_prices(price_sweep)["arms"]["exact"]["env_steps"]
    assert by_score["final"]["p_star"] == pytest.approx(0.5) and by_score["final"]["source"] == "matched views"
    assert by_score["final"]["covered"] == [0.25, 0.5, 1.0]
    assert by_score["average"]["p_star"] == pytest.approx(2 ** -0.5)  # +0.1 at 1/2, -0.1 at 1: halfway in log p
    assert "outcome's matched runs at each price" in prices_markdown(sweep_prices(price_sweep))
    shutil.rmtree(root / "to-exact@0.5")  # a price not run yet: back to the long curve
    assert "source" not in sweep_prices(price_sweep)["arms"]["exact"]["env_steps"]["final"]


def test_a_priced_sweep_matches_the_reference_to_main_plus_p_times_label(tmp_path):
    from jaxcredit.train.sweep import SweepSpec, matched_cells

    tiny = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
    spec = SweepSpec("priced", "", {"env": "mad", "env_overrides": tiny, "num_seeds": 2},
                     {"outcome": {"credit": "outcome"}, "exact": {"credit": "exact"}}, {"attempts": 100},
                     regimes=("attempts", "matched"), match_on=("env_steps", "policy_evals"), prices=(0.25, 0.5))
    spec.check()
    rows = [{"seed_index": s, "eval_index": 1, "main_env_steps": 100 + s, "total_env_steps": 900 + s,
             "main_policy_evals": 80, "total_policy_evals": 480} for s in range(2)]
    _write_rows(tmp_path / "attempts" / "exact", rows)
    summary = {"seeds": [{"seed_index": s, "total_env_steps": 900 + s, "total_policy_evals": 480} for s in range(2)]}
    cells = matched_cells(spec, {("attempts", "exact"): summary}, str(tmp_path), resume=False, num_seeds=None)
    targets = {cell.match_on: cell.targets for cell in cells}
    assert targets["env_steps"] == {"exact": [900, 901], "exact@0.25": [300, 301], "exact@0.5": [500, 501]}
    assert targets["policy_evals"] == {"exact": [480, 480], "exact@0.25": [180, 180], "exact@0.5": [280, 280]}
    for bad in ((0.5, 0.25), (0.0, 0.5), (1.0,), ()):
        with pytest.raises(ValueError, match="prices must be increasing label prices in"):
            dataclasses.replace(spec, prices=bad).check()
