"""`jaxcredit audit`, `snr`, `rank`, `quality` and `identify`: measurements of credit labels
(`jaxcredit.analysis`) on a policy: a checkpoint, a run directory's seeds, or an untrained network;
the predictor arm's label quality at several K before a study fixes it; text-matched credit against
each state's exact credit."""

from __future__ import annotations

import contextlib
import json
import os

from jaxcredit.cli.agents import audit_transcripts
from jaxcredit.cli.common import CommandError, integer, print_json
from jaxcredit.output_dirs import check_kind
from jaxcredit.rundir_io import RunLock, check_writable_dir, read_json


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
        return audit_transcripts(args)
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
        print_json(audit)
    else:
        print(f"audit of {description} on {env.name}")
        print(audit_markdown_summary(audit))
        if args.out:
            print(f"audit.json, card and plots in {args.out}; report {audit['report']}")


def add_audit(commands) -> None:
    audit = commands.add_parser("audit", help="label reliability audit of a policy's Monte Carlo action credit; "
                                              "`audit transcripts FILE --out DIR`: audit an LM agent's transcripts")
    audit.add_argument("what", nargs="?", choices=["transcripts"], help="transcripts: audit FILE (JSONL transcripts)")
    audit.add_argument("file", nargs="?", help="with transcripts: the JSONL file (schema: docs/agents.md)")
    audit.add_argument("--checkpoint", help="policy checkpoint (or run directory: its policies/seed-I)")
    audit.add_argument("--seed-index", type=integer(), default=0, help="which seed of a run directory (default 0)")
    audit.add_argument("--initial", action="store_true",
                       help="with --checkpoint RUN_DIR: the untrained network the run started that seed from "
                            "(rebuilt from its config.json; paired seeds share it), not its final policy")
    audit.add_argument("--env", default="mad",
                       help="without --checkpoint: mad, arithmetic, routine or umbrella (default mad)")
    audit.add_argument("--env-config", help='without --checkpoint: JSON overrides, e.g. \'{"length": 5}\'')
    audit.add_argument("--policy", default="network", choices=["network", "uniform"],
                       help="without --checkpoint: network (untrained) or uniform")
    audit.add_argument("--states", type=integer(1), default=605, help="sampled states, one per episode (default 605)")
    audit.add_argument("--mode", default="both", choices=["forced", "sampled", "both"],
                       help="forced: K continuations per legal action; sampled: completions under the policy "
                            "itself (the study's protocol); both (default): both on the same states")
    audit.add_argument("--continuations", type=integer(2), default=64,
                       help="forced mode: K per action, two halves (default 64)")
    audit.add_argument("--completions", type=integer(2), default=57,
                       help="sampled mode: completions per state, two halves (default 57: the study's 34,624 over "
                            "605 states)")
    audit.add_argument("--chunk-states", type=integer(1), default=64, help="states per continuation call")
    audit.add_argument("--seed", type=integer(), default=0, help="seed of problems, episodes and continuations")
    audit.add_argument("--out", help="write audit.json, card, plots and report.md here")
    audit.add_argument("--no-progress", action="store_true", help="no progress bar")
    audit.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    audit.set_defaults(handler=_cmd_audit)


def _cmd_snr(args) -> None:
    from jaxcredit.analysis.snr import SnrConfig, format_table, run_snr
    from jaxcredit.analysis.snr_setup import fixed_horizon_setup, snr_environment, write_snr
    from jaxcredit.policy import PolicyConfig

    env_name = snr_environment(args.env)
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
        return _snr_fixed_decisions(args, env_name, config, network)
    if args.seeds > 1:
        raise CommandError("--seeds needs --decisions (the fixed-horizon measurement has one --seed)")
    env_config = dict(horizon=args.horizon or 16, num_choices=args.num_choices, failure=args.failure,
                      survival=args.survival, placement=args.placement, density=1.0, cue=args.cue)
    env, policy_fn, params, policy = fixed_horizon_setup(env_name, env_config, checkpoint=args.checkpoint,
                                                         policy=args.policy, network=network,
                                                         densities=densities, seed=args.seed)
    summary = run_snr(env, policy_fn, params, config, policy=policy)
    if args.out:
        title = f"{env.name} H={env.horizon} C={env.num_choices} {env.failure}, {policy}"
        write_snr(args.out, summary, plot_title=title)
    if args.json:
        print_json(summary)
    else:
        print(format_table(summary))
        print(f"({summary['seconds']} s)" + (f"; wrote {args.out}/snr.json and snr.png" if args.out else ""))


def _snr_fixed_decisions(args, env_name, config, network) -> None:
    """`snr --decisions D`: D decisions at every density, H = D / ρ, over `--seeds` seeds."""
    from jaxcredit.analysis.snr_decisions import format_fixed_decisions, run_fixed_decisions
    from jaxcredit.analysis.snr_setup import fixed_decisions_setup, write_snr

    if args.horizon:
        raise CommandError("--horizon and --decisions exclude each other: with --decisions the horizon is D / density")
    seeds = list(range(args.seed, args.seed + args.seeds))
    env_config = dict(num_choices=args.num_choices, failure=args.failure, survival=args.survival,
                      placement=args.placement, cue=args.cue)
    envs, options = fixed_decisions_setup(env_name, env_config, decisions=args.decisions, densities=config.densities,
                                          checkpoint=args.checkpoint, policy=args.policy, network=network)
    summary = run_fixed_decisions(envs, config, seeds=seeds, **options)
    if args.out:
        write_snr(args.out, summary)
    if args.json:
        print_json(summary)
    else:
        print(format_fixed_decisions(summary))
        print(f"({summary['seconds']} s)" + (f"; wrote {args.out}/snr.json" if args.out else ""))


def add_snr(commands) -> None:
    snr = commands.add_parser("snr", help="gradient SNR of outcome, exact and mc credit across decision densities")
    snr.add_argument("--env", default="routine", help="routine (the only environment with a density)")
    snr.add_argument("--density", default="0.05,0.1,0.2,0.4,0.8,1.0", help="comma-separated densities in (0, 1]")
    snr.add_argument("--horizon", type=integer(1), default=None, help="turns per episode (default 16)")
    snr.add_argument("--decisions", type=integer(0), default=0,
                     help="D > 0: D decisions at every density, horizon D / density (routine turns inserted)")
    snr.add_argument("--seeds", type=integer(1), default=1, help="with --decisions: seeds --seed, --seed + 1, ...")
    snr.add_argument("--cue", default="right", help="right (decision turns show the right action) or index")
    snr.add_argument("--d-model", type=integer(1), default=64, help="untrained network's width (default 64)")
    snr.add_argument("--num-layers", type=integer(1), default=2, help="untrained network's blocks (default 2)")
    snr.add_argument("--num-choices", type=integer(2), default=2, help="actions per turn (default 2)")
    snr.add_argument("--failure", default="fatal", help="fatal or probabilistic")
    snr.add_argument("--survival", type=float, default=0.5, help="probabilistic: success kept per wrong decision")
    snr.add_argument("--placement", default="random", help="random or fixed decision turns")
    snr.add_argument("--checkpoint", default=None, help="a policy checkpoint directory (default: untrained)")
    snr.add_argument("--policy", default="network", help="untrained policy: network (default) or tabular")
    snr.add_argument("--estimators", default="outcome,exact,mc",
                     help="comma-separated: outcome,exact,mc (and outcome-grpo, outcome-rloo, outcome-mean)")
    snr.add_argument("--baseline", default="grpo", help="outcome baseline: grpo, rloo or mean")
    snr.add_argument("--batches", type=integer(2), default=256, help="independent batches per density")
    snr.add_argument("--blocks", type=integer(2), default=8, help="jackknife blocks (divides --batches)")
    snr.add_argument("--problems", type=integer(1), default=8, help="problems per batch")
    snr.add_argument("--group-size", type=integer(2), default=4, help="attempts per problem")
    snr.add_argument("--continuations", type=integer(1), default=4, help="mc: continuations per forced action")
    snr.add_argument("--seed", type=integer(), default=0, help="seed of the batches and the initial policy")
    snr.add_argument("--out", default=None, help="directory for snr.json and snr.png")
    snr.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    snr.set_defaults(handler=_cmd_snr)


def _rank_policy_paths(spec: str) -> tuple[str, list[str]]:
    """`NAME=DIR` or `DIR` -> `(name, checkpoint directories)`: DIR a policy checkpoint, or a run
    directory (a sweep cell) whose `policies/seed-k` are all taken, in seed order."""
    from jaxcredit.checkpoint import seed_policy_paths

    name, sep, path = spec.partition("=")
    if not sep or not name or os.sep in name:
        name, path = spec.rstrip(os.sep), spec
    if not name:
        raise CommandError(f"--policy {spec!r}: give NAME=DIR or DIR")
    paths = seed_policy_paths(path)
    if not paths:
        raise CommandError(f"--policy {spec!r}: {path} is neither a policy checkpoint nor a run directory with "
                           "policies/seed-k")
    return name, paths


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
        print_json(result)
    else:
        print(markdown)
        if args.out:
            print(f"wrote {args.out}/ranking.json, ranking.md and ranking.png")


def add_rank(commands) -> None:
    rank = commands.add_parser("rank", help="ranking study: progress labels (soft, hard, learned) against exact "
                                            "counterfactual credit under each replacement, per action class")
    rank.add_argument("--policy", action="append", required=True, metavar="[NAME=]DIR",
                      help="a policy checkpoint, or a run directory (sweep cell: all its policies/seed-k, pooled); "
                           "repeatable, e.g. outcome=SWEEP/attempts/outcome")
    rank.add_argument("--episodes", type=integer(1), default=256, help="episodes per checkpoint (default 256)")
    rank.add_argument("--continuations", type=integer(1), default=8,
                      help="N, continuations per state of the soft and hard labels (default 8)")
    rank.add_argument("--fit-steps", type=integer(0), default=200,
                      help="Adam steps fitting the learned label's value head (default 200)")
    rank.add_argument("--seed", type=integer(), default=0, help="seed of episodes and continuations")
    rank.add_argument("--out", help="write ranking.json, ranking.md and ranking.png here")
    rank.add_argument("--no-progress", action="store_true", help="no progress bar")
    rank.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    rank.set_defaults(handler=_cmd_rank)


def _cmd_predictor_quality(args) -> None:
    from jaxcredit.analysis.predictor import predictor_quality_markdown
    from jaxcredit.train.predictor_quality import predictor_quality
    from jaxcredit.train.presets import get_preset
    from jaxcredit.train.rundir import write_json_atomic

    try:
        spec = get_preset(args.preset)
        if args.arm not in spec.arms:
            raise ValueError(f"preset {args.preset!r} has no arm {args.arm!r}; its arms: {', '.join(spec.arms)}")
        config = spec.arm_config(args.arm, num_seeds=args.seeds)
        record = predictor_quality(config, list(args.continuations))
    except ValueError as error:
        raise CommandError(str(error)) from None
    record.update(preset=args.preset, arm=args.arm)
    if args.out:
        write_json_atomic(args.out, record)
    if args.json:
        print_json(record)
    else:
        print(f"predictor label quality of {args.preset}/{args.arm} at K = {', '.join(map(str, args.continuations))}")
        print(predictor_quality_markdown(record))
        if args.out:
            print(f"record in {args.out}")


def add_predictor_quality(commands) -> None:
    quality = commands.add_parser(
        "quality", help="the predictor arm's held-out label quality and dataset cost at several K, "
                                  "no training: the record a study's K is chosen from")
    quality.add_argument("--preset", required=True, help="the sweep preset holding the predictor arm")
    quality.add_argument("--arm", default="predictor", help="the preset's predictor arm (default predictor)")
    quality.add_argument("--continuations", type=integer(1), nargs="+", default=[1, 2, 4, 8], metavar="K",
                         help="the K values to measure (default 1 2 4 8)")
    quality.add_argument("--seeds", type=integer(1), default=5, help="datasets per K, one per seed (default 5)")
    quality.add_argument("--out", help="write the record (JSON) here")
    quality.add_argument("--json", action="store_true", help="print the record as one JSON object")
    quality.set_defaults(handler=_cmd_predictor_quality)


def _identify_setup(args):
    """`(env, policy_fn, params, description)` of `identify`: the environment configured to hide
    `--hide`, and the policy `--policy` names (uniform, the untrained network, or a checkpoint)."""
    from jaxcredit.analysis.identification_exact import hiding_environment
    from jaxcredit.envs import make

    try:
        overrides = json.loads(args.env_config) if args.env_config else {}
    except json.JSONDecodeError:
        overrides = None
    if not isinstance(overrides, dict):
        raise CommandError(f"--env-config must be a JSON object, got {args.env_config!r}")
    if args.policy not in ("uniform", "untrained"):
        from jaxcredit.checkpoint import load_policy_checkpoint

        if args.env is not None or overrides:
            raise CommandError("--policy CHECKPOINT brings its own environment: drop --env and --env-config")
        try:
            loaded = load_policy_checkpoint(args.policy, make=make)
        except FileNotFoundError as error:
            raise CommandError(f"--policy: {error} (or use uniform, untrained)") from None
        return loaded.env, loaded.policy_fn, loaded.params, f"checkpoint {loaded.path}"
    env = make(args.env or "mad", **overrides)
    if args.hide is not None:
        hidden = hiding_environment(env, args.hide).config()
        clash = {name: value for name, value in overrides.items() if hidden.get(name) != value}
        if clash:
            raise CommandError(f"--hide {args.hide} sets {', '.join(f'{k}={hidden[k]!r}' for k in clash)}; "
                               f"--env-config asks for {clash}")
        overrides = {**overrides, **{name: hidden[name] for name in hidden if hidden[name] != env.config()[name]}}
        env = make(env.name, **overrides)
    if args.policy == "uniform":
        return env, None, None, "uniform policy"
    from jaxcredit.train.config import TrainConfig
    from jaxcredit.train.loop import initial_policy

    env, policy_fn, params = initial_policy(TrainConfig(env=env.name, env_overrides=overrides, seed=args.seed,
                                                        num_seeds=1))
    return env, policy_fn, params, f"untrained network (initial parameters of seed {args.seed})"


def _cmd_identify(args) -> None:
    from jaxcredit.analysis.identification import identification_markdown
    from jaxcredit.analysis.identification_exact import run_identification

    env, policy_fn, params, description = _identify_setup(args)
    problems = env.problem_sample(None, args.problems, args.seed)
    record = run_identification(env, problems, policy_fn=policy_fn, params=params, policy=description, hide=args.hide,
                                key=args.key, scope=args.scope)
    record["problem_seed"] = args.seed
    if args.out:
        from jaxcredit.rundir_io import write_json_atomic

        write_json_atomic(args.out, record)
    if args.json:
        print_json(record)
    else:
        print(identification_markdown(record), end="")
        print(f"({record['seconds']} s)" + (f"; record in {args.out}" if args.out else ""))


def add_identify(commands) -> None:
    identify = commands.add_parser(
        "identify", help="text-matched credit, exactly: each visited state's exact Q - V against the mean over the "
                         "states its observation merges, per action class (no sampling)")
    identify.add_argument("--env", default=None, help="mad, arithmetic, routine or umbrella (default mad; not with a "
                                                      "checkpoint)")
    identify.add_argument("--env-config", help='JSON overrides, e.g. \'{"count": 3}\' (not with a checkpoint)')
    identify.add_argument("--hide", default=None, metavar="VARIABLE",
                          help="a state variable the environment declares its observation can hide (an unknown "
                               "name lists them): measured hidden, and shown where a configuration shows it")
    identify.add_argument("--policy", default="uniform",
                          help="uniform (default), untrained (the network a run of seed --seed starts from), or a "
                               "policy checkpoint (or run directory: its policies/seed-0)")
    identify.add_argument("--key", default="tokens", choices=["tokens", "text"],
                          help="what states are matched by: the token observation (default) or the text protocol's "
                               "prompt")
    identify.add_argument("--scope", default="problem", choices=["problem", "pool"],
                          help="match states within each problem (default) or across all problems")
    identify.add_argument("--problems", type=integer(1), default=32, help="problems (default 32)")
    identify.add_argument("--seed", type=integer(), default=0, help="seed of the problems and the untrained network")
    identify.add_argument("--out", help="write the record (JSON) here")
    identify.add_argument("--json", action="store_true", help="print the record as one JSON object")
    identify.set_defaults(handler=_cmd_identify)
