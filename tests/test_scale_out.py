"""Scaling out: the batch axis sharded over 8 (forced host) devices matches one device; bad
settings are clear errors. (A 2-process `jax.distributed` training run on localhost matching one
process is `tests/test_multihost.py`.)

Device counts are fixed when JAX starts, so the multi-device runs are fresh Python processes
(`tests/scripts/`); their results come back as JSON.
"""

import json
import os
import subprocess
import sys

import pytest

from jaxcredit.sharding import batch_mesh, initialize_distributed
from jaxcredit.train import config_from_dict, make_train

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def run_script(args, *, devices=None):
    env = dict(os.environ)
    if devices:
        env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=os.path.dirname(SCRIPTS))


def last_json_line(process, timeout=300):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_eight_devices_match_one_device():
    report = last_json_line(run_script([os.path.join(SCRIPTS, "sharded_equality.py")], devices=8))
    assert report["devices"] == 8
    # the sharding really split the batch over all 8 devices
    assert report["constrained_spec"] == "P('batch',)" and report["constrained_devices"] == 8
    # branch continuations: same returns and the same counted work
    assert report["branch_max_diff"] <= 1e-6 and report["branch_counts_equal"]
    assert 0.0 < report["branch_mean_return"] < 1.0
    # training (Monte Carlo credit: sharded rollouts, continuations and update): the same sampled
    # work (every ledger counter equal) and parameters equal to float tolerance, far below the
    # change that training made
    assert report["train_ledgers_equal"]
    assert report["train_ledger"]["main_episodes"] == 96 and report["train_ledger"]["label_env_steps"] > 0
    assert report["train_max_diff"] <= 1e-3
    assert report["train_param_change"] >= 20 * report["train_max_diff"]


def test_bad_device_and_distributed_settings_are_clear_errors(monkeypatch):
    with pytest.raises(ValueError, match=r"shard devices must be in \[1, 1\], got 2 \(the devices JAX sees: 1 cpu\)"):
        batch_mesh(2)
    with pytest.raises(ValueError, match="shard devices"):
        make_train(config_from_dict({"shard_devices": 4}))
    with pytest.raises(ValueError, match=r"config.shard_devices must be in \[1, 2147483647\]"):
        config_from_dict({"shard_devices": 0})
    for name in ("JAXCREDIT_COORDINATOR", "JAXCREDIT_NUM_PROCESSES", "JAXCREDIT_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="need all of coordinator address"):
        initialize_distributed("127.0.0.1:1234")
    with pytest.raises(ValueError, match="host:port"):
        initialize_distributed("localhost", 2, 0)
    with pytest.raises(ValueError, match=r"process_id must be in \[0, num_processes\)"):
        initialize_distributed("127.0.0.1:1234", 2, 2)
    monkeypatch.setenv("JAXCREDIT_NUM_PROCESSES", "two")
    with pytest.raises(ValueError, match="distributed num_processes must be an integer written in ASCII digits"):
        initialize_distributed("127.0.0.1:1234", None, 0)
