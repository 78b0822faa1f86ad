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


def _parse_sets(pairs: list[str]) -> dict:
    """`["learning_rate=0.003", "env_overrides={\"length\": 5}"]` -> dict (values read as JSON,
    else kept as strings)."""
    values = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise CommandError(f"--set needs FIELD=VALUE, got {pair!r}")
        field, raw = pair.split("=", 1)
        try:
            values[field] = json.loads(raw)
        except json.JSONDecodeError:
            values[field] = raw
    return values


def _cmd_train(args) -> None:
    from jaxcredit.train import config_from_dict, run_training

    values = {"env": args.env, "credit": args.credit, **_parse_sets(args.set)}
    config = config_from_dict(values)
    summary = run_training(config, args.out, resume=args.resume, progress=not args.no_progress)
    if args.json:
        _print_json(summary)
    else:
        mean = summary["mean"]
        print(f"{config.credit} on {config.env}: final greedy success {mean['final_success']:.3f}, "
              f"average {mean['average_success']:.3f} (start {mean['initial_success']:.3f}), "
              f"{mean['total_env_steps']:.0f} env steps; run directory {args.out}")


def _cmd_sweep(args) -> None:
    from jaxcredit.train import format_table, get_preset, run_sweep

    spec = get_preset(args.preset)
    table = run_sweep(spec, args.out, resume=args.resume, num_seeds=args.seeds, progress=not args.no_progress,
                      backend=args.backend, ray_address=args.ray_address)
    if args.json:
        _print_json(table)
    else:
        print(format_table(table))
        print(f"sweep {spec.name}: run directories, sweep.json and table.md in {args.out}")
# ----- solve: exact values of one position ------------------------------------------------------
def _parse_int(option: str, text: str, *, low: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CommandError(f"{option} must be an integer, got {text!r}") from None
    if low is not None and value < low:
        raise CommandError(f"{option} must be >= {low}, got {value}")
    return value


def _solve_problem(args):
    """The environment and the problem named on the command line."""
    from jaxcredit.envs import make

    if args.env == "mad":
        if args.tape is None or args.numbers is not None or args.target is not None:
            raise CommandError('solve mad takes --tape "_ t04 _ _ t09 _ _ _" (and no --numbers/--target)')
        cells = args.tape.split()
        if not 1 <= len(cells) <= 16:
            raise CommandError(f"--tape must have 1 to 16 cells, got {len(cells)}")
        env = make("mad", length=len(cells), max_useful=min(4, len(cells)))
        return env, env.parse_tape(args.tape)
    if args.env == "arithmetic":
        if args.numbers is None or args.target is None or args.tape is not None:
            raise CommandError("solve arithmetic takes --numbers N [N ...] --target N (and no --tape)")
        numbers = [_parse_int("--numbers", x) for x in args.numbers]
        target = _parse_int("--target", args.target)
        env = make("arithmetic", count=len(numbers))
        if numbers and max(numbers) > env.number_limit:  # larger numbers than the default family's
            env = make("arithmetic", count=len(numbers), max_number=max(numbers))
        return env, env.make_problem(numbers, target)
    raise CommandError(f"unknown environment {args.env!r}; choices: arithmetic, mad")


def _normalise_action(text: str) -> str:
    for mark in "(),":
        text = text.replace(mark, " ")
    return " ".join(text.lower().split())


def _replay(env, state, text: str | None):
    """`state` after the `;`-separated actions of `text`, each matched against `env.action_name`."""
    if not text or not text.strip():
        return state
    by_name = {_normalise_action(env.action_name(a)): a for a in range(env.num_actions)}
    for number, name in enumerate(text.split(";"), start=1):
        if not name.strip():
            raise CommandError(f"--actions: action {number} is empty")
        action = by_name.get(_normalise_action(name))
        if action is None:
            raise CommandError(f"--actions: unknown action {name.strip()!r} (e.g. {env.action_name(0)!r})")
        if not bool(state.legal_action_mask[action]):
            raise CommandError(f"--actions: {name.strip()!r} (action {number}) is not legal at that point")
        state = env.step(state, action)
        if bool(state.done):
            raise CommandError(f"--actions: the episode ended after {name.strip()!r} (action {number})")
    return state


def _solve_values(env, problem, state, *, policy: str, turns_left: int):
    """float32 `[T + 1, S]`, `[T + 1, S, A]`: exact values under `policy` with `turns_left` turns left."""
    import dataclasses

    import jax

    from jaxcredit import solver

    if policy in solver.POLICIES:
        values = solver.solve(env, problem, policy=policy, horizon=turns_left)
        return values.v, values.q
    if not os.path.isdir(policy):
        raise FileNotFoundError(f"--policy: no checkpoint directory {policy!r} (or use uniform, optimal)")
    try:
        from jaxcredit.checkpoint import load_policy
    except ImportError:
        raise CommandError(f"--policy: cannot load checkpoint {policy!r}: no checkpoint loader in this build") from None
    try:
        policy_fn, params, _info = load_policy(policy)
    except (ValueError, FileNotFoundError, CommandError):
        raise
    except Exception as error:  # a damaged checkpoint: still one line, never a traceback
        raise CommandError(f"--policy: cannot load checkpoint {policy!r}: {type(error).__name__}: {error}") from error
    if turns_left > 0:  # the network sees this position with exactly `turns_left` turns left
        env = dataclasses.replace(env, max_turns=int(state.turn) + turns_left)

    @jax.jit
    def network_values(problem, params):
        graph = solver.build_graph(env, problem)
        probs = solver.network_policy_probs(env, problem, graph, policy_fn, params, horizon=turns_left)
        return solver.evaluate_policy(graph, probs, horizon=turns_left)

    values = network_values(problem, params)
    return values.v, values.q


def _cmd_solve(args) -> None:
    env, problem = _solve_problem(args)
    state = _replay(env, env.init_problem(problem), args.actions)
    remaining = env.max_turns - int(state.turn)
    turns_left = remaining if args.turns is None else _parse_int("--turns", args.turns, low=0)
    v, q = _solve_values(env, problem, state, policy=args.policy, turns_left=turns_left)
    position = int(env.position_index(state))
    value = float(v[turns_left, position])
    q = [float(x) for x in q[turns_left, position]]
    legal = [a for a in range(env.num_actions) if bool(state.legal_action_mask[a])]
    ranked = sorted(legal, key=lambda a: -q[a])  # stable: ties keep action order
    if args.json:
        _print_json({"value": value, "actions": [{"action": env.action_name(a), "q": q[a]} for a in ranked]})
        return
    print(env.render(state))
    print(f"policy {args.policy}, {turns_left} turns left: value {value:.6g}")
    print(f"  {'q':>10}  action")
    for a in ranked:
        print(f"  {q[a]:>10.6g}  {env.action_name(a)}")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs, solver, branch, train")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.set_defaults(handler=_cmd_bench)

    train = commands.add_parser("train", help="train one configuration (all its seeds) into a run directory")
    train.add_argument("--env", default="mad", help="environment: mad or arithmetic")
    train.add_argument("--credit", default="outcome", help="credit arm: outcome, mc, exact, solver, anchor, critic")
    train.add_argument("--out", required=True, help="run directory")
    train.add_argument("--set", action="append", metavar="FIELD=VALUE", help="any TrainConfig field (JSON value)")
    train.add_argument("--resume", action="store_true", help="continue the run in --out")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    train.set_defaults(handler=_cmd_train)

    sweep = commands.add_parser("sweep", help="a budget-matched sweep of arms x regimes x seeds")
    sweep.add_argument("--preset", required=True, help="quick, mad-study or arithmetic-study")
    sweep.add_argument("--out", required=True, help="sweep directory")
    sweep.add_argument("--seeds", type=int, default=None, help="override the preset's number of seeds")
    sweep.add_argument("--resume", action="store_true", help="continue the sweep in --out (or start it)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bars")
    sweep.add_argument("--json", action="store_true", help="print the table as one JSON object")
    sweep.add_argument("--backend", default="local", help="where cells run: local (one after another) or ray")
    sweep.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local Ray)")
    sweep.set_defaults(handler=_cmd_sweep)

    solve = commands.add_parser("solve", help="exact value of a position and Q of its legal actions")
    solve.add_argument("env", help="mad or arithmetic")
    solve.add_argument("--tape", help='mad: the tape, e.g. "_ t04 _ _ t09 _ _ _"')
    solve.add_argument("--numbers", nargs="+", metavar="N", help="arithmetic: the numbers, e.g. 2 3 4 5")
    solve.add_argument("--target", metavar="N", help="arithmetic: the target")
    solve.add_argument("--actions", help='play these first, e.g. "select 0; select 1" or "COMBINE 2 + 3; UNDO"')
    solve.add_argument("--turns", metavar="N", help="turns left (default: the episode's)")
    solve.add_argument("--policy", default="uniform", help="uniform, optimal, or a checkpoint directory")
    solve.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    solve.set_defaults(handler=_cmd_solve)
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
