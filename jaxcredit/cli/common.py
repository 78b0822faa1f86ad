"""What every command module shares: the one-line errors, the argparse types, the JSON printer."""

from __future__ import annotations

import argparse
import sys

from jaxcredit.rundir_io import dumps_strict
from jaxcredit.validation import INT32_MAX, parse_int

LOG_HELP = ("log metrics.jsonl's scalars per seed to a tracker (repeatable): tensorboard event files or a "
            "local MLflow SQLite store in the run directory; needs jaxcredit[tracking]")
PLUGIN_HELP = ("import a Python file or module that registers credit arms (jaxcredit.register_credit_arm) "
               "before the config is read (repeatable)")


class CommandError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (`jaxcredit: error: ...`, exit code 2), like ours."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]
        self.exit(2, f"jaxcredit: error: {command + ': ' if command else ''}{' '.join(message.split())}\n")


def integer(low: int | None = 0, high: int | None = INT32_MAX):
    """An argparse type: an integer in ASCII digits within `[low, high]` (`validation.parse_int`)."""
    def parse(text: str) -> int:
        try:
            return parse_int("the value", text, low, high)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).replace("the value ", "")) from None

    return parse


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def print_json(obj) -> None:
    """One strict JSON object on stdout (NaN and infinity become null with a reason)."""
    sys.stdout.write(dumps_strict(obj) + "\n")


__all__ = ["LOG_HELP", "PLUGIN_HELP", "CommandError", "Parser", "integer", "print_json", "seconds"]
