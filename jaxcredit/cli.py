"""The `jaxcredit` command line: the one module that may import every package.

Each subcommand is a `_cmd_*` function registered in `build_parser`; the work is the library's
(problems and actions by name: `jaxcredit.envs.parse_problem`, `replay_action_names`; policy
checkpoints: `jaxcredit.checkpoint.load_policy_checkpoint`), the CLI parses and prints. Bad input (a bad
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

from jaxcredit.credit_arms import credit_names
from jaxcredit.env import MAX_TURNS
from jaxcredit.output_dirs import check_kind
from jaxcredit.plugins import load_plugins
from jaxcredit.rundir_io import RunLock, check_writable_dir, dumps_strict, read_json
from jaxcredit.tracking import TRACKERS
from jaxcredit.validation import INT32_MAX, parse_int

LOG_HELP = ("log metrics.jsonl's scalars per seed to a tracker (repeatable): tensorboard event files or a "
            "local MLflow SQLite store in the run directory; needs jaxcredit[tracking]")
PLUGIN_HELP = ("import a Python file or module that registers credit arms (jaxcredit.register_credit_arm) "
               "before the config is read (repeatable)")


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


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _print_json(obj) -> None:
    """One strict JSON object on stdout (NaN and infinity become null with a reason)."""
    sys.stdout.write(dumps_strict(obj) + "\n")


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
    if args.suite != "accelerator" and (args.out is not None or args.time_cap is not None):
        raise CommandError("--out and --time-cap are options of bench accelerator only")
    if args.plot is not None:
        check_writable_dir(args.plot, "--plot")
    result = SUITES[args.suite](args)
    if args.plot is not None:
        from jaxcredit.benchmarks import save_plots

        for path in save_plots(result, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        _print_json(result)


def _problem(args, env=None, overrides=None):
    """`(env, problem)` of the problem options `play` and `solve` share (`jaxcredit.envs.parse_problem`)."""
    from jaxcredit.envs import parse_problem

    return parse_problem(args.env, tape=args.tape, numbers=args.numbers, target=args.target, family=args.family,
                         seed=args.seed, env=env, overrides=overrides)


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
        _print_json(summary)
    else:
        mean = summary["mean"]
        print(f"{config.credit} on {config.env}: final greedy success {mean['final_success']:.3f}, "
              f"average {mean['average_success']:.3f} (start {mean['initial_success']:.3f}), "
              f"{mean['total_env_steps']:.0f} env steps; run directory {args.out}")


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
        _print_json(table)
    else:
        print(format_table(table))
        print(f"sweep {spec.name}: run directories, sweep.json, table.md and report.md in {args.out}")

def _cmd_gate(args) -> None:
    from jaxcredit.train.gate import gate_config, gate_text, run_gate

    config = gate_config(count=args.count, family=args.family, fields=_parse_sets(args.set))
    record = run_gate(config, args.out, threshold=args.threshold, resume=args.resume,
                      progress=not args.no_progress)
    if args.json:
        _print_json(record)
    else:
        print(gate_text(record, args.out))


def _cmd_greedy(args) -> None:
    from jaxcredit.train.reference_greedy import greedy_text, write_reference_greedy

    path, record = write_reference_greedy(args.sweep)
    if args.json:
        _print_json(record)
    else:
        print(greedy_text(record) + f"\nwrote {path}")


def _cmd_pack(args) -> None:
    from jaxcredit.train.pack import pack_sweep

    packed = pack_sweep(args.sweep, args.out)
    result = {**packed, "out": args.out}
    if args.json:
        _print_json(result)
        return
    print(f"packed {args.sweep} into {args.out}: {len(packed['finished'])} finished cells (no checkpoints), "
          f"{len(packed['unfinished'])} unfinished (with their checkpoints), {packed['bytes'] / 2**20:.1f} MiB; "
          f"resume: copy it to a working directory and run the same sweep command with --resume there")


def _cmd_status(args) -> None:
    from jaxcredit.output_dirs import infer_kind
    from jaxcredit.train.status import format_status, sweep_status

    if infer_kind(args.sweep) == "suite":
        from jaxcredit.suite.status import format_suite_status, suite_status

        status = suite_status(args.sweep)
        if args.json:
            _print_json(status)
        else:
            print(format_suite_status(status))
        return
    status = sweep_status(args.sweep)
    if args.json:
        _print_json({"name": status["name"], "phases": [
            {"phase": p["phase"], "runs": [dataclasses.asdict(r) for r in p["runs"]]} for p in status["phases"]]})
        return
    print(format_status(status))


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
        _print_json(card)
    else:
        print(open(os.path.join(args.out, "report.md"), encoding="utf-8").read().split("## Scores per tag")[0].rstrip())
        print(f"suite {suite}: scorecard.json, report.md and scorecard.png in {args.out}")


# ----- analysis: audit, report, compare --------------------------------------------------------
def _audit_policy(args):
    """`(env, policy_fn, params, description)` of the policy named on the command line."""
    import jax

    from jaxcredit.envs import make

    if args.initial:
        return _initial_policy(args)
    if args.checkpoint is not None:
        from jaxcredit.checkpoint import load_policy_checkpoint

        if args.policy != "network":
            raise CommandError("--checkpoint and --policy uniform exclude each other")
        loaded = load_policy_checkpoint(args.checkpoint, make=make, seed_index=args.seed_index)
        return loaded.env, loaded.policy_fn, loaded.params, f"checkpoint {loaded.path}"
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
    from jaxcredit.policy import PolicyConfig, make_policy

    network = make_policy(PolicyConfig(), env)
    return env, network.policy_fn, network.init_fn(jax.random.key(args.seed)), f"untrained network (seed {args.seed})"


def _initial_policy(args):
    """`_audit_policy` for `--initial`: the untrained network run directory `--checkpoint` started
    seed `--seed-index` from, rebuilt from its config.json."""
    from jaxcredit.train.config import config_from_dict
    from jaxcredit.train.loop import initial_policy

    if args.checkpoint is None or args.policy != "network":
        raise CommandError("--initial needs --checkpoint RUN_DIR (a run directory) and no --policy uniform")
    config_path = os.path.join(args.checkpoint, "config.json")
    if not os.path.isfile(config_path):
        raise CommandError(f"--initial needs a run directory: no config.json in {args.checkpoint}")
    try:
        config = config_from_dict(read_json(config_path))
        env, policy_fn, params = initial_policy(config, args.seed_index)
    except (ValueError, TypeError) as error:
        raise CommandError(f"{config_path}: {error}") from None
    run = args.checkpoint.rstrip(os.sep)
    return env, policy_fn, params, f"untrained network: the initial parameters of {run} seed {args.seed_index}"


def _cmd_audit(args) -> None:
    import jax

    from jaxcredit.analysis import audit_markdown_summary, run_audit, write_audit

    if args.what is not None:
        return _cmd_audit_transcripts(args)
    if args.out:
        check_writable_dir(args.out)  # before the work, not after it
        check_kind(args.out, "audit", "audit")
    env, policy_fn, params, description = _audit_policy(args)
    with RunLock(args.out, "audit") if args.out else contextlib.nullcontext():  # --out is ours from the start
        audit = run_audit(env, policy_fn, params, jax.random.key(args.seed), num_states=args.states,
                          num_continuations=args.continuations, chunk_states=args.chunk_states,
                          progress=not args.no_progress, mode=args.mode, num_completions=args.completions)
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
    from jaxcredit.analysis import write_report, write_results_page

    if args.page is not None:
        return _cmd_report_page(args, write_results_page)
    if args.threshold is not None:
        raise CommandError("--threshold goes with --page")
    path = write_report(args.path)
    if args.json:
        _print_json({"report": path})
    else:
        print(f"wrote {path}")


def _cmd_report_page(args, write_results_page) -> None:
    from jaxcredit.train import PRESETS

    spec_path = os.path.join(args.path, "sweep_spec.json")
    spec = read_json(spec_path) if os.path.exists(spec_path) else {}
    sweep = None
    if spec.get("name") in PRESETS:  # how to run the sweep again, when it is a preset
        sweep = f"jaxcredit sweep --preset {spec['name']} --out {args.path.rstrip('/')}" + (
            f" --seeds {spec['num_seeds']}" if spec.get("num_seeds") is not None else "")
        sweep += "".join(f" --plugin {plugin}" for plugin in spec.get("plugins", []))
        preset_arms = PRESETS[spec["name"]].arms
        sweep += "".join(f" --arm '{arm}={json.dumps(fields)}'" for arm, fields in spec.get("arms", {}).items()
                         if arm not in preset_arms)
    kwargs = {} if args.threshold is None else {"threshold": args.threshold}
    page = write_results_page(args.path, args.page, sweep_command=sweep, **kwargs)
    if args.json:
        _print_json({"page": page, "files": args.page[: -len(".md")]})
    else:
        print(f"wrote {page} and its files in {args.page[: -len('.md')]}/")


def _cmd_compare(args) -> None:
    from jaxcredit.analysis import compare_arms

    result = compare_arms(args.sweep, args.arm, args.baseline, args.regime)
    if args.json:
        _print_json(result)
        return
    from jaxcredit.stats import interval_description

    matched = {"matched": " (the baseline given exactly the arm's total env steps)",
               "matched-policy-evals": " (the baseline given exactly the arm's total policy evaluations)"}
    matched = matched.get(args.regime, "")
    print(f"{args.arm} vs {args.baseline}, regime {args.regime}{matched}:")
    for measure in ("final_success", "average_success"):
        d = result[measure]
        interval = "n/a" if d["low"] is None else f"[{d['low']:+.3f}, {d['high']:+.3f}]"
        p_value = "n/a" if d["p_value"] is None else f"{d['p_value']:.3f}"
        print(f"  {measure}: {d['arm_mean']:.3f} vs {d['baseline_mean']:.3f}, diff {d['mean_diff']:+.3f} "
              f"{interval}, paired t-test p = {p_value}, wins {d['arm_wins']}/{d['num_seeds']} "
              f"(losses {d['baseline_wins']}, ties {d['ties']})")
    print(f"  interval: {interval_description(result['final_success']['num_seeds'])}")


def _cmd_snr(args) -> None:
    from jaxcredit.analysis.snr import (
        SnrConfig,
        decision_counts,
        format_table,
        plot_ratio,
        run_snr,
        tabular_policy,
    )
    from jaxcredit.envs import make
    from jaxcredit.policy import PolicyConfig, make_policy

    if args.env != "routine":
        raise CommandError(f"snr measures the routine environment, not {args.env!r}")
    try:
        densities = tuple(float(x) for x in args.density.split(","))
    except ValueError:
        raise CommandError(f"--density must be comma-separated numbers, got {args.density!r}") from None
    config = SnrConfig(densities=densities, estimators=tuple(args.estimators.split(",")), num_batches=args.batches,
                       num_blocks=args.blocks, problems_per_batch=args.problems, group_size=args.group_size,
                       baseline=args.baseline, mc_continuations=args.continuations, seed=args.seed)
    network = PolicyConfig(d_model=args.d_model, num_layers=args.num_layers, num_heads=min(4, args.d_model),
                           mlp_dim=4 * args.d_model)
    if args.decisions:
        return _snr_fixed_decisions(args, config, network)
    if args.seeds > 1:
        raise CommandError("--seeds needs --decisions (the fixed-horizon measurement has one --seed)")
    env_config = dict(horizon=args.horizon or 16, num_choices=args.num_choices, failure=args.failure,
                      survival=args.survival, placement=args.placement, density=1.0, cue=args.cue)
    if args.checkpoint:
        from jaxcredit.checkpoint import load_policy_checkpoint

        loaded = load_policy_checkpoint(args.checkpoint, make=make, env_name="routine")
        policy_fn, params, env = loaded.policy_fn, loaded.params, loaded.env
        policy = "checkpoint"
    else:
        env = make("routine", **env_config)
        policy = args.policy
        if policy == "tabular":
            init_fn, policy_fn = tabular_policy(env)
        elif policy == "network":
            init_fn, policy_fn = make_policy(network, env)[:2]
        else:
            raise CommandError(f"--policy must be network or tabular, got {policy!r}")
        decision_counts(densities, env.horizon)  # before the network is built
        import jax

        params = init_fn(jax.random.key(args.seed))
    summary = run_snr(env, policy_fn, params, config, policy=policy)
    if args.out:
        from jaxcredit.rundir_io import make_dirs, write_json_atomic

        make_dirs(check_writable_dir(args.out))
        write_json_atomic(os.path.join(args.out, "snr.json"), summary)
        summary["plot"] = plot_ratio(summary, os.path.join(args.out, "snr.png"),
                                     title=f"routine H={env.horizon} C={env.num_choices} {env.failure}, {policy}")
    if args.json:
        _print_json(summary)
    else:
        print(format_table(summary))
        print(f"({summary['seconds']} s)" + (f"; wrote {args.out}/snr.json and snr.png" if args.out else ""))


def _snr_fixed_decisions(args, config, network) -> None:
    """`snr --decisions D`: D decisions at every density, H = D / ρ, over `--seeds` seeds."""
    from jaxcredit.analysis.snr_decisions import fixed_decision_envs, format_fixed_decisions, run_fixed_decisions
    from jaxcredit.envs import make
    from jaxcredit.policy import make_policy, task_sizes

    if args.horizon:
        raise CommandError("--horizon and --decisions exclude each other: with --decisions the horizon is D / density")
    seeds = list(range(args.seed, args.seed + args.seeds))
    env_config = dict(num_choices=args.num_choices, failure=args.failure, survival=args.survival,
                      placement=args.placement, cue=args.cue)
    options = {"policy": args.policy}
    if args.checkpoint:
        from jaxcredit.checkpoint import load_policy_checkpoint

        loaded = load_policy_checkpoint(args.checkpoint, make=make, env_name="routine")
        env_config = {**{k: v for k, v in loaded.env.config().items() if k not in ("horizon", "density", "decisions")},
                      "placement": args.placement}
        options = {"policy": "checkpoint", "policy_fn": loaded.policy_fn, "params": loaded.params}
    envs = fixed_decision_envs(decisions=args.decisions, densities=config.densities, **env_config)
    if args.checkpoint and task_sizes(envs[0]) != task_sizes(loaded.env):
        raise CommandError(f"checkpoint network reads {task_sizes(loaded.env)}, the fixed-decision grid needs "
                           f"{task_sizes(envs[0])} (train it with the same decisions, cue and vocab_horizon)")
    if options["policy"] == "network":
        options["init_fn"], options["policy_fn"] = make_policy(network, envs[0])[:2]
    elif options["policy"] not in ("tabular", "checkpoint"):
        raise CommandError(f"--policy must be network or tabular, got {args.policy!r}")
    summary = run_fixed_decisions(envs, config, seeds=seeds, **options)
    if args.out:
        from jaxcredit.rundir_io import make_dirs, write_json_atomic

        make_dirs(check_writable_dir(args.out))
        write_json_atomic(os.path.join(args.out, "snr.json"), summary)
    if args.json:
        _print_json(summary)
    else:
        print(format_fixed_decisions(summary))
        print(f"({summary['seconds']} s)" + (f"; wrote {args.out}/snr.json" if args.out else ""))


def _add_snr_command(commands) -> None:
    snr = commands.add_parser("snr", help="gradient SNR of outcome, exact and mc credit across decision densities")
    snr.add_argument("--env", default="routine", help="routine (the only environment with a density)")
    snr.add_argument("--density", default="0.05,0.1,0.2,0.4,0.8,1.0", help="comma-separated densities in (0, 1]")
    snr.add_argument("--horizon", type=_integer(1), default=None, help="turns per episode (default 16)")
    snr.add_argument("--decisions", type=_integer(0), default=0,
                     help="D > 0: D decisions at every density, horizon D / density (routine turns inserted)")
    snr.add_argument("--seeds", type=_integer(1), default=1, help="with --decisions: seeds --seed, --seed + 1, ...")
    snr.add_argument("--cue", default="right", help="right (decision turns show the right action) or index")
    snr.add_argument("--d-model", type=_integer(1), default=64, help="untrained network's width (default 64)")
    snr.add_argument("--num-layers", type=_integer(1), default=2, help="untrained network's blocks (default 2)")
    snr.add_argument("--num-choices", type=_integer(2), default=2, help="actions per turn (default 2)")
    snr.add_argument("--failure", default="fatal", help="fatal or probabilistic")
    snr.add_argument("--survival", type=float, default=0.5, help="probabilistic: success kept per wrong decision")
    snr.add_argument("--placement", default="random", help="random or fixed decision turns")
    snr.add_argument("--checkpoint", default=None, help="a policy checkpoint directory (default: untrained)")
    snr.add_argument("--policy", default="network", help="untrained policy: network (default) or tabular")
    snr.add_argument("--estimators", default="outcome,exact,mc",
                     help="comma-separated: outcome,exact,mc (and outcome-grpo, outcome-rloo, outcome-mean)")
    snr.add_argument("--baseline", default="grpo", help="outcome baseline: grpo, rloo or mean")
    snr.add_argument("--batches", type=_integer(2), default=256, help="independent batches per density")
    snr.add_argument("--blocks", type=_integer(2), default=8, help="jackknife blocks (divides --batches)")
    snr.add_argument("--problems", type=_integer(1), default=8, help="problems per batch")
    snr.add_argument("--group-size", type=_integer(2), default=4, help="attempts per problem")
    snr.add_argument("--continuations", type=_integer(1), default=4, help="mc: continuations per forced action")
    snr.add_argument("--seed", type=_integer(), default=0, help="seed of the batches and the initial policy")
    snr.add_argument("--out", default=None, help="directory for snr.json and snr.png")
    snr.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    snr.set_defaults(handler=_cmd_snr)


def _rank_policy_paths(spec: str) -> tuple[str, list[str]]:
    """`NAME=DIR` or `DIR` -> `(name, checkpoint directories)`: DIR a policy checkpoint, or a run
    directory (a sweep cell) whose `policies/seed-k` are all taken, in seed order."""
    name, sep, path = spec.partition("=")
    if not sep or not name or os.sep in name:
        name, path = spec.rstrip(os.sep), spec
    if not name:
        raise CommandError(f"--policy {spec!r}: give NAME=DIR or DIR")
    if os.path.exists(os.path.join(path, "_CHECKPOINT_METADATA")):
        return name, [path]
    policies = os.path.join(path, "policies")
    seeds = sorted((entry for entry in os.listdir(policies) if entry.startswith("seed-")
                    and entry[5:].isdigit()), key=lambda entry: int(entry[5:])) if os.path.isdir(policies) else []
    if not seeds:
        raise CommandError(f"--policy {spec!r}: {path} is neither a policy checkpoint nor a run directory with "
                           "policies/seed-k")
    return name, [os.path.join(policies, seed) for seed in seeds]


def _cmd_rank(args) -> None:
    from jaxcredit.analysis.ranking import run_ranking
    from jaxcredit.analysis.ranking_report import plot_ranking, ranking_markdown
    from jaxcredit.checkpoint import load_policy_checkpoint
    from jaxcredit.envs import make

    if args.out:
        check_writable_dir(args.out)  # before the work, not after it
    policies = {}
    for spec in args.policy:
        name, paths = _rank_policy_paths(spec)
        if name in policies:
            raise CommandError(f"--policy: the name {name!r} is given twice")
        policies[name] = [load_policy_checkpoint(path, make=make) for path in paths]
    result = run_ranking(policies, seed=args.seed, episodes=args.episodes, continuations=args.continuations,
                         fit_steps=args.fit_steps, progress=not args.no_progress)
    markdown = ranking_markdown(result)
    if args.out:
        from jaxcredit.rundir_io import make_dirs, write_json_atomic, write_text_atomic

        make_dirs(args.out)
        write_json_atomic(os.path.join(args.out, "ranking.json"), result)
        write_text_atomic(os.path.join(args.out, "ranking.md"), markdown)
        plot_ranking(result, os.path.join(args.out, "ranking.png"))
    if args.json:
        _print_json(result)
    else:
        print(markdown)
        if args.out:
            print(f"wrote {args.out}/ranking.json, ranking.md and ranking.png")


def _add_rank_command(commands) -> None:
    rank = commands.add_parser("rank", help="ranking study: progress labels (soft, hard, learned) against exact "
                                            "counterfactual credit under each replacement, per action class")
    rank.add_argument("--policy", action="append", required=True, metavar="[NAME=]DIR",
                      help="a policy checkpoint, or a run directory (sweep cell: all its policies/seed-k, pooled); "
                           "repeatable, e.g. outcome=SWEEP/attempts/outcome")
    rank.add_argument("--episodes", type=_integer(1), default=256, help="episodes per checkpoint (default 256)")
    rank.add_argument("--continuations", type=_integer(1), default=8,
                      help="N, continuations per state of the soft and hard labels (default 8)")
    rank.add_argument("--fit-steps", type=_integer(0), default=200,
                      help="Adam steps fitting the learned label's value head (default 200)")
    rank.add_argument("--seed", type=_integer(), default=0, help="seed of episodes and continuations")
    rank.add_argument("--out", help="write ranking.json, ranking.md and ranking.png here")
    rank.add_argument("--no-progress", action="store_true", help="no progress bar")
    rank.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    rank.set_defaults(handler=_cmd_rank)


def _add_analysis_commands(commands, *, regimes) -> None:
    _add_snr_command(commands)
    _add_rank_command(commands)
    audit = commands.add_parser("audit", help="label reliability audit of a policy's Monte Carlo action credit; "
                                              "`audit transcripts FILE --out DIR`: audit an LM agent's transcripts")
    audit.add_argument("what", nargs="?", choices=["transcripts"], help="transcripts: audit FILE (JSONL transcripts)")
    audit.add_argument("file", nargs="?", help="with transcripts: the JSONL file (schema: docs/agents.md)")
    audit.add_argument("--checkpoint", help="policy checkpoint (or run directory: its policies/seed-I)")
    audit.add_argument("--seed-index", type=_integer(), default=0, help="which seed of a run directory (default 0)")
    audit.add_argument("--initial", action="store_true",
                       help="with --checkpoint RUN_DIR: the untrained network the run started that seed from "
                            "(rebuilt from its config.json; paired seeds share it), not its final policy")
    audit.add_argument("--env", default="mad",
                       help="without --checkpoint: mad, arithmetic, routine or umbrella (default mad)")
    audit.add_argument("--env-config", help='without --checkpoint: JSON overrides, e.g. \'{"length": 5}\'')
    audit.add_argument("--policy", default="network", choices=["network", "uniform"],
                       help="without --checkpoint: network (untrained) or uniform")
    audit.add_argument("--states", type=_integer(1), default=605, help="sampled states, one per episode (default 605)")
    audit.add_argument("--mode", default="both", choices=["forced", "sampled", "both"],
                       help="forced: K continuations per legal action; sampled: completions under the policy "
                            "itself (the study's protocol); both (default): both on the same states")
    audit.add_argument("--continuations", type=_integer(2), default=64,
                       help="forced mode: K per action, two halves (default 64)")
    audit.add_argument("--completions", type=_integer(2), default=57,
                       help="sampled mode: completions per state, two halves (default 57: the study's 34,624 over "
                            "605 states)")
    audit.add_argument("--chunk-states", type=_integer(1), default=64, help="states per continuation call")
    audit.add_argument("--seed", type=_integer(), default=0, help="seed of problems, episodes and continuations")
    audit.add_argument("--out", help="write audit.json, card, plots and report.md here")
    audit.add_argument("--no-progress", action="store_true", help="no progress bar")
    audit.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    audit.set_defaults(handler=_cmd_audit)

    report = commands.add_parser("report", help="write report.md (tables, CA-ID cards, plots) for a sweep, run "
                                                "or audit directory")
    report.add_argument("path", help="sweep, run or audit directory")
    report.add_argument("--page", help="instead of report.md: write the results page PAGE.md of a finished sweep "
                                       "and its files in PAGE/ (tables, summary.json, plots, cards, audits, and "
                                       "record/: the sweep's files without checkpoints, from which the page "
                                       "regenerates); nothing is written into the sweep")
    report.add_argument("--threshold", type=float, help="with --page: the success threshold of the time-to-"
                                                         "threshold table (default 0.9)")
    report.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    report.set_defaults(handler=_cmd_report)

    compare = commands.add_parser("compare", help="paired comparison of two arms of a sweep across seeds")
    compare.add_argument("sweep", help="sweep directory")
    compare.add_argument("--arm", required=True, help="the arm")
    compare.add_argument("--baseline", default="outcome", help="the arm compared against (default outcome)")
    compare.add_argument("--regime", default="attempts", choices=regimes,
                         help="attempts, matched (--arm a label arm) or fixed-steps (default attempts)")
    compare.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    compare.set_defaults(handler=_cmd_compare)

# ----- solve: exact values of one position ------------------------------------------------------
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


def _solve_values(env, problem, state, *, policy: str, loaded, turns_left: int):
    """float32 `[T + 1, S]`, `[T + 1, S, A]`: exact values under `policy` (uniform, optimal, or
    the `loaded` checkpoint's network) with `turns_left` turns left."""
    import dataclasses

    import jax

    from jaxcredit.solver_values import reference_values

    if loaded is None:
        values, _ = jax.jit(reference_values, static_argnames=("env", "policy", "horizon"))(
            env, problem, policy=policy, horizon=turns_left)
        return values.v, values.q
    policy_fn, params = loaded.policy_fn, loaded.params
    if turns_left > 0:  # the network sees this position with exactly `turns_left` turns left
        env = dataclasses.replace(env, max_turns=int(state.turn) + turns_left)
    values, _ = jax.jit(reference_values, static_argnames=("env", "policy", "horizon", "policy_fn"))(
        env, problem, policy="network", horizon=turns_left, policy_fn=policy_fn, params=params)
    return values.v, values.q


def _cmd_solve(args) -> None:
    from jaxcredit.envs import replay_action_names

    loaded = _load_solve_policy(args)
    env, problem = _problem(args, env=None if loaded is None else loaded.env)
    try:
        state = replay_action_names(env, env.init_problem(problem), args.actions)
    except ValueError as error:
        raise CommandError(f"--actions: {error}") from None
    turns_left = env.max_turns - int(state.turn) if args.turns is None else args.turns
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


# ----- agents: play an LM agent through a protocol; audit its transcripts -----------------------
def _cmd_agent_play(args) -> None:
    from jaxcredit.agents import draw_problems, make_agent, play_into
    from jaxcredit.envs import make

    env = make(args.env, **({"family": args.family} if args.family else {}),
               **({} if args.turns is None else {"max_turns": args.turns}))
    agent, name = make_agent(args.agent, seed=args.seed, base_url=args.base_url, model=args.model,
                             **({"api_key_env": args.api_key_env, "timeout": args.timeout, "retries": args.retries,
                                 "max_reply_bytes": args.max_reply_bytes,
                                 "temperature": args.temperature, "max_tokens": args.max_tokens, "system": args.system}
                                if args.agent == "http" else {}))
    summary = play_into(args.out, env, agent, draw_problems(env, args.problems, args.seed), agent_name=name,
                        protocol=args.protocol, progress=not args.no_progress)
    if args.json:
        _print_json(summary)
    else:
        print(f"{name} on {env.name} ({args.protocol} protocol): solved {summary['solved']} of {summary['played']} "
              f"played ({summary['problems']} drawn); transcripts in {summary['transcripts']}")
    if summary["error"]:
        raise CommandError(f"the agent failed: {summary['error']} (the transcripts keep what was played)")


def _cmd_audit_transcripts(args) -> None:
    from jaxcredit.analysis.lm_report import audit_transcript_file, transcript_audit_markdown

    if args.file is None or not args.out:
        raise CommandError("audit transcripts needs FILE and --out DIR")
    check_kind(check_writable_dir(args.out), "transcript-audit", "audit transcripts")
    bars = []  # started at the first audited transcript, so a refused file gives only its one line

    def progress() -> None:
        if not bars:
            from tqdm import tqdm

            bars.append(tqdm(desc="audit transcripts", unit="transcript", file=sys.stderr))
        bars[0].update(1)

    try:
        audit = audit_transcript_file(args.file, args.out, progress=None if args.no_progress else progress)
    finally:
        for bar in bars:
            bar.close()
    if args.json:
        _print_json({"summary": audit["summary"], "transcripts": audit["transcripts"], "report": audit["report"]})
    else:
        print(transcript_audit_markdown(audit, source=args.file))
        print(f"report {audit['report']}; per-turn labels and credit_labels.jsonl beside it")


def _add_agent_commands(commands) -> None:
    agent = commands.add_parser("agent", help="play a language-model agent through a text protocol")
    agent_commands = agent.add_subparsers(dest="agent_command", required=True, metavar="COMMAND")
    play = agent_commands.add_parser("play", help="play N problems, write transcripts JSONL to --out")
    play.add_argument("--env", default="arithmetic", choices=["arithmetic", "mad"], help="which environment")
    play.add_argument("--family", help="arithmetic problem family (default: default)")
    play.add_argument("--protocol", default="text", choices=["text", "menu"], help="text commands or lettered menu")
    play.add_argument("--agent", required=True, choices=["http", "uniform", "optimal"], help="which agent")
    play.add_argument("--base-url", help="http: the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    play.add_argument("--model", help="http: the model name")
    play.add_argument("--api-key-env", default="OPENAI_API_KEY", help="http: environment variable with the API key")
    play.add_argument("--timeout", type=_seconds, default=60.0,
                      help="http: seconds for each whole request: connect, send and read the full reply (default 60)")
    play.add_argument("--max-reply-bytes", type=_integer(1), default=65536,
                      help="http: the longest reply in bytes (default 65536); a longer one is an invalid reply, "
                           "played as a refused turn and recorded with its reason")
    play.add_argument("--retries", type=_integer(0, 100), default=2, help="http: retries per request (default 2)")
    play.add_argument("--temperature", type=float, default=0.0, help="http: sampling temperature (default 0)")
    play.add_argument("--max-tokens", type=_integer(1), default=256, help="http: max tokens per reply")
    play.add_argument("--system", help="http: a system message")
    play.add_argument("--problems", type=_integer(1), default=10, help="how many problems (default 10)")
    play.add_argument("--seed", type=_integer(), default=0, help="seed of the problems (and the uniform agent)")
    play.add_argument("--turns", type=_integer(1, MAX_TURNS), help="max_turns per episode")
    play.add_argument("--out", required=True, help="directory for transcripts.jsonl and summary.json")
    play.add_argument("--no-progress", action="store_true", help="no progress bar")
    play.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    play.set_defaults(handler=_cmd_agent_play)


def _add_problem_options(parser, environments) -> None:
    """The problem syntax `play` and `solve` share (`jaxcredit.envs.parse_problem`)."""
    parser.add_argument("env", choices=environments, help="which environment")
    parser.add_argument("--tape", help='mad: the tape, e.g. "_ t04 _ _ t09 _ _ _"')
    parser.add_argument("--numbers", type=_integer(), nargs="+", metavar="N", help="arithmetic: the numbers")
    parser.add_argument("--target", type=_integer(), metavar="N", help="arithmetic: the target")
    parser.add_argument("--family", help="arithmetic: the problem family to draw from (default: default)")
    parser.add_argument("--seed", type=_integer(), default=None,
                        help="without --tape or --numbers: which problem to draw (default 0)")


def build_parser() -> argparse.ArgumentParser:
    """The `jaxcredit` argument parser (every subcommand and its options)."""
    from jaxcredit.envs import PROBLEM_ENVIRONMENTS
    from jaxcredit.rundir_io import MATCHED_COUNTERS, REGIMES, RENAMED_REGIMES
    from jaxcredit.train import BACKENDS, PRESETS

    parser = _Parser(prog="jaxcredit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    bench = commands.add_parser("bench", help="measure ours against baselines, side by side")
    bench.add_argument("suite", help="which suite: envs, solver, branch, train, adapter, all, or accelerator "
                                     "(every suite at accelerator sizes into one JSON file, --out)")
    bench.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bench.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench.add_argument("--plot", metavar="DIR", default=None, help="save the scaling curves as PNG files in DIR")
    bench.add_argument("--sizes", type=_batch_sizes, default=None, help=argparse.SUPPRESS)  # tests: tiny batches
    bench.add_argument("--out", metavar="FILE", default=None, help="accelerator: the JSON file to write")
    bench.add_argument("--time-cap", type=_integer(1, 3600), default=None, metavar="SECONDS",
                       help="accelerator: total time cap (default 450; stages past it are skipped and recorded)")
    bench.set_defaults(handler=_cmd_bench)

    play = commands.add_parser("play", help="play one episode through the text protocol on stdin")
    _add_problem_options(play, PROBLEM_ENVIRONMENTS)
    play.add_argument("--turns", type=_integer(None, None), help="max_turns for this episode")
    play.set_defaults(handler=_cmd_play)

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
    train.add_argument("--num-processes", type=_integer(1), default=None, help="how many processes (distributed)")
    train.add_argument("--process-id", type=_integer(), default=None, help="this process, 0 .. N-1 (distributed)")
    train.set_defaults(handler=_cmd_train)

    sweep = commands.add_parser("sweep", help="a budget-matched sweep of arms x regimes x seeds")
    sweep.add_argument("--preset", required=True, choices=list(PRESETS), help="which named sweep")
    sweep.add_argument("--out", required=True, help="sweep directory")
    sweep.add_argument("--seeds", type=_integer(1), default=None, help="override the preset's number of seeds")
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

    gate = commands.add_parser("gate", help="learnability gate: imitate the optimal policy (objective hard, "
                                            "tie-broken) and score held-out greedy success against a threshold")
    gate.add_argument("--out", required=True, help="run directory (gate.json is written into it)")
    gate.add_argument("--count", type=_integer(2, 5), default=4, help="numbers per problem (default 4)")
    gate.add_argument("--family", default="default", help="arithmetic problem family (default: default)")
    gate.add_argument("--threshold", type=float, default=0.9, help="greedy success to pass (default 0.9)")
    gate.add_argument("--set", action="append", metavar="FIELD=VALUE",
                      help="any TrainConfig field (JSON value), e.g. budget=2000 or the policy input")
    gate.add_argument("--resume", action="store_true", help="continue the gate in --out")
    gate.add_argument("--no-progress", action="store_true", help="no progress bar")
    gate.add_argument("--json", action="store_true", help="print gate.json's record as one JSON object")
    gate.set_defaults(handler=_cmd_gate)

    greedy = commands.add_parser("greedy", help="greedy play on the uniform reference's exact values on a sweep's "
                                                "evaluation problems, per family (no training); writes "
                                                "SWEEP/reference/greedy.json for its results page")
    greedy.add_argument("sweep", help="sweep directory (at least one cell started: its config.json is read)")
    greedy.add_argument("--json", action="store_true", help="print the record as one JSON object")
    greedy.set_defaults(handler=_cmd_greedy)

    pack = commands.add_parser("pack", help="copy a sweep's or suite's resumable state, small enough to commit: "
                                            "finished cells without checkpoints, unfinished ones with theirs")
    pack.add_argument("sweep", help="sweep or suite directory (it may be running)")
    pack.add_argument("--out", required=True, help="a new directory")
    pack.add_argument("--json", action="store_true", help="print the result as one JSON object")
    pack.set_defaults(handler=_cmd_pack)

    status = commands.add_parser("status", help="where a sweep or suite stands, read from its directory (it may "
                                                "be running): runs finished, running, stopped, not started; progress "
                                                "and time left of the running ones; a suite's per experiment")
    status.add_argument("sweep", help="sweep or suite directory")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object")
    status.set_defaults(handler=_cmd_status)

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

    solve = commands.add_parser("solve", help="exact value of a position and Q of its legal actions")
    _add_problem_options(solve, PROBLEM_ENVIRONMENTS)
    solve.add_argument("--actions", help='play these first, e.g. "select 0; select 1" or "COMBINE 2 + 3; UNDO"')
    solve.add_argument("--turns", type=_integer(0, MAX_TURNS), metavar="N", help="turns left (default: the episode's)")
    solve.add_argument("--policy", default="uniform",
                       help="uniform, optimal, soft, or a policy checkpoint (or run directory: its policies/seed-0)")
    solve.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    solve.set_defaults(handler=_cmd_solve)
    _add_analysis_commands(commands, regimes=list(dict.fromkeys([*REGIMES, *MATCHED_COUNTERS, *RENAMED_REGIMES])))
    _add_agent_commands(commands)
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


if __name__ == "__main__":
    sys.exit(main())
