"""Reports' sections on the records an arm writes of its one-time work before training.

An arm with `prepared_file` and `prepared_markdown` (`jaxcredit.CreditArm`; the predictor's
`predictor.json`: its dataset's size and cost and its held-out accuracy against exact values)
gets one section in `jaxcredit report` and on results pages, with one subsection per run that
holds the file. An arm that is not registered where the report runs (a plugin not loaded) is
left out.
"""

from __future__ import annotations

import os

from jaxcredit.arm_registry import CREDIT_ARMS
from jaxcredit.rundir_io import read_json


def prepared_sections(runs: dict, *, heading: str = "##") -> list[str]:
    """Markdown lines of a `<heading> <arm's prepared_title>` section per arm for the runs
    (`{name: run_dir}`) that hold the arm's `prepared_file`; nothing when none does."""
    by_arm: dict = {}
    for name, path in runs.items():
        config_path = os.path.join(path, "config.json")
        arm = CREDIT_ARMS.get(read_json(config_path).get("credit")) if os.path.exists(config_path) else None
        if arm is None or arm.prepared_file is None or arm.prepared_markdown is None:
            continue
        if os.path.exists(os.path.join(path, arm.prepared_file)):
            by_arm.setdefault(arm.name, []).append((name, path))
    lines = []
    for arm_name, found in by_arm.items():
        arm = CREDIT_ARMS[arm_name]
        lines += [f"{heading} {arm.prepared_title or arm.name}", ""]
        for name, path in found:
            lines += [f"{heading}# {name}", "", arm.prepared_markdown(read_json(os.path.join(path, arm.prepared_file)))]
    return lines
