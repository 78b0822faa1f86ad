"""Problems and actions written by hand (`jaxcredit.envs.parse_problem`, `replay_action_names`):
the environment each syntax builds, the problem it holds, and one-line errors."""

import jax
import numpy as np
import pytest

from jaxcredit.envs import BLANK, action_by_name, make, parse_problem, problem_set, replay_action_names

TAPE = "_ t04 _ _ t09"


def test_a_mad_tape_sizes_its_environment():
    env, tape = parse_problem("mad", tape=TAPE, overrides={"max_turns": 7})
    assert (env.length, env.max_useful, env.max_turns, env.num_tokens) == (5, 4, 7, 12)
    assert tape.tolist() == [BLANK, 4, BLANK, BLANK, 9]
    env, tape = parse_problem("mad", tape="t01")
    assert (env.length, env.max_useful) == (1, 1) and tape.tolist() == [1]


def test_a_drawn_mad_tape_is_the_seeds_and_fits_a_given_environment(small_mad):
    env, tape = parse_problem("mad", seed=3, env=small_mad)
    assert env is small_mad
    np.testing.assert_array_equal(tape, small_mad.sample_problem(jax.random.key(3)))
    env, tape = parse_problem("mad", tape="_ t02 _ t01", env=small_mad)
    assert env is small_mad and tape.tolist() == [BLANK, 2, BLANK, 1]


def test_arithmetic_numbers_size_the_environment_and_raise_max_number():
    env, problem = parse_problem("arithmetic", numbers=[2, 50, 3], target=100)
    assert (env.count, env.family, env.max_number) == (3, "default", 50)
    assert problem.numbers.tolist() == [2, 50, 3] and int(problem.target) == 100
    env, _ = parse_problem("arithmetic", numbers=[2, 3, 4, 5], target=14)
    assert (env.count, env.max_number) == (4, None)  # within the family's numbers


def test_a_drawn_arithmetic_problem_is_the_first_of_its_evaluation_set():
    env, problem = parse_problem("arithmetic", family="multiplication", seed=3)
    expected = problem_set("multiplication", 1, 3)
    assert env.family == "multiplication" and env.count == 4
    assert problem.numbers.tolist() == expected.numbers[0].tolist() and int(problem.target) == int(expected.target[0])


@pytest.mark.parametrize("name, kwargs, message", [
    ("chess", {}, "unknown environment 'chess'; choices: arithmetic, mad"),
    ("mad", {"numbers": [1, 2]}, "numbers, target and family are for arithmetic"),
    ("mad", {"tape": " ".join(["_"] * 17)}, "a mad tape has 1 to 16 cells, got 17"),
    ("mad", {"tape": "_ x3"}, "unknown tape cell 'x3'"),
    ("arithmetic", {"tape": "_"}, "a tape is for mad"),
    ("arithmetic", {"numbers": [1, 2]}, "give the numbers and the target together"),
    ("arithmetic", {"family": "nope"}, "unknown problem family 'nope'"),
    ("arithmetic", {"numbers": [1, 2], "target": 3, "env": make("arithmetic")},
     "2 numbers given but the environment's arithmetic has count 4"),
    ("mad", {"tape": TAPE, "env": make("mad")}, "the tape has 5 cells but the environment's mad has length 8"),
    ("mad", {"env": make("arithmetic")}, "the problem is for mad but the environment is arithmetic"),
    ("mad", {"env": make("mad"), "overrides": {"max_turns": 3}}, "not both"),
])
def test_bad_problems_are_one_line(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        parse_problem(name, **kwargs)


def test_replay_by_action_names_plays_them_in_order():
    env, tape = parse_problem("mad", tape=TAPE)
    state = replay_action_names(env, env.init_problem(tape), " select 1;SELECT (4) ; unselect 1")
    assert int(state.turn) == 3 and np.asarray(state.env_state).tolist() == [False, False, False, False, True]
    assert replay_action_names(env, env.init_problem(tape), "  ") is not None
    arithmetic = make("arithmetic", count=3)
    assert [action_by_name(arithmetic, n) for n in ("COMBINE 0 + 1", "combine (0 * 2)", "COMBINE 1 / 0")] == \
        [0, 6, 11]


@pytest.mark.parametrize("actions, message", [
    ("select 1;; submit", "action 2 is empty"),
    ("jump 3", r"unknown action 'jump 3' \(e.g. 'select 0'\)"),
    ("select 1; select 1", r"'select 1' \(action 2\) is not legal at that point"),
    ("select 1; select 4; submit", r"the episode ended after 'submit' \(action 3\)"),
])
def test_bad_actions_are_one_line(actions, message):
    env, tape = parse_problem("mad", tape=TAPE)
    with pytest.raises(ValueError, match=message):
        replay_action_names(env, env.init_problem(tape), actions)
