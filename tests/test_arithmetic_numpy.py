"""The NumPy-vectorized arithmetic baseline follows the plain-Python reference step by step."""

import jax
import numpy as np
import pytest

from jaxcredit.benchmarks.arithmetic_numpy import ArithmeticNumpy
from jaxcredit.conformance import random_actions
from jaxcredit.envs import ArithmeticProblem, ArithmeticReference, make

_FIELDS = ("observation", "legal_action_mask", "reward", "terminated", "truncated", "rejected", "turn")


@pytest.mark.parametrize("config, illegal_fraction", [
    ({}, 0.0),
    ({}, 0.3),
    ({"count": 3, "max_turns": 5, "include_turns_left": True, "require_all_used": False,
      "family": "small_targets"}, 0.3),
])
def test_numpy_matches_reference_step_by_step(config, illegal_fraction):
    env = make("arithmetic", **config)
    numpy_env, reference = ArithmeticNumpy(**config), ArithmeticReference(**config)
    keys = jax.random.split(jax.random.key(len(config) + int(illegal_fraction * 10)), 1200)
    problems = jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(env.sample_problem))(keys))
    rng = np.random.default_rng(len(config) + int(illegal_fraction * 10))
    batch = numpy_env.reset(problems)
    history = [(None, batch)]
    for _ in range(numpy_env.max_turns + 2):  # every episode is also stepped after its end
        actions = random_actions(rng, batch.legal_action_mask, illegal_fraction=illegal_fraction)
        frozen = [np.copy(x) for x in batch]
        after = numpy_env.step(batch, actions)
        assert all(np.array_equal(a, b) for a, b in zip(frozen, batch)), "step modified its input"
        batch = after
        history.append((actions, batch))

    for e in range(len(problems.target)):
        ref = reference.reset(ArithmeticProblem(numbers=problems.numbers[e], target=problems.target[e]))
        for t, (actions, batch) in enumerate(history):
            if actions is not None:
                ref.step(int(actions[e]))
            for field in _FIELDS:
                got, want = getattr(batch, field)[e], getattr(ref, field)
                assert np.array_equal(got, want), f"episode {e} step {t} {field}: {got} != {want}"
            assert batch.values[e][batch.live[e]].tolist() == [v for v, a in zip(ref.values, ref.live) if a]

    final = history[-1][1]
    accepted_undo = np.stack([(a == numpy_env.undo_action) & ~b.rejected for a, b in history[1:]])
    assert final.terminated.any() and final.truncated.any() and accepted_undo.any()


def test_numpy_bad_problems():
    with pytest.raises(ValueError, match=r"numbers \[B, 4\] and target \[B\]"):
        ArithmeticNumpy().reset(ArithmeticProblem(numbers=np.zeros((3, 5), np.int32), target=np.zeros(3, np.int32)))
