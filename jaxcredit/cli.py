"""The `jaxcredit` command line: the one module that may import every package.

Each subcommand is a `_cmd_*` function registered in `_build_parser`. Bad input (a bad
config, problem, checkpoint or text) ends with one line on stderr and exit code 2, never a
traceback; set JAXCREDIT_DEBUG=1 to see the traceback instead. Commands that take `--json`
print exactly one JSON object on stdout; progress and logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


class CommandError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


def _print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=None, sort_keys=False)
    sys.stdout.write("\n")


def _batch_sizes(text: str) -> list[int]:
    """`"64,256"` -> `[64, 256]` (the hidden `bench --sizes` option, for quick tests)."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"batch sizes must be comma-separated integers, got {text!r}") from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"batch sizes must be positive, got {text!r}")
    return sizes


def _cmd_bench(args) -> None:
    from jaxcredit.benchmarks import SUITES

    if args.suite not in SUITES:
        raise CommandError(f"unknown benchmark suite {args.suite!r}; choices: {', '.join(sorted(SUITES))}")
    result = SUITES[args.suite](args)
    if args.json:
        _print_json(result)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs, branch")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.set_defaults(handler=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `jaxcredit` console script; returns the exit code."""
    args = _build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (CommandError, ValueError, FileNotFoundError) as error:
        if os.environ.get("JAXCREDIT_DEBUG"):
            raise
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"jaxcredit: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxcredit: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
