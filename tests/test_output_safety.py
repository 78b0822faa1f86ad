"""Nothing mixed, nothing overwritten, nothing silently wrong: what `report`, `report --page`,
`compare` and `audit transcripts` read and where they may write.

A table of bad inputs and misplaced outputs: each exits 2 with one line on stderr, and the
directories involved keep their bytes. Where the input is valid the result is checked (auditing
two `agent play` files concatenated equals auditing each, row for row). A crash before any file
operation of the page writer and of the transcript-audit writer leaves the old state or the
complete new one. No training: the committed tiny sweep (`tests/data/tiny-sweep`) and transcripts
of the uniform agent on a tiny arithmetic environment.
"""

import copy
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from jaxcredit import output_dirs, rundir_io
from jaxcredit.analysis import lm_report, plots, write_results_page
from jaxcredit.analysis.lm_audit import audit_transcripts
from jaxcredit.analysis.lm_report import audit_transcript_file
from jaxcredit.cli import main
from jaxcredit.envs.transcripts import read_transcripts
from jaxcredit.output_dirs import KIND_NAME, check_kind, infer_kind, recover_published
from jaxcredit.rundir_io import LOCK_NAME, TornFile, is_finished, read_json, read_jsonl

DATA = Path(__file__).parent / "data"
PAGE = "tiny-sweep-page/tiny-sweep.md"


def tree(path) -> dict:
    """`{relative path: sha256}` of every file under `path` (a file: itself), without lock files;
    `{}` when absent or an empty directory (what a failed first write may leave)."""
    path = Path(path)
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(path.rglob("*")) if f.is_file() and f.name != LOCK_NAME}


def _play(out, seed, problems=2):
    assert main(["agent", "play", "--agent", "uniform", "--env", "arithmetic", "--turns", "4", "--problems",
                 str(problems), "--seed", str(seed), "--out", str(out), "--no-progress"]) == 0
    return out / "transcripts.jsonl"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A copy of the tiny sweep and its page, two `agent play` runs and their transcript audits."""
    root = tmp_path_factory.mktemp("safety")
    shutil.copytree(DATA / "tiny-sweep", root / "tiny-sweep")
    shutil.copytree(DATA / "tiny-sweep-page", root / "tiny-sweep-page")
    first, second = _play(root / "play-a", 0), _play(root / "play-b", 1)
    both = root / "both.jsonl"
    both.write_text(first.read_text() + second.read_text())
    for name, source in (("audit-a", first), ("audit-b", second), ("audit-both", both)):
        assert main(["audit", "transcripts", str(source), "--out", str(root / name), "--no-progress"]) == 0
    return root


def _edit_jsonl(source, target, edit):
    rows = [json.loads(line) for line in Path(source).read_text().splitlines()]
    edit(rows)
    Path(target).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _surrogate(rows):
    rows[0]["turns"][0]["reply"] = "\ud800 COMBINE"


def _duplicate(rows):
    rows[1]["id"] = rows[0]["id"]


def _retarget(rows):
    rows[0]["problem"]["target"] += 1  # the prompts still show the old target


def _torn_summary(root):
    path = root / "tiny-sweep/attempts/mc/summary.json"
    path.write_bytes(path.read_bytes()[:40])


def _nan_summary(root):
    (root / "tiny-sweep/attempts/mc/summary.json").write_text('{"mean": NaN}\n')


def _torn_metrics(root):
    path = root / "tiny-sweep/attempts/outcome/metrics.jsonl"
    path.write_bytes(path.read_bytes()[:-30])


def _run_as_page_folder(root):
    shutil.copytree(root / "tiny-sweep/attempts/mc", root / "pages/mc")


def _sweep_inside_page_folder(root):
    shutil.copytree(root / "tiny-sweep", root / "outer/inner")


def _transcript_file(edit):
    def prepare(root):
        _edit_jsonl(root / "play-a/transcripts.jsonl", root / "edited.jsonl", edit)
    return prepare


# (argv, prepare, message in the one line, directories whose bytes must not change)
CASES = {
    "torn summary: report": (["report", "W/tiny-sweep"], _torn_summary, "summary.json is torn",
                             ["tiny-sweep"]),
    "torn summary: page": (["report", "W/tiny-sweep", "--page", "W/pages/p.md"], _torn_summary,
                           "summary.json is torn", ["tiny-sweep", "pages"]),
    "torn summary: compare": (["compare", "W/tiny-sweep", "--arm", "mc"], _torn_summary, "summary.json is torn",
                              ["tiny-sweep"]),
    "NaN in summary: page": (["report", "W/tiny-sweep", "--page", "W/pages/p.md"], _nan_summary,
                             "NaN is not a JSON number", ["tiny-sweep", "pages"]),
    "torn metrics row: report": (["report", "W/tiny-sweep"], _torn_metrics, "metrics.jsonl line",
                                 ["tiny-sweep"]),
    "page folder is a run": (["report", "W/tiny-sweep", "--page", "W/pages/mc.md"], _run_as_page_folder,
                             "holds a run directory", ["pages", "tiny-sweep"]),
    "page folder is the sweep": (["report", "W/tiny-sweep", "--page", "W/tiny-sweep.md"], None,
                                 "is the sweep directory", ["tiny-sweep"]),
    "page folder holds the sweep": (["report", "W/outer/inner", "--page", "W/outer.md"], _sweep_inside_page_folder,
                                    "inside it or around it", ["outer"]),
    "page folder is a transcript audit": (["report", "W/tiny-sweep", "--page", "W/audit-a.md"], None,
                                          "holds a transcript-audit directory", ["audit-a"]),
    "report of a page folder": (["report", "W/tiny-sweep-page/tiny-sweep"], None, "is a page directory",
                                ["tiny-sweep-page"]),
    "report of a transcript audit": (["report", "W/audit-a"], None, "is a transcript-audit directory",
                                     ["audit-a"]),
    "audit transcripts into a run": (["audit", "transcripts", "W/play-a/transcripts.jsonl", "--out",
                                      "W/tiny-sweep/attempts/mc"], None, "holds a run directory", ["tiny-sweep"]),
    "audit transcripts into a sweep": (["audit", "transcripts", "W/play-a/transcripts.jsonl", "--out",
                                        "W/tiny-sweep"], None, "holds a sweep directory", ["tiny-sweep"]),
    "lone surrogate": (["audit", "transcripts", "W/edited.jsonl", "--out", "W/audit-a"], _transcript_file(_surrogate),
                       "line 1 turn 0: not valid Unicode text (a lone surrogate", ["audit-a"]),
    "duplicate ids": (["audit", "transcripts", "W/edited.jsonl", "--out", "W/audit-a"], _transcript_file(_duplicate),
                      "is also the id of line 1; ids must be unique", ["audit-a"]),
    "prompt of another problem": (["audit", "transcripts", "W/edited.jsonl", "--out", "W/audit-a"],
                                  _transcript_file(_retarget), "turn 0: its stored prompt is not the prompt",
                                  ["audit-a"]),
    "agent play into a sweep": (["agent", "play", "--agent", "uniform", "--problems", "1", "--out", "W/tiny-sweep",
                                 "--no-progress"], None, "holds a sweep directory", ["tiny-sweep"]),
    "train into a sweep": (["train", "--env", "mad", "--out", "W/tiny-sweep", "--no-progress", "--set",
                            'env_overrides={"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, '
                            '"max_turns": 5}', "--set", "d_model=32", "--set", "num_layers=1", "--set", "num_heads=2",
                            "--set", "mlp_dim=64", "--set", "budget=64", "--set", "num_seeds=1", "--set",
                            "holdout_fraction=0.0", "--set", "eval_problems=64"], None,
                           "train writes only into a new directory or a run directory; ", ["tiny-sweep"]),
    "sweep into a run": (["sweep", "--preset", "quick", "--out", "W/tiny-sweep/attempts/mc", "--no-progress"], None,
                         "holds a run directory: nothing written", ["tiny-sweep"]),
    "timeout 0": (["agent", "play", "--agent", "http", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                   "--timeout", "0", "--out", "W/new"], None, "--timeout: must be a number of seconds > 0", []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_in_one_line_and_nothing_changes(case, work, tmp_path, capsys):
    argv, prepare, message, watched = CASES[case]
    root = tmp_path / "w"
    shutil.copytree(work, root)
    if prepare is not None:
        prepare(root)
    before = {name: tree(root / name) for name in watched}
    names = set(os.listdir(root))
    capsys.readouterr()
    try:
        code = main([a.replace("W/", f"{root}/") for a in argv])
    except SystemExit as parser_exit:  # argparse's refusals
        code = parser_exit.code
    assert code == 2, case
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert "Traceback" not in err
    assert {name: tree(root / name) for name in watched} == before, case
    assert set(os.listdir(root)) == names, "nothing new beside the target"  # no staging, no new page or folder


def test_strict_reader_names_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"a": 1}\n{"a": 2')
    with pytest.raises(TornFile, match=r"m.jsonl line 2 is torn"):
        read_jsonl(str(path))
    path.write_text('{"a": 1}\n{"a": 2}')  # valid JSON, but every row this package writes ends in a newline
    with pytest.raises(TornFile, match=r"line 2 is torn \(the file does not end with a newline\)"):
        read_jsonl(str(path))
    assert read_jsonl(str(path), final_newline=False) == [{"a": 1}, {"a": 2}]
    path.write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(TornFile, match="is not UTF-8 text"):
        read_jsonl(str(path))
    (tmp_path / "summary.json").write_text("[1, 2]\n")
    with pytest.raises(TornFile, match="holds a JSON list, not a JSON dict"):
        is_finished(str(tmp_path))
    os.remove(tmp_path / "summary.json")
    assert is_finished(str(tmp_path)) is False
    with pytest.raises(TornFile, match="Infinity is not a JSON number"):
        (tmp_path / "x.json").write_text('{"a": Infinity}')
        read_json(str(tmp_path / "x.json"))


def test_kinds_of_old_and_new_directories(work, tmp_path):
    assert infer_kind(str(DATA / "tiny-sweep")) == "sweep"
    assert infer_kind(str(DATA / "tiny-sweep/attempts/mc")) == "run"
    assert infer_kind(str(DATA / "tiny-sweep/audits/attempts-mc")) == "audit"
    assert infer_kind(str(DATA / "tiny-sweep-page/tiny-sweep")) == "page"  # a committed page without a marker
    for name, kind in (("play-a", "transcripts"), ("audit-a", "transcript-audit")):
        assert json.loads((work / name / KIND_NAME).read_text()) == {"kind": kind, "version": 1}
    assert infer_kind(str(tmp_path / "absent")) is None and infer_kind(str(tmp_path)) is None
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds files of no jaxcredit kind: nothing written"):
        check_kind(str(tmp_path), "sweep", "sweep")
    (tmp_path / "notes.txt").unlink()
    for docs_page in (Path(__file__).parents[1] / "docs/results").glob("*/"):
        if docs_page.is_dir():
            assert infer_kind(str(docs_page)) == "page", docs_page  # published pages, with or without a record


def _label_rows(path):
    return [{k: v for k, v in row.items() if k != "transcript"} for row in read_jsonl(str(path))]


def test_concatenated_transcripts_audit_as_their_parts(work):
    """Ids `<run id>-p<k>` are unique across runs, so two files concatenated audit to the two
    audits, row for row (the labels and each transcript's entry)."""
    ids = [json.loads(line)["id"] for line in (work / "both.jsonl").read_text().splitlines()]
    assert len(ids) == 4 and len(set(ids)) == 4 and ids[0].endswith("-p0") and ids[2].endswith("-p0")
    both = _label_rows(work / "audit-both/credit_labels.jsonl")
    assert both == _label_rows(work / "audit-a/credit_labels.jsonl") + _label_rows(work / "audit-b/credit_labels.jsonl")
    entries = [read_json(str(work / name / "audit.json"))["transcripts"]
               for name in ("audit-a", "audit-b", "audit-both")]
    assert entries[2] == entries[0] + entries[1]
    assert len(both) > 4


# ----- crash injection: a crash before any file operation leaves the old or the new state ---------
class InjectedCrash(BaseException):
    """Raised by the crash hook: a BaseException, like a kill, so no `except Exception` absorbs it."""


class Crasher:
    """The crash hook that raises at operation `at` and at every one after it (a dead process does
    nothing more); `at=None` counts the operations."""

    def __init__(self, at=None):
        self.at, self.count = at, 0

    def __call__(self, kind, path):
        if self.at is not None and self.count >= self.at:
            raise InjectedCrash(f"before {kind} {path}")
        self.count += 1


def _crash_every_operation(monkeypatch, setup, write, state, recover, *, whole_before_recovery=True):
    """`setup()` makes the old state, `write()` the new; returns the number of operations after
    checking that a crash before each one leaves (after `recover()`, which the next writer runs
    first) the old state or the new, and (`whole_before_recovery`) that without recovery each
    object is old or new."""
    setup()
    old = state()
    counter = Crasher()
    monkeypatch.setattr(rundir_io, "before_file_operation", counter)
    write()
    monkeypatch.undo()
    new = state()
    assert new != old
    for at in range(counter.count):
        setup()
        monkeypatch.setattr(rundir_io, "before_file_operation", Crasher(at))
        with pytest.raises(InjectedCrash):
            write()
        monkeypatch.undo()
        left = state()
        for part in set(left) - {"staging"} if whole_before_recovery else ():
            assert left[part] in (old[part], new[part]), (at, part)  # each object whole, before recovery
        recover()
        assert state() in (old, new), at
    return counter.count


@pytest.fixture
def plots_rendered_once():
    """The crash tests write the same outputs tens of times: each PNG is drawn by matplotlib at its
    first write and its bytes are written again at the same path after (the same file operations,
    a tenth of the time; what the plots show is tested in `test_analysis.py`)."""
    rendered, draw = {}, plots.save_figure

    def save_figure(figure, path, *, dpi=100):
        key = (os.path.abspath(path), dpi)
        if key not in rendered:
            draw(figure, path, dpi=dpi)
            rendered[key] = Path(path).read_bytes()
            return path
        plots.plt.close(figure)
        os.makedirs(os.path.dirname(key[0]), exist_ok=True)
        Path(path).write_bytes(rendered[key])
        return path

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "save_figure", save_figure)
        patch.setattr(lm_report, "save_figure", save_figure)
        yield rendered


def _reset(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


def test_crash_at_every_operation_of_the_page_writer(tmp_path, monkeypatch, plots_rendered_once):
    sweep = tmp_path / "tiny-sweep"
    shutil.copytree(DATA / "tiny-sweep", sweep)
    pages = tmp_path / "tiny-sweep-page"
    page, folder = pages / "tiny-sweep.md", pages / "tiny-sweep"

    def state():
        staged = [n for n in os.listdir(pages) if ".tmp-" in n]
        return {"page": tree(page), "folder": tree(folder), "staging": staged and "left"}

    def write():
        write_results_page(str(sweep), str(page), threshold=0.5)

    count = _crash_every_operation(monkeypatch, lambda: _reset(DATA / "tiny-sweep-page", pages), write, state,
                                   lambda: recover_published(str(folder)))
    assert count == 62  # the record's copies, the plots' folder, the JSON files, the exchange, the page
    assert plots_rendered_once  # the page's plots went through the memo


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two renames"])
def test_crash_at_every_operation_of_the_transcript_audit_writer(exchange, work, tmp_path, monkeypatch,
                                                                 plots_rendered_once):
    """With the atomic exchange each object is whole at every instant; where a filesystem has
    none, the two renames leave a moment without the target, which the next writer restores."""
    out = tmp_path / "audit"

    def state():
        staged = [n for n in os.listdir(tmp_path) if ".tmp-" in n]
        return {"audit": tree(out), "staging": staged and "left"}

    source = str(work / "play-b/transcripts.jsonl")
    labelled = audit_transcripts(read_transcripts(source))  # the labels once: the writer is under test

    def write():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lm_report, "audit_transcripts", lambda *args, **kwargs: copy.deepcopy(labelled))
            if not exchange:
                patch.setattr(output_dirs, "_exchange", lambda a, b: False)
            audit_transcript_file(source, str(out))

    count = _crash_every_operation(monkeypatch, lambda: _reset(work / "audit-a", out), write, state,
                                   lambda: recover_published(str(out)), whole_before_recovery=exchange)
    assert count == 23 + (not exchange)  # lock, staging, marker, 5 JSON files, card, report, journal, exchange


def test_an_error_mid_write_leaves_the_page_as_it_was(tmp_path, monkeypatch, capsys):
    """A failing write (a full disk, a read-only file) ends in one line naming the file; the page,
    its folder and the directory around them are as they were."""
    shutil.copytree(DATA / "tiny-sweep-page", tmp_path / "pages")
    before = tree(tmp_path)

    def refuse(kind, path):
        if kind == "write" and path.endswith("summary.json.tmp-" + str(os.getpid())) and "record" not in path:
            raise PermissionError(errno.EPERM, "Operation not permitted", path)

    monkeypatch.setattr(rundir_io, "before_file_operation", refuse)
    assert main(["report", str(DATA / "tiny-sweep"), "--page", str(tmp_path / "pages/tiny-sweep.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "summary.json" in err and err.endswith(": Operation not permitted"), err
    assert "Errno" not in err
    assert tree(tmp_path) == before
