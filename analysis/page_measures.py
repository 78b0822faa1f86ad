"""What a results page shows, computed from a sweep's records already read into memory.

Every function here is a pure function of records (the spec, metrics rows, configs, timing
entries, gate, greedy and tuning records as loaded dicts and lists): nothing reads or writes a
file (`tests/test_page_layers.py` checks the source). `analysis.page` reads a sweep directory into
a `SweepRecord`, `page_measures` turns it into the `PageMeasures` the page is written from
(`analysis.page_render`), and `summary_record` is the page's `summary.json`: every number it shows.

Shapes: N seeds of a cell.
"""

from __future__ import annotations

import datetime
from typing import NamedTuple

import numpy as np

from jaxcredit.analysis.families import family_comparisons
from jaxcredit.analysis.gates import FAILED, gate_status, has_gate
from jaxcredit.analysis.rundirs import policy_eval_flops_of, seed_measures, sweep_credits, sweep_regimes
from jaxcredit.comparison import arm_environments, comparison_pairs, paired_table
from jaxcredit.ledger import ACCOUNTS
from jaxcredit.rundir_io import reading_measures
from jaxcredit.stats import paired_t, wilson_interval

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # timing.json's dates
TUNE_REGIME = "tune"  # a tuned sweep's tuning runs, `tune/<arm>/<point>`, timed like a regime


class CellTiming(NamedTuple):
    """One started run's time on record: its `timing.json` entries (one per start: the first, then
    each resume), its metrics rows (for their `segment_seconds`) and whether it finished."""
    sessions: list
    rows: list
    finished: bool


class SweepRecord(NamedTuple):
    """What a results page reads from a sweep directory. `rows` and `configs` are keyed
    `"<regime>/<cell>"` over the finished cells in the sweep's order; `timings` over every run the
    sweep started (tuning runs included); `gates` `{rung: gate.json}`; `greedy` the reference's
    `greedy.json` and `tuning` the sweep's `tuning.json` (None where absent or not read)."""
    spec: dict
    rows: dict
    configs: dict
    timings: dict
    gates: dict
    greedy: dict | None
    tuning: dict | None
    claim: dict | None = None


class PageMeasures(NamedTuple):
    """Every measure a results page shows (`page_measures`); the dicts are keyed by regime, then cell."""
    spec: dict
    threshold: float
    timing: dict
    expected: list
    missing: list
    finished: int
    comparison: dict
    accounts: list
    reach: dict
    reach_means: dict
    spend: dict
    label_shares: dict
    behaviour: dict
    start: dict
    families: dict
    gates: dict
    gated: bool
    compared: bool
    threshold_differences: dict
    behaviour_differences: dict
    greedy: dict | None
    greedy_success: dict
    tuning: dict | None
    seed_measures: dict
    claim: dict | None = None
    readings: dict | None = None


# ----- time ------------------------------------------------------------------------------------------
def segment_seconds(rows: list) -> float:
    """Seconds of a run's training segments and evaluations (`segment_seconds` of its metrics rows)."""
    per_eval: dict = {}
    for row in rows:
        per_eval[row["eval_index"]] = max(per_eval.get(row["eval_index"], 0.0), float(row.get("segment_seconds", 0.0)))
    return float(sum(per_eval.values()))


def timing_summary(timings: dict, regimes: list) -> dict:
    """Wall time per cell and regime, dates, machines, programs and load, from `{"<regime>/<name>":
    CellTiming}` (every run the sweep started, in a fixed order).

    `programs` (`[{"version", "source"}]`, the jaxcredit that ran the cells: `jaxcredit.program`) and
    `unrecorded_program_cells` are present only when some session records its program; each cell
    names its programs' indices (`programs`) when the cells ran under more than one."""
    cells, machines, loads, starts, ends, ran_on = {}, [], [], [], [], {}
    programs, ran_under = [], {}
    for name, record in timings.items():
        entries = record.sessions
        cell = {"starts": len(entries), "segment_seconds": round(segment_seconds(record.rows), 3),
                "finished": record.finished}
        if entries:
            cell["wall_seconds"] = round(sum(float(s["wall_seconds"]) for s in entries), 3)
            for s in entries:
                begun = datetime.datetime.strptime(s["started"], TIME_FORMAT)
                starts.append(begun)
                ends.append(begun + datetime.timedelta(seconds=float(s["wall_seconds"])))
                loads += [x for key in ("start", "end") for x in s.get("load_average", {}).get(key, [])[:1]]
                if s.get("machine") and s["machine"] not in machines:
                    machines.append(s["machine"])
            ran_on[name] = sorted({machines.index(s["machine"]) for s in entries if s.get("machine")})
            mine = [{"version": s["program"]["version"], "source": s["program"]["source"]}
                    for s in entries if s.get("program")]
            programs += [p for p in mine if p not in programs]
            ran_under[name] = (sorted({programs.index(p) for p in mine}), len(mine) < len(entries))
        cells[name] = cell
    if len(machines) > 1:  # which machine ran each cell: recorded only when the cells ran on several
        for name, indices in ran_on.items():
            if indices:
                cells[name]["machines"] = indices
    if len(programs) > 1:
        for name, (indices, _) in ran_under.items():
            if indices:
                cells[name]["programs"] = indices
    regime_totals = {}
    for regime in regimes:
        mine = [c for name, c in cells.items() if name.split("/")[0] == regime]
        regime_totals[regime] = {"cells": len(mine), "recorded_cells": sum("wall_seconds" in c for c in mine),
                                 "unfinished_recorded_cells": sum("wall_seconds" in c and not c["finished"]
                                                                  for c in mine),
                                 "wall_seconds": round(sum(c.get("wall_seconds", 0.0) for c in mine), 3),
                                 "segment_seconds": round(sum(c["segment_seconds"] for c in mine), 3)}
    return {"cells": cells, "regimes": regime_totals, "machines": machines,
            "recorded_cells": sum("wall_seconds" in c for c in cells.values()),
            "unfinished_recorded_cells": sum("wall_seconds" in c and not c["finished"] for c in cells.values()),
            "wall_seconds": round(sum(c.get("wall_seconds", 0.0) for c in cells.values()), 3),
            "first_started": min(starts).strftime(TIME_FORMAT) if starts else None,
            "last_ended": max(ends).strftime(TIME_FORMAT) if ends else None,
            "load_average_1min": [min(loads), max(loads)] if loads else None,
            **({"programs": programs, "unrecorded_program_cells": sorted(n for n, (_, gap) in ran_under.items() if gap)}
               if programs else {})}


# ----- per cell ------------------------------------------------------------------------------------
def first_reach(rows: list, threshold: float) -> dict:
    """Per seed, the first evaluation whose greedy success is at least `threshold`: `{"seeds",
    "reached" [N] bool, "main_episodes", "total_env_steps" [N] (NaN where not reached)}`."""
    seeds = sorted({r["seed_index"] for r in rows})
    out = {"seeds": seeds, "reached": [], "main_episodes": [], "total_env_steps": []}
    for seed in seeds:
        mine = sorted((r for r in rows if r["seed_index"] == seed), key=lambda r: r["eval_index"])
        hit = next((r for r in mine if r["success_greedy"] >= threshold), None)
        out["reached"].append(hit is not None)
        for key in ("main_episodes", "total_env_steps"):
            out[key].append(float("nan") if hit is None else float(hit.get(key, 0)))
    return out


def reach_mean(reach: dict) -> dict:
    """Of one cell's `first_reach`: the seeds that reached the threshold (`reached`, of `seeds`) and
    the mean cost by then over them (`main_episodes`, `total_env_steps`; NaN when none did)."""
    hit = [i for i, ok in enumerate(reach["reached"]) if ok]
    means = {k: float(np.mean([reach[k][i] for i in hit])) if hit else float("nan")
             for k in ("main_episodes", "total_env_steps")}
    return {"reached": len(hit), "seeds": len(reach["seeds"]), **means}


def ledger_accounts(rows_by_cell: dict) -> list:
    """The ledger accounts with counters in the rows: `ACCOUNTS` first, then any other with a nonzero
    count, sorted (`afterstate` only where an afterstate policy ran)."""
    found = {key[: -len("_env_steps")] for rows in rows_by_cell.values() for row in rows for key in row
             if key.endswith("_env_steps") and key not in ("total_env_steps", "last_iteration_env_steps")
             and (key[: -len("_env_steps")] in ACCOUNTS or row[key])}
    return list(ACCOUNTS) + sorted(found - set(ACCOUNTS))


def _seed_rows(rows: list, *, first: bool = False) -> dict:
    """`{seed_index: row}`: each seed's row at its last evaluation (`first`: at its first)."""
    out = {}
    for row in rows:
        held = out.get(row["seed_index"])
        step = 0 if held is None else row["eval_index"] - held["eval_index"]
        if held is None or (step < 0 if first else step > 0):
            out[row["seed_index"]] = row
    return out


def cell_behaviour(rows: list, *, first: bool = False) -> dict:
    """Means over seeds, at each seed's last evaluation (`first`: its first, the untrained policy),
    of how the policy acts in the sampled evaluation episodes: `action_rate/<type>` (share of live
    steps choosing each action type; the mean over families, not the per-family keys),
    `episode_length` and `success_sampled`. Keys the rows lack are left out (`{}` for rows without
    them); `seeds` is n, the seeds averaged."""
    last = list(_seed_rows(rows, first=first).values())
    keys = [k for k in (last[0] if last else {}) if k.startswith("action_rate/") and k.count("/") == 1]
    keys += [k for k in ("episode_length", "success_sampled") if last and k in last[0]]
    means = {key: float(np.mean([float(r[key]) for r in last])) for key in keys}
    return {"seeds": len(last), **means} if means else {}


def start_behaviour(spec: dict, rows: dict) -> dict:
    """`{label: cell_behaviour(first=True)}`: how the untrained policy acts, once per environment
    of the sweep's arms (`arm_environments`; its arms start from the same parameters on the same
    problems), read from the first regime's first such cell of `rows` (`{"<regime>/<cell>": metrics
    rows}`); the label names that cell and the others on its environment. `{}` when no cell has
    action rates."""
    if not rows:
        return {}
    regime = next(iter(rows)).split("/", 1)[0]
    names = [name.split("/", 1)[1] for name in rows if name.split("/", 1)[0] == regime]
    environments = arm_environments(spec.get("base", {}), spec.get("arms", {}))
    groups: dict = {}
    for name in names:
        groups.setdefault(environments.get(name, name), []).append(name)
    out = {}
    for group in groups.values():
        b = cell_behaviour(rows[f"{regime}/{group[0]}"], first=True)
        if b:
            others = f" (the same as {', '.join(group[1:])})" if group[1:] else ""
            out[f"{regime}/{group[0]}{others}"] = b
    return out


def cell_spend(rows: list, accounts: list, *, policy_eval_flops: int | None = None) -> dict:
    """Means over seeds, at each seed's last evaluation, of the main attempts, total env steps, total
    policy evaluations and each account's env steps and policy evaluations (`<account>_env_steps`,
    `<account>_policy_evals`); with `policy_eval_flops` (one evaluation's FLOPs,
    `jaxcredit.policy.policy_eval_flops`), also it and `policy_flops`, the FLOPs of the total."""
    last = _seed_rows(rows)
    keys = ["main_episodes", "total_env_steps", "total_policy_evals"] + [
        f"{a}_{kind}" for a in accounts for kind in ("env_steps", "policy_evals")]
    spend = {key: float(np.mean([float(r.get(key, 0)) for r in last.values()])) for key in keys}
    if policy_eval_flops is not None:
        spend["policy_eval_flops"] = int(policy_eval_flops)
        spend["policy_flops"] = spend["total_policy_evals"] * policy_eval_flops
    return spend


def label_share(spend: dict) -> float:
    """The share of a cell's total env steps outside `main` (`cell_spend`; 0 with no steps)."""
    return 1.0 - spend["main_env_steps"] / spend["total_env_steps"] if spend["total_env_steps"] else 0.0


# ----- paired differences ----------------------------------------------------------------------------
def _paired_cells(pairs: list, lookup):
    """`(pair, arm_value, reference_value)` for each pair with a reference cell whose two cells
    `lookup(cell)` finds (a value that is not None or empty)."""
    for pair in pairs:
        if pair.reference_cell is None:
            continue
        arm, ref = lookup(pair.arm_cell), lookup(pair.reference_cell)
        if arm and ref:
            yield pair, arm, ref


def behaviour_comparisons(pairs: list, rows: dict) -> dict:
    """Per regime, per compared pair (`"arm vs reference"`), the paired difference arm − reference
    of every `cell_behaviour` key both cells record (episode length, each action rate, sampled
    success) at each seed's last evaluation, seeds paired by index: `{regime: {pair: {key:
    jaxcredit.stats.paired_t(...)}}}`. `rows`: `{"regime/cell": metrics rows}`; pairs whose cells
    are not both in `rows` (or have no common seed) are left out."""
    out: dict = {}
    for pair, arm_rows, ref_rows in _paired_cells(pairs, lambda cell: rows.get("/".join(cell))):
        arm_last, ref_last = _seed_rows(arm_rows), _seed_rows(ref_rows)
        seeds = sorted(set(arm_last) & set(ref_last))
        keys = [k for k in cell_behaviour(arm_rows) if k != "seeds" and seeds and k in ref_last[seeds[0]]]
        if not keys:
            continue
        out.setdefault(pair.regime, {})[f"{pair.arm} vs {pair.reference}"] = {
            key: paired_t([float(arm_last[s][key]) for s in seeds], [float(ref_last[s][key]) for s in seeds])
            for key in keys}
    return out


def threshold_comparisons(pairs: list, reach: dict) -> dict:
    """Per regime, per compared pair (`"arm vs reference"`), the paired difference arm − reference of
    the cost spent by the first evaluation at the threshold (`first_reach`: main attempts and total
    env steps), over the seeds both cells reached it with, seeds paired by index: `{regime: {pair:
    {"arm_reached", "reference_reached", "seeds": int, "main_episodes", "total_env_steps":
    jaxcredit.stats.paired_t(...) or None}}}` (None where fewer than one seed reached it on both
    sides). `reach`: `{regime: {cell: first_reach(...)}}`; pairs whose cells are not both there
    are left out."""
    out: dict = {}
    for pair, arm, ref in _paired_cells(pairs, lambda cell: reach.get(cell[0], {}).get(cell[1])):
        arm_at, ref_at = ({seed: i for i, seed in enumerate(r["seeds"])} for r in (arm, ref))
        both = [s for s in arm_at if s in ref_at and arm["reached"][arm_at[s]] and ref["reached"][ref_at[s]]]
        entry = {"arm_reached": int(sum(arm["reached"])), "reference_reached": int(sum(ref["reached"])),
                 "seeds": len(set(arm_at) & set(ref_at))}
        for key in ("main_episodes", "total_env_steps"):
            entry[key] = paired_t([arm[key][arm_at[s]] for s in both], [ref[key][ref_at[s]] for s in both]) \
                if both else None
        out.setdefault(pair.regime, {})[f"{pair.arm} vs {pair.reference}"] = entry
    return out


# ----- the sweep ------------------------------------------------------------------------------------
def sweep_pairs(spec: dict) -> list:
    """The sweep's compared pairs (`jaxcredit.comparison.comparison_pairs`), within each environment."""
    return comparison_pairs(sweep_regimes(spec), sweep_credits(spec), spec.get("reference_arm", "outcome"),
                            environments=arm_environments(spec.get("base", {}), spec.get("arms", {})))


def timing_regimes(spec: dict) -> list:
    """The regimes whose runs' time is on the page: the sweep's, after its tuning runs' (`tune`) if tuned."""
    return ([TUNE_REGIME] if spec.get("tune") else []) + sweep_regimes(spec)


def compares_arms(spec: dict, gates: dict) -> bool:
    """Whether the page compares the arms: always, but where the study's learnability gate failed."""
    return not has_gate(spec) or gate_status(spec, gates) != FAILED


def greedy_success(record: dict) -> dict:
    """Per family of a reference's `greedy.json`: the share of problems won by greedy play and its
    95% Wilson interval, `{family: {"share", "low", "high"}}`."""
    out = {}
    for family, f in record["families"].items():
        low, high = wilson_interval(f["won"], f["problems"])
        out[family] = {"share": f["won"] / f["problems"], "low": low, "high": high}
    return out


def page_measures(record: SweepRecord, *, threshold: float) -> PageMeasures:
    """Every measure of the page of the sweep `record`, with time to `threshold` greedy success."""
    spec, rows = record.spec, record.rows
    pairs = sweep_pairs(spec)
    expected = list(dict.fromkeys("/".join(c) for p in pairs for c in (p.arm_cell, p.reference_cell) if c))
    missing = [c for c in expected if c not in rows]
    by_regime: dict = {}
    for name in rows:
        regime, cell = name.split("/", 1)
        by_regime.setdefault(regime, []).append(cell)
    flops = {name: policy_eval_flops_of(config) for name, config in record.configs.items()}
    cell_measures = {tuple(name.split("/", 1)): {**seed_measures(r), "policy_eval_flops": flops[name]}
                     for name, r in rows.items()}
    nonparametric = bool(spec.get("nonparametric", False))
    comparison = paired_table(pairs, cell_measures, budgets=spec.get("budgets", {}),
                              reference_arm=spec.get("reference_arm", "outcome"), nonparametric=nonparametric)
    accounts = ledger_accounts(rows)
    reach = {r: {c: first_reach(rows[f"{r}/{c}"], threshold) for c in cells} for r, cells in by_regime.items()}
    spend = {r: {c: cell_spend(rows[f"{r}/{c}"], accounts, policy_eval_flops=flops[f"{r}/{c}"]) for c in cells}
             for r, cells in by_regime.items()}
    compared = compares_arms(spec, record.gates)
    return PageMeasures(
        spec=spec, threshold=threshold,
        timing=timing_summary(record.timings, timing_regimes(spec)),
        expected=expected, missing=missing, finished=len(rows), comparison=comparison, accounts=accounts,
        reach=reach, reach_means={r: {c: reach_mean(x) for c, x in cells.items()} for r, cells in reach.items()},
        spend=spend, label_shares={r: {c: label_share(s) for c, s in cells.items()} for r, cells in spend.items()},
        behaviour={r: {c: cell_behaviour(rows[f"{r}/{c}"]) for c in cells} for r, cells in by_regime.items()},
        start=start_behaviour(spec, rows),
        families=family_comparisons(pairs, {tuple(name.split("/", 1)): r for name, r in rows.items()},
                                    budgets=spec.get("budgets", {}),
                                    reference_arm=spec.get("reference_arm", "outcome")),
        gates=record.gates, gated=has_gate(spec), compared=compared,
        threshold_differences=threshold_comparisons(pairs, reach) if compared else {},
        behaviour_differences=behaviour_comparisons(pairs, rows) if compared else {},
        greedy=record.greedy, greedy_success=greedy_success(record.greedy) if record.greedy is not None else {},
        tuning=record.tuning if compared else None,
        seed_measures={name: seed_measures(r) for name, r in rows.items()},
        claim=claim_measures(record.claim, record.timings),
        readings=reading_comparisons(spec, pairs, rows, flops) if spec.get("readings") else None)


def claim_measures(claim: dict | None, timings: dict) -> dict | None:
    """The sweep's claim (`claim.json`: `claim`, `stated`) with the start of its first study cell
    (`first_cell_started`: the earliest session start among the cells outside `tune/`) and whether
    it was stated before it (`stated_before_cells`: the same second counts, the sweep writes the
    claim before it starts a cell; None while no cell has started)."""
    if claim is None:
        return None
    starts = [s["started"] for name, record in timings.items() if not name.startswith("tune/")
              for s in record.sessions]
    first = min(starts, key=lambda t: datetime.datetime.strptime(t, TIME_FORMAT)) if starts else None
    before = None if first is None else (datetime.datetime.strptime(claim["stated"], TIME_FORMAT)
                                          <= datetime.datetime.strptime(first, TIME_FORMAT))  # 1 s resolution
    return {"claim": claim["claim"], "stated": claim["stated"], "first_cell_started": first,
            "stated_before_cells": before}


def reading_comparisons(spec: dict, pairs: list, rows: dict, flops: dict) -> dict:
    """`{budget: paired_table}`: the `attempts` cells read at each of `spec["readings"]["attempts"]`
    (`rundir_io.reading_measures`: each run up to its first evaluation at that many main attempts),
    compared as the page's own table is (the sign-flip test where the sweep asks for it)."""
    attempts = [p for p in pairs if p.regime == "attempts"]
    tables = {}
    for budget in spec["readings"]["attempts"]:
        measures = {}
        for name, r in rows.items():
            regime, cell = name.split("/", 1)
            if regime == "attempts":
                measures[(regime, cell)] = {**reading_measures(r, "main_episodes", budget),
                                            "policy_eval_flops": flops[name]}
        tables[str(budget)] = paired_table(attempts, measures, budgets={"attempts": budget},
                                           reference_arm=spec.get("reference_arm", "outcome"),
                                           nonparametric=bool(spec.get("nonparametric", False)))
    return tables


def summary_record(m: PageMeasures, *, command: str, audits: list) -> dict:
    """The page's `summary.json`: every number it shows, with the command that regenerates it and
    the names of the audits it shows."""
    return {
        "sweep": m.spec.get("name"), "regenerate": command, "threshold": m.threshold, "timing": m.timing,
        "cells": {f"{r}/{cell}": {"measures": m.seed_measures[f"{r}/{cell}"], "spend": m.spend[r][cell],
                                  "threshold": m.reach[r][cell], "behaviour": m.behaviour[r][cell]}
                  for r, cell in (name.split("/", 1) for name in m.seed_measures)},
        "not_finished": m.missing, "comparison": m.comparison, "audits": audits,
        **({"tuning": m.tuning} if m.tuning is not None else {}),
        **({"families": m.families} if m.families else {}),
        **({"behaviour_differences": m.behaviour_differences} if m.behaviour_differences else {}),
        **({"behaviour_start": m.start} if m.start else {}),
        **({"threshold_differences": m.threshold_differences} if m.threshold_differences else {}),
        **({"gate": {"status": gate_status(m.spec, m.gates), "records": sorted(m.gates)}} if m.gated else {}),
        **({"reference_greedy": m.greedy["families"]} if m.greedy is not None else {}),
        **({"claim": m.claim} if m.claim is not None else {}),
        **({"readings": m.readings} if m.readings else {})}
