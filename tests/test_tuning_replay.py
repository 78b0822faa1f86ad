"""Re-scoring recorded tuning curves: the area rule's pick on the mad study's exact arm (hand-checked),
and the replay's regret and CPU accounting on a tiny recorded grid."""

import json
import os

import numpy as np
import pytest

from jaxcredit.train.tuning import tuning_plan, tuning_record
from jaxcredit.train.tuning_replay import point_seconds, replay_arm

DATA = os.path.join(os.path.dirname(__file__), "data", "mad_exact_tuning_curves.json")


def _write(root, arm, name, curves, overrides, *, segments=None, wall=None):
    run = os.path.join(root, arm, name)
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for seed, curve in enumerate(curves):
            for j, value in enumerate(curve):
                row = {"seed_index": seed, "eval_index": j, "validation_success_greedy": value}
                if segments is not None and j > 0:
                    row["segment_seconds"] = segments[j - 1]
                f.write(json.dumps(row) + "\n")
    with open(os.path.join(run, "config.json"), "w") as f:
        json.dump({**{k: v for k, v in overrides.items() if "." not in k}, "num_evals": len(curves[0]) - 1}, f)
    if wall is not None:
        with open(os.path.join(run, "timing.json"), "w") as f:
            json.dump({"sessions": [{"wall_seconds": wall}]}, f)


def test_rescoring_the_mad_exact_grid_by_area_moves_the_pick_off_the_first_point(tmp_path):
    """The recorded exact arm: on the final score p00, p01 and p03 end at 1.000 (se 0) and p05 at 0.997
    (0.992, 1.000, 1.000 over the seeds: se 0.0026), so the four tie and the area breaks the tie; on the
    area, p05 (lr 3e-3, entropy 0.01) wins outright: 0.885 against p00's 0.516."""
    points = json.load(open(DATA))["points"]
    for name, point in points.items():
        _write(str(tmp_path / "tune"), "exact", name, point["validation_success_greedy"], point["overrides"])
    tune = {"grid": {"learning_rate": [3e-4, 1e-3, 3e-3], "entropy_coef": [0.0, 0.01]}, "extend": 0}
    area = tuning_record(tune, ["exact"], str(tmp_path), budget=40_000)["arms"]["exact"]
    p05 = np.asarray(points["p05"]["validation_success_greedy"])[:, 1:].mean(axis=1)  # by hand: evaluations 1..10
    assert area["chosen"] == "p05" and "tie" not in area
    assert area["points"][5]["mean"] == pytest.approx(p05.mean()) == pytest.approx(0.8854, abs=1e-4)
    assert area["points"][0]["mean"] == pytest.approx(0.5156, abs=1e-4)
    final = tuning_record({**tune, "score": "final"}, ["exact"], str(tmp_path), budget=40_000)["arms"]["exact"]
    assert final["tie"] == {"points": ["p00", "p01", "p03", "p05"], "broken_by": "other score"}
    assert final["chosen"] == "p05"
    # with extensions, p05 (the top of both axes) grows one point outward on each of its lines
    plan = tuning_plan({**tune, "extend": 3}, ["exact"], str(tmp_path), num_evals={"exact": 10}, budget=40_000)
    assert [(r.point, r.overrides) for r in plan.pending] == [
        ("p06", {"learning_rate": 9e-3, "entropy_coef": 0.01}), ("p07", {"learning_rate": 3e-3, "entropy_coef": 0.03})]


def test_replay_charges_a_cut_point_its_segments_up_to_its_rung(tmp_path):
    """Three points, 3 evaluations, halving eta 3 with 2 rungs (rungs end at evaluations 1 and 3): at
    evaluation 1 p02 leads alone, so p00 and p01 stop there. Each run: 10 s outside its segments and
    segments of 4, 2, 2 s, so a full run is 18 s and a cut one 14 s."""
    curves = {"p00": [[0.0, 0.1, 0.2, 0.3]] * 2, "p01": [[0.0, 0.2, 0.9, 1.0]] * 2, "p02": [[0.0, 0.5, 0.6, 0.7]] * 2}
    entry = {"chosen": "p00", "points": []}
    for k, (name, curve) in enumerate(curves.items()):
        overrides = {"learning_rate": [1e-3, 3e-3, 1e-2][k]}
        _write(str(tmp_path), "mc", name, curve, overrides, segments=[4.0, 2.0, 2.0], wall=18.0)
        entry["points"].append({"point": name, "overrides": overrides})
    assert point_seconds(str(tmp_path / "mc" / "p00"), [], 1, 3) == pytest.approx(6.0)  # no segments: in proportion
    import jaxcredit.train.tuning_replay as replay

    rules = dict(replay.REPLAY_RULES)
    try:
        replay.REPLAY_RULES["halving"] = {**rules["halving"], "rungs": 2}
        result = replay_arm({"grid": {"learning_rate": [1e-3, 3e-3, 1e-2]}, "num_seeds": 2}, entry,
                            str(tmp_path / "mc"), num_evals=3)
    finally:
        replay.REPLAY_RULES.update(rules)
    assert result["full_grid"] == "p01"  # area 0.7 beats 0.6 and 0.2
    assert result["rules"]["halving"]["chosen"] == "p02"  # p01 was cut at evaluation 1 (0.2 against 0.5)
    assert result["rules"]["halving"]["regret"]["area"] == pytest.approx(0.7 - 0.6)
    assert result["rules"]["as run"]["regret"]["area"] == pytest.approx(0.7 - 0.2)
    assert result["rules"]["as run"]["seconds"] == pytest.approx(3 * 18.0)
    assert result["rules"]["halving"]["seconds"] == pytest.approx(18.0 + 2 * 14.0)
    assert result["rules"]["halving"]["rungs"] == [{"evals": 1, "points": 3}, {"evals": 3, "points": 1}]


def test_the_replay_command_reproduces_the_published_record(tmp_path, capsys):
    """`jaxcredit replay NAME=DIR --out FILE` on decorative-study's results record writes exactly its
    entry of docs/benchmarks/tuning-replay.json (the same rules, picks, regrets and CPU seconds);
    a directory without a tuning record is one line, exit 2."""
    import json

    from jaxcredit.cli import main

    out = tmp_path / "replay.json"
    assert main(["replay", "decorative-study=docs/results/decorative-study/record", "--out", str(out)]) == 0
    published = json.load(open("docs/benchmarks/tuning-replay.json"))
    record = json.load(open(out))
    assert record["rules"] == published["rules"]
    assert record["studies"] == {"decorative-study": published["studies"]["decorative-study"]}
    assert "halving picks the full grid's point for 5 of 5" in capsys.readouterr().out
    assert main(["replay", str(tmp_path)]) == 2
    assert "not a finished tuned sweep or results record (no sweep_spec.json)" in capsys.readouterr().err
