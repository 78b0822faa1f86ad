"""`jaxcredit play`: one episode through the text protocol on stdin, and one-line errors on bad input."""

import io
import re
import subprocess
import sys

import pytest

from jaxcredit import cli
from jaxcredit.envs import problem_set

WORKED = ("<ACT>COMBINE 2 + 3 = 5</ACT>\n<ACT>COMBINE 4 + 5 = 9</ACT>\n<ACT>COMBINE 5 + 9 = 14</ACT>\n"
          "<FINAL>14</FINAL>\n")


def _play(monkeypatch, capsys, argv, replies):
    monkeypatch.setattr(sys, "stdin", io.StringIO(replies))
    try:
        code = cli.main(["play", *argv])
    except SystemExit as exit_:  # argparse refuses a bad option value itself (one line, exit 2)
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_worked_example(monkeypatch, capsys):
    code, out, err = _play(monkeypatch, capsys, ["arithmetic", "--numbers", "2", "3", "4", "5", "--target", "14"],
                           "<ACT>COMBINE 2 + 3 = 6</ACT>\n" + WORKED)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "refused: wrong result: 2 + 3 = 5, not 6" in lines
    assert [line for line in lines if line.startswith("accepted")] == [
        # a number names the first live slot holding it: after 2 + 3 = 5 into slot 0, "5" is slot 0
        "accepted: COMBINE 0 + 1", "accepted: COMBINE 2 + 0", "accepted: COMBINE 3 + 2", "accepted: FINAL 3"]
    assert lines[-1] == "outcome: solved, reward 1 in 5 turns"
    assert "Numbers available: 9 5" in out and "Turns left: 4" in out


def test_wrong_final_then_out_of_turns(monkeypatch, capsys):
    code, out, _ = _play(monkeypatch, capsys, ["arithmetic", "--numbers", "2", "3", "4", "5", "--target", "14",
                                               "--turns", "4"], "<FINAL>2</FINAL>\nhello\n<ACT>UNDO</ACT>\nx\n")
    assert code == 0
    assert "accepted: FINAL 0 (wrong answer, reward 0)" in out and "refused: nothing to undo" in out
    assert out.splitlines()[-1] == "outcome: out of turns, reward 0 in 4 turns"


def test_input_ending_early(monkeypatch, capsys):
    code, out, _ = _play(monkeypatch, capsys, ["arithmetic", "--numbers", "2", "3", "--target", "6"],
                         "<ACT>COMBINE 2 * 3 = 6</ACT>\n")
    assert code == 0 and out.splitlines()[-1] == "outcome: unfinished (input ended) after 1 turns, reward 0"


def test_drawn_problem_is_the_evaluation_set_problem(monkeypatch, capsys):
    problem = problem_set("multiplication", 1, 3)
    _, out, _ = _play(monkeypatch, capsys, ["arithmetic", "--family", "multiplication", "--seed", "3"], "")
    numbers = " ".join(str(n) for n in problem.numbers[0].tolist())
    assert f"Target: {int(problem.target[0])}\n" in out and f"Numbers available: {numbers}\n" in out


def test_mad_given_tape(monkeypatch, capsys):
    code, out, _ = _play(monkeypatch, capsys, ["mad", "--tape", "_ t04 _ _ t09 _ _ _"],
                         "select 1\nsubmit\nselect 4\nsubmit\n")
    assert code == 0 and "accepted: submit (wrong answer, reward 0)" in out
    assert out.splitlines()[-1] == "outcome: solved, reward 1 in 4 turns"


@pytest.mark.parametrize("argv, message", [
    (["arithmetic", "--numbers", "2", "3"], "give the numbers and the target together"),
    (["arithmetic", "--family", "nope"], "unknown problem family 'nope'; choices"),
    (["arithmetic", "--tape", "_ t01"], "a tape is for mad"),
    (["arithmetic", "--numbers", "2", "3", "4", "5", "--target", "14", "--turns", "2"],
     r"max_turns must be in \[4, 1024\]"),
    (["arithmetic", "--numbers", "2", "-3", "--target", "1"], r"--numbers: must be in \[0, "),
    (["arithmetic", "--numbers", "99", "99", "99", "99", "99", "--target", "1"], "10 digits; observations hold at"),
    (["mad", "--tape", "_ x3 _ _ _ _ _ _"], "unknown tape cell 'x3'"),
    (["mad", "--family", "default"], "are for arithmetic"),
    (["mad", "--turns", "0"], r"mad\.max_turns must be in \[1, 1024\]"),
])
def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys, argv, message):
    code, out, err = _play(monkeypatch, capsys, argv, "")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("jaxcredit: error: ") and re.search(message, err)


def test_piped_stdin_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "jaxcredit.cli", "play", "arithmetic", "--numbers", "2", "3", "4", "5",
         "--target", "14"],
        input=WORKED, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "outcome: solved, reward 1 in 4 turns"
