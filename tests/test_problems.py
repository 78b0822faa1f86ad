"""Problem families and evaluation sets: determinism, family ranges, solvability by exact search."""

import numpy as np
import pytest

from jaxcredit.envs import FAMILIES, make, problems, solve
from jaxcredit.envs.problems import apply_op


def _replay(numbers, steps):
    slots = list(numbers)
    for i, op, j in steps:
        slots[i], slots[j] = apply_op(slots[i], op, slots[j]), None
    return [v for v in slots if v is not None]


def test_solve_hand_cases():
    steps = solve([2, 3, 4, 5], 14)
    assert len(steps) == 3 and _replay([2, 3, 4, 5], steps) == [14]
    assert solve([1, 1, 1, 1], 100) is None
    assert solve([1, 1, 1, 1], 4) is not None and solve([1, 1, 1, 1], 5) is None
    assert solve([8, 3], 5) == [(0, 1, 1)]  # 8 - 3
    assert solve([3, 8], 5) == [(1, 1, 0)]  # 3 - 8 is refused, 8 - 3 goes into slot 1
    assert solve([7, 2], 3) is None  # 7 / 2 is not exact
    assert solve([2, 3, 4, 5], 5, require_all_used=False) == []
    assert solve([2, 3, 4, 5], 120, ops=(0, 1, 3)) is None and solve([2, 3, 4, 5], 120) is not None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_problem_of_every_family_is_solvable_in_range(family):
    env = make("arithmetic", family=family)
    spec = FAMILIES[family]
    batch = problems(family, 500, seed=0)
    numbers, targets = np.asarray(batch.numbers), np.asarray(batch.target)
    assert numbers.shape == (500, 4) and targets.shape == (500,) and numbers.dtype == np.int32
    assert numbers.min() >= spec.number_low and numbers.max() <= spec.number_high
    assert targets.min() >= spec.target_low and targets.max() <= spec.target_high
    for row, target in zip(numbers.tolist(), targets.tolist()):
        steps = solve(row, target)
        assert steps is not None and len(steps) + 1 <= env.max_turns and _replay(row, steps) == [target]
        if spec.needs_multiplication:
            assert target > sum(row) and solve(row, target, ops=(0, 1, 3)) is None
        env.check_problem(type(batch)(numbers=np.asarray(row, np.int32), target=np.asarray(target, np.int32)))


def test_evaluation_sets_are_reproducible():
    a, b = problems("default", 50, seed=3), problems("default", 50, seed=3)
    assert np.array_equal(a.numbers, b.numbers) and np.array_equal(a.target, b.target)
    prefix = problems("default", 20, seed=3)
    assert np.array_equal(prefix.numbers, a.numbers[:20]) and np.array_equal(prefix.target, a.target[:20])
    other = problems("default", 50, seed=4)
    assert not np.array_equal(other.numbers, a.numbers)
    assert not np.array_equal(problems("small_targets", 50, seed=3).numbers, a.numbers)
    # pinned values: the evaluation set must not drift between versions
    first = problems("default", 1, seed=0)
    assert (first.numbers.tolist(), first.target.tolist()) == PINNED_DEFAULT_SEED0


PINNED_DEFAULT_SEED0 = ([[9, 8, 5, 9]], [27])


def test_families_differ_in_difficulty_markers():
    small = problems("small_targets", 100, seed=1)
    large = problems("large_values", 100, seed=1)
    assert np.asarray(small.target).max() <= 10 and np.asarray(large.numbers).min() >= 10


@pytest.mark.parametrize("args, message", [
    (("nope", 3, 0), "unknown problem family 'nope'; choices: default, small_targets, multiplication, large_values"),
    (("default", -1, 0), "n must be a non-negative integer"),
])
def test_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        problems(*args)
