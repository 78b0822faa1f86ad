"""A sweep that runs at a committed tuning record's choices (`SweepSpec.tuned`): every cell takes
the record's overrides, a record that misses an arm or does not exist is one line, and `tuned`
excludes a tuning phase of its own."""

import dataclasses
import json

import pytest

from jaxcredit.train.sweep import SweepSpec, spec_record

SPEC = SweepSpec(name="t", description="", base={"env": "mad", "learning_rate": 1e-3, "num_seeds": 2},
                 arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc"}},
                 budgets={"attempts": 64, "fixed-steps": 2_000})


def _record(tmp_path, arms):
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"arms": {arm: {"overrides": o} for arm, o in arms.items()}}))
    return str(path)


def test_every_cell_runs_at_the_records_choice(tmp_path):
    tuned = _record(tmp_path, {"outcome": {"learning_rate": 0.01, "credit_options.baseline": "rloo"},
                               "mc": {"learning_rate": 0.003, "entropy_coef": 0.01}})
    cells = dataclasses.replace(SPEC, tuned=tuned).cell_configs()
    for regime in ("attempts", "fixed-steps"):
        assert cells[(regime, "outcome")].learning_rate == 0.01
        assert cells[(regime, "outcome")].credit_options.baseline == "rloo"
        assert (cells[(regime, "mc")].learning_rate, cells[(regime, "mc")].entropy_coef) == (0.003, 0.01)
    assert SPEC.cell_configs()[("attempts", "outcome")].learning_rate == 1e-3  # without it: as written
    assert spec_record(dataclasses.replace(SPEC, tuned=tuned), None)["tuned"] == tuned
    assert "tuned" not in spec_record(SPEC, None)  # sweeps written before the field read as they were


def test_a_bad_record_is_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"chooses no setting for \['mc'\]"):
        dataclasses.replace(SPEC, tuned=_record(tmp_path, {"outcome": {}})).cell_configs()
    with pytest.raises(ValueError, match="does not exist"):
        dataclasses.replace(SPEC, tuned=str(tmp_path / "none.json")).cell_configs()
    with pytest.raises(ValueError, match="exclude each other"):
        dataclasses.replace(SPEC, tuned="x.json", tune={"grid": {"learning_rate": [1e-3]}}).check()
