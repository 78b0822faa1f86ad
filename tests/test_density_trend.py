"""The density trend of a time-to-threshold gap: per-seed gaps and their slope against log2 ρ."""

import json

import numpy as np
import pytest

from jaxcredit.analysis.density_trend import density_gap_trend

DENSITIES = (1, 0.5, 0.25)


def _cell(root, regime, name, first_hit):
    """A cell whose seed s first reaches greedy success 1 at evaluation `first_hit[s]` (64 attempts
    and 100 env steps an evaluation; None: never)."""
    path = root / regime / name
    path.mkdir(parents=True)
    rows = [{"seed_index": s, "eval_index": e, "success_greedy": float(hit is not None and e >= hit),
             "main_episodes": 64 * e, "total_env_steps": 100 * e}
            for s, hit in enumerate(first_hit) for e in range(8)]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_gap_and_slope_from_known_first_hits(tmp_path):
    # exact first reaches it at evaluation 1 everywhere; outcome at 1, 2, 3 (seed 0) and 1, 3, 5 (seed 1)
    for d, hits in zip(DENSITIES, ([1, 1], [2, 3], [3, 5])):
        _cell(tmp_path, "attempts", f"outcome-rho{d:g}", hits)
        _cell(tmp_path, "attempts", f"exact-rho{d:g}", [1, 1])
    trend = density_gap_trend(str(tmp_path), regime="attempts", credit="exact", densities=DENSITIES)
    assert trend["gaps"] == [[0, 64, 128], [0, 128, 256]]
    assert trend["gap_mean"] == [0, 96, 192]
    # slopes against log2 ρ = 0, -1, -2: -64 and -128 per unit, so the gap grows as ρ falls
    assert trend["slope"]["n"] == 2 and trend["slope"]["mean"] == pytest.approx(-96)
    assert trend["slope"]["low"] < -96 < trend["slope"]["high"]
    steps = density_gap_trend(str(tmp_path), regime="attempts", credit="exact", densities=DENSITIES,
                              cost="total_env_steps")
    assert steps["slope"]["mean"] == pytest.approx(-150)


def test_a_seed_that_never_reaches_it_is_left_out(tmp_path):
    for d, hits in zip(DENSITIES, ([1, 1], [2, None], [3, 5])):
        _cell(tmp_path, "attempts", f"outcome-rho{d:g}", hits)
        _cell(tmp_path, "attempts", f"exact-rho{d:g}", [1, 1])
    trend = density_gap_trend(str(tmp_path), regime="attempts", credit="exact", densities=DENSITIES)
    assert np.isnan(trend["gaps"][1][1]) and trend["gap_mean"][1] == 64
    assert trend["slope"]["n"] == 1 and np.isnan(trend["slope"]["low"])  # seed 1 has only 2 densities


def test_bad_input_is_named(tmp_path):
    with pytest.raises(ValueError, match="cost must be one of"):
        density_gap_trend(str(tmp_path), regime="attempts", credit="exact", cost="seconds")
    with pytest.raises(ValueError, match="at least 3 densities"):
        density_gap_trend(str(tmp_path), regime="attempts", credit="exact", densities=(1, 0.5))
    with pytest.raises(FileNotFoundError, match="attempts/outcome-rho1"):
        density_gap_trend(str(tmp_path), regime="attempts", credit="exact")
