"""`jaxcredit bench envs`: the NumPy baseline against the plain-Python oracle, the three random
legal-action pickers against each other, and the suite's JSON through the command line."""

import io
import json
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.benchmarks import ENV_BENCHES, SUITES, MadNumpy
from jaxcredit.benchmarks import envs as bench_envs
from jaxcredit.benchmarks.common import print_table, time_interleaved
from jaxcredit.cli import main
from jaxcredit.conformance import random_actions
from jaxcredit.envs import BLANK, MadReference

_FIELDS = ("observation", "legal_action_mask", "reward", "terminated", "truncated", "rejected", "turn")


def _random_tapes(rng, num_episodes, *, length, num_tokens, useful_probability):
    tokens = rng.integers(0, num_tokens, size=(num_episodes, length))
    return np.where(rng.random((num_episodes, length)) < useful_probability, tokens, BLANK).astype(np.int32)


@pytest.mark.parametrize("config, useful_probability, illegal_fraction", [
    ({}, 0.3, 0.0),
    ({}, 0.3, 0.4),
    ({"length": 3, "num_tokens": 2, "max_turns": 4}, 0.5, 0.3),
])
def test_numpy_matches_reference_step_by_step(config, useful_probability, illegal_fraction):
    numpy_env, reference = MadNumpy(**config), MadReference(**config)
    rng = np.random.default_rng(len(config) * 10 + int(illegal_fraction * 10))
    tapes = _random_tapes(rng, 1500, length=numpy_env.length, num_tokens=numpy_env.num_tokens,
                          useful_probability=useful_probability)
    batch = numpy_env.reset(tapes)
    history = [(None, batch)]
    for _ in range(numpy_env.max_turns + 2):  # every episode is also stepped after its end
        actions = random_actions(rng, batch.legal_action_mask, illegal_fraction=illegal_fraction)
        before = batch
        frozen = [np.copy(x) for x in before]
        batch = numpy_env.step(before, actions)
        assert all(np.array_equal(a, b) for a, b in zip(frozen, before)), "step modified its input"
        history.append((actions, batch))

    for i, tape in enumerate(tapes):
        ref = reference.reset(tape)
        for t, (actions, batch) in enumerate(history):
            if actions is not None:
                ref.step(int(actions[i]))
            for field in _FIELDS:
                got, want = getattr(batch, field)[i], getattr(ref, field)
                assert np.array_equal(got, want), f"episode {i} step {t} {field}: {got} != {want}"
            assert batch.selection[i] == ref.position_index(), f"episode {i} step {t} selection"

    final = history[-1][1]
    rewards = np.stack([b.reward for _, b in history[1:]])
    rejected = np.stack([b.rejected for _, b in history[1:]])
    assert final.terminated.any() and final.truncated.any()  # both endings were exercised
    assert (rewards == 1).any() and rejected.any() == (illegal_fraction > 0)


def test_numpy_bad_tapes():
    with pytest.raises(ValueError, match=r"shape \[B, 8\]"):
        MadNumpy().reset(np.zeros((4, 7), np.int32))
    with pytest.raises(ValueError, match="length must be in"):
        MadNumpy(length=17)


@pytest.mark.parametrize("num_actions", [17, 53])  # the broadcast and the log-step prefix sums
def test_random_legal_action_hand_computed_and_three_sides_agree(num_actions):
    mask = np.array([[0, 1, 0, 1, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1], [1, 0, 0, 0, 0]], bool)
    u = np.array([0.5, 0.99, 0.0, 0.75], np.float32)
    want = [3, 4, 4, 0]  # k = floor(u * num_legal) = 1, 4, 0, 0 -> the k-th legal action
    assert bench_envs.random_legal_action_numpy(None, mask, u).tolist() == want
    assert np.asarray(bench_envs.random_legal_action_jax(None, jnp.asarray(mask), jnp.asarray(u))).tolist() == want
    assert [bench_envs.random_legal_action_python(None, m.tolist(), float(x)) for m, x in zip(mask, u)] == want

    rng = np.random.default_rng(0)
    mask = rng.random((500, num_actions)) < rng.random((500, 1))
    mask[:, num_actions - 1] = True
    u = (rng.integers(0, 2**16, 500) / 2**16).astype(np.float32)
    from_numpy = bench_envs.random_legal_action_numpy(None, mask, u)
    from_jax = np.asarray(bench_envs.random_legal_action_jax(None, jnp.asarray(mask), jnp.asarray(u)))
    from_python = [bench_envs.random_legal_action_python(None, m.tolist(), float(x)) for m, x in zip(mask, u)]
    assert from_numpy.tolist() == from_jax.tolist() == from_python
    assert mask[np.arange(500), from_numpy].all()


@pytest.mark.parametrize("name", [spec.name for spec in ENV_BENCHES])
def test_three_rollouts_take_the_same_episodes(name):
    spec = next(spec for spec in ENV_BENCHES if spec.name == name)
    env = spec.make_env()
    problems, uniforms = bench_envs.draw_inputs(env, 96, seed=3)
    assert uniforms.shape == (env.max_turns, 96) and uniforms.dtype == np.float32
    assert np.all(uniforms * 2**16 == np.floor(uniforms * 2**16))  # on the exact grid
    jax_state, jax_returns = bench_envs.jax_rollout(env)(problems, uniforms)
    numpy_batch, numpy_returns = bench_envs.numpy_rollout(spec.numpy_cls(), problems, uniforms)
    episodes = [jax.tree_util.tree_map(lambda x, i=i: x[i], problems) for i in range(96)]
    python_returns, python_turns, python_observations = bench_envs.python_rollout(
        spec.reference_cls(), episodes, uniforms.T.tolist())
    assert np.asarray(jax_returns).tolist() == numpy_returns.tolist() == python_returns
    assert np.asarray(jax_state.turn).tolist() == numpy_batch.turn.tolist() == python_turns
    assert np.asarray(jax_state.observation).tolist() == numpy_batch.observation.tolist() == python_observations
    assert set(python_turns) <= set(range(1, env.max_turns + 1))


def test_bench_envs_json_through_the_cli(capsys):
    assert "envs" in SUITES
    code = main(["bench", "envs", "--json", "--quick", "--sizes", "32,64"])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.endswith("\n") and out.count("\n") == 1
    result = json.loads(out)  # exactly one object: json.loads rejects trailing data
    assert result["suite"] == "envs" and result["sizes"] == [32, 64]
    rates, ratios = result["steps_per_second"], result["ratios"]
    names = ("mad", "arithmetic")
    assert set(ratios) == {f"{name}:{fast}_vs_{side}@{size}" for name in names for size in (32, 64)
                           for fast, side in (("jax", "numpy"), ("jax", "python"), ("jax_carried", "numpy"))}
    for name in names:
        for size in (32, 64):
            for fast, side in (("jax", "numpy"), ("jax", "python"), ("jax_carried", "numpy")):
                assert ratios[f"{name}:{fast}_vs_{side}@{size}"] == pytest.approx(
                    rates[f"{name}:{fast}@{size}"] / rates[f"{name}:{side}@{size}"])
    assert all(rate > 0 for rate in rates.values()) and len(rates) == 16
    assert result["python_episodes"] == {f"{name}@{size}": size for name in names for size in (32, 64)}
    assert result["machine"]["cores"] == os.cpu_count() and result["machine"]["devices"]
    assert result["machine"]["cpu"]["model"] and "jaxlib" in result["machine"]["libraries"]
    assert "jax/numpy" in err and "mad" in err  # the human table went to stderr
    curves = result["scaling"]["batch"]  # the scaling curve at the same sizes, from the same compiles
    assert {name: [r["batch"] for r in rows] for name, rows in curves.items()} == {n: [32, 64] for n in names}
    assert all(r["steps_per_second"] > 0 for rows in curves.values() for r in rows)
    assert "env steps/s vs batch size" in err


def test_bench_bad_sizes_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "envs", "--sizes", "0,5"])
    assert exit_info.value.code == 2
    assert "batch sizes must be in [1, 2147483647], got 0 (comma-separated" in capsys.readouterr().err


def test_time_interleaved_and_table(monkeypatch):
    calls = []
    timed = time_interleaved({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2},
                             repeats=3, warmup=1, min_sample_seconds=0.0)
    assert calls == ["a", "b"] + ["a", "b"] * 3  # warm-up, then interleaved rounds of one call each
    assert timed["a"][1] == 1 and timed["b"][1] == 2 and timed["a"][0] >= 0
    clock = [0.0]  # a call of 4 ms on a clock of its own: the sample's size does not depend on the load
    monkeypatch.setitem(time_interleaved.__globals__, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    slow_calls = []
    timed = time_interleaved({"slow": lambda: slow_calls.append(clock.__setitem__(0, clock[0] + 0.004))},
                             repeats=2, min_sample_seconds=0.01)
    assert len(slow_calls) == 1 + 2 * 3  # the warm-up, then 2 samples of ceil(10 / 4) = 3 calls
    assert timed["slow"][0] == pytest.approx(0.004)
    with pytest.raises(ValueError, match="repeats"):
        time_interleaved({"a": lambda: 0}, repeats=0)
    buffer = io.StringIO()
    print_table("title", ["x", "long header"], [[1, 2], [333, 4]], file=buffer)
    assert buffer.getvalue().splitlines() == ["title", "x    long header", "---  -----------", "1    2", "333  4"]
