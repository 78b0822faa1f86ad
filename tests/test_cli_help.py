"""Every `jaxcredit` command's `--help` text, top level and nested (`bench`, `agent play`, ...), is
the one recorded in `tests/data/cli_help.json`: commands, options and help texts do not change by
accident. The commands are discovered by walking the argparse structure, and their list must equal
the recorded one. argparse wraps help to the terminal width, so both sides use COLUMNS=80.

After an intended change, record again with
`JAXCREDIT_RECORD_CLI_HELP=1 python -m pytest -q -p no:xdist tests/test_cli_help.py`."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from jaxcredit.cli import build_parser, main

GOLDEN = Path(__file__).resolve().parent / "data" / "cli_help.json"
COLUMNS = "80"


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """`()` and every subcommand's words, depth first in the parser's own order."""
    paths = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                paths += _command_paths(subparser, (*path, name))
    return paths


def _help_text(words: tuple[str, ...], monkeypatch) -> tuple[int, str]:
    """`(exit code, stdout)` of `jaxcredit WORDS --help`, wrapped at COLUMNS=80."""
    monkeypatch.setenv("COLUMNS", COLUMNS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    return done.value.code, out.getvalue()


def _key(words: tuple[str, ...]) -> str:
    return " ".join(("jaxcredit", *words))


@pytest.fixture(scope="module")
def golden() -> dict[str, str]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_record_when_asked(monkeypatch):
    if not os.environ.get("JAXCREDIT_RECORD_CLI_HELP"):
        pytest.skip("set JAXCREDIT_RECORD_CLI_HELP=1 to record tests/data/cli_help.json")
    texts = {}
    for words in _command_paths(build_parser()):
        code, text = _help_text(words, monkeypatch)
        assert code == 0, words
        texts[_key(words)] = text
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(texts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_the_commands_are_the_recorded_ones(golden):
    found = [_key(words) for words in _command_paths(build_parser())]
    assert found == list(golden)
    assert len(found) > 15 and "jaxcredit agent play" in found and "jaxcredit bench" in found


@pytest.mark.parametrize("words", _command_paths(build_parser()), ids=_key)
def test_help_text_is_the_recorded_one(words, golden, monkeypatch):
    code, text = _help_text(words, monkeypatch)
    assert code == 0
    assert text == golden[_key(words)]


def test_audit_transcripts_help_is_the_audit_help(golden, monkeypatch):
    """`audit transcripts` is a positional choice of `audit`, not a subparser: its help is audit's."""
    code, text = _help_text(("audit", "transcripts"), monkeypatch)
    assert code == 0 and text == golden["jaxcredit audit"]
    assert "transcripts: audit FILE" in text


def test_help_is_wrapped_at_the_fixed_width(golden):
    """The recorded texts were wrapped at 80 columns (argparse wraps at COLUMNS - 2), so a golden file
    recorded in a wider terminal would show here (a line of choices, `{a,b,...}`, cannot be broken)."""
    widths = [len(line) for text in golden.values() for line in text.splitlines() if "{" not in line]
    assert max(widths) <= int(COLUMNS)
