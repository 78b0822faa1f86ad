"""MAD selective copy: conformance, the plain-Python oracle, hand-computed episodes, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.conformance import check_against_reference, check_environment, rollout_random
from jaxcredit.envs import BLANK, make, make_reference

TAPE = np.array([BLANK, 3, BLANK, BLANK, 7, BLANK, BLANK, BLANK], np.int32)  # useful cells 1 and 4


def test_conformance(mad, mad_reference):
    check_environment(mad, reference=mad_reference, num_episodes=128)


def test_conformance_small_config():
    env = make("mad", length=3, num_tokens=2, min_useful=0, max_useful=3, max_turns=4)
    check_environment(env, reference=make_reference(env), num_episodes=64)


@pytest.mark.parametrize("illegal_fraction", [0.0, 0.5])
def test_oracle_thousands_of_random_sequences(mad, mad_reference, illegal_fraction):
    initial, states, actions = rollout_random(
        mad, seed=7 + int(illegal_fraction * 10), num_episodes=1500, num_steps=mad.max_turns + 1,
        illegal_fraction=illegal_fraction)
    check_against_reference(mad, mad_reference, initial, states, actions)
    assert np.asarray(states.rejected).any() == (illegal_fraction > 0)


def test_repaired_episode_hand_computed(mad):
    s = mad.init_problem(TAPE)
    assert s.observation.tolist() == [0, 2 + 6, 0, 0, 2 + 14, 0, 0, 0, 2 + 24]
    names = []
    for a in [0, 1, 4, mad.submit_action]:
        s = mad.step(s, a)
        names.append(mad.action_name(a))
    assert names == ["select 0", "select 1", "select 4", "submit"]
    assert float(s.reward) == 0.0 and not bool(s.done) and not bool(s.rejected)
    assert int(mad.position_index(s)) == 0b10011
    assert s.observation.tolist()[:5] == [1, 9, 0, 0, 17]
    s = mad.step(s, mad.length + 0)  # unselect 0
    assert mad.action_name(mad.length) == "unselect 0"
    s = mad.step(s, mad.submit_action)
    assert float(s.reward) == 1.0 and bool(s.terminated) and not bool(s.truncated)
    assert int(s.turn) == 6 and not s.legal_action_mask.any()
    after = mad.step(s, 0)
    assert float(after.reward) == 0.0 and int(after.turn) == 6


def test_refusal_and_turn_limit():
    env = make("mad", max_turns=2)
    s = env.init_problem(TAPE)
    s = env.step(s, env.length)  # unselect 0 while unselected: illegal
    assert bool(s.rejected) and int(s.turn) == 1 and not s.env_state.any()
    s = env.step(s, 99)  # out of range
    assert bool(s.rejected) and bool(s.truncated) and float(s.reward) == 0.0
    assert not bool(s.terminated)


def test_correct_submit_on_last_turn_terminates_not_truncates():
    env = make("mad", max_turns=3)
    s = env.init_problem(TAPE)
    for a in [1, 4, env.submit_action]:
        s = env.step(s, a)
    assert bool(s.terminated) and not bool(s.truncated) and float(s.reward) == 1.0


def test_refusal_under_jit_gives_no_nan(mad):
    s = mad.init_problem(TAPE)
    step = jax.jit(mad.step)
    for a in [-5, 2**20, mad.length + 3]:
        s = step(s, jnp.int32(a))
        assert bool(s.rejected) and np.isfinite(float(s.reward))


def test_sampled_problems_respect_config():
    env = make("mad", length=6, num_tokens=3, min_useful=2, max_useful=3)
    tapes = np.asarray(jax.vmap(env.sample_problem)(jax.random.split(jax.random.key(1), 2000)))
    useful = (tapes != BLANK).sum(axis=1)
    assert set(useful.tolist()) == {2, 3}
    assert tapes[tapes != BLANK].min() >= 0 and tapes.max() < 3
    assert (tapes != BLANK).mean(axis=0).min() > 0.3  # every cell can be useful


def test_same_key_same_problem(mad):
    a = mad.init(jax.random.key(3)).problem
    b = mad.init(jax.random.key(3)).problem
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("field, value", [
    ("length", 0), ("max_useful", 9), ("num_tokens", 0), ("max_turns", 0), ("min_useful", -1), ("length", 17),
])
def test_bad_config_names_field_and_range(field, value):
    with pytest.raises(ValueError, match=rf"mad\.{field} must be .*\[|mad\.{field} must be >="):
        make("mad", **{field: value})


def test_unknown_env_and_field():
    with pytest.raises(ValueError, match="unknown environment 'nope'; choices: .*mad"):
        make("nope")
    with pytest.raises(ValueError, match="unknown mad config field.*colour.*length"):
        make("mad", colour=3)


@pytest.mark.parametrize("tape, message", [
    (np.zeros(7, np.int32), "shape"),
    (np.full(8, 12, np.int32), "token ids"),
    (np.full(8, -3, np.int32), "token ids"),
    (np.zeros(8, np.float32), "integer"),
])
def test_bad_tape_raises_on_host(mad, tape, message):
    with pytest.raises(ValueError, match=message):
        mad.init_problem(tape)


def test_parse_tape(mad):
    assert mad.parse_tape("_ t03 _ _ t07 _ _ _").tolist() == TAPE.tolist()
    with pytest.raises(ValueError, match="unknown tape cell 'x3'"):
        mad.parse_tape("_ x3 _ _ _ _ _ _")
    with pytest.raises(ValueError, match="token ids"):
        mad.parse_tape("_ t12 _ _ _ _ _ _")


def test_render(mad):
    s = mad.step(mad.init_problem(TAPE), 1)
    text = mad.render(s)
    assert "[t03]" in text and " t07 " in text and "turn 1/12" in text


def test_action_types(mad):
    names, type_of_action = mad.action_types()
    assert names == ("select", "unselect", "submit")
    assert type_of_action.tolist() == [0] * 8 + [1] * 8 + [2]
