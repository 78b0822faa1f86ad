"""`jaxcredit bench train`: one JSON object whose ratios and bounds are computed from its own raw numbers."""

import json
import os
import subprocess
import sys

import pytest


def _bench_train_quick() -> subprocess.CompletedProcess:
    """`jaxcredit bench train --quick --json` in a process of its own, without the suite's persistent
    compilation cache: the bench times its own compiles (a cache hit would time a load), and its
    largest programs (the afterstate and lookahead rows) are compiled in a fresh process rather
    than in a test worker that has already compiled hundreds of others (XLA's CPU compiler has
    crashed there, never in a fresh process)."""
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    return subprocess.run([sys.executable, "-m", "jaxcredit.cli", "bench", "train", "--quick", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)


def test_bench_train_json():
    done = _bench_train_quick()
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    rates, flops = result["steps_per_second"], result["flops_per_second"]
    assert set(rates) == {"train:outcome", "train:mc"} and min(rates.values()) > 0
    assert 0 < result["forward_flops"] < result["forward_backward_flops"]
    ratios, matmul = result["ratios"], flops["matmul@512"]
    assert ratios["train:forward_vs_matmul@512"] == pytest.approx(flops["forward"] / matmul)
    assert ratios["train:forward_backward_vs_matmul@512"] == pytest.approx(flops["forward_backward"] / matmul)
    assert ratios["train:outcome_vs_mc_steps_per_second"] == pytest.approx(rates["train:outcome"] / rates["train:mc"])
    per = result["flops_per_observation"]
    assert per["forward"] < per["forward_backward"] < 5 * per["forward"]  # a backward pass costs ~2 forwards
    for arm in ("outcome", "mc"):
        seconds, bound = result["seconds_per_iteration"][f"train:{arm}"], result["bound_seconds"][f"train:{arm}"]
        assert bound == pytest.approx(result["bound_flops"][f"train:{arm}"] / matmul)
        assert ratios[f"train:{arm}_vs_bound"] == pytest.approx(seconds / bound)
        # quick: 2 problems x 2 attempts x 12 turns at most on the main account; mc adds continuations
        assert 4 <= rates[f"train:{arm}"] * seconds
        unguarded = result["unguarded_seconds_per_iteration"][f"train:{arm}"]
        assert ratios[f"train:{arm}:guarded_vs_unguarded"] == pytest.approx(seconds / unguarded)
    assert rates["train:outcome"] * result["seconds_per_iteration"]["train:outcome"] <= 48
    [row] = result["scaling"]["episodes_per_iteration"]
    assert row["episodes"] == 4 and row["seconds"] == result["seconds_per_iteration"]["train:outcome"]
    assert "time/bound" in done.stderr and "guarded/unguarded" in done.stderr
    assert "time/bound" in done.stderr and "forward+backward" in done.stderr
    assert result["machine"]["cores"] >= 1


def test_unguarded_iteration_has_no_finiteness_checks():
    """The guards' side of the comparison: the unguarded program traces no `is_finite`, the guarded one does."""
    import jax
    import jax.numpy as jnp

    from jaxcredit.benchmarks.train import ARMS, _trainer, unguarded

    trainer = _trainer(ARMS["outcome"], quick=True)
    state = trainer.init(jnp.int32(0))
    guarded = str(jax.make_jaxpr(trainer.iterate)(state))
    with unguarded():
        folded = str(jax.make_jaxpr(trainer.iterate)(state))
    assert "is_finite" in guarded and "is_finite" not in folded
