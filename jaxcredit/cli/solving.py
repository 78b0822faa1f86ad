"""`jaxcredit play`, `solve` and `greedy`: one problem played through the text protocol, the exact
values of one position, and greedy play on the uniform reference's values of a sweep's problems."""

from __future__ import annotations

import sys

from jaxcredit.cli.common import CommandError, integer, print_json
from jaxcredit.env import MAX_TURNS


def _problem(args, env=None, overrides=None):
    """`(env, problem)` of the problem options `play` and `solve` share (`jaxcredit.envs.parse_problem`)."""
    from jaxcredit.envs import parse_problem

    return parse_problem(args.env, tape=args.tape, numbers=args.numbers, target=args.target, family=args.family,
                         seed=args.seed, env=env, overrides=overrides)


def _add_problem_options(parser, environments) -> None:
    """The problem syntax `play` and `solve` share (`jaxcredit.envs.parse_problem`)."""
    parser.add_argument("env", choices=environments, help="which environment")
    parser.add_argument("--tape", help='mad: the tape, e.g. "_ t04 _ _ t09 _ _ _"')
    parser.add_argument("--numbers", type=integer(), nargs="+", metavar="N", help="arithmetic: the numbers")
    parser.add_argument("--target", type=integer(), metavar="N", help="arithmetic: the target")
    parser.add_argument("--family", help="arithmetic: the problem family to draw from (default: default)")
    parser.add_argument("--seed", type=integer(), default=None,
                        help="without --tape or --numbers: which problem to draw (default 0)")


def _cmd_play(args) -> None:
    from jaxcredit.envs.text_protocol import Refusal, text_protocol

    env, problem = _problem(args, overrides=None if args.turns is None else {"max_turns": args.turns})
    state = env.init_problem(problem)
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
            answer = env.is_answer_action(parsed)
            wrong = answer and not bool(state.terminated)
            print(f"accepted: {env.action_name(parsed)}{' (wrong answer, reward 0)' if wrong else ''}")
        if not bool(state.done):
            print(protocol.render_prompt(state), flush=True)
    how = "solved" if bool(state.terminated) else "out of turns"
    print(f"outcome: {how}, reward {float(state.reward):g} in {int(state.turn)} turns", flush=True)


def add_play(commands) -> None:
    from jaxcredit.envs import PROBLEM_ENVIRONMENTS

    play = commands.add_parser("play", help="play one episode through the text protocol on stdin")
    _add_problem_options(play, PROBLEM_ENVIRONMENTS)
    play.add_argument("--turns", type=integer(None, None), help="max_turns for this episode")
    play.set_defaults(handler=_cmd_play)


def _load_solve_policy(args):
    """The `--policy` checkpoint of `solve` (`jaxcredit.checkpoint.PolicyCheckpoint`), or None for
    the solver's own policies."""
    from jaxcredit.checkpoint import load_policy_checkpoint
    from jaxcredit.envs import make
    from jaxcredit.solver import POLICIES

    if args.policy in POLICIES:
        return None
    try:
        return load_policy_checkpoint(args.policy, make=make, env_name=args.env)
    except FileNotFoundError as error:
        raise CommandError(f"--policy: {error} (or use {', '.join(POLICIES)})") from None
    except ValueError as error:
        raise CommandError(f"--policy: {error}") from None


def _cmd_solve(args) -> None:
    from jaxcredit.envs import replay_action_names
    from jaxcredit.solver_values import position_values

    loaded = _load_solve_policy(args)
    env, problem = _problem(args, env=None if loaded is None else loaded.env)
    try:
        state = replay_action_names(env, env.init_problem(problem), args.actions)
    except ValueError as error:
        raise CommandError(f"--actions: {error}") from None
    turns_left = env.max_turns - int(state.turn) if args.turns is None else args.turns
    if loaded is None:
        v, q = position_values(env, problem, state, policy=args.policy, turns_left=turns_left)
    else:
        v, q = position_values(env, problem, state, policy="network", turns_left=turns_left,
                               policy_fn=loaded.policy_fn, params=loaded.params)
    position = int(env.position_index(state))
    value = float(v[turns_left, position])
    q = [float(x) for x in q[turns_left, position]]
    legal = [a for a in range(env.num_actions) if bool(state.legal_action_mask[a])]
    ranked = sorted(legal, key=lambda a: -q[a])  # stable: ties keep action order
    if args.json:
        print_json({"value": value, "actions": [{"action": env.action_name(a), "q": q[a]} for a in ranked]})
        return
    print(env.render(state))
    print(f"policy {args.policy}, {turns_left} turns left: value {value:.6g}")
    print(f"  {'q':>10}  action")
    for a in ranked:
        print(f"  {q[a]:>10.6g}  {env.action_name(a)}")


def add_solve(commands) -> None:
    from jaxcredit.envs import PROBLEM_ENVIRONMENTS

    solve = commands.add_parser("solve", help="exact value of a position and Q of its legal actions")
    _add_problem_options(solve, PROBLEM_ENVIRONMENTS)
    solve.add_argument("--actions", help='play these first, e.g. "select 0; select 1" or "COMBINE 2 + 3; UNDO"')
    solve.add_argument("--turns", type=integer(0, MAX_TURNS), metavar="N", help="turns left (default: the episode's)")
    solve.add_argument("--policy", default="uniform",
                       help="uniform, optimal, soft, or a policy checkpoint (or run directory: its policies/seed-0)")
    solve.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    solve.set_defaults(handler=_cmd_solve)


def _cmd_greedy(args) -> None:
    from jaxcredit.train.reference_greedy import greedy_text, write_reference_greedy

    path, record = write_reference_greedy(args.sweep)
    if args.json:
        print_json(record)
    else:
        print(greedy_text(record) + f"\nwrote {path}")


def add_greedy(commands) -> None:
    greedy = commands.add_parser("greedy", help="greedy play on the uniform reference's exact values on a sweep's "
                                                "evaluation problems, per family (no training); writes "
                                                "SWEEP/reference/greedy.json for its results page")
    greedy.add_argument("sweep", help="sweep directory (at least one cell started: its config.json is read)")
    greedy.add_argument("--json", action="store_true", help="print the record as one JSON object")
    greedy.set_defaults(handler=_cmd_greedy)
