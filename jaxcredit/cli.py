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


def _play_setup(args):
    """The environment and first state of `jaxcredit play`; raises `ValueError` on bad input."""
    import jax

    from jaxcredit.envs import make, problems
    from jaxcredit.envs.problems import get_family

    overrides = {} if args.turns is None else {"max_turns": args.turns}
    if args.env == "mad":
        if args.numbers is not None or args.target is not None or args.family is not None:
            raise CommandError("--numbers, --target and --family are for arithmetic; mad takes --tape or --seed")
        env = make("mad", **overrides)
        if args.tape is not None:
            return env, env.init_problem(env.parse_tape(args.tape))
        return env, env.init(jax.random.key(args.seed))
    if args.tape is not None:
        raise CommandError("--tape is for mad; arithmetic takes --numbers and --target, or --family and --seed")
    if (args.numbers is None) != (args.target is None):
        raise CommandError("give --numbers and --target together")
    family = get_family(args.family or "default")
    if args.numbers is None:
        env = make("arithmetic", family=family.name, **overrides)
        drawn = problems(family.name, 1, args.seed, count=env.count)
        return env, env.init_problem(jax.tree_util.tree_map(lambda x: x[0], drawn))
    if min(args.numbers) < 0 or args.target < 0:
        raise CommandError("--numbers and --target must be non-negative integers")
    env = make("arithmetic", family=family.name, count=len(args.numbers),
               max_number=max(family.number_high, *args.numbers), **overrides)
    return env, env.init_problem(env.make_problem(args.numbers, args.target))


def _cmd_play(args) -> None:
    from jaxcredit.envs.text_protocol import Refusal, text_protocol

    env, state = _play_setup(args)
    protocol = text_protocol(env)
    print(protocol.render_prompt(state), flush=True)
    while not bool(state.done):
        line = sys.stdin.readline()
        if not line:
            print(f"outcome: unfinished (input ended) after {int(state.turn)} turns, reward 0", flush=True)
            return
        state, parsed = protocol.step(state, line)
        if isinstance(parsed, Refusal):
            print(f"refused: {parsed.reason}")
        else:
            answer = parsed > env.undo_action if env.name == "arithmetic" else parsed == env.submit_action
            wrong = answer and not bool(state.terminated)
            print(f"accepted: {env.action_name(parsed)}{' (wrong answer, reward 0)' if wrong else ''}")
        if not bool(state.done):
            print(protocol.render_prompt(state), flush=True)
    how = "solved" if bool(state.terminated) else "out of turns"
    print(f"outcome: {how}, reward {float(state.reward):g} in {int(state.turn)} turns", flush=True)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.set_defaults(handler=_cmd_bench)

    play = commands.add_parser("play", help="play one episode through the text protocol on stdin")
    play.add_argument("env", choices=["arithmetic", "mad"], help="which environment")
    play.add_argument("--family", help="arithmetic problem family to draw from (default: default)")
    play.add_argument("--seed", type=int, default=0, help="which problem to draw (default 0)")
    play.add_argument("--numbers", type=int, nargs="+", help="arithmetic: the starting numbers")
    play.add_argument("--target", type=int, help="arithmetic: the target")
    play.add_argument("--tape", help='mad: the tape, e.g. "_ t04 _ _ t09 _ _ _"')
    play.add_argument("--turns", type=int, help="max_turns for this episode")
    play.set_defaults(handler=_cmd_play)
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
