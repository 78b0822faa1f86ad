"""`jaxcredit bench train`: one JSON object whose ratios are computed from its own raw rates."""

import json

import pytest

from jaxcredit.cli import main


def test_bench_train_json(capsys):
    assert main(["bench", "train", "--quick", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    rates, flops = result["steps_per_second"], result["flops_per_second"]
    assert set(rates) == {"train:outcome", "train:mc"} and min(rates.values()) > 0
    assert result["forward_flops"] > 0
    ratios = result["ratios"]
    assert ratios["train:forward_vs_matmul@512"] == pytest.approx(flops["forward"] / flops["matmul@512"])
    assert ratios["train:outcome_vs_mc_steps_per_second"] == pytest.approx(rates["train:outcome"] / rates["train:mc"])
    for arm in ("outcome", "mc"):  # steps/s is the iteration's env steps over its time
        assert rates[f"train:{arm}"] * result["seconds_per_iteration"][f"train:{arm}"] > 64
    assert result["machine"]["cores"] >= 1
