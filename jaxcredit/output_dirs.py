"""What kind each output directory is, and directories published whole or not at all.

Every directory a command writes has a kind, recorded first in a marker file `.jaxcredit-kind`
(`{"kind": "sweep", "version": 1}`): `run`, `sweep`, `audit`, `transcripts`, `transcript-audit`
or `page`. A directory without a marker is recognised by what it holds (`infer_kind`). A command
writes only into a new (or empty) directory or one of its own kind: `check_kind` refuses anything
else in one line, before anything is written. `publish_directory(staged, target)` puts a
directory built completely in `staging_dir` in place of `target` with one atomic exchange, then
renames the files that go with it; `recover_published(target)` finishes or undoes an interrupted
publication from its journal. `with published(target, kind, command) as staged:` does it all:
lock, recover, build, publish; on an error nothing of it remains. See docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
from collections.abc import Iterator

from jaxcredit import rundir_io
from jaxcredit.rundir_io import (
    LOCK_NAME,
    RunLock,
    TornFile,
    is_leftover,
    make_dirs,
    read_json,
    remove_path,
    write_json_atomic,
)

KIND_NAME = ".jaxcredit-kind"
KIND_VERSION = 1
KINDS = ("run", "sweep", "audit", "transcripts", "transcript-audit", "page", "suite")
JOURNAL = "publish.json"
_RENAME_EXCHANGE = 2


def infer_kind(path: str) -> str | None:
    """The kind of the directory `path` from its marker, else from its contents; `None` when it
    is absent or holds nothing (a lock, leftovers), `"other"` when it holds something else."""
    if not os.path.isdir(path):
        return None
    marker = os.path.join(path, KIND_NAME)
    if os.path.lexists(marker):
        found = read_json(marker, expect=dict).get("kind")
        if found not in KINDS:
            raise TornFile(f"{marker} names an unknown kind {found!r}; kinds: {', '.join(KINDS)}")
        return found
    names = [n for n in os.listdir(path) if n != LOCK_NAME and not is_leftover(n)
             and not n.startswith(".jaxcredit-probe-")]
    has = set(names).__contains__
    if not names:
        return None
    if os.path.isfile(os.path.join(path, "record", "page.json")) or {"sweep_spec.json", "summary.json",
                                                                     "card.json"} <= set(names):
        return "page"  # a page's folder copies the spec beside its summary; a sweep has no summary.json
    for name, kind in (("sweep_spec.json", "sweep"), ("config.json", "run"), ("matched.json", "run"),
                       ("schedule.json", "run"), ("turns.jsonl", "transcript-audit"),
                       ("credit_labels.jsonl", "transcript-audit"), ("audit.json", "audit"),
                       ("transcripts.jsonl", "transcripts")):
        if has(name):
            return kind
    return "other"


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def check_kind(path: str, kind: str | tuple, command: str) -> str | None:
    """Refuse (`ValueError`, one line) to let `command` write into `path` unless it is new, empty
    or of `kind` (one kind or a tuple of kinds); returns the kind found."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    found = infer_kind(path)
    if found is not None and found not in kinds:
        what = "files of no jaxcredit kind" if found == "other" else f"{_a(found)} directory"
        raise ValueError(f"{command} writes only into a new directory or {' or '.join(map(_a, kinds))} directory; "
                         f"{path} holds {what}: nothing written")
    return found


def write_kind(path: str, kind: str) -> None:
    """Record `kind` in `path`'s marker (first, before the directory's other files)."""
    assert kind in KINDS, kind
    marker = os.path.join(path, KIND_NAME)
    if os.path.lexists(marker) and read_json(marker, expect=dict).get("kind") == kind:
        return
    make_dirs(path)
    write_json_atomic(marker, {"kind": kind, "version": KIND_VERSION})


# ----- publishing a directory whole ------------------------------------------------------------------
def staging_dir(target: str) -> str:
    """A fresh directory beside `target` to build into: the new `target` is built as
    `<staging>/<name of target>` and the files going with it beside that."""
    staging = f"{os.path.abspath(target)}.tmp-{os.getpid()}"
    remove_path(staging)
    make_dirs(staging)
    return staging


def _exchange(a: str, b: str) -> bool:
    """Atomically swap the paths `a` and `b`; False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd = -100
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(code, f"cannot exchange {a} and {b}: {os.strerror(code)}")


def publish_directory(staging: str, target: str, *, with_files: tuple = ()) -> None:
    """Put `<staging>/<basename(target)>` (complete) in place of `target`, then rename each
    `(name, destination)` of `with_files` from `staging` to its destination, then remove
    `staging` (holding the old directory). The caller holds the lock that excludes other writers."""
    target = os.path.abspath(target)
    new = os.path.join(staging, os.path.basename(target))
    make_dirs(target)  # a new target: an empty one to exchange with
    journal = os.path.join(staging, JOURNAL)
    write_json_atomic(journal, {"new_inode": os.stat(new).st_ino, "target": target,
                                "with_files": [[name, dest] for name, dest in with_files]})
    rundir_io.before_file_operation("rename", target)
    if not _exchange(new, target):
        os.rename(target, os.path.join(staging, ".old"))
        rundir_io.before_file_operation("rename", target)
        os.rename(new, target)
    _finish(staging)


def _finish(staging: str) -> None:
    journal = read_json(os.path.join(staging, JOURNAL), expect=dict)
    for name, dest in journal["with_files"]:
        if os.path.lexists(os.path.join(staging, name)):
            rundir_io.before_file_operation("rename", dest)
            try:
                os.replace(os.path.join(staging, name), dest)
            except FileNotFoundError:  # another writer finished this publication meanwhile
                pass
    remove_path(staging)


def _restore_moved_away(target: str) -> None:
    """Where the filesystem has no exchange: a crash between the two renames left no `target`
    and the old directory in a staging directory's `.old`; put it back."""
    if os.path.lexists(target):
        return
    for staging in sorted(glob.glob(glob.escape(target) + ".tmp-*")):
        old = os.path.join(staging, ".old")
        if is_leftover(os.path.basename(staging)) and os.path.isdir(old):
            rundir_io.before_file_operation("rename", target)
            os.rename(old, target)
            return


def recover_published(target: str) -> None:
    """Finish or undo the interrupted publications of `target` (call it under the lock, before
    writing): a publication whose exchange happened is completed, any other is removed, leaving
    the old directory."""
    target = os.path.abspath(target)
    _restore_moved_away(target)
    for staging in sorted(glob.glob(glob.escape(target) + ".tmp-*")):
        if not is_leftover(os.path.basename(staging)) or not os.path.isdir(staging):
            continue
        old = os.path.join(staging, ".old")
        if os.path.isdir(old) and not os.path.lexists(target):  # between the two renames
            rundir_io.before_file_operation("rename", target)
            os.rename(old, target)
        try:
            journal = read_json(os.path.join(staging, JOURNAL), expect=dict)
        except (OSError, ValueError):
            journal = None
        if journal is not None and os.path.isdir(target) and os.stat(target).st_ino == journal.get("new_inode"):
            _finish(staging)
        else:
            remove_path(staging)


@contextlib.contextmanager
def published(target: str, kind: str, command: str, *, with_files: tuple = ()) -> Iterator[str]:
    """Build the new `target` (of `kind`) in the yielded staging directory, then publish it with
    `with_files` (`(name in the staging directory's parent, destination)`; see `publish_directory`),
    under `target`'s lock. On an error the staging directory is removed, and `target` too when
    this call created it (with the folders above it that it created), so the target is left as
    it was."""
    target = os.path.abspath(target)
    _restore_moved_away(target)  # before the lock, which would create an empty target
    created = []  # the directories this call creates for the lock: removed again on an error
    missing = target
    while not os.path.lexists(missing):
        created.append(missing)
        missing = os.path.dirname(missing)
    try:
        with RunLock(target, command):
            recover_published(target)
            staging = staging_dir(target)
            try:
                staged = os.path.join(staging, os.path.basename(target))
                write_kind(staged, kind)
                yield staged
                publish_directory(staging, target, with_files=with_files)
            except BaseException:
                remove_path(staging)
                raise
    except BaseException:
        for directory in created:
            if os.path.isdir(directory) and not os.listdir(directory):
                rundir_io.before_file_operation("remove", directory)
                os.rmdir(directory)
        raise
