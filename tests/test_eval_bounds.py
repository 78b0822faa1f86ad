"""Evaluation sets within the environment's bounds: an arithmetic family whose numbers the
observation cannot show exactly is refused when the sets are built, traced or not, and by the
command line in one line with exit code 2, before anything is written."""

import os
from types import SimpleNamespace

import numpy as np
import pytest

from jaxcredit.cli import main
from jaxcredit.envs import make, problem_set
from jaxcredit.train.evaluation import evaluation_sets, validation_set
from jaxcredit.train.presets import get_preset


def test_cli_refuses_an_out_of_bounds_family_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "--env", "arithmetic", "--out", "run", "--set",
                 'eval_families=["default", "large_values"]'])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert err.startswith("jaxcredit: error: config.eval_families: family 'large_values' draws numbers up to 99")
    assert "numbers in [0, 9] (max_number)" in err and "6561" in err and "4 digits" in err, err
    assert os.listdir(tmp_path) == []


def test_evaluation_sets_refuse_problems_outside_the_bound_even_unchecked_by_the_config():
    env = make("arithmetic")  # default: numbers up to 9, values shown with 4 digits
    config = SimpleNamespace(eval_families=("default", "large_values"), eval_problems=3, eval_seed=0,
                             holdout_fraction=0.2, validation_problems=3)
    first = problem_set("large_values", 1, 0).numbers[0]  # not the first of the evaluation part, but >= 10
    assert first.min() >= 10
    with pytest.raises(ValueError, match=r"^evaluation set of family 'large_values': problem 0 holds the number "
                                         r"\d\d, outside the environment's bound \(numbers in \[0, 9\]"):
        evaluation_sets(env, config)
    within = evaluation_sets(env, SimpleNamespace(**{**vars(config), "eval_families": ("default", "multiplication")}))
    assert set(within) == {"default", "multiplication"} and within["multiplication"].numbers.max() <= 9
    assert validation_set(env, config).numbers.shape == (3, 4)


def test_check_problems_names_the_first_offending_value():
    env = make("arithmetic")
    numbers = np.array([[1, 2, 3, 4], [1, 12, 3, 40]], np.int32)
    batch = type(problem_set("default", 1, 0))(numbers=numbers, target=np.array([10, 7], np.int32))
    with pytest.raises(ValueError, match=r"^here: problem 1 holds the number 12, outside"):
        env.check_problems(batch, label="here")
    batch = batch.replace(numbers=np.array([[1, 2, 3, 4], [1, 2, 3, 4]], np.int32),
                          target=np.array([10, 6562], np.int32))
    with pytest.raises(ValueError, match=r"^here: problem 1 has the target 6562, outside \[0, 6561\]"):
        env.check_problems(batch, label="here")


def test_a_bound_that_covers_the_family_accepts_it():
    wide = make("arithmetic", max_number=99)  # values up to 99**4 = 96,059,601: 8 digits
    assert wide.digits == 8
    wide.check_family("large_values", label="x")
    wide.check_problems(problem_set("large_values", 20, 1), label="x")


def test_the_base_check_runs_check_problem_on_every_row():
    mad = make("mad", length=3, num_tokens=2, min_useful=1, max_useful=2, max_turns=5)
    tape = np.asarray(mad.parse_tape("_ t01 t00"))
    mad.check_problems(np.stack([tape, tape]), label="x")
    bad = np.stack([tape, np.full_like(tape, 99)])
    with pytest.raises(ValueError, match=r"^x: problem 1: "):
        mad.check_problems(bad, label="x")


def test_the_arithmetic_study_evaluates_only_families_within_its_bound():
    spec = get_preset("arithmetic-study")
    for config in spec.cell_configs().values():  # every cell's config passes the bound check
        assert config.eval_families == ("default", "small_targets", "multiplication")
