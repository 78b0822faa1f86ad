"""The lettered-menu protocol: labels, the round trip over every legal action of random states, refusals."""

import jax
import numpy as np
import pytest

from jaxcredit.envs import problem_set
from jaxcredit.envs.menu_protocol import label, label_index, make_protocol
from jaxcredit.envs.text_protocol import Refusal


def test_labels_are_bijective_base_26():
    assert [label(i) for i in (0, 25, 26, 27, 51, 52, 701, 702)] == ["A", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]
    assert all(label_index(label(i)) == i for i in range(800))


def _random_states(env, n, seed):
    """States after a uniformly random number of uniformly random legal actions, on host-drawn problems."""
    rng = np.random.default_rng(seed)
    if env.name == "arithmetic":
        drawn = problem_set("default", n, seed)
        starts = [jax.tree_util.tree_map(lambda x, i=i: x[i], drawn) for i in range(n)]
    else:
        starts = [np.where(rng.random(env.length) < 0.5, rng.integers(0, env.num_tokens, env.length), -1)
                  .astype(np.int32) for _ in range(n)]
    states = []
    for problem in starts:
        state = env.init_problem(problem)
        for _ in range(int(rng.integers(0, 3))):
            state = env.step(state, int(rng.choice(np.flatnonzero(np.asarray(state.legal_action_mask)))))
        states.append(jax.tree_util.tree_map(np.asarray, state))
    return states


@pytest.mark.parametrize("which", ["arithmetic", "mad"])
def test_every_legal_action_round_trips(request, which):
    env = request.getfixturevalue(which)
    menu, text = make_protocol(env, "menu"), make_protocol(env, "text")
    for state in _random_states(env, 5, seed=3):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask)).tolist()
        prompt = menu.render_prompt(state)
        assert menu.options(state) == legal
        for k, action in enumerate(legal):
            assert menu.reply(state, action) == label(k)
            assert menu.parse(f" {label(k)}\n", state) == action
            assert f"\n{label(k)}. {menu.describe(state, action)}\n" in prompt
            # the free-form reply round-trips up to equal values in two slots (the text names values, not slots)
            assert text.reply(state, text.parse(text.reply(state, action), state)) == text.reply(state, action)
        assert isinstance(menu.parse(label(len(legal)), state), Refusal)


def test_menu_refusals_and_prompt(arithmetic):
    menu = make_protocol(arithmetic, "menu")
    state = arithmetic.init_problem(arithmetic.make_problem([2, 3, 4, 5], 14))
    prompt = menu.render_prompt(state)
    assert prompt.startswith("Reach the target") and "Target: 14\n" in prompt
    assert "Reply with exactly one of" not in prompt
    assert "\nA. COMBINE 2 + 3 = 5\n" in prompt and prompt.endswith("Reply with exactly one option letter.")
    for reply, reason in [("a", "malformed"), ("(A)", "malformed"), ("A B", "malformed"), ("AAAA", "malformed"),
                          ("ZZ", "no option ZZ; the options are A.."), ("", "malformed"), (None, "not text")]:
        parsed = menu.parse(reply, state)
        assert isinstance(parsed, Refusal) and reason in parsed.reason, reply
    after, parsed = menu.step(state, "ZZ")
    assert bool(after.rejected) and int(after.turn) == 1
    with pytest.raises(ValueError, match="not legal here"):
        menu.reply(state, arithmetic.undo_action)
    with pytest.raises(ValueError, match="unknown protocol"):
        make_protocol(arithmetic, "letters")
