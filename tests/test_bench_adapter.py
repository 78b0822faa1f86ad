"""`jaxcredit bench adapter`: its JSON and table through the command line (tiny sizes: the rates
are not checked, only that every side ran and the ratios are the rates' quotients)."""

import json

import pytest

pytest.importorskip("gymnax")

from jaxcredit.benchmarks import SUITES  # noqa: E402
from jaxcredit.benchmarks import adapter as bench_adapter  # noqa: E402
from jaxcredit.cli import main  # noqa: E402


def test_bench_adapter_json(monkeypatch, capsys):
    assert SUITES["adapter"] is bench_adapter.run
    monkeypatch.setattr(bench_adapter, "ENVIRONMENTS", ("mad",))
    monkeypatch.setattr(bench_adapter, "RESET_POOL", 1024)
    assert main(["bench", "adapter", "--quick", "--json", "--sizes", "64"]) == 0  # quick: no fresh-draw side
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    rates = result["steps_per_second"]
    assert set(rates) == {"mad:raw@64", "mad:adapter@64", "mad:adapter_one_hot@64", "mad:raw_carried@64",
                          "mad:adapter_carried@64"}
    assert all(rate > 0 for rate in rates.values())
    assert result["ratios"] == pytest.approx({
        "mad:adapter_vs_raw@64": rates["mad:adapter@64"] / rates["mad:raw@64"],
        "mad:adapter_one_hot_vs_raw@64": rates["mad:adapter_one_hot@64"] / rates["mad:raw@64"],
        "mad:adapter_carried_vs_raw_carried@64": rates["mad:adapter_carried@64"] / rates["mad:raw_carried@64"],
    })
    assert "gymnax adapter auto-reset step vs raw vmap(env.step)" in captured.err and "mad" in captured.err
    assert result["suite"] == "adapter" and result["machine"]["cores"] >= 1
