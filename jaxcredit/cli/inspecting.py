"""`jaxcredit report`, `compare`, `replay` and `price`: what finished runs and sweeps show
(`jaxcredit.analysis`): reports, results pages and paired comparisons of two arms; and the tuning
rules replayed on finished tuned sweeps (`jaxcredit.train.tuning_replay`)."""

from __future__ import annotations

import json
import os

from jaxcredit.cli.common import CommandError, print_json
from jaxcredit.rundir_io import read_json


def _cmd_report(args) -> None:
    from jaxcredit.analysis import write_report, write_results_page

    if args.page is not None:
        return _cmd_report_page(args, write_results_page)
    if args.threshold is not None:
        raise CommandError("--threshold goes with --page")
    path = write_report(args.path)
    if args.json:
        print_json({"report": path})
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
        print_json({"page": page, "files": args.page[: -len(".md")]})
    else:
        print(f"wrote {page} and its files in {args.page[: -len('.md')]}/")


def add_report(commands) -> None:
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


def _cmd_compare(args) -> None:
    from jaxcredit.analysis import compare_arms

    result = compare_arms(args.sweep, args.arm, args.baseline, args.regime)
    if args.json:
        print_json(result)
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


def add_compare(commands) -> None:
    from jaxcredit.rundir_io import MATCHED_COUNTERS, REGIMES, RENAMED_REGIMES

    regimes = list(dict.fromkeys([*REGIMES, *MATCHED_COUNTERS, *RENAMED_REGIMES]))
    compare = commands.add_parser("compare", help="paired comparison of two arms of a sweep across seeds")
    compare.add_argument("sweep", help="sweep directory")
    compare.add_argument("--arm", required=True, help="the arm")
    compare.add_argument("--baseline", default="outcome", help="the arm compared against (default outcome)")
    compare.add_argument("--regime", default="attempts", choices=regimes,
                         help="attempts, matched (--arm a label arm) or fixed-steps (default attempts)")
    compare.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    compare.set_defaults(handler=_cmd_compare)


def _cmd_replay(args) -> None:
    from jaxcredit.train.rundir import write_json_atomic
    from jaxcredit.train.tuning_replay import REPLAY_RULES, replay_markdown, replay_study

    studies = {}
    for item in args.sweeps:
        name, _, path = item.rpartition("=")
        path = path or item
        name = name or os.path.basename(os.path.normpath(path))
        for needed in ("sweep_spec.json", "tuning.json"):
            if not os.path.isfile(os.path.join(path, needed)):
                raise CommandError(f"{path}: not a finished tuned sweep or results record (no {needed})")
        studies[name] = replay_study(path)
    record = {"rules": {"as run": "the study's own tuning.json", **REPLAY_RULES}, "studies": studies}
    if args.out:
        write_json_atomic(args.out, record)
    if args.json:
        print_json(record)
        return
    print(replay_markdown(studies))
    if args.out:
        print(f"record in {args.out}")


def add_replay(commands) -> None:
    replay = commands.add_parser("replay", help="replay the tuning rules (area with ties, successive halving) on "
                                                "finished full-grid tuned sweeps, with no new training: each rule's "
                                                "pick, regret and CPU time")
    replay.add_argument("sweeps", nargs="+", metavar="[NAME=]DIR",
                        help="a finished tuned sweep directory or a results page's record/ folder")
    replay.add_argument("--out", help="write the record (JSON) here")
    replay.add_argument("--json", action="store_true", help="print the record as one JSON object")
    replay.set_defaults(handler=_cmd_replay)


def _cmd_price(args) -> None:
    from jaxcredit.analysis.price_sweep import plot_price_gaps, prices_markdown, sweep_prices
    from jaxcredit.train.rundir import write_json_atomic

    if not os.path.isfile(os.path.join(args.sweep, "sweep_spec.json")):
        raise CommandError(f"{args.sweep}: not a sweep directory or results record (no sweep_spec.json)")
    try:
        record = sweep_prices(args.sweep, reference=args.reference)
    except ValueError as error:
        raise CommandError(str(error)) from None
    if args.out:
        write_json_atomic(args.out, record)
    if args.plot:
        plot_price_gaps(record, args.plot)
    if args.json:
        print_json(record)
        return
    print(prices_markdown(record))
    if args.out:
        print(f"record in {args.out}")


def add_price(commands) -> None:
    price = commands.add_parser("price", help="the break-even label price p* of each label arm of a finished sweep: "
                                              "the price per unit of label work at which the reference, given the "
                                              "arm's total, ties it")
    price.add_argument("sweep", help="a finished sweep directory with attempts and fixed-steps runs, or a results "
                                     "page's record/ folder")
    price.add_argument("--reference", default="outcome", help="the arm without label work (default outcome)")
    price.add_argument("--out", help="write the record (JSON) here")
    price.add_argument("--plot", help="draw each arm's lead against the price here (PNG)")
    price.add_argument("--json", action="store_true", help="print the record as one JSON object")
    price.set_defaults(handler=_cmd_price)


def _cmd_card(args) -> None:
    from jaxcredit.analysis.card import card_for_config, checked_card_markdown
    from jaxcredit.suite.card_check import check_path
    from jaxcredit.train.rundir import write_json_atomic

    if not os.path.isdir(args.path):
        raise CommandError(f"{args.path}: no such run or audit directory")
    if not args.check:
        config_path = os.path.join(args.path, "config.json")
        if not os.path.isfile(config_path):
            raise CommandError(f"{args.path}: not a run directory (no config.json); an audit's card needs --check")
        from jaxcredit.rundir_io import read_json

        card = card_for_config(read_json(config_path), subject=f"run {os.path.basename(os.path.abspath(args.path))}")
        print_json(card.to_dict()) if args.json else print(card.to_markdown(), end="")
        return
    checked = check_path(args.path, seed_index=args.seed_index, problems=args.problems, seed=args.seed)
    if args.out:
        write_json_atomic(args.out, checked)
    if args.json:
        print_json(checked)
        return
    for one in checked["arms"].values() if "arms" in checked else (checked,):
        print(checked_card_markdown(one))


def add_card(commands) -> None:
    card = commands.add_parser("card", help="the CA-ID card of a run; with --check, each field's falsification "
                                            "control run on a small shared subset (passed, failed or not applicable)")
    card.add_argument("path", help="a run directory (its config.json and final policies) or, with --check, a sweep "
                                   "(every arm's attempts cell; --out SWEEP/checked-cards.json puts the checked "
                                   "cards on its results page) or an audit directory (its audit.json)")
    card.add_argument("--check", action="store_true", help="run each field's control and mark it")
    card.add_argument("--seed-index", type=int, default=0, help="the run's seed whose final policy is checked")
    card.add_argument("--problems", type=int, default=16, help="problems of the subset (each played the run's "
                                                               "attempts per problem times; default 16)")
    card.add_argument("--seed", type=int, default=0, help="the subset's key (default 0)")
    card.add_argument("--out", help="with --check: write the checked card (JSON) here")
    card.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    card.set_defaults(handler=_cmd_card)
