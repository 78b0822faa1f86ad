"""`jaxcredit bench`: the benchmark suites (`jaxcredit.benchmarks`), ours against baselines."""

from __future__ import annotations

import argparse
import sys

from jaxcredit.cli.common import CommandError, integer, print_json
from jaxcredit.rundir_io import check_writable_dir
from jaxcredit.validation import INT32_MAX, parse_int


def _batch_sizes(text: str) -> list[int]:
    """`"64,256"` -> `[64, 256]` (the hidden `bench --sizes` option, for quick tests)."""
    try:
        return [parse_int("batch sizes", part.strip(), 1, INT32_MAX) for part in text.split(",")]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} (comma-separated positive integers)") from None


def _cmd_bench(args) -> None:
    from jaxcredit.benchmarks import SUITES

    if args.suite not in SUITES:
        raise CommandError(f"unknown benchmark suite {args.suite!r}; choices: {', '.join(sorted(SUITES))}")
    if args.suite not in ("accelerator", "tune") and (args.out is not None or args.time_cap is not None):
        raise CommandError("--out and --time-cap are options of bench accelerator and bench tune only")
    if args.plot is not None:
        check_writable_dir(args.plot, "--plot")
    result = SUITES[args.suite](args)
    if args.plot is not None:
        from jaxcredit.benchmarks import save_plots

        for path in save_plots(result, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print_json(result)


def add_bench(commands) -> None:
    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs, solver, branch, train, adapter, tune (tuning points x "
                                     "seeds as separate runs and as one population), all, or accelerator (every "
                                     "suite at accelerator sizes into one JSON file, --out)")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--plot", metavar="DIR", default=None, help="save the scaling curves as PNG files in DIR")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.add_argument("--out", metavar="FILE", default=None,
                       help="accelerator, tune: the JSON file to write (tune: rewritten after every size)")
    bench.add_argument("--time-cap", type=integer(1, 3600), default=None, metavar="SECONDS",
                       help="accelerator: total time cap (default 450; stages past it are skipped and recorded); "
                            "tune: sizes past it are skipped and recorded")
    bench.set_defaults(handler=_cmd_bench)
