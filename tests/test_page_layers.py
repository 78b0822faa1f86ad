"""Results pages in three layers, checked on the source: the measures (`analysis/page_measures.py`)
and the Markdown (`analysis/page_render.py`) touch no file; `analysis/page.py` does all the reading
and writing, and re-exports the names callers import from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_LAYERS = ("analysis/page_measures.py", "analysis/page_render.py")
# modules whose import alone says a file is read, written or listed
IO_MODULES = {"os", "os.path", "glob", "shutil", "pathlib", "io", "json", "tempfile", "subprocess", "pickle"}
# functions that read, write, list or draw files, here and in jaxcredit (called or imported by name)
IO_NAMES = {"open", "exists", "isfile", "isdir", "listdir", "walk", "glob", "makedirs", "mkdir", "remove",
            "rename", "replace_file", "copyfile", "copytree", "rmtree", "load", "dump", "savefig",
            "read_text", "write_text", "read_bytes", "write_bytes", "make_dirs", "is_finished", "kind_of",
            "sweep_cells", "compare_sweep", "cards_for_sweep", "prepared_sections", "curve_plots",
            "plot_learning_curves", "published", "check_kind", "check_strict_file", "check_writable_dir",
            "before_file_operation", "reading_block", "copy_record"}
IO_PREFIXES = ("read_", "write_", "_write", "save_", "load_", "plot_")


def _io_name(name: str) -> bool:
    return name in IO_NAMES or name.startswith(IO_PREFIXES)


def file_io_sites(source: str) -> list[str]:
    """`"line: what"` for every import of a file-handling module, every name imported that reads or
    writes files, and every call of such a function (by its name or attribute) in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in IO_MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.module in IO_MODULES:
                found.append(f"{node.lineno}: from {node.module} import")
            found += [f"{node.lineno}: imports {a.name}" for a in node.names if _io_name(a.name)]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if _io_name(name):
                found.append(f"{node.lineno}: calls {name}")
    return found


@pytest.mark.parametrize("path", PURE_LAYERS)
def test_measures_and_rendering_do_no_file_io(path):
    sites = file_io_sites((ROOT / path).read_text())
    assert not sites, f"{path} reads or writes files (only analysis/page.py may): {sites}"


def test_the_check_finds_file_io():
    source = ("import os\nfrom pathlib import Path\nfrom jaxcredit.rundir_io import read_jsonl\n"
              "def f(p):\n    with open(p) as f:\n        pass\n    return os.path.exists(p), Path(p).read_text(), "
              "json.load(p), g.savefig(p), read_json(p)\n"
              "def pure(rows):\n    return sorted(rows, key=len)\n")
    assert file_io_sites(source) == ["1: import os", "2: from pathlib import", "3: imports read_jsonl",
                                     "5: calls open", "7: calls exists", "7: calls read_text", "7: calls load",
                                     "7: calls savefig", "7: calls read_json"]


def test_the_pure_layers_do_not_import_the_publishing_one():
    for path in PURE_LAYERS:
        tree = ast.parse((ROOT / path).read_text())
        modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "jaxcredit.analysis.page" not in modules, path


def test_page_keeps_the_names_callers_import():
    from jaxcredit.analysis import page, page_measures, page_render

    for name in ("write_results_page", "copy_record", "reading_block", "sweep_timing", "results_page"):
        assert callable(getattr(page, name)), name
    for name in ("first_reach", "threshold_comparisons", "cell_behaviour", "cell_spend", "behaviour_comparisons"):
        assert getattr(page, name) is getattr(page_measures, name), name
    for name in ("duration_text", "tuning_lines", "READING_PLACEHOLDER", "_header_rows", "_cells_by_machine",
                 "_program_text"):
        assert getattr(page, name) is getattr(page_render, name), name
    assert page._accounts is page_measures.ledger_accounts
