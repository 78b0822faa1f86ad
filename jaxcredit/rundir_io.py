"""Safe writes into output directories: one lock per directory, atomic files, strict JSON.

Everything that writes a run, sweep, audit or report directory goes through this module (the
trainer and the analysis both use it; it imports neither): `RunLock` (an exclusive kernel `flock`
on `.jaxcredit.lock`, with a record naming the owner), `write_text_atomic`, `write_json_atomic`
and `write_jsonl_atomic` (a temporary file, `fsync`, a rename), `strict_json` (no NaN or
infinity: `null` and a sibling `<key>_reason`), the strict readers `read_json`, `read_jsonl` and
`is_finished` (a torn file is a `TornFile` error, never a finished cell), `failed_runs` and
`refuse_failed` (runs a non-finite iteration stopped), `check_writable_dir`,
and the sweep directory's format (`REGIMES`, `matched_cell`, `seed_measures`). Every file
operation calls `before_file_operation(kind, path)` first: it does nothing, and tests replace it to
stop a process between any two file operations. See docs/reliability.md.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import math
import os
import shutil
import socket
import tempfile
from typing import Any

import numpy as np

CLAIM_FILE = "claim.json"  # a sweep's claim, stated with its date before its first cell
LOCK_NAME = ".jaxcredit.lock"
FAILED_FILE = "failed.json"  # a run stopped at a non-finite iteration (docs/training.md#guards)

# ----- the sweep directory format: regimes and cells ---------------------------------------------
REGIMES = ("attempts", "matched", "fixed-steps")  # a sweep's cells are `<regime>/<cell>` run directories
REGIME_MEANINGS = {
    "attempts": "equal main attempts; label work is extra",
    "matched": "each label arm against the arms without label work given exactly its total env steps, seed by seed",
    "fixed-steps": "a fixed cap on total env steps, labels included",
    "matched-policy-evals": "each label arm against the arms without label work given exactly its total policy "
                            "evaluations, seed by seed",  # `matched` with `match_on` policy_evals
}
REGIME_BUDGET_COUNTERS = {"attempts": "main_episodes", "fixed-steps": "total_env_steps"}  # `matched`: the totals
RENAMED_REGIMES = {"steps": "fixed-steps"}  # old name -> name: older sweep directories still read
# The matched regime matches in one or both currencies (a sweep's `match_on`), each its own table and directory:
MATCH_CURRENCIES = ("env_steps", "policy_evals")
MATCHED_REGIMES = {"env_steps": "matched", "policy_evals": "matched-policy-evals"}  # currency -> table regime
MATCHED_COUNTERS = {"matched": "total_env_steps", "matched-policy-evals": "total_policy_evals"}  # the total matched


def is_matched(regime: str) -> bool:
    """Whether `regime` is a matched regime's table (`matched`, `matched-policy-evals`)."""
    return regime in MATCHED_COUNTERS


def price_target(arm: str, price: float) -> str:
    """`"mc@0.25"`: the matched target of label arm `arm` with its label work charged at `price`
    (a sweep with `prices`; its view is `to-mc@0.25/`)."""
    return f"{arm}@{price:g}"


def table_regimes(regimes, match_on=None) -> list:
    """The regimes a sweep's tables and directories have: its `regimes`, with `matched` replaced by
    the matched regime of each currency in `match_on` (`MATCHED_REGIMES`; None: `env_steps` alone)."""
    out = []
    for regime in regimes:
        out += [MATCHED_REGIMES[c] for c in (match_on or ("env_steps",))] if regime == "matched" else [regime]
    return out


def regime_meaning(regime: str) -> str:
    """What `regime` means, in words (an old name says which regime it now is)."""
    if regime in RENAMED_REGIMES:
        return f"{REGIME_MEANINGS[RENAMED_REGIMES[regime]]} (the old name of {RENAMED_REGIMES[regime]})"
    return REGIME_MEANINGS.get(regime, regime)


def matched_cell(label_free_arm: str, label_arm: str) -> str:
    """The cell (under `matched/`) of `label_free_arm` given exactly `label_arm`'s total env steps."""
    return f"{label_free_arm}/to-{label_arm}"


def seed_measures(rows: list) -> dict:
    """One cell's per-seed numbers from its metrics rows (sorted by seed index).

    `final_success`: greedy success at the last evaluation; `average_success`: greedy success
    averaged over the evaluations after the start (all of them if there is only the start);
    `main_episodes`, `total_env_steps`, `total_policy_evals`: the ledger at the last evaluation.
    Float arrays `[N]`, plus `seeds` (the seed indices).
    """
    seeds = sorted({r["seed_index"] for r in rows})
    out = {"seeds": seeds, "final_success": [], "average_success": [], "main_episodes": [], "total_env_steps": [],
           "total_policy_evals": []}
    for seed in seeds:
        mine = sorted((r for r in rows if r["seed_index"] == seed), key=lambda r: r["eval_index"])
        trained = [r for r in mine if r["eval_index"] > 0] or mine
        out["final_success"].append(mine[-1]["success_greedy"])
        out["average_success"].append(float(np.mean([r["success_greedy"] for r in trained])))
        out["main_episodes"].append(mine[-1].get("main_episodes", 0))
        out["total_env_steps"].append(mine[-1].get("total_env_steps", 0))
        out["total_policy_evals"].append(mine[-1].get("total_policy_evals", 0))
    return {k: (v if k == "seeds" else np.asarray(v, np.float64)) for k, v in out.items()}


def reading_measures(rows: list, counter: str, budget: int) -> dict:
    """`seed_measures` of a run read at `budget`: its evaluations up to the first at which every
    seed's `counter` has reached `budget` (a run's evaluation at B is a run of budget B: the
    learning rate is constant and every draw a function of the seed and the iteration)."""
    reached = sorted({r["eval_index"] for r in rows
                      if all(q[counter] >= budget for q in rows if q["eval_index"] == r["eval_index"])})
    if not reached:
        raise ValueError(f"the run never reaches {budget:,} {counter}")
    return seed_measures([r for r in rows if r["eval_index"] <= reached[0]])


FAMILY_PREFIX = "success_greedy/"  # metrics rows of a run evaluated on several families: `<metric>/<family>`


def evaluation_families(rows: list) -> list:
    """The evaluation families of metrics `rows`, in order of first appearance (`[]` when the run
    was evaluated on one family: its keys carry no family)."""
    found: dict = {}
    for row in rows:
        for key in row:
            if key.startswith(FAMILY_PREFIX):
                found.setdefault(key[len(FAMILY_PREFIX):], None)
    return list(found)


def family_rows(rows: list, family: str) -> list:
    """Metrics `rows` with each metric of `family` (`<metric>/<family>`) in the place of its mean
    over families (`<metric>`): every measure built on `success_greedy` is then that family's."""
    suffix = f"/{family}"
    return [{**row, **{key[: -len(suffix)]: value for key, value in row.items() if key.endswith(suffix)}}
            for row in rows]


def before_file_operation(kind: str, path: str) -> None:
    """Called before every file operation on an output directory (`kind`: mkdir, write, rename,
    remove, checkpoint, lock, unlock). Does nothing; the crash-injection tests replace it."""


# ----- atomic files ------------------------------------------------------------------------------
def make_dirs(path: str) -> None:
    """`os.makedirs(path, exist_ok=True)`, as one file operation when something is created."""
    if not os.path.isdir(path):
        before_file_operation("mkdir", path)
        os.makedirs(path, exist_ok=True)


def remove_path(path: str) -> None:
    """Remove the file or directory tree `path` (nothing when absent)."""
    if not os.path.lexists(path):
        return
    before_file_operation("remove", path)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def write_text_atomic(path: str, text: str) -> None:
    """Write `text` to `path` through a temporary file (flushed to disk) and a rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    before_file_operation("write", tmp)
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    before_file_operation("rename", path)
    os.replace(tmp, path)


def is_leftover(name: str) -> bool:
    """Whether file `name` is the temporary file of an interrupted `write_text_atomic`."""
    stem, _, pid = name.rpartition(".tmp-")
    return bool(stem) and pid.isascii() and pid.isdigit()


def remove_leftovers(directory: str) -> None:
    """Remove the temporary files interrupted writers left in `directory` (call it under the lock)."""
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if is_leftover(name):
                remove_path(os.path.join(directory, name))


# ----- strict JSON -------------------------------------------------------------------------------
def _non_finite(x: Any) -> bool:
    return isinstance(x, (float, np.floating)) and not math.isfinite(float(x))


def _why_null(value: Any) -> str | None:
    """Why `strict_json` writes `value` (or entries of it) as null; None when it does not."""
    if _non_finite(value):
        return "not a number (undefined: nothing to measure)" if math.isnan(value) else f"{value} is not a JSON number"
    entries = value.ravel().tolist() if isinstance(value, np.ndarray) else value
    if isinstance(entries, (list, tuple)):
        bad = [i for i, x in enumerate(entries) if _non_finite(x)]
        if bad:
            return f"entries {bad[:10]}{'...' if len(bad) > 10 else ''} were not finite numbers"
    return None


def strict_json(obj: Any) -> Any:
    """A JSON-ready copy of `obj` without NaN or infinity.

    NumPy scalars and arrays become Python numbers and lists, tuples become lists. A non-finite
    number under key `k` becomes `None` and the dict gains `k + "_reason"` (unless it has one);
    a list holding non-finite numbers gets them as `None` and its key's reason lists where.
    """
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            out[key] = strict_json(value)
            reason = _why_null(value)
            if reason is not None and f"{key}_reason" not in obj:
                out[f"{key}_reason"] = reason
        return out
    if isinstance(obj, (list, tuple)):
        return [strict_json(x) for x in obj]
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(float(obj)) else None
    return obj


def dumps_strict(obj: Any, **kwargs) -> str:
    """`json.dumps(strict_json(obj))`, refusing anything that is still not strict JSON."""
    return json.dumps(strict_json(obj), allow_nan=False, **kwargs)


def write_json_atomic(path: str, obj: Any) -> None:
    """Write `obj` as strict JSON (indented, keys sorted) to `path`, atomically."""
    write_text_atomic(path, dumps_strict(obj, indent=2, sort_keys=True) + "\n")


def write_jsonl_atomic(path: str, rows: list[dict]) -> None:
    """Write `rows`, one strict JSON object per line, to `path`, atomically."""
    write_text_atomic(path, "".join(dumps_strict(row, sort_keys=True) + "\n" for row in rows))


class TornFile(ValueError):
    """A file that is torn (cut short by a crash) or is not the strict JSON it should hold."""


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _decode(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no {path}") from None
    except UnicodeDecodeError as error:
        raise TornFile(f"{path} is not UTF-8 text (byte {error.start})") from None


def read_json(path: str, *, expect: type | None = None) -> Any:
    """The strict JSON value in `path` (no NaN or infinity); with `expect` (e.g. `dict`), a value of
    that type. `FileNotFoundError` when it is missing, `TornFile` (a `ValueError`) naming the file
    when it is torn, empty, not UTF-8 or not strict JSON."""
    text = _decode(path)
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        raise TornFile(f"{path} is torn or not valid JSON ({error})") from None
    if expect is not None and not isinstance(value, expect):
        raise TornFile(f"{path} holds a JSON {type(value).__name__}, not a JSON {expect.__name__}")
    return value


def read_jsonl(path: str, *, final_newline: bool = True) -> list[dict]:
    """The rows of the JSON-lines file `path`, each a strict JSON object; `FileNotFoundError` when
    it is missing and `TornFile` (a `ValueError`) naming the file and line of a torn or invalid
    row. Every row this package writes ends in a newline, so a last line without one is torn
    (`final_newline=False` accepts it, for files other tools wrote)."""
    lines = _decode(path).split("\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, parse_constant=_refuse_constant)
        except ValueError:
            raise TornFile(f"{path} line {number} is torn or not valid JSON: {line[:80]!r}") from None
        if not isinstance(row, dict):
            raise TornFile(f"{path} line {number} is not a JSON object")
        if final_newline and number == len(lines):
            raise TornFile(f"{path} line {number} is torn (the file does not end with a newline)")
        rows.append(row)
    return rows


def is_finished(run_dir: str) -> bool:
    """Whether the run directory `run_dir` finished: its `summary.json` is a strict JSON object.
    False when there is none; `TornFile` naming it when it is torn (never counted as finished)."""
    path = os.path.join(run_dir, "summary.json")
    if not os.path.lexists(path):
        return False
    read_json(path, expect=dict)
    return True


def failed_runs(path: str) -> list[str]:
    """The run directories at or under `path` that a non-finite iteration stopped (they hold
    `FAILED_FILE`), sorted; checkpoints and policies are not searched."""
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in ("checkpoints", "policies"))
        if FAILED_FILE in files:
            found.append(root)
    return sorted(found)


def refuse_failed(path: str, what: str) -> None:
    """Raise `ValueError` in one line when `path` is, or holds, a failed run: `what` (e.g. `report`)
    names the command that refuses it, and the line the run's own message."""
    failed = failed_runs(path)
    if not failed:
        return
    try:
        message = read_json(os.path.join(failed[0], FAILED_FILE), expect=dict).get("message", "")
    except ValueError as error:
        message = str(error)
    where = failed[0] if len(failed) == 1 else f"{failed[0]} (and {len(failed) - 1} more)"
    raise ValueError(f"{what} refuses a failed run: {where} stopped at a non-finite iteration ({message})")


def check_strict_file(path: str) -> None:
    """Raise `TornFile` naming `path` (and line) unless it reads as strict JSON (`.json`) or JSON
    lines (`.jsonl`)."""
    if path.endswith(".jsonl"):
        read_jsonl(path)
    else:
        read_json(path)


# ----- output directories ------------------------------------------------------------------------
def check_writable_dir(path: str, option: str = "--out") -> str:
    """The absolute `path` after checking, without creating anything, that it is (or can be
    created as) a writable directory; raises `ValueError` naming `option` otherwise."""
    path = os.path.abspath(os.fspath(path))
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError(f"{option} {path} exists and is not a directory")
    parent = path
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ValueError(f"{option} {path} cannot be created: {parent} is not a directory")
    try:  # os.access trusts permission bits; a probe also catches read-only filesystems
        fd, probe = tempfile.mkstemp(prefix=".jaxcredit-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise ValueError(f"{option} {path} is not writable ({error.strerror} in {parent})") from None
    return path


def _process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks (Linux), to tell a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _alive(owner: dict) -> bool:
    """Whether the process a lock record names is running on this host (False for other hosts)."""
    if owner.get("host") != socket.gethostname() or not isinstance(owner.get("pid"), int):
        return False
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # it exists but belongs to someone else
    started = owner.get("process_start")
    return started is None or _process_start(owner["pid"]) in (None, started)


def lock_held(directory: str) -> bool:
    """Whether `directory`'s lock file names a process that is alive on this host: read only (the
    lock is neither taken nor tested), for reporting a run as running."""
    try:
        fd = os.open(os.path.join(directory, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return False
    try:
        owner = RunLock._read(fd)
    finally:
        os.close(fd)
    return bool(owner) and _alive(owner)


class RunLocked(ValueError):
    """Another process holds the directory's lock."""


class RunLock:
    """The exclusive lock of an output directory, held by one process while it writes there.

    `with RunLock(directory, "train"):` creates `directory` if needed and takes its lock, or
    raises `RunLocked` (a `ValueError`) naming the owner in one line. A lock whose owner died is
    stale: the kernel has released it and the next process takes it over. Not re-entrant: a
    second lock of the same directory, even in the same process, is refused.
    """

    def __init__(self, directory: str, command: str):
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, LOCK_NAME)
        self.command = command
        self._fd: int | None = None

    def _record(self) -> dict:
        pid = os.getpid()
        return {"pid": pid, "host": socket.gethostname(), "command": self.command,
                "started": datetime.datetime.now().isoformat(timespec="seconds"),
                "process_start": _process_start(pid)}

    @staticmethod
    def _read(fd: int) -> dict:
        try:
            owner = json.loads(os.pread(fd, 4096, 0).decode())
            return owner if isinstance(owner, dict) else {}
        except (OSError, ValueError):
            return {}

    def _refuse(self, owner: dict) -> RunLocked:
        who = (f"{owner.get('command', 'a jaxcredit command')} (pid {owner.get('pid', '?')} on "
               f"{owner.get('host', '?')}, since {owner.get('started', '?')})")
        return RunLocked(f"{self.directory} is in use by {who}; wait for it to finish, or remove {self.path} "
                         "if that process no longer runs")

    def acquire(self) -> RunLock:
        make_dirs(self.directory)
        before_file_operation("lock", self.path)
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = self._read(fd)
                os.close(fd)
                raise self._refuse(owner) from None
            except OSError:
                pass  # no flock on this filesystem: the record below is the only guard
            try:
                same_file = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same_file = False
            if not same_file:  # its owner released (and removed) it meanwhile: lock the new file
                os.close(fd)
                continue
            owner = self._read(fd)
            if owner and owner.get("pid") != os.getpid() and _alive(owner):
                os.close(fd)
                raise self._refuse(owner)
            record = json.dumps(self._record()).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
            os.fsync(fd)
            self._fd = fd
            return self
        raise RunLocked(f"{self.directory}: could not take {self.path} (it keeps changing)")

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            before_file_operation("unlock", self.path)
            try:
                if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                    os.unlink(self.path)  # while still locked, so no one locks the old file
            except FileNotFoundError:
                pass
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
