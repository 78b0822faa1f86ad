"""MAD's decorative actions: the rules, the oracle, the protocols, the turn-limit rule, exact values."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit import solver_values
from jaxcredit.analysis.intent import categorize
from jaxcredit.conformance import check_environment, check_null_action, rollout_random
from jaxcredit.envs import BLANK, MadSelectiveCopy, make, make_reference
from jaxcredit.envs.menu_protocol import MenuProtocol
from jaxcredit.envs.text_protocol import Refusal, text_protocol

TAPE = np.array([BLANK, 3, BLANK, BLANK, 7, BLANK, BLANK, BLANK], np.int32)  # useful cells 1 and 4


@functools.partial(jax.jit, static_argnames=("env", "policy", "policy_fn"))
def _values(env, tape, *, policy, policy_fn=None):
    """`reference_values(env, tape, policy=...)` compiled as one program."""
    return solver_values.reference_values(env, tape, policy=policy, policy_fn=policy_fn, params=None)[0]


@pytest.fixture(scope="module")
def decorated():
    return make("mad", length=3, num_tokens=2, max_useful=2, decorative_actions=2, max_turns=6)


def test_conformance_and_oracle_with_decorative_actions(decorated):
    assert decorated.num_actions == 2 * 3 + 1 + 2
    check_environment(decorated, reference=make_reference(decorated), num_episodes=64)


@dataclasses.dataclass(frozen=True)
class MadWrongNull(MadSelectiveCopy):
    """A MAD that declares `select 0` its null action: conformance must refuse it."""

    @property
    def null_action(self):
        return 0


def test_conformance_refuses_a_null_action_that_changes_something(decorated):
    _, states, _ = rollout_random(decorated, seed=1, num_episodes=16, num_steps=4, illegal_fraction=0.0)
    check_null_action(decorated, states)  # note 0 passes
    wrong = MadWrongNull(**decorated.config())
    _, states, _ = rollout_random(wrong, seed=1, num_episodes=16, num_steps=4, illegal_fraction=0.0)
    with pytest.raises(AssertionError, match="null action is not legal in every live state|changed the env_state"):
        check_null_action(wrong, states)


def test_a_note_changes_nothing_but_uses_a_turn():
    env = make("mad", decorative_actions=3)
    s = env.step(env.init_problem(TAPE), 1)  # select 1
    for k in range(3):
        note = env.submit_action + 1 + k
        assert env.action_name(note) == f"note {k}" and bool(s.legal_action_mask[note])
        after = env.step(s, note)
        assert int(after.turn) == int(s.turn) + 1 and float(after.reward) == 0.0 and not bool(after.rejected)
        np.testing.assert_array_equal(after.env_state, s.env_state)
        np.testing.assert_array_equal(after.observation, s.observation)
        np.testing.assert_array_equal(after.legal_action_mask, s.legal_action_mask)
        assert int(env.position_index(after)) == int(env.position_index(s)) == 0b10
    assert env.null_action == env.submit_action + 1 == 17
    assert env.action_types()[0] == ("select", "unselect", "submit", "note")
    assert env.action_name(env.num_actions) == "invalid action 20"


def test_turn_limit_rule_and_round_trip():
    assert make("mad").max_turns == 12 and make("mad", decorative_actions=2).max_turns == 12 + 4
    assert make("mad", decorative_actions=2, decorative_slack=0).max_turns == 12
    assert make("mad", decorative_actions=2, max_turns=9).max_turns == 9  # given: the whole limit
    assert make("mad", decorative_slack=7).max_turns == 12  # no decorative actions: no slack
    for env in (make("mad"), make("mad", decorative_actions=2), make("mad", decorative_actions=1, max_turns=5)):
        assert type(env)(**env.config()) == env and hash(type(env)(**env.config())) == hash(env)
    for bad, match in (({"decorative_actions": -1}, "decorative_actions"), ({"decorative_actions": 65}, "decorative"),
                       ({"decorative_actions": 1.5}, "decorative_actions"),
                       ({"decorative_slack": -2}, "decorative_slack"),
                       ({"decorative_actions": 1, "decorative_slack": 1013}, "decorative_slack")):
        with pytest.raises(ValueError, match=match):
            make("mad", **bad)


def test_without_decorative_actions_nothing_changes():
    """`decorative_actions=0` is the environment as it was: sizes, names, protocols, exact values
    (the values pinned here were computed before decorative actions existed)."""
    env = make("mad", decorative_actions=0)
    assert env == make("mad") and env.num_actions == 17 and env.max_turns == 12 and env.null_action is None
    assert make("arithmetic").null_action is None  # the base class's default
    assert [env.action_name(a) for a in (0, 8, 16, 17)] == ["select 0", "unselect 0", "submit", "invalid action 17"]
    state = env.init_problem(TAPE)
    prompt = text_protocol(env).render_prompt(state)
    assert "note" not in prompt and prompt.endswith("Reply with exactly one of: select N, unselect N, submit")
    assert text_protocol(env).parse("note 0", state) == Refusal("malformed: expected select N, unselect N or submit")
    pinned = {"uniform": (0.008930090814828873, 0.02324497699737549, 0.018222155049443245),
              "soft": (0.32089340686798096, 0.4388072192668915, 0.44782960414886475)}
    for policy, (start, select_1, later) in pinned.items():
        values = _values(env, jnp.asarray(TAPE), policy=policy)
        np.testing.assert_allclose([values.v[12, 0], values.q[12, 0, 1], values.v[5, 0b10011]],
                                   [start, select_1, later], rtol=1e-6)


def test_text_and_menu_protocols_play_notes():
    env = make("mad", decorative_actions=2)
    state = env.init_problem(TAPE)
    text = text_protocol(env)
    prompt = text.render_prompt(state)
    assert "note N (N in 0..1) changes nothing and uses a turn." in prompt
    assert prompt.endswith("select N, unselect N, submit, note N") and "Turns left: 16" in prompt
    assert text.parse(" note 1\n", state) == 18 and text.parse("note 0", state) == env.null_action
    assert text.parse("note 2", state) == Refusal("no note 2; notes are 0..1")
    assert text.parse("note1", state).reason.endswith("between the command and the note number")
    assert text.parse("jot 1", state) == Refusal("malformed: expected select N, unselect N, note N or submit")
    after, parsed = text.step(state, "note 1")
    assert parsed == 18 and int(after.turn) == 1 and not bool(after.rejected)
    for reply, category in (("Note 1", ("misformatted", 18)), ("note 5", ("illegal", None)),
                            ("<ACT>note 0</ACT>", ("misformatted", 17))):  # a transcript audit's reading
        assert categorize(text, reply, text.parse(reply, state), state) == category
        plain = text_protocol(make("mad"))
        assert categorize(plain, reply, plain.parse(reply, state), state) == ("unparseable", None)
    menu = MenuProtocol(env)
    assert menu.render_prompt(state).splitlines()[-3:-1] == ["J. note 0", "K. note 1"]
    for action in menu.options(state):
        assert menu.parse(menu.reply(state, action), state) == action
        assert text.parse(text.reply(state, action), state) == action


def _greedy_policy(length):
    """A deterministic network: unselect a selected blank, else select an unselected token, else
    submit; it never takes a note (observation tokens: 1 selected blank, even >= 2 unselected token)."""
    def policy_fn(params, observation, legal_action_mask):
        cells = observation[..., :length]
        fix = jnp.concatenate([jnp.zeros_like(cells, bool), cells == 1], axis=-1)
        add = jnp.concatenate([(cells >= 2) & (cells % 2 == 0), jnp.zeros_like(cells, bool)], axis=-1)
        score = jnp.where(fix, 3.0, jnp.where(add, 2.0, 0.0))
        score = jnp.concatenate([score, jnp.ones(score.shape[:-1] + (1,))], axis=-1)  # submit
        pad = legal_action_mask.shape[-1] - score.shape[-1]
        score = jnp.concatenate([score, jnp.zeros(score.shape[:-1] + (pad,))], axis=-1)  # notes
        return 1e4 * score  # exactly 0 probability off the argmax in float32
    return policy_fn


def test_decorative_actions_leave_the_other_actions_exact_values_unchanged():
    """At equal turns left, adding decorative actions changes no exact value of another action, under
    the optimal policy and under a network that never takes them, and a note's value is its
    position's value one turn later. With slack in the turn limit a note costs nothing under the
    optimal policy; with none it is harmful."""
    plain = make("mad", length=3, num_tokens=2, max_useful=2, max_turns=4)
    decorated = make("mad", length=3, num_tokens=2, max_useful=2, max_turns=4 + 2, decorative_actions=2)
    tape = jnp.asarray([0, BLANK, 1], jnp.int32)  # select 0, select 2, submit: 3 turns
    policy_fn, base = _greedy_policy(3), plain.num_actions
    for policy in ("optimal", "network"):
        network = policy_fn if policy == "network" else None
        v0, v1 = (_values(env, tape, policy=policy, policy_fn=network) for env in (plain, decorated))
        np.testing.assert_allclose(v1.q[:5, :, :base], v0.q[:5], atol=1e-6)
        np.testing.assert_allclose(v1.v[:5], v0.v[:5], atol=1e-6)
        assert float(v0.v[2, 0]) == 0.0 and float(v0.v[3, 0]) == float(v0.v[4, 0]) == 1.0  # 3 turns needed
        for note in (base, base + 1):
            np.testing.assert_allclose(v1.q[1:, :, note], v1.v[:-1], atol=1e-6)
    optimal = _values(decorated, tape, policy="optimal")
    assert float(optimal.q[6, 0, base]) == float(optimal.v[6, 0]) == 1.0
    tight = make("mad", length=3, num_tokens=2, max_useful=2, max_turns=3, decorative_actions=2)
    optimal = _values(tight, tape, policy="optimal")
    assert float(optimal.q[3, 0, base]) == 0.0 and float(optimal.v[3, 0]) == 1.0
