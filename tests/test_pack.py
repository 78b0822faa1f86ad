"""`jaxcredit pack`: a sweep's resumable state without what can be rebuilt."""

import json
import os

import pytest

from jaxcredit.cli import main
from jaxcredit.output_dirs import write_kind
from jaxcredit.train.pack import pack_sweep


def _cell(root, rel, *, finished):
    path = root / rel
    (path / "checkpoints/latest-3").mkdir(parents=True)
    (path / "checkpoints/latest-3/d").write_bytes(b"state")
    (path / "checkpoints/latest.json").write_text('{"step": 3}\n')
    (path / "checkpoints/latest-4.orbax-checkpoint-tmp-123").mkdir()  # a save in progress
    (path / "policies/seed-0").mkdir(parents=True)
    (path / "policies/seed-0/params").write_bytes(b"policy")
    (path / "config.json").write_text('{"credit": "outcome"}\n')
    (path / "metrics.jsonl").write_text('{"eval_index": 0}\n')
    (path / ".jaxcredit.lock").write_text("")
    (path / "summary.json.tmp-4242").write_text("{")  # an interrupted write
    if finished:
        (path / "summary.json").write_text('{"mean": {}}\n')


@pytest.fixture
def sweep(tmp_path):
    root = tmp_path / "sweep"
    write_kind(str(root), "sweep")
    (root / "sweep_spec.json").write_text('{"name": "x"}\n')
    (root / "gates/afterstate-3").mkdir(parents=True)
    (root / "gates/afterstate-3/gate.json").write_text('{"passed": true}\n')
    _cell(root, "tune/outcome/p00", finished=True)
    _cell(root, "attempts/outcome", finished=True)
    _cell(root, "attempts/exact", finished=False)
    return root


def _files(root):
    return sorted(os.path.relpath(os.path.join(r, f), root) for r, _, fs in os.walk(root) for f in fs)


def test_pack_keeps_what_resuming_and_auditing_read(sweep, tmp_path):
    out = tmp_path / "packed"
    packed = pack_sweep(str(sweep), str(out))
    assert packed["finished"] == ["attempts/outcome", "tune/outcome/p00"] and packed["unfinished"] == ["attempts/exact"]
    files = _files(out)
    assert "attempts/exact/checkpoints/latest-3/d" in files  # the unfinished cell resumes from it
    assert "attempts/exact/checkpoints/latest.json" in files
    assert not any(f.startswith("attempts/outcome/checkpoints") for f in files)  # finished: rebuilt never
    assert "attempts/outcome/policies/seed-0/params" in files  # what `audit --checkpoint` reads
    assert not any(f.startswith("tune/outcome/p00/policies") or f.startswith("tune/outcome/p00/checkpoints")
                   for f in files)
    assert not any(".jaxcredit.lock" in f or ".tmp-" in f or "orbax-checkpoint-tmp" in f for f in files)
    for f in files:  # byte for byte
        assert (out / f).read_bytes() == (sweep / f).read_bytes(), f
    assert {"sweep_spec.json", "gates/afterstate-3/gate.json", ".jaxcredit-kind",
            "tune/outcome/p00/summary.json"} <= set(files)
    assert packed["bytes"] == sum((out / f).stat().st_size for f in files)


def test_pack_refuses_what_it_cannot_write(sweep, tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full/x").write_text("")
    assert main(["pack", str(sweep), "--out", str(tmp_path / "full")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert main(["pack", str(tmp_path / "full"), "--out", str(tmp_path / "new")]) == 2
    assert "is not a sweep or suite directory" in capsys.readouterr().err and not (tmp_path / "new").exists()
    assert main(["pack", str(sweep), "--out", str(sweep / "inside")]) == 2
    assert "inside the sweep" in capsys.readouterr().err
    assert main(["pack", str(sweep), "--out", str(tmp_path / "ok"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unfinished"] == ["attempts/exact"]


def test_pack_takes_a_suite_and_treats_each_of_its_sweeps_alike(tmp_path):
    suite = tmp_path / "suite"
    write_kind(str(suite), "suite")
    (suite / "suite.json").write_text('{"suite": "full"}\n')
    (suite / "labels-mad/seed-0.json").parent.mkdir(parents=True)
    (suite / "labels-mad/seed-0.json").write_text('{"scores": {}}\n')
    write_kind(str(suite / "learn-mad/s0"), "sweep")
    _cell(suite, "learn-mad/s0/tune/outcome/p00", finished=True)
    _cell(suite, "learn-mad/s0/attempts/outcome", finished=True)
    _cell(suite, "learn-mad/s0/attempts/exact", finished=False)
    _cell(suite, "tune/odd/run", finished=True)  # a `tune` folder that is not a sweep's: an ordinary run
    out = tmp_path / "packed"
    packed = pack_sweep(str(suite), str(out))
    assert packed["unfinished"] == ["learn-mad/s0/attempts/exact"]
    files = _files(out)
    assert {"suite.json", "labels-mad/seed-0.json", "learn-mad/s0/.jaxcredit-kind",
            "learn-mad/s0/attempts/exact/checkpoints/latest-3/d",
            "learn-mad/s0/attempts/outcome/policies/seed-0/params",
            "learn-mad/s0/tune/outcome/p00/summary.json", "tune/odd/run/policies/seed-0/params"} <= set(files)
    assert not any(f.startswith("learn-mad/s0/tune/outcome/p00/policies") or "outcome/checkpoints" in f
                   for f in files)
