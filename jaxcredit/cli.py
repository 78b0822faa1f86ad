"""The `jaxcredit` command line: the one module that may import every package.

Each subcommand is a `_cmd_*` function registered in `_build_parser`. Bad input (a bad
config, problem, checkpoint or text) ends with one line on stderr and exit code 2, never a
traceback; set JAXCREDIT_DEBUG=1 to see the traceback instead. Commands that take `--json`
print exactly one JSON object on stdout; progress and logs go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys

from jaxcredit.env import MAX_TURNS
from jaxcredit.rundir_io import RunLock, check_writable_dir, dumps_strict
from jaxcredit.validation import INT32_MAX, parse_int


class CommandError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (`jaxcredit: error: ...`, exit code 2), like ours."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]
        self.exit(2, f"jaxcredit: error: {command + ': ' if command else ''}{' '.join(message.split())}\n")


def _integer(low: int | None = 0, high: int | None = INT32_MAX):
    """An argparse type: an integer in ASCII digits within `[low, high]` (`validation.parse_int`)."""
    def parse(text: str) -> int:
        try:
            return parse_int("the value", text, low, high)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).replace("the value ", "")) from None

    return parse


def _print_json(obj) -> None:
    """One strict JSON object on stdout (NaN and infinity become null with a reason)."""
    sys.stdout.write(dumps_strict(obj) + "\n")


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
    if args.plot is not None:
        check_writable_dir(args.plot, "--plot")
    result = SUITES[args.suite](args)
    if args.plot is not None:
        from jaxcredit.benchmarks import save_plots

        for path in save_plots(result, args.plot):
            print(f"wrote {path}", file=sys.stderr)
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


def _join_distributed(args, values: dict) -> bool:
    """`train --distributed`: join the multi-process run before anything touches JAX, and split the
    batch over every process's devices unless `shard_devices` was set. True when this process
    prints (process 0)."""
    distributed = args.distributed or any(x is not None for x in (args.coordinator, args.num_processes,
                                                                  args.process_id))
    if not distributed:
        return True
    from jaxcredit.sharding import initialize_distributed

    info = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    values.setdefault("shard_devices", info["global_devices"])
    print(f"jaxcredit: process {info['process_index']} of {info['process_count']}, {info['local_devices']} local "
          f"of {info['global_devices']} devices", file=sys.stderr)
    return info["process_index"] == 0


def _cmd_train(args) -> None:
    values = {"env": args.env, "credit": args.credit, **_parse_sets(args.set)}
    printer = _join_distributed(args, values)
    from jaxcredit.train import config_from_dict, run_training

    config = config_from_dict(values)
    summary = run_training(config, args.out, resume=args.resume, progress=printer and not args.no_progress)
    if not printer:
        return
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
    from jaxcredit.analysis import write_report  # the sweep's report.md, tables, cards, plots

    write_report(args.out)
    if args.json:
        _print_json(table)
    else:
        print(format_table(table))
        print(f"sweep {spec.name}: run directories, sweep.json, table.md and report.md in {args.out}")

# ----- analysis: audit, report, compare --------------------------------------------------------
def _audit_policy(args):
    """`(env, policy_fn, params, description)` of the policy named on the command line."""
    import jax

    from jaxcredit.envs import make

    if args.checkpoint is not None:
        from jaxcredit.checkpoint import load_policy

        if args.policy != "network":
            raise CommandError("--checkpoint and --policy uniform exclude each other")
        path = args.checkpoint
        run_policy = os.path.join(path, "policies", f"seed-{args.seed_index}")
        if not os.path.exists(os.path.join(path, "_CHECKPOINT_METADATA")) and os.path.isdir(run_policy):
            path = run_policy  # a run directory: audit one seed's final policy
        policy_fn, params, info = load_policy(path)
        env = _checkpoint_env(path, make, info["env_name"], info["env_config"])
        _check_fits(path, env, info["task_sizes"])
        return env, policy_fn, params, f"checkpoint {path}"
    try:
        env_config = json.loads(args.env_config) if args.env_config else {}
    except json.JSONDecodeError:
        raise CommandError(f"--env-config must be a JSON object, got {args.env_config!r}") from None
    if not isinstance(env_config, dict):
        raise CommandError(f"--env-config must be a JSON object, got {args.env_config!r}")
    env = make(args.env, **env_config)
    if args.policy == "uniform":
        from jaxcredit.policy_fn import uniform_policy_fn

        return env, uniform_policy_fn, None, "uniform policy"
    if args.policy != "network":
        raise CommandError(f"--policy must be network or uniform, got {args.policy!r}")
    from jaxcredit.policy import PolicyConfig, make_policy

    init_fn, policy_fn, _ = make_policy(PolicyConfig(), env)
    return env, policy_fn, init_fn(jax.random.key(args.seed)), f"untrained network (seed {args.seed})"


def _cmd_audit(args) -> None:
    import jax

    from jaxcredit.analysis import audit_markdown_summary, run_audit, write_audit

    if args.out:
        check_writable_dir(args.out)  # before the work, not after it
    env, policy_fn, params, description = _audit_policy(args)
    with RunLock(args.out, "audit") if args.out else contextlib.nullcontext():  # --out is ours from the start
        audit = run_audit(env, policy_fn, params, jax.random.key(args.seed), num_states=args.states,
                          num_continuations=args.continuations, chunk_states=args.chunk_states,
                          progress=not args.no_progress)
        audit["policy"] = description
        if args.out:
            audit["report"] = write_audit(args.out, audit, locked=True)
    if args.json:
        _print_json(audit)
    else:
        print(f"audit of {description} on {env.name}")
        print(audit_markdown_summary(audit))
        if args.out:
            print(f"audit.json, card and plots in {args.out}; report {audit['report']}")


def _cmd_report(args) -> None:
    from jaxcredit.analysis import write_report

    path = write_report(args.path)
    if args.json:
        _print_json({"report": path})
    else:
        print(f"wrote {path}")


def _cmd_compare(args) -> None:
    from jaxcredit.analysis import compare_arms

    result = compare_arms(args.sweep, args.arm, args.baseline, args.regime)
    if args.json:
        _print_json(result)
        return
    from jaxcredit.stats import interval_description

    matched = " (the baseline given exactly the arm's total env steps)" if args.regime == "matched" else ""
    print(f"{args.arm} vs {args.baseline}, regime {args.regime}{matched}:")
    for measure in ("final_success", "average_success"):
        d = result[measure]
        interval = "n/a" if d["low"] is None else f"[{d['low']:+.3f}, {d['high']:+.3f}]"
        p_value = "n/a" if d["p_value"] is None else f"{d['p_value']:.3f}"
        print(f"  {measure}: {d['arm_mean']:.3f} vs {d['baseline_mean']:.3f}, diff {d['mean_diff']:+.3f} "
              f"{interval}, paired t-test p = {p_value}, wins {d['arm_wins']}/{d['num_seeds']} "
              f"(losses {d['baseline_wins']}, ties {d['ties']})")
    print(f"  interval: {interval_description(result['final_success']['num_seeds'])}")


def _add_analysis_commands(commands) -> None:
    audit = commands.add_parser("audit", help="label reliability audit of a policy's Monte Carlo action credit")
    audit.add_argument("--checkpoint", help="policy checkpoint (or run directory: its policies/seed-I)")
    audit.add_argument("--seed-index", type=_integer(), default=0, help="which seed of a run directory (default 0)")
    audit.add_argument("--env", default="mad", help="without --checkpoint: mad or arithmetic")
    audit.add_argument("--env-config", help='without --checkpoint: JSON overrides, e.g. \'{"length": 5}\'')
    audit.add_argument("--policy", default="network", help="without --checkpoint: network (untrained) or uniform")
    audit.add_argument("--states", type=_integer(1), default=605, help="sampled states, one per episode (default 605)")
    audit.add_argument("--continuations", type=_integer(2), default=64, help="K per action, two halves (default 64)")
    audit.add_argument("--chunk-states", type=_integer(1), default=64, help="states per continuation call")
    audit.add_argument("--seed", type=_integer(), default=0, help="seed of problems, episodes and continuations")
    audit.add_argument("--out", help="write audit.json, card, plots and report.md here")
    audit.add_argument("--no-progress", action="store_true", help="no progress bar")
    audit.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    audit.set_defaults(handler=_cmd_audit)

    report = commands.add_parser("report", help="write report.md (tables, CA-ID cards, plots) for a sweep, run "
                                                "or audit directory")
    report.add_argument("path", help="sweep, run or audit directory")
    report.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    report.set_defaults(handler=_cmd_report)

    compare = commands.add_parser("compare", help="paired comparison of two arms of a sweep across seeds")
    compare.add_argument("sweep", help="sweep directory")
    compare.add_argument("--arm", required=True, help="the arm")
    compare.add_argument("--baseline", default="outcome", help="the arm compared against (default outcome)")
    compare.add_argument("--regime", default="attempts",
                         help="attempts, matched (--arm a label arm) or fixed-steps (default attempts)")
    compare.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    compare.set_defaults(handler=_cmd_compare)

# ----- solve: exact values of one position ------------------------------------------------------
def _parse_int(option: str, text: str, *, low: int | None = None, high: int | None = INT32_MAX) -> int:
    return parse_int(option, text, low, high)


def _solve_problem(args, env_config: dict | None = None):
    """The environment and the problem named on the command line; `env_config` (from a policy
    checkpoint) fixes the environment's configuration, and the problem must fit it."""
    from jaxcredit.envs import make

    if args.env == "mad":
        if args.tape is None or args.numbers is not None or args.target is not None:
            raise CommandError('solve mad takes --tape "_ t04 _ _ t09 _ _ _" (and no --numbers/--target)')
        cells = args.tape.split()
        if env_config is not None:
            env = _checkpoint_env(args.policy, make, "mad", env_config)
            if len(cells) != env.length:
                raise CommandError(f"--tape has {len(cells)} cells but the checkpoint's mad has length {env.length}")
            return env, env.parse_tape(args.tape)
        if not 1 <= len(cells) <= 16:
            raise CommandError(f"--tape must have 1 to 16 cells, got {len(cells)}")
        env = make("mad", length=len(cells), max_useful=min(4, len(cells)))
        return env, env.parse_tape(args.tape)
    if args.env == "arithmetic":
        if args.numbers is None or args.target is None or args.tape is not None:
            raise CommandError("solve arithmetic takes --numbers N [N ...] --target N (and no --tape)")
        numbers = [_parse_int("--numbers", x, low=0) for x in args.numbers]
        target = _parse_int("--target", args.target, low=0)
        if env_config is not None:
            env = _checkpoint_env(args.policy, make, "arithmetic", env_config)
            if len(numbers) != env.count:
                raise CommandError(f"--numbers has {len(numbers)} numbers but the checkpoint's arithmetic "
                                   f"has count {env.count}")
            return env, env.make_problem(numbers, target)
        env = make("arithmetic", count=len(numbers))
        if numbers and max(numbers) > env.number_limit:  # larger numbers than the default family's
            env = make("arithmetic", count=len(numbers), max_number=max(numbers))
        return env, env.make_problem(numbers, target)
    raise CommandError(f"unknown environment {args.env!r}; choices: arithmetic, mad")


def _checkpoint_env(path: str, make, env_name: str, env_config: dict):
    """The environment a checkpoint's info describes; an edited, impossible one is one line."""
    try:
        return make(env_name, **env_config)
    except (TypeError, ValueError) as error:
        raise CommandError(f"corrupted checkpoint {path}: its env_config cannot build {env_name!r} ({error})") from None


def _check_fits(path: str, env, sizes: dict) -> None:
    """Refuse a checkpoint whose network was built for other sizes than its environment's."""
    from jaxcredit.policy import task_sizes

    expected = task_sizes(env)
    if dataclasses.asdict(expected) != sizes:
        raise CommandError(f"corrupted checkpoint {path}: its network has task sizes {sizes} but its environment "
                           f"{env.name} has {dataclasses.asdict(expected)}")


def _load_checkpoint(path: str, env_name: str):
    """`(policy_fn, params, env_config, task_sizes)` of a policy checkpoint for environment `env_name`."""
    from jaxcredit.checkpoint import load_policy

    if not os.path.isdir(path):
        raise FileNotFoundError(f"--policy: no checkpoint directory {path!r} (or use uniform, optimal)")
    try:
        policy_fn, params, info = load_policy(path)
    except (ValueError, FileNotFoundError):
        raise
    except Exception as error:  # a damaged checkpoint: still one line, never a traceback
        raise CommandError(f"--policy: cannot load checkpoint {path!r}: {type(error).__name__}: {error}") from None
    if info.get("env_name") != env_name:
        raise CommandError(f"--policy: checkpoint {path!r} was trained on {info.get('env_name')!r}, not {env_name!r}")
    return policy_fn, params, dict(info["env_config"]), info["task_sizes"]


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


def _solve_values(env, problem, state, *, policy: str, loaded, turns_left: int):
    """float32 `[T + 1, S]`, `[T + 1, S, A]`: exact values under `policy` (uniform, optimal, or
    the `loaded` checkpoint's network) with `turns_left` turns left."""
    import dataclasses

    import jax

    from jaxcredit import solver

    if loaded is None:
        values = solver.solve(env, problem, policy=policy, horizon=turns_left)
        return values.v, values.q
    policy_fn, params = loaded[:2]
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
    from jaxcredit.solver import POLICIES

    loaded = None if args.policy in POLICIES else _load_checkpoint(args.policy, args.env)
    env, problem = _solve_problem(args, None if loaded is None else loaded[2])
    if loaded is not None:
        _check_fits(args.policy, env, loaded[3])
    state = _replay(env, env.init_problem(problem), args.actions)
    remaining = env.max_turns - int(state.turn)
    turns_left = remaining if args.turns is None else _parse_int("--turns", args.turns, low=0, high=MAX_TURNS)
    v, q = _solve_values(env, problem, state, policy=args.policy, loaded=loaded, turns_left=turns_left)
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
    parser = _Parser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs, solver, branch, train, adapter, or all")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--plot", metavar="DIR", default=None, help="save the scaling curves as PNG files in DIR")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.set_defaults(handler=_cmd_bench)

    play = commands.add_parser("play", help="play one episode through the text protocol on stdin")
    play.add_argument("env", choices=["arithmetic", "mad"], help="which environment")
    play.add_argument("--family", help="arithmetic problem family to draw from (default: default)")
    play.add_argument("--seed", type=_integer(), default=0, help="which problem to draw (default 0)")
    play.add_argument("--numbers", type=_integer(), nargs="+", help="arithmetic: the starting numbers")
    play.add_argument("--target", type=_integer(), help="arithmetic: the target")
    play.add_argument("--tape", help='mad: the tape, e.g. "_ t04 _ _ t09 _ _ _"')
    play.add_argument("--turns", type=_integer(None, None), help="max_turns for this episode")
    play.set_defaults(handler=_cmd_play)

    train = commands.add_parser("train", help="train one configuration (all its seeds) into a run directory")
    train.add_argument("--env", default="mad", help="environment: mad or arithmetic")
    train.add_argument("--credit", default="outcome", help="credit arm: outcome, mc, exact, solver, anchor, critic")
    train.add_argument("--out", required=True, help="run directory")
    train.add_argument("--set", action="append", metavar="FIELD=VALUE", help="any TrainConfig field (JSON value)")
    train.add_argument("--resume", action="store_true", help="continue the run in --out")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    train.add_argument("--distributed", action="store_true",
                       help="one run over several processes (jax.distributed): run this in every process; the "
                            "batch is split over all their devices; settings from the options below or "
                            "JAXCREDIT_COORDINATOR/_NUM_PROCESSES/_PROCESS_ID or the cluster (SLURM, MPI, TPU)")
    train.add_argument("--coordinator", default=None, metavar="HOST:PORT", help="process 0's address (distributed)")
    train.add_argument("--num-processes", type=_integer(1), default=None, help="how many processes (distributed)")
    train.add_argument("--process-id", type=_integer(), default=None, help="this process, 0 .. N-1 (distributed)")
    train.set_defaults(handler=_cmd_train)

    sweep = commands.add_parser("sweep", help="a budget-matched sweep of arms x regimes x seeds")
    sweep.add_argument("--preset", required=True, help="quick, mad-study or arithmetic-study")
    sweep.add_argument("--out", required=True, help="sweep directory")
    sweep.add_argument("--seeds", type=_integer(1), default=None, help="override the preset's number of seeds")
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
    _add_analysis_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `jaxcredit` console script; returns the exit code."""
    args = _build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (CommandError, ValueError, OSError) as error:
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
