"""Reports' sections on the records an arm writes of its one-time work before training.

An arm with a `prepared_file` (`jaxcredit.CreditArm`; the predictor's `predictor.json`: its
dataset's size and cost and its held-out accuracy against exact values) writes that record as
data; this module renders it. A file with a **view** here (`PREPARED_VIEWS`, a title and a
Markdown renderer of the file's JSON; `register_prepared_view` adds one, e.g. from a plugin) gets
one section in `jaxcredit report` and on results pages, with one subsection per run that holds
it. An arm that is not registered where the report runs (a plugin not loaded) is left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from jaxcredit.analysis.predictor import predictor_accuracy_markdown
from jaxcredit.arm_registry import CREDIT_ARMS
from jaxcredit.predictor import PREDICTOR_FILE
from jaxcredit.rundir_io import read_json


class PreparedView(NamedTuple):
    """How reports show one kind of prepared record: the section's `title`, and `markdown(record)
    -> str`, the Markdown body of one run's record (its JSON, a dict)."""

    title: str
    markdown: Callable[[dict], str]


PREPARED_VIEWS: dict[str, PreparedView] = {  # by the arm's `prepared_file`
    PREDICTOR_FILE: PreparedView("Predictor label accuracy", predictor_accuracy_markdown),
}


def register_prepared_view(prepared_file: str, *, title: str, markdown: Callable[[dict], str]) -> PreparedView:
    """Show every run's `prepared_file` in reports under `title`, rendered by `markdown(record)`;
    raises `ValueError` for a file that already has a view or a renderer that is not a function."""
    if prepared_file in PREPARED_VIEWS:
        raise ValueError(f"prepared file {prepared_file!r} already has a view "
                         f"({PREPARED_VIEWS[prepared_file].title!r})")
    if not callable(markdown):
        raise ValueError(f"the view of {prepared_file!r}: markdown must be a function, got {markdown!r}")
    view = PREPARED_VIEWS[prepared_file] = PreparedView(title, markdown)
    return view


def prepared_sections(runs: dict, *, heading: str = "##") -> list[str]:
    """Markdown lines of a `<heading> <view's title>` section per arm for the runs (`{name:
    run_dir}`) that hold the arm's `prepared_file`, where that file has a view; nothing when none does."""
    by_arm: dict = {}
    for name, path in runs.items():
        config_path = os.path.join(path, "config.json")
        arm = CREDIT_ARMS.get(read_json(config_path).get("credit")) if os.path.exists(config_path) else None
        if arm is None or arm.prepared_file not in PREPARED_VIEWS:
            continue
        if os.path.exists(os.path.join(path, arm.prepared_file)):
            by_arm.setdefault(arm.name, []).append((name, path))
    lines = []
    for arm_name, found in by_arm.items():
        prepared_file = CREDIT_ARMS[arm_name].prepared_file
        view = PREPARED_VIEWS[prepared_file]
        lines += [f"{heading} {view.title}", ""]
        for name, path in found:
            lines += [f"{heading}# {name}", "", view.markdown(read_json(os.path.join(path, prepared_file)))]
    return lines
