"""One training run over two processes (`jaxcredit train --distributed`, 4 CPU devices each, gloo)
writes the same run directory as one process over 8 devices. (A 2-process run interrupted and
resumed, `distributed_train.py ... --stop-after-evals 1` then `--resume`, gives the same rows too;
checked by hand, left out of the suite for its ~50 s.)

Device counts are fixed when JAX starts, so every run is a fresh Python process
(`tests/scripts/distributed_train.py`); the 1-process twin runs beside the two.
"""

import json
import os
import socket
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "distributed_train.py")


def launch(args, devices):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAXCREDIT_COORDINATOR",
                                                            "JAXCREDIT_NUM_PROCESSES", "JAXCREDIT_PROCESS_ID")}
    env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    return subprocess.Popen([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=os.path.dirname(SCRIPT))


def finish(process, timeout=240):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return out


def summary_line(out):
    """The summary JSON (gloo writes its own lines to stdout too)."""
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def rows_without_timing(path):
    with open(os.path.join(path, "metrics.jsonl")) as f:
        return [{k: v for k, v in json.loads(line).items() if k != "segment_seconds"} for line in f]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_processes(*args):
    port = free_port()
    return [finish(p) for p in [launch([str(i), str(port), *args], devices=4) for i in (0, 1)]]


def test_two_process_training_run_matches_one_process(tmp_path):
    multi, single = str(tmp_path / "two-processes"), str(tmp_path / "one-process")
    twin = launch(["single", single], devices=8)
    outs = two_processes(multi)
    single_summary = summary_line(finish(twin))

    # only process 0 prints the summary; the run directory is complete and written once
    assert summary_line(outs[0]) == single_summary
    assert not any(line.startswith("{") for line in outs[1].splitlines())
    assert sorted(os.listdir(multi)) == [".jaxcredit-kind", "checkpoints", "config.json", "metrics.jsonl", "policies",
                                         "summary.json"]
    assert sorted(os.listdir(os.path.join(multi, "policies"))) == ["seed-0", "seed-1"]
    with open(os.path.join(multi, "checkpoints", "latest.json")) as f:
        assert json.load(f)["eval_index"] == 2
    assert not [name for name in os.listdir(multi) if ".tmp-" in name]
    assert sorted(os.listdir(os.path.join(multi, "checkpoints"))) == ["best-1", "best.json", "latest-2",
                                                                       "latest.json"]
    with open(os.path.join(multi, "config.json")) as f:
        config = json.load(f)
    assert config["shard_devices"] == 8  # the batch was split over both processes' devices
    with open(os.path.join(single, "config.json")) as f:
        assert json.load(f) == config

    # the same metrics, exactly: every evaluation, seed and ledger counter
    rows = rows_without_timing(multi)
    assert len(rows) == 6 and [r["eval_index"] for r in rows] == [0, 0, 1, 1, 2, 2]
    assert rows[-1]["main_episodes"] == 256 and rows[-1]["label_env_steps"] > 0
    assert rows == rows_without_timing(single)
