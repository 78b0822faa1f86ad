"""The `jaxcredit` command line: the one module that may import every package.

Each subcommand is a `_cmd_*` function beside the `add_*` function that registers it, one module
per group of commands: `running` (train, sweep, gate, suite, status, pack), `solving` (play, solve,
greedy), `analysis` (audit, snr, rank, quality, identify), `inspecting` (report, compare, replay, price, card), `agents`
(agent play, audit transcripts) and `benchmarking` (bench); `build_parser` assembles them in `COMMANDS`' order. The
work is the library's (problems and actions by name: `jaxcredit.envs.parse_problem`,
`replay_action_names`; policy checkpoints: `jaxcredit.checkpoint.load_policy_checkpoint`), the
CLI parses, calls and prints. Bad input (a bad config, problem, checkpoint or text) ends with one
line on stderr and exit code 2, never a traceback; set JAXCREDIT_DEBUG=1 to see the traceback
instead. Commands that take `--json` print exactly one JSON object on stdout; progress and logs go
to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxcredit.cli import agents, analysis, benchmarking, inspecting, running, solving
from jaxcredit.cli.common import CommandError, Parser

# every subcommand's `add_*(commands)`, in the order `jaxcredit --help` lists them
COMMANDS = (
    benchmarking.add_bench, solving.add_play, running.add_train, running.add_sweep, running.add_gate,
    solving.add_greedy, running.add_pack, running.add_status, running.add_suite, solving.add_solve,
    analysis.add_snr, analysis.add_rank, analysis.add_audit, analysis.add_predictor_quality, analysis.add_identify,
    inspecting.add_report, inspecting.add_compare, inspecting.add_replay, inspecting.add_price, inspecting.add_card,
    agents.add_agent,
)


def build_parser() -> argparse.ArgumentParser:
    """The `jaxcredit` argument parser (every subcommand and its options)."""
    parser = Parser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `jaxcredit` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (CommandError, ValueError, OSError) as error:
        if os.environ.get("JAXCREDIT_DEBUG"):
            raise
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        if isinstance(error, OSError) and error.strerror and error.filename:  # not "[Errno 1] ..."
            message = f"{error.filename}: {error.strerror}"
        print(f"jaxcredit: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxcredit: interrupted", file=sys.stderr)
        return 130
    return 0


__all__ = ["COMMANDS", "CommandError", "build_parser", "main"]
