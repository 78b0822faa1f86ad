"""Run a suite into one directory, resumably, and write its scorecard.

Layout of `OUT`:

```
suite.json                      what was asked: suite, arms (name -> config fields), experiments
<experiment>/<setting>/         learning: a sweep directory; labels: seed-<i>.json per seed
<experiment>/result.json        the experiment's scores, once every setting and seed is done
scorecard.json, report.md, scorecard.png
timing.json                     every run of the suite (the first and each resume): when, how long, where
```

Every experiment's finished parts are kept: `--resume` skips them and continues the rest (the
sweeps resume their cells). A stopped suite still writes a scorecard of what finished, with the
rest marked unfinished. An experiment that waits for its learnability gate
(`Experiment.requires_gate`) is marked not run, with the reason, and runs on a later `--resume`
once a passing gate record of its rung is there.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from jaxcredit.output_dirs import check_kind, write_kind
from jaxcredit.plugins import load_plugins
from jaxcredit.rundir_io import RunLock, check_writable_dir, make_dirs, read_json, write_json_atomic, write_text_atomic
from jaxcredit.suite.experiments import BUILTIN_ARMS, gate_reason, get_suite
from jaxcredit.suite.labels import FIT_STEPS, LABEL_CLASSES, LabelSetting, make_labeller
from jaxcredit.suite.learning import REGIME_TAGS, run_setting
from jaxcredit.suite.scorecard import NOT_RUN, SCHEMA, aggregate, plot_label_cost, plot_scorecard, report_markdown
from jaxcredit.timing import machine_record, read_timing, timed_cell


def check_arms(arms: dict) -> dict:
    """`arms` (name -> config fields), each valid as a `TrainConfig`; raises `ValueError` naming a bad one."""
    from jaxcredit.train.config import config_from_dict

    if not arms:
        raise ValueError("the suite needs at least one arm")
    for name, fields in arms.items():
        try:
            config_from_dict(dict(fields))
        except ValueError as error:
            raise ValueError(f"suite arm {name!r}: {error}") from None
    return arms


def _say(progress: bool, text: str) -> None:
    if progress:
        print(f"suite: {text}", file=sys.stderr, flush=True)


def _label_experiment(experiment, arms: dict, out: str, *, progress: bool) -> dict:
    """Every seed x setting x policy of a `labels` experiment; returns its record's scores and details."""
    make_dirs(out)
    per_seed = []
    details: dict = {a: {} for a in arms}
    labellers = {}  # (setting, policy) -> its labeller, compiled once for every seed

    def labeller(i: int, policy: str):
        if (i, policy) not in labellers:
            config = {**experiment.config, "env_overrides": dict(experiment.settings[i])}
            labellers[i, policy] = make_labeller(LabelSetting(
                config, policy=policy, train_episodes=experiment.budgets["train_episodes"],
                fit_steps=experiment.budgets.get("fit_steps", FIT_STEPS),
                noise_repeats=experiment.budgets.get("noise_repeats", 0)), arms)
        return labellers[i, policy]

    for seed in range(experiment.seeds):
        path = os.path.join(out, f"seed-{seed}.json")
        if os.path.exists(path):
            found = read_json(path, expect=dict)
        else:
            found = {}
            for i in range(len(experiment.settings)):
                for policy in experiment.policies:
                    _say(progress, f"{experiment.name} seed {seed} {experiment.setting_name(i)} {policy} policy")
                    found[f"{experiment.setting_name(i)}/{policy}"] = labeller(i, policy)(seed)
            write_json_atomic(path, found)
        per_seed.append(found)
    scores = {a: [float(np.mean([cell["arms"][a]["score"] for cell in seed.values()])) for seed in per_seed]
              for a in arms}
    cells = [cell for seed in per_seed for cell in seed.values()]

    def mean(values):
        values = [v for v in values if v is not None]
        return float(np.mean(values)) if values else None

    for a in arms:
        mine = [c["arms"][a] for c in cells]
        details[a] = {
            "sign_agreement": mean(m["overall"]["sign_agreement"] for m in mine),
            "rank_correlation": mean(m["overall"]["rank_correlation"] for m in mine),
            "normalised_error": mean(m["overall"]["normalised_error"] for m in mine),
            **{f"{cls}_sign": mean(m["classes"][cls]["sign_agreement"] for m in mine) for cls in LABEL_CLASSES},
            "env_steps": float(np.mean([sum(v["env_steps"] for v in m["cost"].values()) for m in mine])),
            "policy_evals": float(np.mean([sum(v["policy_evals"] for v in m["cost"].values()) for m in mine])),
            **({"label_variance": mean(m["label_variance"] for m in mine)} if all("label_variance" in m for m in mine)
               else {}),
        }
    return {"scores": {"label-quality": scores}, "details": {"arms": details}}


def _learning_experiment(experiment, arms: dict, out: str, *, resume: bool, progress: bool, backend: str,
                         ray_address: str | None, plugins: tuple = ()) -> dict:
    settings = []
    for i in range(len(experiment.settings)):
        _say(progress, f"{experiment.name} setting {experiment.setting_name(i)}")
        settings.append(run_setting(experiment, i, arms, os.path.join(out, experiment.setting_name(i)),
                                    resume=resume, progress=progress, backend=backend, ray_address=ray_address,
                                    plugins=plugins))
    scores = {REGIME_TAGS[regime]: {a: np.mean([s["scores"][regime][a] for s in settings], axis=0).tolist()
                                    for a in arms}
              for regime in REGIME_TAGS}
    return {"scores": scores, "details": {"optimal_success": [s["optimal_success"] for s in settings]}}


def run_suite(out: str, *, suite: str = "quick", arms: dict | None = None, experiments: tuple = (),
              resume: bool = False, progress: bool = True, backend: str = "local", ray_address: str | None = None,
              command: str = "jaxcredit suite", plugins: tuple = ()) -> dict:
    """Run `suite`'s experiments (all, or those named in `experiments`) for `arms` (default: the
    built-in arms, `BUILTIN_ARMS`) into `out`; returns the scorecard (also `out/scorecard.json`).

    `plugins`: the plugin specs (`jaxcredit.plugins`) whose arms `arms` may name; they are recorded
    in `suite.json`, imported again on `resume` and passed to the learning sweeps (and their workers).
    """
    spec_path = os.path.join(out, "suite.json")
    recorded = read_json(spec_path, expect=dict).get("plugins", []) if resume and os.path.exists(spec_path) else []
    plugins = load_plugins([*recorded, *plugins])
    arms = check_arms(dict(arms or BUILTIN_ARMS))
    chosen = get_suite(suite)
    if experiments:
        unknown = sorted(set(experiments) - {e.name for e in chosen})
        if unknown:
            raise ValueError(f"unknown experiment(s) {unknown}; choices: {', '.join(e.name for e in chosen)}")
        chosen = tuple(e for e in chosen if e.name in experiments)
    check_writable_dir(out)
    check_kind(out, "suite", "suite")
    spec = {"suite": suite, "arms": arms, "arm_order": list(arms), "experiments": [e.name for e in chosen],
            **({"plugins": list(plugins)} if plugins else {})}
    with RunLock(out, f"suite {suite}"):
        if os.path.exists(spec_path):
            if not resume:
                raise ValueError(f"{out} already holds a suite; pass --resume to continue it or choose another --out")
            if read_json(spec_path, expect=dict) != spec:
                raise ValueError(f"cannot resume {out}: it holds a different suite (suite, arms or experiments differ)")
        write_kind(out, "suite")
        write_json_atomic(spec_path, spec)
        earlier = read_timing(out)  # the suite's earlier runs: its run time is theirs and this one's

        def done() -> bool:
            return all(os.path.exists(os.path.join(out, e.name, "result.json")) for e in chosen)

        if done():  # finished before: the scorecard is rewritten, this run adds no time
            return _run_experiments(out, suite, arms, chosen, earlier, command, resume=resume, progress=progress,
                                    backend=backend, ray_address=ray_address, plugins=plugins, counted=False)
        with timed_cell(out, resumed=bool(earlier), done=done):
            return _run_experiments(out, suite, arms, chosen, earlier, command, resume=resume, progress=progress,
                                    backend=backend, ray_address=ray_address, plugins=plugins, counted=True)


def _run_experiments(out: str, suite: str, arms: dict, chosen: tuple, earlier: list, command: str, *, resume: bool,
                     progress: bool, backend: str, ray_address: str | None, plugins: tuple, counted: bool) -> dict:
    start = time.monotonic() if counted else None
    records = {}
    for experiment in chosen:
        folder = os.path.join(out, experiment.name)
        result_path = os.path.join(folder, "result.json")
        make_dirs(folder)
        record = {"kind": experiment.kind, "description": experiment.description, "tags": list(experiment.tags),
                  "seeds": experiment.seeds, "budgets": dict(experiment.budgets),
                  "settings": [experiment.setting_label(i) for i in range(len(experiment.settings))]}
        if os.path.exists(result_path):
            records[experiment.name] = read_json(result_path, expect=dict)
            continue
        reason = gate_reason(experiment)
        if reason is not None:  # waits for its learnability gate; checked again on --resume
            _say(progress, f"{experiment.name} not run: {reason}")
            records[experiment.name] = {**record, "status": NOT_RUN, "reason": reason}
            continue
        try:
            if experiment.kind == "labels":
                found = _label_experiment(experiment, arms, folder, progress=progress)
            else:
                found = _learning_experiment(experiment, arms, folder, resume=resume, progress=progress,
                                             backend=backend, ray_address=ray_address, plugins=plugins)
        except KeyboardInterrupt:
            records[experiment.name] = {**record, "status": "unfinished"}
            _write_card(out, suite, arms, records, chosen, start, earlier, command)
            raise
        records[experiment.name] = {**record, "status": "finished", **found}
        write_json_atomic(result_path, records[experiment.name])
    return _write_card(out, suite, arms, records, chosen, start, earlier, command)


def _run_time(earlier: list, start: float | None) -> dict:
    """The suite's measured run time over its runs (`timing.json`'s earlier ones, and this one unless
    `start` is None: a run that found it finished adds nothing): seconds, how many runs, and the
    processor of each (each once)."""
    seconds = sum(float(r["wall_seconds"]) for r in earlier) + (time.monotonic() - start if start is not None else 0.0)
    models = [r.get("machine", {}).get("cpu", {}).get("model", "unknown") for r in earlier]
    if start is not None:
        models.append(machine_record()["cpu"]["model"])
    return {"run_time_s": round(seconds, 1), "runs": len(earlier) + (start is not None),
            "machines": list(dict.fromkeys(models))}


def _write_card(out: str, suite: str, arms: dict, records: dict, chosen: tuple, start: float | None, earlier: list,
                command: str) -> dict:
    for experiment in chosen:  # an experiment not reached is unfinished
        records.setdefault(experiment.name, {"kind": experiment.kind, "description": experiment.description,
                                             "tags": list(experiment.tags), "seeds": experiment.seeds,
                                             "budgets": dict(experiment.budgets), "settings": [],
                                             "status": "unfinished"})
    card = {"schema": SCHEMA, "suite": suite, "arms": list(arms), "experiments": records,
            "tags": aggregate(records, list(arms)), "machine": machine_record()["cpu"]["model"],
            **_run_time(earlier, start), "command": command}
    if plot_label_cost(card, os.path.join(out, "labels-cost.png")):
        card["label_cost_plot"] = "labels-cost.png"
    write_json_atomic(os.path.join(out, "scorecard.json"), card)
    has_tags = any(not t.startswith("_") for t in card["tags"])
    if has_tags:
        plot_scorecard(card, os.path.join(out, "scorecard.png"))
    write_text_atomic(os.path.join(out, "report.md"), report_markdown(card, "scorecard.png" if has_tags else None))
    return card
