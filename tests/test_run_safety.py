"""Run-directory safety: a crash between any two file operations of a run or a sweep leaves a
directory that resumes to exactly the uninterrupted result; a second process on a locked directory
gets one line and changes nothing.

A crash is simulated two ways. Snapshots: `rundir_io.before_file_operation` (called before every
file operation) copies the directory, which is exactly what a `kill -9` at that instant leaves on
disk (the page cache survives the process); each copy is then resumed. Exceptions: the hook raises
at one operation and at every later one (a dead process writes nothing more, not even its lock's
release). Two real `kill -9` subprocess cases back them up. Every run uses the tiny configuration of
`test_train.py`, so the compiled programs are shared (`driver.compiled_programs`).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxcredit import rundir_io
from jaxcredit.cli import main
from jaxcredit.output_dirs import KIND_NAME
from jaxcredit.rundir_io import LOCK_NAME, RunLock
from jaxcredit.train import RunDir, SweepSpec, config_from_dict, run_sweep, run_training
from jaxcredit.train.rundir import read_json, read_jsonl

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY = {"env": "mad", "env_overrides": TINY_MAD, "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64,
        "problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 64,
        "num_seeds": 2, "num_evals": 1, "budget": 64, "holdout_fraction": 0.0}
SWEEP = SweepSpec(name="crash-test", description="two tiny cells", base=TINY,
                  arms={"outcome": {}, "longer": {"num_evals": 2}}, budgets={"attempts": 64}, regimes=("attempts",))
CONFIG = config_from_dict(TINY)


class InjectedCrash(BaseException):
    """Raised by the crash hook: a BaseException, like a kill, so no `except Exception` absorbs it."""


class Snapshots:
    """The crash hook that copies `root` before every file operation (`None`: not created yet)."""

    def __init__(self, root, where):
        self.root, self.where, self.ops, self.copies = str(root), str(where), [], []

    def __call__(self, kind, path):
        copy = os.path.join(self.where, f"{len(self.ops):03d}")
        self.copies.append(shutil.copytree(self.root, copy, symlinks=True) if os.path.exists(self.root) else None)
        self.ops.append((kind, os.path.relpath(path, self.root)))


class Crasher:
    """The crash hook that raises at operation `at` and at every one after it."""

    def __init__(self, at):
        self.at, self.count = at, 0

    def __call__(self, kind, path):
        if self.count >= self.at:
            raise InjectedCrash(f"before {kind} {path}")
        self.count += 1


def metrics(path):
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in rows]


def listing(path):
    """Names at the top of a run directory and in its checkpoints/ and policies/ (no lock, no leftovers)."""
    return {sub: sorted(os.listdir(os.path.join(path, sub))) for sub in ("", "checkpoints", "policies")}


def tree_digest(path):
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            digest.update(os.path.join(root, name).encode())
            with open(os.path.join(root, name), "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """An uninterrupted run, with a snapshot of its directory before every file operation."""
    where = tmp_path_factory.mktemp("run")
    snapshots = Snapshots(where / "ref", where / "snapshots")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rundir_io, "before_file_operation", snapshots)
        summary = run_training(CONFIG, str(where / "ref"), progress=False)
    return str(where / "ref"), summary, snapshots


def assert_same_run(path, reference, summary, why):
    assert metrics(path) == metrics(reference), why
    assert read_json(os.path.join(path, "summary.json")) == summary, why
    assert listing(path) == listing(reference), why


def test_crash_before_each_file_operation_of_a_run_then_resume(reference_run):
    reference, summary, snapshots = reference_run
    kinds = {kind for kind, _ in snapshots.ops}
    assert kinds == {"mkdir", "lock", "write", "rename", "checkpoint", "remove", "unlock"}
    assert len(snapshots.ops) == 26 and LOCK_NAME not in os.listdir(reference)
    assert snapshots.ops[2:4] == [("write", f"{KIND_NAME}.tmp-{os.getpid()}"), ("rename", KIND_NAME)]  # kind first
    finished_from = 1 + snapshots.ops.index(("rename", "summary.json"))
    for i, (op, copy) in enumerate(zip(snapshots.ops, snapshots.copies)):
        why = f"crash before operation {i}: {op}"
        status = RunDir(copy).status() if copy else "absent"
        assert status == ("absent" if i == 0 else "new" if i <= 6 else "finished" if i >= finished_from
                          else "resumable"), why
        out = os.path.join(snapshots.where, f"resumed-{i:03d}")  # the snapshot itself stays as it was
        if copy:
            shutil.copytree(copy, out, symlinks=True)
        run_training(CONFIG, out, resume=copy is not None, progress=False)
        assert_same_run(out, reference, summary, why)


@pytest.mark.parametrize("at", [6, 22])  # before config.json is in place; between the two policies
def test_an_exception_at_a_file_operation_then_resume(at, reference_run, tmp_path, monkeypatch):
    reference, summary, _ = reference_run
    out = str(tmp_path / "run")
    monkeypatch.setattr(rundir_io, "before_file_operation", Crasher(at))
    with pytest.raises(InjectedCrash):
        run_training(CONFIG, out, progress=False)
    monkeypatch.undo()
    assert os.path.exists(os.path.join(out, LOCK_NAME))  # left behind, as a killed process leaves it
    run_training(CONFIG, out, resume=True, progress=False)
    assert_same_run(out, reference, summary, at)


def test_checkpoints_inside_a_segment_resume_to_the_uninterrupted_run(reference_run, tmp_path):
    """`checkpoint_seconds=0`: each call of the segment program is one iteration, each followed by
    a checkpoint inside the segment (`latest-0-K`). Cutting the segment changes no number, and a
    crash before any file operation after such a checkpoint resumes from it to the same run."""
    reference, summary, _ = reference_run
    snapshots = Snapshots(tmp_path / "split", tmp_path / "snapshots")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rundir_io, "before_file_operation", snapshots)
        assert run_training(CONFIG, str(tmp_path / "split"), progress=False, checkpoint_seconds=0) == summary
    assert metrics(tmp_path / "split") == metrics(reference)
    parts = [path for kind, path in snapshots.ops if kind == "checkpoint" and path.startswith("checkpoints/latest-0-")]
    assert parts == ["checkpoints/latest-0-1", "checkpoints/latest-0-2"]  # 2 iterations of 32 episodes
    resumed = 0
    for i, copy in enumerate(snapshots.copies):
        pointer = os.path.join(copy or "", "checkpoints", "latest.json")
        if not copy or not os.path.exists(pointer) or "segment_part" not in read_json(pointer):
            continue  # states without a checkpoint inside a segment: the test above
        info = read_json(pointer)
        assert info["directory"] == f"latest-0-{info['segment_part']}" and info["segment_seconds"] >= 0
        out = shutil.copytree(copy, str(tmp_path / f"resumed-{i:03d}"), symlinks=True)
        run_training(CONFIG, out, resume=True, progress=False)
        assert_same_run(out, reference, summary, f"crash before operation {i}: {snapshots.ops[i]}")
        assert read_jsonl(os.path.join(out, "metrics.jsonl"))[-1]["segment_seconds"] >= info["segment_seconds"]
        resumed += 1
    assert resumed >= 12  # 13: every operation from the first such checkpoint on


def test_the_pace_sizes_calls_from_the_measured_rate():
    from jaxcredit.train.driver import FIRST_FRACTION, _Pace

    target, done = np.array([1000, 800]), np.array([0, 400])
    assert (_Pace(None).next_limits(done, target) == target).all()  # one call per segment
    pace = _Pace(300.0)  # calls of about STEP_SECONDS = 30 s
    assert (pace.next_limits(done, target) == done + np.ceil(FIRST_FRACTION * (target - done))).all()
    pace.observe(np.array([10, 10]), 1.0)  # 20 units/s: 600 units in 30 s, of the 1400 remaining
    assert (pace.next_limits(done, target) == [429, 572]).all()
    pace.observe(np.array([100, 0]), 1.0)  # fast enough for the rest in one call
    assert (pace.next_limits(done, target) == target).all()
    assert (pace.next_limits(np.array([1000, 900]), target) == target).all()  # nothing left
    assert not pace.checkpoint_due() and _Pace(0.0).checkpoint_due()


def test_resume_refuses_missing_or_torn_metrics_naming_the_file(reference_run, tmp_path):
    _, _, snapshots = reference_run
    stopped = snapshots.copies[snapshots.ops.index(("checkpoint", "checkpoints/latest-1"))]  # at evaluation 1
    lines = open(os.path.join(stopped, "metrics.jsonl")).readlines()  # evaluations 0 and 1, two seeds each
    damages = {"metrics.jsonl is missing": None,
               "line 5 is torn": lines + ['{"eval_index": 1, "seed'],
               r"lacks the rows of evaluation\(s\) \[0\]": lines[2:]}
    for message, damaged_lines in damages.items():
        damaged = shutil.copytree(stopped, str(tmp_path / f"damaged-{len(os.listdir(tmp_path))}"))
        os.remove(os.path.join(damaged, LOCK_NAME))  # the snapshot's stale lock (a resume would take it over)
        path = os.path.join(damaged, "metrics.jsonl")
        os.remove(path)
        if damaged_lines is not None:
            with open(path, "w") as f:
                f.writelines(damaged_lines)
        before = tree_digest(damaged)
        with pytest.raises(ValueError, match=message):
            run_training(CONFIG, damaged, resume=True, progress=False)
        assert tree_digest(damaged) == before


def test_a_corrupted_checkpoint_is_one_error_without_orbax_noise(reference_run, tmp_path, monkeypatch):
    """Truncated array data: one ValueError, nothing changed, and none of the "Event loop is closed"
    tracebacks tensorstore's threads used to print afterwards (hundreds per read, unfiltered)."""
    _, _, snapshots = reference_run
    stopped = shutil.copytree(snapshots.copies[snapshots.ops.index(("checkpoint", "checkpoints/best-1"))],
                              str(tmp_path / "run"))
    for root, _, files in os.walk(os.path.join(stopped, "checkpoints", "latest-0")):
        for name in files:
            if os.sep + "d" in root:  # the array chunks, not the metadata
                with open(os.path.join(root, name), "r+b") as f:
                    f.truncate(10)
    os.remove(os.path.join(stopped, LOCK_NAME))  # the snapshot's stale lock (a resume would take it over)
    before = tree_digest(stopped)
    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)  # what Python would print
    with pytest.raises(ValueError, match="corrupted checkpoint .*latest-0"):
        run_training(CONFIG, stopped, resume=True, progress=False)
    time.sleep(0.5)  # the late deliveries
    assert [str(u.exc_value) for u in printed] == [] and tree_digest(stopped) == before


def test_crash_in_a_two_cell_sweep_then_resume(tmp_path):
    snapshots = Snapshots(tmp_path / "ref", tmp_path / "snapshots")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rundir_io, "before_file_operation", snapshots)
        table = run_sweep(SWEEP, str(tmp_path / "ref"), progress=False)
    ops = snapshots.ops
    in_cells = [i for i, (_, path) in enumerate(ops) if path.startswith("attempts/")]
    assert len(ops) - len(in_cells) == 11 and len(in_cells) >= 26 + 32
    # The sweep's own operations, and inside the cells (runs, tested at every operation above) those
    # that change a cell's state: created, locked, config in place, first checkpoint, a later
    # segment's checkpoint, summary in place, unlocked (all for the second cell; for the first, its
    # config and its summary about to be in place). Each case before the first cell costs a whole
    # sweep, so of the six states there with nothing started two are kept.
    changes = {("mkdir", ""), ("lock", LOCK_NAME), ("rename", "config.json"), ("checkpoint", "checkpoints/latest-0"),
               ("checkpoint", "checkpoints/best-1"), ("rename", "summary.json"), ("unlock", LOCK_NAME)}
    chosen = [i for i in in_cells if (ops[i][0], ops[i][1].split("/", 2)[2] if ops[i][1].count("/") > 1 else "")
              in changes and (ops[i][1].startswith("attempts/longer") or ops[i][0] == "rename")]
    # Before the first cell the sweep directory is empty (locked), holds its kind marker (or the marker's
    # temporary file), or also sweep_spec.json's temporary file: kept are the empty one and the last.
    assert ops[2:6] == [("write", f"{KIND_NAME}.tmp-{os.getpid()}"), ("rename", KIND_NAME),
                        ("write", f"sweep_spec.json.tmp-{os.getpid()}"), ("rename", "sweep_spec.json")]
    skipped = set(in_cells) - set(chosen) | {0, 2, 3, 4}
    assert len(chosen) == 7 + 2
    for i, copy in enumerate(snapshots.copies):
        if i in skipped:
            continue
        out = copy or str(tmp_path / "absent")  # resumed in place: each snapshot is used once
        assert run_sweep(SWEEP, out, resume=copy is not None, progress=False) == table, ops[i]
        for arm in SWEEP.arms:
            assert metrics(os.path.join(out, "attempts", arm)) == metrics(tmp_path / "ref" / "attempts" / arm), ops[i]
        assert open(os.path.join(out, "table.md")).read() == open(tmp_path / "ref" / "table.md").read()
        assert LOCK_NAME not in os.listdir(out) and not any(rundir_io.is_leftover(n) for n in os.listdir(out))


def _train_argv(out):
    return ["train", "--out", str(out), "--no-progress"] + [f"--set={k}={json.dumps(v)}" for k, v in TINY.items()]


def test_kill_9_before_the_first_checkpoint_then_resume(reference_run, tmp_path):
    """The window that used to leave a run that could never be resumed: config.json written, the
    first checkpoint not yet (the programs are still compiling)."""
    reference, summary, _ = reference_run
    out = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-m", "jaxcredit.cli", *_train_argv(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not (out / "config.json").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.kill()  # SIGKILL
        process.wait()
    assert RunDir(str(out)).status() == "resumable"
    assert json.load(open(out / LOCK_NAME))["pid"] == process.pid  # its lock stays, stale
    run_training(CONFIG, str(out), resume=True, progress=False)
    assert_same_run(str(out), reference, summary, "kill -9")
    assert not (out / LOCK_NAME).exists()


HOLD = ("import sys, time\nfrom jaxcredit.rundir_io import RunLock\nRunLock(sys.argv[1], 'train').acquire()\n"
        "print('locked', flush=True)\ntime.sleep(300)\n")


def test_a_second_process_on_a_locked_directory_gets_one_line_and_changes_nothing(reference_run, tmp_path, capsys):
    reference, _, _ = reference_run
    out = shutil.copytree(reference, str(tmp_path / "run"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, out], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = tree_digest(out)
        for argv in (_train_argv(out), _train_argv(out) + ["--resume"], ["report", out],
                     ["audit", "--checkpoint", out, "--states", "2", "--continuations", "2", "--out", out]):
            assert main(argv + ["--no-progress"] if argv[0] == "audit" else argv) == 2, argv
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "Traceback" not in err, err
            # an audit into a run directory is refused for its kind, before the lock is even tried
            expected = "holds a run directory: nothing written" if argv[0] == "audit" else \
                f"is in use by train (pid {holder.pid} on "
            assert expected in err, err
            assert tree_digest(out) == before, argv
        with pytest.raises(ValueError, match="is in use by train"):
            RunLock(out, "library call").acquire()
    finally:
        holder.kill()  # kill -9: the kernel drops its lock, the record stays behind
        holder.wait()
    assert os.path.exists(os.path.join(out, LOCK_NAME))
    with RunLock(out, "after the kill"):  # the stale lock is taken over
        assert json.load(open(os.path.join(out, LOCK_NAME)))["pid"] == os.getpid()
    assert not os.path.exists(os.path.join(out, LOCK_NAME))


def test_the_lock_is_exclusive_in_one_process_too(tmp_path):
    with RunLock(str(tmp_path), "first"):
        with pytest.raises(ValueError, match=rf"in use by first \(pid {os.getpid()} on "):
            RunLock(str(tmp_path), "second").acquire()
    with RunLock(str(tmp_path), "third"):  # released: free again
        assert json.load(open(tmp_path / LOCK_NAME))["command"] == "third"
    assert os.listdir(tmp_path) == []
