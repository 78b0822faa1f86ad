"""The `text-matched` arm: `Q̂(o, a) − V̂(o)` from logged steps matched by observation, by hand; its
replay window carried from iteration to iteration, through a checkpoint and a resume."""

import os

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.credit import text_matched_advantage
from jaxcredit.train import config_from_dict, run_training
from jaxcredit.train.rundir import read_jsonl
from tests.conftest import TINY_TRAIN


def _trajectory(observation, action, reward, live):
    """A stand-in with the fields the estimator reads ([B, T] and [B, T, L])."""
    states = type("States", (), {"observation": jnp.asarray(observation, jnp.int32)})()
    return type("Trajectory", (), {"states": states, "action": jnp.asarray(action, jnp.int32),
                                   "reward": jnp.asarray(reward, jnp.float32), "live": jnp.asarray(live)})()


def test_matched_credit_by_hand():
    """Three episodes of two steps. Step 0 of each looks alike ([7]); episodes 0 and 1 take action 1
    there and end with returns 1 and 0, episode 2 takes action 2 and ends with 1. So Q̂([7], 1) = 0.5,
    Q̂([7], 2) = 1, V̂([7]) = 2/3. The second steps look different from each other ([1], [2], [3]):
    each matches only itself and gets 0."""
    observation = [[[7], [1]], [[7], [2]], [[7], [3]]]
    action = [[1, 0], [1, 0], [2, 0]]
    reward = [[0, 1], [0, 0], [0, 1]]
    live = [[True, True]] * 3
    advantage, memory = text_matched_advantage(_trajectory(observation, action, reward, live))
    assert memory is None
    np.testing.assert_allclose(np.asarray(advantage), [[0.5 - 2 / 3, 0], [0.5 - 2 / 3, 0], [1 - 2 / 3, 0]],
                               rtol=1e-6)
    # a window holding one earlier batch: the same three episodes, all returning 0
    memory = {"observation": jnp.asarray(observation, jnp.int32).reshape(6, 1),
              "action": jnp.asarray(action, jnp.int32).reshape(6), "to_go": jnp.zeros((6,), jnp.float32),
              "valid": jnp.ones((6,), bool)}
    advantage, memory = text_matched_advantage(_trajectory(observation, action, reward, live), memory)
    # [7]: action 1 returns 1, 0, 0, 0 (Q̂ 1/4); action 2 returns 1, 0 (1/2); all six: 2/6
    np.testing.assert_allclose(np.asarray(advantage)[:, 0], [0.25 - 1 / 3, 0.25 - 1 / 3, 0.5 - 1 / 3], rtol=1e-6)
    assert not np.asarray(advantage)[:, 1].any()  # [1] matched to its earlier self: the same action, Q̂ = V̂
    np.testing.assert_array_equal(np.asarray(memory["to_go"]), [1, 1, 0, 0, 1, 1])  # this batch replaced the old
    # a step that did not happen matches nothing and gets nothing
    advantage, _ = text_matched_advantage(_trajectory(observation, action, reward, [[True, False]] * 3))
    assert not np.asarray(advantage)[:, 1].any()


def test_the_window_is_carried_through_a_resume(tmp_path):
    """The window lives in the train state: a run stopped after one evaluation and resumed from its
    checkpoint writes the rows of the uninterrupted run; the arm charges no label work."""
    config = config_from_dict({**TINY_TRAIN, "credit": "text-matched", "credit_options": {"window": 2},
                               "budget": 96, "num_evals": 2, "num_seeds": 1})
    full, cut = str(tmp_path / "full"), str(tmp_path / "cut")
    run_training(config, full, progress=False)
    assert run_training(config, cut, progress=False, stop_after_evals=1) == {"stopped_after": 1}
    run_training(config, cut, progress=False, resume=True)

    def rows(path):
        return [{k: v for k, v in r.items() if k != "segment_seconds"}
                for r in read_jsonl(os.path.join(path, "metrics.jsonl"))]
    assert rows(cut) == rows(full)
    assert all(r["label_env_steps"] == 0 and r["total_env_steps"] == r["main_env_steps"] for r in rows(full))
    with pytest.raises(ValueError, match="window"):
        config_from_dict({**TINY_TRAIN, "credit": "text-matched", "credit_options": {"window": -1}})
