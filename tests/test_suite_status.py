"""`jaxcredit status SUITE`: where a suite stands, read from its directory (no training here: the
directory is assembled by hand from the quick suite's experiments and a recorded tiny sweep)."""

import json
import os
import shutil
from pathlib import Path

from jaxcredit.cli import main
from jaxcredit.output_dirs import write_kind
from jaxcredit.suite.status import format_suite_status, suite_status

DATA = Path(__file__).parent / "data"


def test_status_reads_each_experiment(tmp_path, capsys):
    out = tmp_path / "suite"
    write_kind(str(out), "suite")
    experiments = ["labels-mad", "learn-mad", "labels-umbrella", "umbrella-length", "learn-routine"]
    (out / "suite.json").write_text(json.dumps({"suite": "quick", "arms": {"mc": {}, "outcome": {}},
                                                "experiments": experiments}))
    (out / "labels-mad").mkdir()
    (out / "labels-mad" / "result.json").write_text("{}")
    (out / "labels-umbrella").mkdir()
    (out / "labels-umbrella" / "seed-0.json").write_text("{}")  # 1 of its 2 seeds labelled
    shutil.copytree(DATA / "tiny-sweep", out / "learn-mad" / "s0")  # a learning setting: a sweep
    (out / "umbrella-length").mkdir()  # made, nothing in it yet
    (out / "timing.json").write_text(json.dumps({"sessions": [{"wall_seconds": 600.0}, {"wall_seconds": 1200.0}]}))
    status = suite_status(str(out))
    assert not status["running"] and status["runs"] == 2 and status["wall_seconds"] == 1800.0
    states = {e["name"]: e["state"] for e in status["experiments"]}
    assert states == {"labels-mad": "finished", "learn-mad": "started", "labels-umbrella": "started",
                      "umbrella-length": "not started", "learn-routine": "not started"}
    setting = status["experiments"][1]["settings"][0]
    assert setting["setting"] == "s0" and setting["finished"] == setting["runs"] > 0 and setting["running"] == 0
    text = format_suite_status(status)
    assert text.splitlines()[0] == ("suite quick: 2 arms, 1 of 5 experiments finished, not running; "
                                    "30 min recorded over 2 runs")
    assert "  learn-mad (learning): started: s0 5 of 5 runs finished" in text  # as docs/suite.md shows
    assert "  labels-umbrella (labels): started, 1 of 2 seeds labelled" in text
    assert main(["status", str(out)]) == 0 and capsys.readouterr().out.strip() == text
    assert main(["status", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["experiments"][0] == {"name": "labels-mad", "kind": "labels",
                                                                     "state": "finished"}
    assert main(["status", os.fspath(tmp_path / "nothing")]) == 2
