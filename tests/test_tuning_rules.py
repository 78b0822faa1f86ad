"""The tuner's rules on hand-made scores and recorded curves: ties within the standard error,
successive-halving cuts, grid extensions, and the tuning plan that resumes from its runs."""

import json
import math
import os

import pytest

from jaxcredit.train.tuning import tuning_plan, tuning_record, validation_scores
from jaxcredit.train.tuning_rules import (
    GRID_ORDER,
    choose,
    edge_sides,
    extension_value,
    halving_keep,
    mean_se,
    rung_evals,
    tied,
)


def test_mean_and_standard_error_by_hand():
    assert mean_se([0.5]) == (0.5, 0.0)
    mean, se = mean_se([0.2, 0.4, 0.6])  # std (ddof 1) 0.2, over sqrt(3)
    assert mean == pytest.approx(0.4) and se == pytest.approx(0.2 / math.sqrt(3))


def test_a_tie_within_the_standard_error_is_reported_and_broken_by_the_other_score():
    # means 0.9 (se 0.1/sqrt(2) = 0.0707) and 0.85 (se 0.05/sqrt(2) = 0.0354): a difference of 0.05 is
    # within sqrt(0.0707**2 + 0.0354**2) = 0.079, so they tie; the third (0.5, se 0) is far below
    primary = [[0.8, 0.9, 1.0], [0.8, 0.85, 0.9], [0.5, 0.5, 0.5]]
    assert tied(primary[0], primary[1]) and not tied(primary[0], primary[2])
    other = [[0.6, 0.6, 0.6], [0.7, 0.7, 0.7], [1.0, 1.0, 1.0]]  # the other score prefers the second
    assert choose(primary, other) == {"chosen": 1, "tied": [0, 1], "broken_by": "other score"}
    # no tie: the best mean wins and nothing is reported as broken
    assert choose([[0.9, 0.9], [0.1, 0.1]], [[0.0, 0.0], [1.0, 1.0]]) == {"chosen": 0, "tied": [0], "broken_by": None}
    # identical on both scores: grid order, and the record says so
    assert choose([[1.0, 1.0], [1.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]])["broken_by"] == GRID_ORDER
    with pytest.raises(ValueError, match="at least one point"):
        choose([], [])


def test_halving_keeps_the_best_third_and_every_point_tied_with_the_cut_line():
    # six points, eta 3: keep ceil(6/3) = 2 by mean: 0.9 (p1) and 0.8 (p4); p3's 0.75 (se 0.05) ties
    # with the line 0.8 (se 0): |0.8 - 0.75| = 0.05 <= 0.05; the rest are far
    scores = [[0.1, 0.1], [0.9, 0.9], [0.2, 0.2], [0.7, 0.8], [0.8, 0.8], [0.5, 0.5]]
    assert halving_keep(scores, eta=3) == [1, 3, 4]
    assert halving_keep([[0.0, 0.0]] * 6, eta=3) == list(range(6))  # every point at 0: the rung cuts nothing
    assert halving_keep([[0.3], [0.2], [0.1]], eta=2) == [0, 1]  # ceil(3/2) = 2


def test_rungs_end_at_evaluations_a_factor_eta_apart():
    assert rung_evals(10, eta=3, rungs=3) == [1, 3, 10]
    assert rung_evals(9, eta=3, rungs=3) == [1, 3, 9]
    assert rung_evals(6, eta=2, rungs=2) == [3, 6]
    with pytest.raises(ValueError, match="need more evaluations than num_evals = 2"):
        rung_evals(2, eta=3, rungs=3)


def test_extension_values_step_outward():
    assert extension_value([3e-4, 1e-3, 3e-3], "high") == 9e-3
    assert extension_value([3e-4, 1e-3, 3e-3], "low") == 1e-4
    assert extension_value([0.0, 0.01], "low") == 0.003  # an entropy bonus at 0
    assert extension_value([0.0, 0.01], "high") == 0.03
    assert extension_value([1, 2], "low") is None and extension_value([2, 4], "high") == 12
    assert edge_sides([1, 2, 3], 2) == [] and edge_sides([1, 2, 3], 3) == ["high"] and edge_sides([5], 5) == [
        "low", "high"]


def _write_curve(root, arm, point, curves, config=None):
    run = os.path.join(root, "tune", arm, point)
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for seed, curve in enumerate(curves):
            for j, value in enumerate(curve):
                f.write(json.dumps({"seed_index": seed, "eval_index": j, "validation_success_greedy": value}) + "\n")
    if config is not None:
        with open(os.path.join(run, "config.json"), "w") as f:
            json.dump(config, f)


def test_an_edge_chosen_point_triggers_one_extension_and_an_interior_point_none(tmp_path):
    tune = {"grid": {"learning_rate": [1e-3, 3e-3, 1e-2]}, "num_seeds": 2}
    flat = [[0.0, 0.5], [0.0, 0.5]]
    best = [[0.0, 0.9], [0.0, 0.9]]
    # interior: the middle point wins; nothing to run, no extension
    for k, curve in enumerate((flat, best, flat)):
        _write_curve(tmp_path / "interior", "mc", f"p{k:02d}", curve)
    plan = tuning_plan(tune, ["mc"], str(tmp_path / "interior"), num_evals={"mc": 1}, budget=8)
    assert plan.pending == () and plan.record["arms"]["mc"]["chosen"] == "p01"
    assert plan.record["arms"]["mc"]["extensions"] == [] and plan.record["arms"]["mc"]["edge"] == []
    # the top edge wins: exactly one new point, x3 above, and nothing else
    for k, curve in enumerate((flat, flat, best)):
        _write_curve(tmp_path / "edge", "mc", f"p{k:02d}", curve)
    plan = tuning_plan(tune, ["mc"], str(tmp_path / "edge"), num_evals={"mc": 1}, budget=8)
    assert [(r.point, r.overrides, r.evals) for r in plan.pending] == [("p03", {"learning_rate": 0.03}, 1)]
    # the new point scores lower: the edge point is now interior, chosen, with the extension marked
    _write_curve(tmp_path / "edge", "mc", "p03", flat)
    record = tuning_plan(tune, ["mc"], str(tmp_path / "edge"), num_evals={"mc": 1}, budget=8).record["arms"]["mc"]
    assert record["chosen"] == "p02" and record["edge"] == []
    assert record["extensions"] == [{"axis": "learning_rate", "side": "high", "value": 0.03, "new": True, "round": 1,
                                     "from": "p02", "point": "p03"}]
    assert [p["extension"] for p in record["points"]] == [0, 0, 0, 1]


def test_extensions_stop_after_their_limit_and_the_edge_is_reported(tmp_path):
    tune = {"grid": {"learning_rate": [1e-3, 3e-3]}, "num_seeds": 1, "extend": 2}
    # success grows with the learning rate everywhere: each new top point wins
    rates = {"p00": 1e-3, "p01": 3e-3, "p02": 9e-3, "p03": 0.03}
    for name, rate in rates.items():
        _write_curve(tmp_path, "mc", name, [[0.0, min(1.0, rate * 30)]])
    record = tuning_plan(tune, ["mc"], str(tmp_path), num_evals={"mc": 1}, budget=8).record["arms"]["mc"]
    assert record["chosen"] == "p03" and [e["value"] for e in record["extensions"]] == [9e-3, 0.03]
    assert record["edge"] == [{"axis": "learning_rate", "side": "high", "value": 0.03, "extensions": 2}]


def test_a_corner_fills_its_line_from_the_grid_before_it_steps_outward(tmp_path):
    """After an extension to lr 9e-3 at entropy 0.01, that point's entropy line is {0.01}: its lower
    neighbour 0 exists on the axis and is filled in (not a new value), its upper end steps to 0.03."""
    tune = {"grid": {"learning_rate": [1e-3, 3e-3], "entropy_coef": [0.0, 0.01]}, "num_seeds": 1, "extend": 1}
    score = {(1e-3, 0.0): 0.1, (1e-3, 0.01): 0.2, (3e-3, 0.0): 0.3, (3e-3, 0.01): 0.4}
    root = str(tmp_path)
    for _ in range(4):
        plan = tuning_plan(tune, ["mc"], root, num_evals={"mc": 1}, budget=8)
        for run in plan.pending:  # a made-up surface: the larger both settings, the better, capped at 0.9
            rate, bonus = run.overrides["learning_rate"], run.overrides["entropy_coef"]
            value = score.get((rate, bonus), min(0.9, 0.5 + 10 * rate + 2 * bonus))
            _write_curve(root, "mc", run.point, [[0.0, value]])
    record = tuning_plan(tune, ["mc"], root, num_evals={"mc": 1}, budget=8).record["arms"]["mc"]
    added = [(e["point"], e["axis"], e["value"], e["new"]) for e in record["extensions"]]
    assert added[:2] == [("p04", "learning_rate", 9e-3, True), ("p05", "entropy_coef", 0.03, True)]
    assert ("p06", "entropy_coef", 0.0, False) in added[2:]  # the corner's own line filled from the grid
    assert all(e["new"] is False for e in record["extensions"][2:])  # the limit of one new value per axis
    assert {e["axis"] for e in record["edge"]} == {"learning_rate", "entropy_coef"}


def test_halving_plan_keeps_the_named_points_at_each_rung_and_resumes_mid_rung(tmp_path):
    """Six points, eta 3, 3 rungs on 9 evaluations (rungs end at evaluations 1, 3, 9), 2 seeds.
    Rung 1: p01 and p04 are the best two and p03 ties with the cut line; rung 2: of those three,
    ceil(3/3) = 1 continues (p04, area 0.927), and p01 (0.733 and 0.967: 0.85, se 0.117) ties with
    it; p03 (0.45) is cut. At the end p01's area (0.444, 0.989) still ties with p04's 0.969, and the
    final score (0.65 against 0.99) breaks the tie."""
    tune = {"grid": {"learning_rate": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]}, "num_seeds": 2, "rule": "halving",
            "eta": 3, "rungs": 3, "extend": 0}
    at_1 = {"p00": [0.1, 0.1], "p01": [0.9, 0.9], "p02": [0.2, 0.2], "p03": [0.7, 0.8], "p04": [0.8, 0.8],
            "p05": [0.5, 0.5]}
    later = {"p01": [[1.0, 0.3], [1.0, 1.0]], "p03": [[0.3, 0.3], [0.3, 0.3]], "p04": [[0.99, 0.99], [0.99, 0.99]]}
    root = str(tmp_path)

    def curves(name, upto):  # per seed, evaluations 0..upto; after evaluation 3 a point holds its last value
        first = [[0.0, at_1[name][s]] for s in range(2)]
        rest = later.get(name, [[at_1[name][s]] * 2 for s in range(2)])
        return [(first[s] + rest[s] + [rest[s][-1]] * 6)[:upto + 1] for s in range(2)]

    plan = tuning_plan(tune, ["mc"], root, num_evals={"mc": 9}, budget=90)
    assert [(r.point, r.evals) for r in plan.pending] == [(f"p{k:02d}", 1) for k in range(6)]
    for k in range(6):
        _write_curve(root, "mc", f"p{k:02d}", curves(f"p{k:02d}", 1))
    plan = tuning_plan(tune, ["mc"], root, num_evals={"mc": 9}, budget=90)
    assert [(r.point, r.evals) for r in plan.pending] == [("p01", 3), ("p03", 3), ("p04", 3)]
    _write_curve(root, "mc", "p01", curves("p01", 3))  # interrupted mid-rung: p03 and p04 have not run
    plan = tuning_plan(tune, ["mc"], root, num_evals={"mc": 9}, budget=90)
    assert [(r.point, r.evals) for r in plan.pending] == [("p03", 3), ("p04", 3)]
    for name in ("p03", "p04"):
        _write_curve(root, "mc", name, curves(name, 3))
    plan = tuning_plan(tune, ["mc"], root, num_evals={"mc": 9}, budget=90)
    assert [(r.point, r.evals) for r in plan.pending] == [("p01", 9), ("p04", 9)]
    for name in ("p01", "p04"):
        _write_curve(root, "mc", name, curves(name, 9))
    record = tuning_record(tune, ["mc"], root, budget=90, num_evals={"mc": 9})
    entry = record["arms"]["mc"]
    assert record["halving"] == {"eta": 3, "rungs": 3, "rung_evals": {"mc": [1, 3, 9]}}
    assert entry["chosen"] == "p04" and entry["tie"] == {"points": ["p01", "p04"], "broken_by": "other score"}
    reached = {p["point"]: [r["evals"] for r in p["rungs"]] for p in entry["points"]}
    assert reached == {"p00": [1], "p01": [1, 3, 9], "p02": [1], "p03": [1, 3], "p04": [1, 3, 9], "p05": [1]}
    cut = {p["point"]: [r["continued"] for r in p["rungs"]] for p in entry["points"]}
    assert cut["p03"] == [True, False] and cut["p00"] == [False]
    assert "scores" not in entry["points"][3] and entry["points"][4]["scores"] == validation_scores(
        [json.loads(line) for line in open(os.path.join(root, "tune", "mc", "p04", "metrics.jsonl"))])


def test_bad_halving_settings_are_refused():
    from jaxcredit.train.tuning import check_tune

    grid = {"grid": {"learning_rate": [1e-3]}}
    for tune, message in (({**grid, "rule": "asha"}, "tune.rule must be one of grid, halving"),
                          ({**grid, "rule": "halving", "eta": 1}, "tune.eta must be an integer >= 2"),
                          ({**grid, "eta": 3}, "belong to rule 'halving'"),
                          ({**grid, "extend": -1}, "tune.extend must be an integer >= 0")):
        with pytest.raises(ValueError, match=message):
            check_tune(tune, ["mc"])


def test_a_point_recorded_with_fewer_seeds_gets_the_rest_in_a_run_of_its_own(tmp_path):
    """A point recorded with 3 tuning seeds (1000-1002) and a tuning that asks for 5: the plan asks
    for `p00-s1003` (seeds 1003-1004) only, and scores the point over all five."""
    tune = {"grid": {"learning_rate": [1e-3]}, "num_seeds": 5, "seed": 1000, "extend": 0}
    config = {"learning_rate": 1e-3, "seed": 1000, "num_seeds": 3, "num_evals": 1}
    _write_curve(tmp_path, "mc", "p00", [[0.0, 0.2], [0.0, 0.4], [0.0, 0.6]], config)
    plan = tuning_plan(tune, ["mc"], str(tmp_path), num_evals={"mc": 1}, budget=8)
    assert [(r.run, r.seed, r.num_seeds, r.evals) for r in plan.pending] == [("p00-s1003", 1003, 2, 1)]
    _write_curve(tmp_path, "mc", "p00-s1003", [[0.0, 0.8], [0.0, 1.0]], {**config, "seed": 1003, "num_seeds": 2})
    entry = tuning_plan(tune, ["mc"], str(tmp_path), num_evals={"mc": 1}, budget=8).record["arms"]["mc"]
    assert entry["points"][0]["scores"] == [0.2, 0.4, 0.6, 0.8, 1.0] and entry["points"][0]["n"] == 5
    with pytest.raises(ValueError, match="holds seeds 1000..1002; the tuning asks for 2000..2004"):
        tuning_plan({**tune, "seed": 2000}, ["mc"], str(tmp_path), num_evals={"mc": 1}, budget=8)


def test_the_tuning_table_shows_errors_cuts_ties_and_edges(tmp_path):
    from jaxcredit.analysis.page import tuning_lines

    tune = {"grid": {"learning_rate": [1e-3, 3e-3, 1e-2]}, "num_seeds": 2, "rule": "halving", "eta": 3, "rungs": 2,
            "extend": 0}
    curves = {"p00": [[0.0, 0.1, 0.2], [0.0, 0.1, 0.2]], "p01": [[0.0, 0.5, 0.9], [0.0, 0.6, 0.8]],
              "p02": [[0.0, 0.6, 0.9], [0.0, 0.5, 0.7]]}
    for name, curve in curves.items():
        _write_curve(tmp_path, "mc", name, curve)
    record = tuning_record(tune, ["mc"], str(tmp_path), budget=8, num_evals={"mc": 2})
    text = "\n".join(tuning_lines(tune, record))
    assert "| mc | p00 | learning_rate=0.001 | 0 | cut | | |  | 0.100 ✂ |  |" in text
    assert "| mc | p01 | learning_rate=0.003 | 0 | 0.700 ± 0.000 | 0.850 ± 0.050 |" in text
    assert "| mc | p02 | learning_rate=0.01 | 0 | 0.675 ± 0.075 | 0.800 ± 0.100 |" in text
    assert "`mc`: p01, p02 tie within the standard error; broken by the final (p01)." in text
    assert "still on the high edge of `learning_rate` (0.01)" not in text  # p01 is interior
