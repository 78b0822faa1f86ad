"""`jaxcredit bench train`: one JSON object whose ratios and bounds are computed from its own raw numbers."""

import json

import pytest

from jaxcredit.cli import main


@pytest.fixture
def no_compilation_cache():
    """The bench times its own compiles and runs, so it runs without the suite's persistent
    compilation cache: a cache hit would time a load, not a compile, and its largest programs (the
    afterstate and lookahead rows) would only fill the cache."""
    import jax

    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    yield
    jax.config.update("jax_enable_compilation_cache", enabled)


def test_bench_train_json(capsys, no_compilation_cache):
    assert main(["bench", "train", "--quick", "--json"]) == 0
    captured = capsys.readouterr()
    out = captured.out.strip().splitlines()
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
    assert rates["train:outcome"] * result["seconds_per_iteration"]["train:outcome"] <= 48
    [row] = result["scaling"]["episodes_per_iteration"]
    assert row["episodes"] == 4 and row["seconds"] == result["seconds_per_iteration"]["train:outcome"]
    assert "time/bound" in captured.err and "forward+backward" in captured.err
    assert result["machine"]["cores"] >= 1
