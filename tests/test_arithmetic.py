"""Interactive arithmetic: conformance, the plain-Python oracle, hand-computed episodes, positions, bad input."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.conformance import check_against_reference, check_environment, rollout_random
from jaxcredit.envs import FAMILIES, find_solution, make, make_reference
from jaxcredit.envs.arithmetic import ACT, BLANK, DEAD, LIVE, TARGET
from jaxcredit.envs.problems import apply_op


def test_conformance(arithmetic, arithmetic_reference):
    check_environment(arithmetic, reference=arithmetic_reference, num_episodes=128)


def test_oracle_small_config_with_turns_left():
    env = make("arithmetic", count=3, max_turns=5, include_turns_left=True, require_all_used=False,
               family="small_targets")
    assert env.vocab_size == 15 + 6 and env.observation_length == 1 + 3 + 3 * 4 + 1 + 1
    initial, states, actions = rollout_random(env, seed=3, num_episodes=300, num_steps=env.max_turns + 1,
                                              illegal_fraction=0.3)
    check_against_reference(env, make_reference(env), initial, states, actions)
    assert np.asarray(states.terminated).any()


def test_oracle_large_values_integer_path():
    env = make("arithmetic", family="large_values")  # values past 2**22: integer division, 8 digits
    assert not env._float_exact and env.digits == 8
    initial, states, actions = rollout_random(env, seed=5, num_episodes=300, num_steps=env.max_turns + 1,
                                              illegal_fraction=0.2)
    check_against_reference(env, make_reference(env), initial, states, actions)
    assert np.asarray(states.env_state.values).max() >= 2**22 and np.asarray(states.terminated).any()


def test_oracle_thousands_of_random_sequences(arithmetic, arithmetic_reference):
    initial, states, actions = rollout_random(
        arithmetic, seed=11, num_episodes=2000, num_steps=arithmetic.max_turns + 1, illegal_fraction=0.2)
    check_against_reference(arithmetic, arithmetic_reference, initial, states, actions)
    # the random episodes exercised every kind of outcome
    assert np.asarray(states.rejected).any() and np.asarray(states.terminated).any()
    undo = actions == arithmetic.undo_action
    assert (undo & ~np.asarray(states.rejected)).any()


def test_action_layout(arithmetic):
    names = [arithmetic.action_name(a) for a in range(arithmetic.num_actions)]
    assert arithmetic.num_actions == 53 and len(set(names)) == 53
    assert names[:5] == ["COMBINE 0 + 1", "COMBINE 0 - 1", "COMBINE 0 * 1", "COMBINE 0 / 1",
                         "COMBINE 0 + 2"]
    assert names[12] == "COMBINE 1 + 0" and names[47] == "COMBINE 3 / 2"
    assert names[48:] == ["UNDO", "FINAL 0", "FINAL 1", "FINAL 2", "FINAL 3"]
    assert arithmetic.action_name(53) == "invalid action 53"
    for i, j in itertools.permutations(range(4), 2):
        for op in range(4):
            assert names[arithmetic.combine_action(i, op, j)] == f"COMBINE {i} {'+-*/'[op]} {j}"


def test_worked_example(arithmetic):
    env = arithmetic
    s = env.init_problem(env.make_problem([2, 3, 4, 5], 14))
    digits = lambda v: [int(c) for c in f"{v:04d}"]  # noqa: E731
    assert env.digits == 4 and env.observation_length == 26
    assert s.observation.tolist() == [TARGET, *digits(14)] + sum(([LIVE, *digits(v)] for v in [2, 3, 4, 5]), []) + [ACT]
    expected_index = [1, 1 + 48 + 12, 1 + 48 + 1152 + 12 * 8]  # hand-ranked paths (see the positions scheme)
    for t, (i, op, j) in enumerate([(0, 0, 1), (2, 0, 3), (0, 0, 2)]):
        s = env.step(s, env.combine_action(i, op, j))
        assert not bool(s.rejected) and int(env.position_index(s)) == expected_index[t]
    assert s.observation.tolist()[5:] == [LIVE, *digits(14)] + [DEAD] + [BLANK] * 4 + ([DEAD] + [BLANK] * 4) * 2 + [ACT]
    assert s.legal_action_mask.tolist() == [False] * 48 + [True, True, False, False, False]
    s = env.step(s, env.final_action(0))
    assert float(s.reward) == 1.0 and bool(s.terminated) and not bool(s.truncated) and int(s.turn) == 4
    assert not s.legal_action_mask.any()
    assert env.history(s) == [(2, "+", 3, 5), (4, "+", 5, 9), (5, "+", 9, 14)]


def test_undo_restores_the_exact_earlier_state(arithmetic):
    env = arithmetic
    s = env.init_problem(env.make_problem([6, 3, 8, 2], 24))
    s = env.step(s, env.combine_action(2, 3, 3))  # 8 / 2 = 4 into slot 2
    before = s
    s = env.step(s, env.combine_action(0, 1, 1))  # 6 - 3 = 3 into slot 0
    s = env.step(s, env.combine_action(2, 2, 0))  # 4 * 3 = 12 into slot 2
    assert env.history(s) == [(8, "/", 2, 4), (6, "-", 3, 3), (4, "*", 3, 12)]
    s = env.step(env.step(s, env.undo_action), env.undo_action)
    assert int(s.turn) == 5 and not bool(s.rejected)
    for field in ("observation", "legal_action_mask"):
        assert getattr(s, field).tolist() == getattr(before, field).tolist()
    for a, b in zip(jax.tree_util.tree_leaves(s.env_state), jax.tree_util.tree_leaves(before.env_state)):
        assert np.asarray(a).tolist() == np.asarray(b).tolist()
    assert int(env.position_index(s)) == int(env.position_index(before)) == 1 + 4 * (2 * 3 + 2) + 3
    s = env.step(s, env.undo_action)
    start = env.init_problem(env.make_problem([6, 3, 8, 2], 24))
    assert s.observation.tolist() == start.observation.tolist() and int(env.position_index(s)) == 0
    s = env.step(s, env.undo_action)  # nothing left to undo: refused
    assert bool(s.rejected) and int(s.turn) == 7 and bool(s.truncated)


def test_subtraction_and_division_rules(arithmetic):
    env = arithmetic
    s = env.init_problem(env.make_problem([8, 2, 0, 9], 5))
    legal = np.asarray(s.legal_action_mask)
    sub, div = 1, 3
    assert legal[env.combine_action(0, sub, 1)] and not legal[env.combine_action(1, sub, 0)]  # 8-2 yes, 2-8 no
    assert legal[env.combine_action(0, div, 1)] and not legal[env.combine_action(1, div, 0)]  # 8/2 yes, 2/8 no
    assert not legal[env.combine_action(0, div, 2)] and legal[env.combine_action(2, div, 0)]  # 8/0 no, 0/8 yes
    assert not legal[env.combine_action(3, div, 0)] and legal[env.combine_action(3, sub, 0)]  # 9/8 no, 9-8 yes
    for i, j in itertools.permutations(range(4), 2):
        for op in range(4):
            want = apply_op([8, 2, 0, 9][i], op, [8, 2, 0, 9][j]) is not None
            assert legal[env.combine_action(i, op, j)] == want
    refused = env.step(s, env.combine_action(0, div, 2))
    assert bool(refused.rejected) and int(refused.turn) == 1
    assert refused.env_state.values.tolist() == [8, 2, 0, 9] and refused.env_state.live.all()
    s = env.step(s, env.combine_action(2, div, 0))
    assert s.env_state.values.tolist()[2] == 0 and s.env_state.live.tolist() == [False, True, True, True]


def test_wrong_final_continues_and_keeps_the_position(arithmetic):
    env = arithmetic
    s = env.init_problem(env.make_problem([2, 3, 4, 9], 9))
    s2 = env.step(s, env.final_action(3))  # right value, but numbers remain (require_all_used)
    assert float(s2.reward) == 0.0 and not bool(s2.done) and not bool(s2.rejected) and int(s2.turn) == 1
    assert int(env.position_index(s2)) == 0 and s2.observation.tolist() == s.observation.tolist()
    s3 = env.step(s2, env.final_action(0))
    assert float(s3.reward) == 0.0 and not bool(s3.done)
    loose = make("arithmetic", require_all_used=False)
    t = loose.step(loose.init_problem(loose.make_problem([2, 3, 4, 9], 9)), loose.final_action(3))
    assert float(t.reward) == 1.0 and bool(t.terminated)


def test_refusals_and_turn_limit():
    env = make("arithmetic", max_turns=4)
    s = env.init_problem(env.make_problem([1, 2, 3, 4], 10))
    s = env.step(s, env.undo_action)  # nothing to undo
    assert bool(s.rejected) and int(s.turn) == 1
    s = env.step(s, env.combine_action(0, 0, 1))
    s = env.step(s, env.final_action(1))  # slot 1 is dead
    assert bool(s.rejected) and s.env_state.values.tolist() == [3, 2, 3, 4]
    s = jax.jit(env.step)(s, jnp.int32(-7))
    assert bool(s.rejected) and bool(s.truncated) and not bool(s.terminated) and float(s.reward) == 0.0


def _count_legal_paths(numbers):
    """Plain Python: the number of legal combination paths of each depth."""
    counts = [0] * len(numbers)

    def walk(slots, depth):
        counts[depth] += 1
        for i, j in itertools.permutations([k for k, v in enumerate(slots) if v is not None], 2):
            for op in range(4):
                result = apply_op(slots[i], op, slots[j])
                if result is not None:
                    child = list(slots)
                    child[i], child[j] = result, None
                    walk(child, depth + 1)

    walk(list(numbers), 0)
    return counts


@pytest.mark.parametrize("count, numbers", [(4, [6, 3, 8, 2]), (3, [4, 0, 2])])
def test_positions_enumerate_exactly_the_legal_paths(count, numbers):
    env = make("arithmetic", count=count)
    assert env.num_positions == {4: 1 + 48 + 48 * 24 + 48 * 24 * 8, 3: 1 + 24 + 24 * 8}[count]
    problem = env.make_problem(numbers, 1)
    states, valid = jax.jit(jax.vmap(lambda i: env.position(problem, i)))(jnp.arange(env.num_positions))
    valid = np.asarray(valid)
    depth = np.asarray(states.env_state.depth)
    assert np.bincount(depth[valid], minlength=count).tolist() == _count_legal_paths(numbers)
    index = np.asarray(jax.jit(jax.vmap(env.position_index))(states))
    assert (index[valid] == np.flatnonzero(valid)).all()
    _, out = env.position(problem, env.num_positions)
    assert not bool(out)


@pytest.mark.parametrize("overrides, message", [
    ({"count": 1}, r"arithmetic\.count must be in \[2, 5\]"),
    ({"count": 6}, r"arithmetic\.count must be in \[2, 5\]"),
    ({"max_turns": 3}, r"arithmetic\.max_turns must be in \[4, 1024\]"),
    ({"family": "nope"}, "unknown problem family 'nope'; choices: default, small_targets"),
    ({"max_number": 5}, r"arithmetic\.max_number must be >= 9"),
    ({"family": "large_values", "count": 5}, "10 digits; observations hold at most 9"),
    ({"require_all_used": 1}, "require_all_used must be True or False"),
])
def test_bad_config(overrides, message):
    with pytest.raises(ValueError, match=message):
        make("arithmetic", **overrides)


@pytest.mark.parametrize("numbers, target, message", [
    ([1, 2, 3], 6, "exactly 4 numbers"),
    ([1, 2, 3, -1], 6, r"numbers must be in \[0, 9\]"),
    ([1, 2, 3, 10], 6, r"numbers must be in \[0, 9\]"),
    ([1, 2, 3, 4], 6562, r"target must be in \[0, 6561\]"),
])
def test_bad_problem(arithmetic, numbers, target, message):
    with pytest.raises(ValueError, match=message):
        arithmetic.make_problem(numbers, target)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_sampled_problems_belong_to_their_family_and_are_solvable(family):
    env = make("arithmetic", family=family)
    spec = FAMILIES[family]
    batch = jax.jit(jax.vmap(env.sample_problem))(jax.random.split(jax.random.key(5), 256))
    numbers, targets = np.asarray(batch.numbers), np.asarray(batch.target)
    assert numbers.min() >= spec.number_low and numbers.max() <= spec.number_high
    assert len({tuple(row) for row in numbers.tolist()}) > 200  # really random
    accepted = [spec.accepts(row, t) for row, t in zip(numbers.tolist(), targets.tolist())]
    assert np.mean(accepted) >= 0.99
    for row, target in list(zip(numbers.tolist(), targets.tolist()))[:60]:
        assert find_solution(row, target) is not None


def test_environment_hooks_answer_what_differs_between_environments():
    """What evaluation, audits and play need of an environment comes from its own methods (the
    base class's defaults for MAD and Routine, arithmetic's overrides), never a branch on its name."""
    mad, arithmetic, routine = make("mad"), make("arithmetic"), make("routine")
    assert mad.evaluation_families(()) == mad.evaluation_families(("default",)) == ("default",)
    with pytest.raises(ValueError, match="config.eval_families: environment 'mad' has only the 'default' family"):
        mad.evaluation_families(("small_targets",))
    assert arithmetic.evaluation_families(()) == ("default",)
    assert arithmetic.evaluation_families(("small_targets", "default")) == ("small_targets", "default")
    with pytest.raises(ValueError, match="unknown problem family 'nope'"):
        arithmetic.evaluation_families(("nope",))
    assert [a for a in range(mad.num_actions) if mad.is_answer_action(a)] == [mad.submit_action]
    finals = [arithmetic.final_action(slot) for slot in range(arithmetic.count)]
    assert [a for a in range(arithmetic.num_actions) if arithmetic.is_answer_action(a)] == finals
    assert not any(routine.is_answer_action(a) for a in range(routine.num_actions))
    assert (mad.audit_details, routine.audit_details, arithmetic.audit_details) == ((), (), ("final_context",))
    # arithmetic's held-out streams are its problem sets; MAD's the seeded sampler
    np.testing.assert_array_equal(np.asarray(arithmetic.problem_stream("default", 3)(5).numbers),
                                  np.asarray(arithmetic.problem_sample("default", 5, 3).numbers))
    key = jax.random.key(3)
    drawn = [np.asarray(mad.sample_problem(jax.random.fold_in(key, i))) for i in range(2)]
    np.testing.assert_array_equal(np.asarray(mad.problem_stream(None, 3)(2)), np.stack(drawn))
