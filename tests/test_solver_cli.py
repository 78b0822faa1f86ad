"""`jaxcredit solve`: hand-checked values, the JSON structure, and one-line errors for bad input."""

import json

import pytest

from jaxcredit.cli import main

TAPE = "_ t04 _ _ t09 _ _ _"


def _run(capsys, *argv):
    try:
        code = main(["solve", *argv])
    except SystemExit as exit_:  # argparse refuses a bad option value itself (one line, exit 2)
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_json_uniform_start_is_best_first_over_legal_actions(capsys):
    code, out, err = _run(capsys, "mad", "--tape", TAPE, "--json")
    assert code == 0 and out.count("\n") == 1
    result = json.loads(out)
    assert set(result) == {"value", "actions"}
    names = [entry["action"] for entry in result["actions"]]
    assert sorted(names) == sorted([f"select {i}" for i in range(8)] + ["submit"])  # legal only
    q = [entry["q"] for entry in result["actions"]]
    assert q == sorted(q, reverse=True) and names[:2] == ["select 1", "select 4"]
    assert result["value"] == pytest.approx(sum(q) / 9, rel=1e-6)  # uniform over 9 legal actions


def test_mid_episode_optimal_values_by_hand(capsys):
    code, out, _ = _run(capsys, "mad", "--tape", TAPE, "--actions", "select 1; select 0; select 4",
                        "--policy", "optimal", "--turns", "2", "--json")
    result = json.loads(out)
    assert code == 0 and result["value"] == 1.0  # unselect 0, then submit
    assert result["actions"][0] == {"action": "unselect 0", "q": 1.0}
    assert all(entry["q"] == 0.0 for entry in result["actions"][1:])
    code, out, _ = _run(capsys, "mad", "--tape", TAPE, "--actions", "select 1;select 0; select 4",
                        "--policy", "optimal", "--turns", "1", "--json")
    assert code == 0 and json.loads(out)["value"] == 0.0


def test_text_output_lists_value_and_actions(capsys):
    code, out, _ = _run(capsys, "mad", "--tape", "_ t01", "--actions", "select 1", "--turns", "3")
    assert code == 0
    assert "3 turns left: value" in out and "unselect 1" in out and "submit" in out


@pytest.mark.parametrize("argv, message", [
    (["mad", "--tape", "_ x04 _"], "unknown tape cell"),
    (["mad", "--tape", "_ t99 _"], "token ids"),
    (["mad", "--tape", TAPE, "--actions", "unselect 3"], "not legal"),
    (["mad", "--tape", TAPE, "--actions", "select 1; select 1"], "not legal"),
    (["mad", "--tape", TAPE, "--actions", "jump 3"], "unknown action"),
    (["mad", "--tape", "_ t04", "--actions", "select 1; submit"], "episode ended"),
    (["mad", "--tape", TAPE, "--turns", "many"], "argument --turns: must be an integer"),
    (["mad", "--tape", TAPE, "--turns", "-2"], "argument --turns: must be in [0, 1024], got -2"),
    (["mad", "--tape", TAPE, "--policy", "/no/such/checkpoint"], "no checkpoint directory"),
    (["mad", "--numbers", "1"], "numbers, target and family are for arithmetic; mad takes a tape or a seed"),
    (["arithmetic", "--numbers", "2", "three", "--target", "14"], "argument --numbers: must be an integer"),
    (["arithmetic", "--numbers", "2", "3", "--target", "x"], "argument --target: must be an integer"),
    (["chess", "--tape", TAPE], "argument env: invalid choice: 'chess'"),
])
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, message):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_present_but_unloadable_checkpoint_is_one_line(capsys, tmp_path):
    code, out, err = _run(capsys, "mad", "--tape", TAPE, "--policy", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
