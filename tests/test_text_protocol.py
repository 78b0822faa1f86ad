"""Text protocols: hand-computed replies and refusals, prompts, and properties of the parsers."""

import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxcredit.envs.text_protocol import OP_SPELLINGS, Refusal, text_protocol

WS = "[ \t\r\n]*"
NUM = "[0-9]{1,10}"
OP = "(?:" + "|".join(re.escape(op) for op in OP_SPELLINGS) + ")"
ARITHMETIC_GRAMMAR = re.compile(
    f"{WS}(?:<ACT>{WS}COMBINE{WS}{NUM}{WS}{OP}{WS}{NUM}{WS}={WS}{NUM}{WS}</ACT>"
    f"|<ACT>{WS}UNDO{WS}</ACT>|<FINAL>{WS}{NUM}{WS}</FINAL>){WS}")
MAD_GRAMMAR = re.compile(f"{WS}(?:(?:select|unselect)[ \t\r\n]+{NUM}|submit){WS}")


@pytest.fixture(scope="module")
def game(arithmetic):
    protocol = text_protocol(arithmetic)
    return arithmetic, protocol, arithmetic.init_problem(arithmetic.make_problem([2, 3, 4, 5], 14))


@pytest.fixture(scope="module")
def mad_game(mad):
    return mad, text_protocol(mad), mad.init_problem(mad.parse_tape("_ t04 _ _ t09 _ _ _"))


def test_worked_example_through_text(game):
    env, protocol, state = game
    replies = ["<ACT>COMBINE 2 + 3 = 5</ACT>", " <ACT>COMBINE 4+5=9</ACT>\n", "<ACT> COMBINE 5 + 9 = 14 </ACT>",
               "<FINAL>14</FINAL>"]
    for reply in replies:
        state, parsed = protocol.step(state, reply)
        assert not isinstance(parsed, Refusal) and not bool(state.rejected)
    assert float(state.reward) == 1.0 and bool(state.terminated) and int(state.turn) == 4
    assert isinstance(protocol.parse("<ACT>UNDO</ACT>", state), Refusal)


@pytest.mark.parametrize("op, spellings", [(0, "+"), (1, "-\u2212"), (2, "*x\u00d7"), (3, "/\u00f7")])
def test_operator_spellings(game, op, spellings):
    env, protocol, state = game
    a, b = (4, 2)
    result = [a + b, a - b, a * b, a // b][op]
    for spelling in spellings:
        reply = f"<ACT>COMBINE {a} {spelling} {b} = {result}</ACT>"
        assert protocol.parse(reply, state) == env.combine_action(2, op, 0)


@pytest.mark.parametrize("reply, reason", [
    ("COMBINE 2 + 3 = 5", "malformed: reply with exactly one"),
    ("<ACT>COMBINE 2 + 3 = 5</ACT> thanks", "malformed: reply with exactly one"),
    ("<act>UNDO</act>", "malformed: reply with exactly one"),
    ("<ACT>FINAL 22</ACT>", "FINAL goes in <FINAL>n</FINAL>"),
    ("<ACT>COMBINE 2 + 3</ACT>", "malformed: expected <ACT>COMBINE"),
    ("<ACT>COMBINE 2 + 3 = 5 = 5</ACT>", "malformed: too many parts"),
    ("<ACT>combine 2 + 3 = 5</ACT>", "unexpected character 'c'"),
    ("<ACT>COMBINE 2 ^ 3 = 8</ACT>", "unexpected character '^'"),
    ("<ACT>COMBINE -2 + 3 = 1</ACT>", "malformed"),
    ("<ACT>ADD 2 3</ACT>", "unknown command 'ADD'"),
    ("<ACT>COMBINE 12345678901 + 3 = 5</ACT>", "more than 10 digits"),
    ("<ACT>COMBINE 7 + 3 = 10</ACT>", "7 is not an available number"),
    ("<ACT>COMBINE 3 + 3 = 6</ACT>", "3 is not an available number a second time"),
    ("<ACT>COMBINE 2 + 3 = 6</ACT>", "wrong result: 2 + 3 = 5, not 6"),
    ("<ACT>COMBINE 2 - 3 = 0</ACT>", "2 - 3 is negative"),
    ("<ACT>COMBINE 5 / 2 = 2</ACT>", "5 / 2 is not exact"),
    ("<ACT>UNDO</ACT>", "nothing to undo"),
    ("<ACT>UNDO UNDO</ACT>", "malformed"),
    ("<FINAL>7</FINAL>", "7 is not an available number"),
    ("<FINAL>2 3</FINAL>", "malformed: expected <FINAL>n</FINAL>"),
    ("<FINAL></FINAL>", "malformed: expected <FINAL>n</FINAL>"),
    ("", "malformed"),
])
def test_refusal_reasons(game, reply, reason):
    env, protocol, state = game
    parsed = protocol.parse(reply, state)
    assert isinstance(parsed, Refusal) and reason in parsed.reason


def test_division_by_zero_refused(arithmetic):
    protocol = text_protocol(arithmetic)
    state = arithmetic.init_problem(arithmetic.make_problem([6, 0, 2, 3], 1))
    assert protocol.parse("<ACT>COMBINE 6 / 0 = 0</ACT>", state) == Refusal("6 / 0 divides by zero")
    assert protocol.parse("<ACT>COMBINE 0 / 6 = 0</ACT>", state) == arithmetic.combine_action(1, 3, 0)


def test_refusal_uses_a_turn_like_an_illegal_action(game):
    env, protocol, state = game
    after, parsed = protocol.step(state, "<ACT>COMBINE 2 + 3 = 6</ACT>")
    assert isinstance(parsed, Refusal) and bool(after.rejected) and int(after.turn) == 1
    assert after.observation.tolist() == state.observation.tolist() and float(after.reward) == 0.0
    assert after.env_state.values.tolist() == state.env_state.values.tolist()


def test_wrong_final_is_accepted_and_the_episode_goes_on(game):
    env, protocol, state = game
    state, parsed = protocol.step(state, "<FINAL>5</FINAL>")
    assert parsed == env.final_action(3) and not bool(state.rejected) and not bool(state.done)


def test_prompt_shows_target_numbers_turns_and_history(game):
    env, protocol, state = game
    state, _ = protocol.step(state, "<ACT>COMBINE 4 * 5 = 20</ACT>")
    state, _ = protocol.step(state, "<ACT>COMBINE 9 * 5 = 45</ACT>")  # refused
    prompt = protocol.render_prompt(state)
    assert "Target: 14\n" in prompt and "Numbers available: 2 3 20\n" in prompt
    assert "Turns left: 5\n" in prompt and "History: 4 * 5 = 20\n" in prompt
    assert "<ACT>COMBINE a op b = c</ACT>" in prompt


def test_mad_protocol(mad_game):
    env, protocol, state = mad_game
    prompt = protocol.render_prompt(state)
    assert "Tape: 0:_ 1:t04 2:_ 3:_ 4:t09" in prompt and "Selected: none" in prompt and "Turns left: 12" in prompt
    state, parsed = protocol.step(state, "select 1")
    assert parsed == 1 and "Selected: 1\n" in protocol.render_prompt(state)
    for reply, reason in [("select 1", "cell 1 is already selected"), ("unselect 4", "cell 4 is not selected"),
                          ("select 8", "no cell 8; cells are 0..7"), ("select1", "put a space"),
                          ("Select 2", "malformed"), ("submit now", "malformed"), ("<ACT>submit</ACT>", "malformed")]:
        parsed = protocol.parse(reply, state)
        assert isinstance(parsed, Refusal) and reason in parsed.reason, reply
    assert protocol.parse(" unselect  1\n", state) == env.length + 1
    for reply in ["select 4", "submit"]:
        state, parsed = protocol.step(state, reply)
    assert float(state.reward) == 1.0 and protocol.parse("submit", state) == Refusal("the episode has ended")


def test_text_protocol_of_unknown_env():
    class Other:
        name = "other"
    with pytest.raises(ValueError, match="has no text protocol"):
        text_protocol(Other())


# ----- properties -----
_PIECES = ["<ACT>", "</ACT>", "<FINAL>", "</FINAL>", "COMBINE", "UNDO", "FINAL", " ", "\n", "=", "2", "3", "4",
           "5", "9", "14", "0", "+", "-", "*", "/", "x", "\u00d7", "\u2212", "\u00f7", "<", ">", "A", "select",
           "unselect", "submit", "1", "7", "\t", "\u3000", "\u00a0", "\x00", "\U0001f600", "\ud800"]
near_grammar = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)
any_text = st.one_of(st.text(max_size=60), near_grammar)
_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(text=any_text)
def test_arithmetic_parse_never_raises_nor_accepts_outside_the_grammar(game, text):
    env, protocol, state = game
    parsed = protocol.parse(text, state)
    assert isinstance(parsed, Refusal | int)
    if not isinstance(parsed, Refusal):
        assert ARITHMETIC_GRAMMAR.fullmatch(text), text
        assert bool(np.asarray(state.legal_action_mask)[parsed])


@_SETTINGS
@given(text=any_text)
def test_mad_parse_never_raises_nor_accepts_outside_the_grammar(mad_game, text):
    env, protocol, state = mad_game
    parsed = protocol.parse(text, state)
    assert isinstance(parsed, Refusal | int)
    if not isinstance(parsed, Refusal):
        assert MAD_GRAMMAR.fullmatch(text), text
        assert bool(np.asarray(state.legal_action_mask)[parsed])


@_SETTINGS
@given(a=st.integers(0, 20), op=st.sampled_from(sorted(OP_SPELLINGS)), b=st.integers(0, 20), c=st.integers(0, 500),
       pad=st.sampled_from(["", " ", "\n ", "\t"]))
def test_grammar_strings_are_accepted_exactly_when_true(game, a, op, b, c, pad):
    env, protocol, state = game
    text = f"{pad}<ACT>{pad}COMBINE {a}{pad}{op}{pad}{b} ={pad}{c}</ACT>{pad}"
    parsed = protocol.parse(text, state)
    values = [2, 3, 4, 5]
    available = a in values and b in values and (a != b or values.count(a) > 1)
    code = OP_SPELLINGS[op]
    true = available and [a + b, a - b if a >= b else None, a * b, a // b if b and a % b == 0 else None][code] == c
    assert (not isinstance(parsed, Refusal)) == true


ADVERSARIAL = [
    "<ACT>" + " " * 1_000_000 + "</ACT>",
    "<ACT>COMBINE " + "1" * 1_000_000 + " + 2 = 3</ACT>",
    "<ACT>" + "UNDO " * 200_000 + "</ACT>",
    "<ACT>" + "A" * 1_000_000 + "</ACT>",
    "<FINAL>" + "9" * 1_000_000 + "</FINAL>",
    "<ACT>" * 200_000,
    "<ACT>COMBINE 2 + 3 = 5" + " " * 1_000_000,
    " " * 1_000_000 + "<FINAL>2</FINAL>" + "\n" * 1_000_000,
    "select " + "1" * 1_000_000,
    "select" + " " * 1_000_000 + "1",
]


@pytest.mark.parametrize("which", ["arithmetic", "mad"])
def test_parse_is_linear_time_on_megabyte_inputs(game, mad_game, which):
    env, protocol, state = game if which == "arithmetic" else mad_game
    for text in ADVERSARIAL:
        start = time.perf_counter()
        parsed = protocol.parse(text, state)
        elapsed = time.perf_counter() - start
        assert elapsed < 0.5, (text[:40], elapsed)
        if text.startswith(" " * 100) and which == "arithmetic":
            assert parsed == env.final_action(0)  # whitespace padding is allowed around a reply
        elif which == "mad" and text.startswith("select" + " "):
            assert isinstance(parsed, Refusal) != (text.endswith(" 1") or text.endswith(" " * 10 + "1"))
        else:
            assert isinstance(parsed, Refusal), text[:40]
