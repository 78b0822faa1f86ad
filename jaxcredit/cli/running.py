"""`jaxcredit train`, `sweep`, `gate`, `suite`, `status` and `pack`: the commands that run training
(`jaxcredit.train`, `jaxcredit.suite`) into a directory, say where it stands, and pack it to move it."""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from jaxcredit.cli.common import LOG_HELP, PLUGIN_HELP, CommandError, integer, print_json
from jaxcredit.credit_arms import credit_names
from jaxcredit.plugins import load_plugins
from jaxcredit.tracking import TRACKERS


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
    load_plugins(args.plugin)  # their arms are choices of --credit from here on
    values = {"env": args.env, "credit": args.credit, **_parse_sets(args.set)}
    printer = _join_distributed(args, values)
    from jaxcredit.train import config_from_dict, run_training

    config = config_from_dict(values, legacy=False)
    summary = run_training(config, args.out, resume=args.resume, progress=printer and not args.no_progress,
                           log=args.log or ())
    if not printer:
        return
    if args.json:
        print_json(summary)
    else:
        mean = summary["mean"]
        print(f"{config.credit} on {config.env}: final greedy success {mean['final_success']:.3f}, "
              f"average {mean['average_success']:.3f} (start {mean['initial_success']:.3f}), "
              f"{mean['total_env_steps']:.0f} env steps; run directory {args.out}")


def add_train(commands) -> None:
    train = commands.add_parser("train", help="train one configuration (all its seeds) into a run directory")
    train.add_argument("--env", default="mad", help="environment: mad, arithmetic, routine or umbrella (default mad)")
    train.add_argument("--credit", default="outcome", help=f"credit arm: {', '.join(credit_names())} or one a "
                       "--plugin registers (default outcome)")
    train.add_argument("--out", required=True, help="run directory")
    train.add_argument("--set", action="append", metavar="FIELD=VALUE",
                       help="any TrainConfig field (JSON value); credit_options.NAME=VALUE sets an arm option")
    train.add_argument("--plugin", action="append", metavar="FILE.py|MODULE", help=PLUGIN_HELP)
    train.add_argument("--resume", action="store_true", help="continue the run in --out")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    train.add_argument("--log", action="append", choices=TRACKERS, help=LOG_HELP)
    train.add_argument("--distributed", action="store_true",
                       help="one run over several processes (jax.distributed): run this in every process; the "
                            "batch is split over all their devices; settings from the options below or "
                            "JAXCREDIT_COORDINATOR/_NUM_PROCESSES/_PROCESS_ID or the cluster (SLURM, MPI, TPU)")
    train.add_argument("--coordinator", default=None, metavar="HOST:PORT", help="process 0's address (distributed)")
    train.add_argument("--num-processes", type=integer(1), default=None, help="how many processes (distributed)")
    train.add_argument("--process-id", type=integer(), default=None, help="this process, 0 .. N-1 (distributed)")
    train.set_defaults(handler=_cmd_train)


def _parse_arms(specs: list[str]) -> dict:
    """`["halved", 'big={"credit": "mc", "credit_options.continuations": 8}']` -> `{arm: fields}`:
    a bare name is an arm of that credit with its default options; `NAME=JSON` gives its fields."""
    arms = {}
    for spec in specs or []:
        name, _, raw = spec.partition("=")
        try:
            fields = json.loads(raw) if raw else {"credit": name}
        except json.JSONDecodeError:
            raise CommandError(f"--arm {name}: its fields must be a JSON object, got {raw!r}") from None
        if not name or not isinstance(fields, dict):
            raise CommandError(f"--arm needs NAME or NAME=JSON-object, got {spec!r}")
        arms[name] = fields
    return arms


def _cmd_sweep(args) -> None:
    import dataclasses

    from jaxcredit.train import format_table, get_preset, run_sweep

    plugins = load_plugins(args.plugin)
    spec = get_preset(args.preset)
    extra = _parse_arms(args.arm)
    if extra:
        spec = dataclasses.replace(spec, arms={**spec.arms, **extra})
    table = run_sweep(spec, args.out, resume=args.resume, num_seeds=args.seeds, progress=not args.no_progress,
                      backend=args.backend, ray_address=args.ray_address, log=args.log or (), plugins=plugins)
    from jaxcredit.analysis import write_report  # the sweep's report.md, tables, cards, plots

    write_report(args.out)
    if args.json:
        print_json(table)
    else:
        print(format_table(table))
        print(f"sweep {spec.name}: run directories, sweep.json, table.md and report.md in {args.out}")


def add_sweep(commands) -> None:
    from jaxcredit.train import BACKENDS, PRESETS

    sweep = commands.add_parser("sweep", help="a budget-matched sweep of arms x regimes x seeds")
    sweep.add_argument("--preset", required=True, choices=list(PRESETS), help="which named sweep")
    sweep.add_argument("--out", required=True, help="sweep directory")
    sweep.add_argument("--seeds", type=integer(1), default=None, help="override the preset's number of seeds")
    sweep.add_argument("--resume", action="store_true", help="continue the sweep in --out (or start it)")
    sweep.add_argument("--no-progress", action="store_true", help="no progress bars")
    sweep.add_argument("--json", action="store_true", help="print the table as one JSON object")
    sweep.add_argument("--log", action="append", choices=TRACKERS, help=LOG_HELP)
    sweep.add_argument("--backend", default="local", choices=BACKENDS,
                       help="where cells run: local (one after another) or ray")
    sweep.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local Ray)")
    sweep.add_argument("--plugin", action="append", metavar="FILE.py|MODULE", help=PLUGIN_HELP)
    sweep.add_argument("--arm", action="append", metavar="NAME[=JSON]",
                       help="add an arm to the preset's: NAME (credit NAME, default options) or NAME={fields}")
    sweep.set_defaults(handler=_cmd_sweep)


def _cmd_gate(args) -> None:
    from jaxcredit.train.gate import gate_config, gate_text, run_gate

    config = gate_config(count=args.count, family=args.family, fields=_parse_sets(args.set))
    record = run_gate(config, args.out, threshold=args.threshold, resume=args.resume,
                      progress=not args.no_progress)
    if args.json:
        print_json(record)
    else:
        print(gate_text(record, args.out))


def add_gate(commands) -> None:
    gate = commands.add_parser("gate", help="learnability gate: imitate the optimal policy (objective hard, "
                                            "tie-broken) and score held-out greedy success against a threshold")
    gate.add_argument("--out", required=True, help="run directory (gate.json is written into it)")
    gate.add_argument("--count", type=integer(2, 5), default=4, help="numbers per problem (default 4)")
    gate.add_argument("--family", default="default", help="arithmetic problem family (default: default)")
    gate.add_argument("--threshold", type=float, default=0.9, help="greedy success to pass (default 0.9)")
    gate.add_argument("--set", action="append", metavar="FIELD=VALUE",
                      help="any TrainConfig field (JSON value), e.g. budget=2000 or the policy input")
    gate.add_argument("--resume", action="store_true", help="continue the gate in --out")
    gate.add_argument("--no-progress", action="store_true", help="no progress bar")
    gate.add_argument("--json", action="store_true", help="print gate.json's record as one JSON object")
    gate.set_defaults(handler=_cmd_gate)


def _cmd_pack(args) -> None:
    from jaxcredit.train.pack import pack_sweep

    packed = pack_sweep(args.sweep, args.out)
    result = {**packed, "out": args.out}
    if args.json:
        print_json(result)
        return
    print(f"packed {args.sweep} into {args.out}: {len(packed['finished'])} finished cells (no checkpoints), "
          f"{len(packed['unfinished'])} unfinished (with their checkpoints), {packed['bytes'] / 2**20:.1f} MiB; "
          f"resume: copy it to a working directory and run the same sweep command with --resume there")


def add_pack(commands) -> None:
    pack = commands.add_parser("pack", help="copy a sweep's or suite's resumable state, small enough to commit: "
                                            "finished cells without checkpoints, unfinished ones with theirs")
    pack.add_argument("sweep", help="sweep or suite directory (it may be running)")
    pack.add_argument("--out", required=True, help="a new directory")
    pack.add_argument("--json", action="store_true", help="print the result as one JSON object")
    pack.set_defaults(handler=_cmd_pack)


def _cmd_status(args) -> None:
    from jaxcredit.output_dirs import infer_kind
    from jaxcredit.train.status import format_status, sweep_status

    if infer_kind(args.sweep) == "suite":
        from jaxcredit.suite.status import format_suite_status, suite_status

        status = suite_status(args.sweep)
        if args.json:
            print_json(status)
        else:
            print(format_suite_status(status))
        return
    status = sweep_status(args.sweep)
    if args.json:
        print_json({"name": status["name"], "phases": [
            {"phase": p["phase"], "runs": [dataclasses.asdict(r) for r in p["runs"]]} for p in status["phases"]]})
        return
    print(format_status(status))


def add_status(commands) -> None:
    status = commands.add_parser("status", help="where a sweep or suite stands, read from its directory (it may "
                                                "be running): runs finished, running, stopped, not started; progress "
                                                "and time left of the running ones; a suite's per experiment")
    status.add_argument("sweep", help="sweep or suite directory")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")
    status.set_defaults(handler=_cmd_status)


def _cmd_suite(args) -> None:
    from jaxcredit.suite.experiments import BUILTIN_ARMS, QUICK_ARMS, suite_arms
    from jaxcredit.suite.run import run_suite

    plugins = load_plugins(args.plugin)  # their arms can be named in --arms
    default = QUICK_ARMS if args.quick else tuple(BUILTIN_ARMS)
    arms = suite_arms([a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else default)
    experiments = tuple(e.strip() for e in args.experiments.split(",") if e.strip()) if args.experiments else ()
    suite = "quick" if args.quick else "full"
    card = run_suite(args.out, suite=suite, arms=arms, experiments=experiments, resume=args.resume,
                     progress=not args.no_progress, backend=args.backend, ray_address=args.ray_address,
                     command="jaxcredit " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["suite"] else "jaxcredit suite",
                     plugins=plugins)
    if args.json:
        print_json(card)
    else:
        print(open(os.path.join(args.out, "report.md"), encoding="utf-8").read().split("## Scores per tag")[0].rstrip())
        print(f"suite {suite}: scorecard.json, report.md and scorecard.png in {args.out}")


def add_suite(commands) -> None:
    from jaxcredit.train import BACKENDS

    suite = commands.add_parser("suite", help="the credit-assignment suite: every arm's labels against exact values "
                                              "and its learning at equal attempts and equal cost, scored in [0, 1]")
    suite.add_argument("--out", required=True, help="suite directory")
    suite.add_argument("--quick", action="store_true",
                       help="the quick sizes (2 seeds, small budgets; minutes on a CPU)")
    suite.add_argument("--arms", default=None, metavar="A,B,...",
                       help="arms to score (default: every built-in suite arm; --quick: outcome, mc, exact); a name "
                            "that is not a built-in suite arm is a registered credit arm with its default options")
    suite.add_argument("--plugin", action="append", metavar="FILE.py|MODULE", help=PLUGIN_HELP)
    suite.add_argument("--experiments", default=None, metavar="E,F,...", help="run only these experiments")
    suite.add_argument("--resume", action="store_true", help="continue the suite in --out")
    suite.add_argument("--no-progress", action="store_true", help="no progress lines or bars")
    suite.add_argument("--json", action="store_true", help="print the scorecard as one JSON object")
    suite.add_argument("--backend", default="local", choices=BACKENDS,
                       help="where the learning experiments' cells run: local or ray")
    suite.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local Ray)")
    suite.set_defaults(handler=_cmd_suite)
