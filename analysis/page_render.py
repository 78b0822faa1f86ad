"""A results page's Markdown, written from its measures.

`page_markdown(measures, parts)` returns the page's text from the `PageMeasures` of
`analysis.page_measures` and the `PageParts` that `analysis.page` gathers while it publishes (the
commands, the reading kept from the page it replaces, the plots' image lines, the audits as the page
names them, the cards). Nothing here reads or writes a file or computes a statistic: each function
formats numbers it is given (`tests/test_page_layers.py` checks the source). The page's sections,
in order: the learnability gate (arithmetic), findings and what they do not show, the reading, the
paired comparisons, the equal tuning, each evaluation family, greedy play on the reference's
values, time to a success threshold, learning curves, label spend, how the policies act, the arms'
records before training, audits, CA-ID cards and how the page was made.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from jaxcredit.analysis.card import cards_markdown, checked_card_markdown
from jaxcredit.analysis.classes import format_class_table
from jaxcredit.analysis.findings import findings_lines, not_shown_lines
from jaxcredit.analysis.gates import gate_lines
from jaxcredit.analysis.page_measures import PageMeasures
from jaxcredit.analysis.report import audit_markdown_summary
from jaxcredit.analysis.rundirs import sweep_credits, sweep_regimes
from jaxcredit.comparison import flops_text, format_paired_table
from jaxcredit.overrides import overrides_text
from jaxcredit.rundir_io import regime_meaning

READING_START, READING_END = "<!-- reading -->", "<!-- /reading -->"
READING_PLACEHOLDER = ("_No reading yet. Write one paragraph here, between the reading markers, on what the numbers "
                       "do and do not show; `jaxcredit report --page` keeps it when it regenerates the page._")
RECORD = "record"  # the page folder's copy of the sweep's files
UNTRAINED = "untrained"  # how an audit's `policy` starts when it audits a network before training


class PageParts(NamedTuple):
    """What a page shows besides its measures, gathered where it is published (`analysis.page`).

    `title`: the sweep's name; `command`, `sweep_command`, `record_command`: the lines that
    regenerate the page, run its sweep and regenerate it from its record (None: not shown);
    `link`: the page folder as the page links it (`"NAME/"`); `run_dir_text`: the sweep directory as
    the page names it; `reading`: the hand-written reading kept (None: the placeholder); `curves`:
    `{regime: image lines}` and `family_curves` `{family: image lines}` of the learning-curve plots;
    `prepared`: the arms' sections on their work before training (`analysis.prepared`); `audits`:
    `{name: audit.json}` with the policy named as the page names it; `cards`: the CA-ID cards;
    `checked`: the sweep's `checked-cards.json` (`{"arms": {arm: checked card}}`), or None."""
    title: str
    command: str
    sweep_command: str | None
    record_command: str | None
    link: str
    run_dir_text: str
    reading: str | None
    curves: dict
    family_curves: dict
    prepared: list
    audits: dict
    cards: list
    checked: dict | None = None


def reading_of(text: str) -> str | None:
    """The hand-written text between the reading markers of a page's Markdown `text` (None when the
    block is absent, empty or still the placeholder)."""
    found = re.search(re.escape(READING_START) + r"\n(.*?)\n?" + re.escape(READING_END), text, flags=re.S)
    reading = found.group(1) if found else ""
    return reading if reading.strip() and reading.strip() != READING_PLACEHOLDER else None


def duration_text(seconds: float) -> str:
    """`"1h02m05s"`, `"12m03s"` or `"45.2s"`."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{seconds:.1f}s"
    hours, rest = divmod(whole, 3600)
    return (f"{hours}h" if hours else "") + f"{rest // 60:02d}m{rest % 60:02d}s"


def _number(x: float, spec: str = ",.0f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _signed_interval(result: dict, spec: str) -> str:
    mean = format(result["mean_diff"], "+" + spec)
    if result["low"] is None:
        return f"{mean} (n = 1)"
    return f"{mean} [{format(result['low'], '+' + spec)}, {format(result['high'], '+' + spec)}]"


def _fields_text(fields: dict) -> str:
    return "; ".join(f"{k} {v}" if not isinstance(v, dict) else f"{k} " + ", ".join(f"{a}={b}" for a, b in
                                                                                     sorted(v.items()))
                     for k, v in sorted(fields.items()))


# ----- how the page was made ---------------------------------------------------------------------
def _cpu_text(machine: dict) -> str:
    cpu = machine.get("cpu")  # absent from records older versions wrote
    return f" ({cpu['model']}; {', '.join(cpu['vector']) or 'no listed vector extensions'})" if cpu else ""


def _libraries_text(machine: dict) -> str:
    libraries = machine.get("libraries")
    return "; " + ", ".join(f"{name} {version}" for name, version in libraries.items()) if libraries else ""


def _cells_by_machine(timing: dict) -> str:
    """Which machine ran which cells, when cells ran on more than one ("" otherwise): per machine, its
    cells' count per regime, the cells named where a regime is split between machines."""
    machines = timing["machines"]
    if len(machines) < 2:
        return ""
    per_regime: dict = {}
    for name, cell in timing["cells"].items():
        for index in cell.get("machines", []):
            per_regime.setdefault(name.split("/")[0], {}).setdefault(index, []).append(name)
    parts = []
    for index, m in enumerate(machines):
        cpu = (m.get("cpu") or {}).get("model", m.get("host", "?"))
        mine = []
        for regime, split in per_regime.items():
            names = split.get(index, [])
            if names:
                named = len(split) > 1 and len(names) <= 8  # a regime split between machines: name the few
                listed = f" ({', '.join(n.split('/', 1)[1] for n in names)})" if named else ""
                mine.append(f"{regime} {len(names)} cell{'s' if len(names) != 1 else ''}{listed}")
        parts.append(f"machine {index + 1} ({m.get('host', '?')}, {cpu}): " + ("; ".join(mine) or "no cells"))
    both = [name for name, cell in timing["cells"].items() if len(cell.get("machines", [])) > 1]
    resumed = f" ({len(both)} resumed on another machine, counted under each: {', '.join(both)})" if both else ""
    return " / ".join(parts) + resumed + (". Seeds stay paired across machines (the same initial parameters and "
                                          "problems); the same seed trains to other numbers on another CPU, so "
                                          "comparisons across machines rest on the intervals")


def _program_text(timing: dict) -> str:
    """The jaxcredit that ran the cells ("" where no session records it): one program, or each
    program with its cells, and the cells timed before programs were recorded."""
    programs = timing.get("programs")
    if not programs:
        return ""
    names = [f"jaxcredit {p['version']}, source `{p['source']}`" for p in programs]
    unrecorded = timing.get("unrecorded_program_cells", [])
    gap = (f"; not recorded for {len(unrecorded)} cell{'s' if len(unrecorded) != 1 else ''} timed before "
           f"programs were recorded ({', '.join(unrecorded)})") if unrecorded else ""
    if len(programs) == 1:
        return f"{names[0]} (`jaxcredit.program`: a fingerprint of the package's source){gap}"
    per = [f"{names[i]}: " + ", ".join(n for n, c in timing["cells"].items() if i in c.get("programs", []))
           for i in range(len(programs))]
    return (f"{len(programs)} programs ran these cells, so their numbers come from different code: "
            + " / ".join(per) + gap)


def _header_rows(spec: dict, timing: dict, cells_done: int, expected: list, missing: list) -> list:
    """The table of what was run, where, when and for how long, and the arms."""
    regimes = sweep_regimes(spec)
    base = spec.get("base", {})
    seeds = spec.get("num_seeds") or base.get("num_seeds")
    if timing["recorded_cells"]:
        def unfinished(t):  # a recorded cell without its summary: stopped or still running, its time so far
            n = t.get("unfinished_recorded_cells", 0)
            return f"; {n} not finished, {'its' if n == 1 else 'their'} time so far" if n else ""

        per_regime = "; ".join(f"{r} {duration_text(t['wall_seconds'])} ({t['recorded_cells']} of {t['cells']} cells "
                               f"recorded{unfinished(t)})" for r, t in timing["regimes"].items())
        run_time = (f"{duration_text(timing['wall_seconds'])} in all (the sum of the cells' wall times, each from "
                    f"start to summary, resumes included): {per_regime}")
        last = "last recorded time of a cell" if timing.get("unfinished_recorded_cells") else "last cell ended"
        dates = f"{timing['first_started']} to {timing['last_ended']} (UTC; first cell started, {last})"
    else:
        run_time = "not recorded (the sweep predates `timing.json`)"
        dates = "not recorded"
    segments = "; ".join(f"{r} {duration_text(t['segment_seconds'])}" for r, t in timing["regimes"].items())
    run_time += f". Training segments and evaluations alone (metrics' `segment_seconds`): {segments}"
    machine = "not recorded"
    if timing["machines"]:
        machine = "; ".join(f"{m['host']}: {m['platform']}, {m['cpus']} CPU(s) usable{_cpu_text(m)}, Python "
                            f"{m['python']}, JAX {m['jax_version']} on {m['jax_backend']} ({m['devices']})"
                            f"{_libraries_text(m)}" for m in timing["machines"])
        if timing["load_average_1min"]:
            low, high = timing["load_average_1min"]
            machine += f"; 1-minute load average at the cells' starts and ends: {low:g} to {high:g}"
    by_machine, program = _cells_by_machine(timing), _program_text(timing)
    budgets = "; ".join(f"{r}: {spec['budgets'][r]:,} {'main attempts' if r == 'attempts' else 'total env steps'} "
                        "per run" if r in spec.get("budgets", {}) else f"{r}: {regime_meaning(r)}" for r in regimes)
    arms = spec.get("arms", {})
    size = (f"{seeds} paired seeds; {len(arms)} arms; base: {_fields_text(base)}; budgets: {budgets}")
    cells = f"{cells_done} finished of {len(expected)}"
    if missing:
        cells += " (not in the tables: " + ", ".join(missing) + ")"
    return ["| | |", "| --- | --- |", f"| sweep | `{spec.get('name', '?')}`: {spec.get('description', '')} |",
            f"| measured run time | {run_time} |", f"| machine | {machine} |",
            *([f"| machine by cell | {by_machine} |"] if by_machine else []),
            *([f"| program | {program} |"] if program else []), f"| date | {dates} |",
            f"| study size | {size} |", f"| cells | {cells} |", "",
            "Arms: " + "; ".join(f"`{arm}` ({_fields_text(arms[arm])})" for arm in sweep_credits(spec)) + ".", ""]


def _cell_time_lines(timing: dict) -> list:
    """A `### Run time per cell` table of the cells with time on record (none: no lines): wall time
    from start to summary with its starts (the first and each resume), the training segments and
    evaluations alone, the machines (when the cells ran on several) and whether it finished."""
    timed = {name: c for name, c in timing["cells"].items() if "wall_seconds" in c}
    if not timed:
        return []
    several = len(timing["machines"]) > 1
    lines = ["### Run time per cell", "",
             "Wall time from the cell's start to its summary, resumes included (starts: the first and each "
             "resume); training segments and evaluations alone (metrics' `segment_seconds`)"
             + ("; machine: as numbered in the machine rows above" if several else "") + ".", "",
             "| cell | wall time | starts | training segments and evaluations |" + (" machine |" if several else "")
             + " finished |",
             "| --- | --- | --- | --- |" + (" --- |" if several else "") + " --- |"]
    for name, c in timed.items():
        machine = (" " + ", ".join(str(i + 1) for i in c.get("machines", [])) + " |") if several else ""
        lines.append(f"| {name} | {duration_text(c['wall_seconds'])} | {c['starts']} | "
                     f"{duration_text(c['segment_seconds'])} |{machine} {'yes' if c['finished'] else 'no'} |")
    return lines + [""]


def _made_lines(m: PageMeasures, parts: PageParts) -> list:
    """`## How this was made`: the commands, the header table, the files and each cell's run time."""
    link = parts.link
    lines = ["## How this was made", "", f"Regenerate this page: `{parts.command}`", ""]
    if parts.sweep_command:
        lines += [f"Run the sweep it reads: `{parts.sweep_command}`", ""]
    if parts.record_command:
        lines += [f"Or regenerate it from its [record]({link}{RECORD}/) (the sweep's files without checkpoints, "
                  f"kept beside the page): `{parts.record_command}`", ""]
    lines += _header_rows(m.spec, m.timing, m.finished, m.expected, m.missing)
    lines += [f"Files: [summary.json]({link}summary.json) (every number on this page), "
              f"[sweep_spec.json]({link}sweep_spec.json), [card.json]({link}card.json).", ""]
    return lines + _cell_time_lines(m.timing)


# ----- the sections --------------------------------------------------------------------------------
def _threshold_lines(reach_means: dict, threshold: float) -> list:
    lines = ["## Time to a success threshold", "",
             f"The first evaluation at which a seed's greedy success reached {threshold:g}: the cost spent by then, "
             "mean over the seeds that reached it (at the resolution of the evaluations; not interpolated).", ""]
    for regime, cells in reach_means.items():
        lines += [f"### Regime: {regime}", "", "| cell | seeds reaching | main attempts | total env steps |",
                  "| --- | --- | --- | --- |"]
        for cell, r in cells.items():
            lines.append(f"| {cell} | {r['reached']}/{r['seeds']} | {_number(r['main_episodes'])} | "
                         f"{_number(r['total_env_steps'])} |")
        lines.append("")
    return lines


def _threshold_difference_lines(differences: dict, threshold: float) -> list:
    """Per regime, the paired differences of `threshold_comparisons` (nothing when there are none)."""
    if not differences:
        return []
    lines = ["### Paired differences in time to the threshold", "",
             f"Arm − reference in the cost spent by the first evaluation at greedy success {threshold:g}, over the "
             "seeds that reached it in both cells (seeds paired as in the tables above), mean with its 95% paired "
             "Student-t interval; a negative difference means the arm got there sooner. Seeds that never reached "
             "it are left out, so read the reached counts beside the interval.", ""]
    for regime, pairs in differences.items():
        lines += [f"#### Regime: {regime}", "",
                  "| arm vs reference | reached (arm / reference of n) | main attempts | total env steps |",
                  "| --- | --- | --- | --- |"]
        for name, d in pairs.items():
            values = [_signed_interval(d[k], ",.0f") if d[k] is not None else "n/a"
                      for k in ("main_episodes", "total_env_steps")]
            lines.append(f"| {name} | {d['arm_reached']} / {d['reference_reached']} of {d['seeds']} | "
                         + " | ".join(values) + " |")
        lines.append("")
    return lines


def _spend_lines(spend: dict, accounts: list, shares: dict) -> list:
    lines = ["## Label spend by ledger account", "",
             "Means over seeds at each run's end. Env steps and policy evaluations per account (`main`: the "
             "attempts the policy learns from; `label`: continuations or graph enumeration; `critic`: the value "
             "head's data); label share: the share of total env steps outside `main`. Policy evaluations are "
             "the network's forward passes (one per sampled action, one per state the exact arms evaluate); "
             "FLOPs: total policy evaluations x one evaluation's matrix-product FLOPs for the run's network and "
             "observation length (`jaxcredit.policy.policy_eval_flops`: about 2 x parameters x tokens).", ""]
    head = " / ".join(accounts)
    for regime, cells in spend.items():
        lines += [f"### Regime: {regime}", "",
                  f"| cell | main attempts | env steps: {head} | total env steps | label share | "
                  f"policy evals: {head} | total policy evals | FLOPs |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for cell, s in cells.items():
            steps = " / ".join(_number(s[f"{a}_env_steps"]) for a in accounts)
            evals = " / ".join(_number(s[f"{a}_policy_evals"]) for a in accounts)
            flops = flops_text(s["policy_flops"]) if "policy_flops" in s else "n/a"
            lines.append(f"| {cell} | {_number(s['main_episodes'])} | {steps} | {_number(s['total_env_steps'])} | "
                         f"{shares[regime][cell]:.1%} | {evals} | {_number(s['total_policy_evals'])} | {flops} |")
        lines.append("")
    return lines


def tuning_lines(tune: dict, tuning: dict) -> list:
    """The equal-tuning section: how every arm was tuned (the grid, seeds, budget, rule) and the
    tuning table, every arm at every grid point with its validation score and n, the chosen
    point marked (`tuning`: the sweep's `tuning.json`, `jaxcredit.train.tuning`). A record with
    standard errors (`se`) also shows the other score, the rungs a point reached, the extensions,
    the tie that was broken and the edges left."""
    def axes_text(axes):
        return " x ".join(f"`{name}` {{{', '.join(str(v) for v in values)}}}" for name, values in axes.items())

    extra = "; ".join(f"for `{arm}` also {axes_text(axes)}" for arm, axes in tune.get("arm_grid", {}).items())
    seeds = tuning["seeds"]
    lines = ["## Equal tuning", "",
             f"Every arm was tuned before the study on the same grid, {axes_text(tune['grid'])}"
             + (f" ({extra})" if extra else "") + f", at equal attempts: each grid point ran {tuning['num_seeds']} "
             f"seed(s) ({seeds[0]} to {seeds[-1]}; tuning seeds, not the study's paired seeds) for "
             f"{tuning['budget']:,} main attempts. Score: the greedy success on the held-out validation set "
             + ("averaged over the evaluations after the first (the area under the validation curve)"
                if tuning.get("score") == "area" else "at the last evaluation")
             + f", mean over the tuning seeds (n). Chosen: {tuning['rule']}. The study's cells ran "
             "every arm at its chosen point; the tables above are on the evaluation set, not the validation set.", ""]
    points = [p for entry in tuning["arms"].values() for p in entry["points"]]
    if not any("se" in p for p in points):
        lines += ["| arm | point | setting | validation success (mean) | per seed | n | chosen |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for arm, entry in tuning["arms"].items():
            for point in entry["points"]:
                per_seed = ", ".join(f"{x:.3f}" for x in point["scores"])
                chosen = "**chosen**" if point["point"] == entry["chosen"] else ""
                setting = overrides_text(point["overrides"])
                lines.append(f"| {arm} | {point['point']} | {setting} | {point['mean']:.3f} | "
                             f"{per_seed} | {point['n']} | {chosen} |")
        return lines + [""]
    score, other = tuning["score"], tuning["other_score"]
    lines += [f"Scores are mean ± standard error over the tuning seeds; *ext.*: the extension round that added "
              f"the point (0: the grid as written); *rungs*: the {score} score at each rung the point reached "
              "(✂: cut there).", "",
              f"| arm | point | setting | ext. | {score} | {other} | per seed ({score}) | n | rungs | chosen |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, entry in tuning["arms"].items():
        for point in entry["points"]:
            rungs = " → ".join(f"{r['mean']:.3f}" + ("" if r["continued"] else " ✂") for r in point.get("rungs", []))
            chosen = "**chosen**" if point["point"] == entry["chosen"] else ""
            if "se" in point:
                per_seed = ", ".join(f"{x:.3f}" for x in point["scores"])
                cells = (f"{point['mean']:.3f} ± {point['se']:.3f} | {point['other']['mean']:.3f} ± "
                         f"{point['other']['se']:.3f} | {per_seed} | {point['n']}")
            else:
                cells = "cut | | | "
            lines.append(f"| {arm} | {point['point']} | {overrides_text(point['overrides'])} | {point['extension']} | "
                         f"{cells} | {rungs} | {chosen} |")
    notes = []
    for arm, entry in tuning["arms"].items():
        if "tie" in entry:
            broken = other if entry["tie"]["broken_by"] == "other score" else entry["tie"]["broken_by"]
            notes.append(f"- `{arm}`: {', '.join(entry['tie']['points'])} tie within the standard error; "
                         f"broken by the {broken} ({entry['chosen']}).")
        for edge in entry.get("edge", []):
            notes.append(f"- `{arm}`: the chosen point is still on the {edge['side']} edge of `{edge['axis']}` "
                         f"({edge['value']:g}) after {edge['extensions']} extension(s): the grid has not shown that "
                         "it contains this arm's optimum there.")
    return lines + ([""] + notes if notes else []) + [""]


def _behaviour_difference_lines(differences: dict) -> list:
    """Per regime, the paired differences of `behaviour_comparisons` (nothing when there are none)."""
    if not differences:
        return []
    lines = ["### Paired differences in how they act", "",
             "Arm − reference per seed at the last evaluation (seeds paired as in the tables above), mean with its "
             "95% paired Student-t interval: episode length in turns, each action type's share of live steps, "
             "sampled success.", ""]
    for regime, pairs in differences.items():
        keys = list(dict.fromkeys(k for d in pairs.values() for k in d))
        header = [k.split("/", 1)[1] if k.startswith("action_rate/") else k.replace("_", " ") for k in keys]
        lines += [f"#### Regime: {regime}", "", "| arm vs reference | n | " + " | ".join(header) + " |",
                  "| --- | --- |" + " --- |" * len(keys)]
        for name, d in pairs.items():
            n = next(iter(d.values()))["num_seeds"]
            values = [_signed_interval(d[k], ".2f" if k == "episode_length" else ".3f") if k in d else "n/a"
                      for k in keys]
            lines.append(f"| {name} | {n} | " + " | ".join(values) + " |")
        lines.append("")
    return lines


def _behaviour_lines(behaviour: dict, start: dict | None = None) -> list:
    """Per regime, a table of `cell_behaviour` per cell, then the untrained policy's
    (`start_behaviour`; nothing when no cell has action rates)."""
    if not any(b for cells in behaviour.values() for b in cells.values()):
        return []
    lines = ["## How the policies act at the last evaluation", "",
             "Means over the n seeds at each run's last evaluation, from the sampled evaluation episodes (the "
             "policy's own distribution, every evaluation family together): the share of live steps choosing each "
             "action type, "
             "the mean episode length in turns, and sampled success (the tables above use greedy success).", ""]
    for regime, cells in behaviour.items():
        keys = list(dict.fromkeys(k for b in cells.values() for k in b if k != "seeds"))
        if not keys:
            continue
        lines += [f"### Regime: {regime}", ""] + _behaviour_table(cells, keys, "cell")
    if start:
        keys = list(dict.fromkeys(k for b in start.values() for k in b if k != "seeds"))
        lines += ["### At the start: the untrained policy", "",
                  "The same measures at the first evaluation, before any update: every arm on one environment starts "
                  "from the same parameters on the same problems, so one cell stands for them. A policy whose action "
                  "head starts at zero is uniform over the legal actions here.", ""]
        lines += _behaviour_table(start, keys, "first evaluation of")
    return lines


def _behaviour_table(cells: dict, keys: list, first_column: str) -> list:
    """Markdown: one row of `cell_behaviour` measures `keys` per entry of `cells`, then a blank line."""
    header = [k.split("/", 1)[1] if k.startswith("action_rate/") else k.replace("_", " ") for k in keys]
    lines = [f"| {first_column} | n | " + " | ".join(header) + " |", "| --- | --- |" + " --- |" * len(keys)]
    for cell, b in cells.items():
        values = [_number(b.get(k), ".2f" if k == "episode_length" else ".3f") for k in keys]
        lines.append(f"| {cell} | {b.get('seeds', 'n/a')} | " + " | ".join(values) + " |")
    return lines + [""]


def _family_lines(families: dict, family_curves: dict) -> list:
    """Per evaluation family: the paired comparison on its greedy success and its learning curves
    (nothing when the runs were evaluated on one family)."""
    if not families:
        return []
    lines = ["## Per evaluation family", "",
             f"The tables above compare the mean over the {len(families)} evaluation families "
             f"({', '.join(families)}); here each family on its own held-out problems: the same paired comparison, "
             "then its learning curves (mean greedy success over seeds; bands: Student-t intervals).", ""]
    for family, comparison in families.items():
        lines += [f"### Family: {family}", "", format_paired_table(comparison, heading="####")]
        lines += family_curves.get(family, [])
    return lines


def reference_greedy_lines(record: dict | None, success: dict) -> list:
    """Markdown: greedy play on the uniform reference's exact values per evaluation family, from
    `SWEEP/reference/greedy.json` (`jaxcredit greedy`) and its shares won with their intervals
    (`analysis.page_measures.greedy_success`); nothing without the record."""
    if record is None:
        return []
    lines = ["## Greedy play on the uniform reference's exact values (no training)", "",
             f"On each family's evaluation problems (the cells' own), greedy play on `Q^uniform`: at every turn the "
             f"first legal action of highest exact value under the uniform policy, {record['max_turns']} turns "
             "(`jaxcredit greedy`). Solvable: some play wins (`V* > 0` at the start). Intervals: 95% Wilson.", "",
             "| family | problems | won by greedy play on Q^uniform [95%] | solvable | the uniform policy's own "
             "success | greedy episode length |", "| --- | --- | --- | --- | --- | --- |"]
    for family, f in record["families"].items():
        won = success[family]
        share = f"{won['share']:.3f} [{won['low']:.3f}, {won['high']:.3f}]"
        lines.append(f"| {family} | {f['problems']} | {f['won']} ({share}) | {f['solvable']} | "
                     f"{f['uniform_success']:.3f} | {f['mean_turns']:.2f} |")
    return lines + [""]


def audit_lines(audits: dict, *, link: str, run_dir_text: str) -> list:
    """The audits' sections: an untrained network's first, then the trained policies' (`audits`:
    `{name: audit.json}` as copied beside the page, `{link}audits/<name>.json`); without audits, how
    to add one."""
    trained_header = ["## Audits of the trained policies", ""]
    if not audits:
        return trained_header + [
            f"None was run: no `{run_dir_text}/audits/<name>/audit.json`. To add one: `jaxcredit audit "
            f"--checkpoint {run_dir_text}/attempts/<arm> --out {run_dir_text}/audits/attempts-<arm>`, "
            "then regenerate the page.", ""]
    untrained, trained = [], []
    for name, audit in audits.items():
        policy = str(audit.get("policy", "policy"))
        (untrained if policy.startswith(UNTRAINED) else trained).extend([
            f"### {name}: {policy} on {audit['env']}", "", f"File: [audits/{name}.json]({link}audits/{name}.json).",
            "", audit_markdown_summary(audit), format_class_table(audit["classes"])])
    lines = []
    if untrained:
        lines += ["## Audit of the untrained policy", "",
                  "The same audit of a network before any training (the label-reliability setting of a study "
                  "that audits before training), beside the trained policies' below.", "", *untrained]
    return lines + (trained_header + trained if trained else [])


# ----- the page ------------------------------------------------------------------------------------
def claim_lines(claim: dict | None) -> list:
    """`## Claim, stated before the run`: the sweep's `claim.json` text, its date, and the first study
    cell's start (`page_measures.claim_measures`); nothing for a sweep without a claim."""
    if claim is None:
        return []
    if claim["first_cell_started"] is None:
        when = "no study cell has started yet"
    else:
        order = "before" if claim["stated_before_cells"] else "after"
        when = f"{order} the first study cell started ({claim['first_cell_started']})"
    lines = ["## Claim, stated before the run", "",
             f"Stated {claim['stated']} ([claim.json](#how-this-was-made)), {when}. The findings below decide it.", ""]
    return lines + [f"> {line}" if line else ">" for line in claim["claim"].splitlines()] + [""]


def readings_lines(readings: dict | None) -> list:
    """`## At several budgets`: each `attempts` comparison read at every budget of the sweep's
    readings (`page_measures.reading_comparisons`), in average and final greedy success."""
    if not readings:
        return []
    tested = any("p_sign_flip_holm" in e.get("vs_reference", {}).get("final_success", {})
                 for table in readings.values() for rows in table["regimes"].values() for e in rows.values())
    p_name = "sign-flip p (Holm)" if tested else "p (Holm)"
    lines = ["## At several budgets", "",
             "The `attempts` runs read at each budget: every run up to its first evaluation at that many main attempts "
             "(the learning rate is constant, so the final success read there is that of a run of that budget; the "
             "average is over the evaluations up to it). Arm − reference, 95% paired t intervals.", "",
             f"| attempts | arm | vs | n | Δ average [95% CI] | {p_name} | Δ final [95% CI] | {p_name} |",
             "| ---: | --- | --- | --- | --- | --- | --- | --- |"]
    for budget, table in readings.items():
        for entry in table["regimes"].get("attempts", {}).values():
            if entry.get("reference") is None:
                continue
            cells = []
            for measure in ("average_success", "final_success"):
                d = entry["vs_reference"][measure]
                p, holm = (d["p_sign_flip"], d["p_sign_flip_holm"]) if tested else (d["p_value"], d["p_holm"])
                cells += [_signed_interval(d, ".3f"), f"{p:.3f} ({holm:.3f})"]
            lines.append(f"| {int(budget):,} | {entry['arm']} | {entry['reference']} | {entry['num_seeds']} | "
                         + " | ".join(cells) + " |")
    return lines + [""]


def page_markdown(m: PageMeasures, parts: PageParts) -> str:
    """The results page's Markdown (see the module docstring for its sections)."""
    lines = [f"# Results: {parts.title}", "",
             f"<!-- Generated by `{parts.command}`: edit only between the reading markers, the rest is rewritten. -->",
             ""]
    lines += gate_lines(m.spec, m.gates, link=parts.link, duration_text=duration_text)  # arithmetic sweeps only
    lines += claim_lines(m.claim)
    if m.compared:
        lines += findings_lines(m.comparison, m.threshold_differences, m.threshold)
        lines += not_shown_lines(m.comparison, m.missing)
    lines += ["## Reading", "", READING_START, parts.reading or READING_PLACEHOLDER, READING_END, ""]
    if m.compared:
        lines += ["## Paired comparisons across seeds", "", format_paired_table(m.comparison, heading="###")]
        lines += readings_lines(m.readings)
        if m.tuning is not None:
            lines += tuning_lines(m.spec["tune"], m.tuning)
        lines += _family_lines(m.families, parts.family_curves)
        lines += reference_greedy_lines(m.greedy, m.greedy_success)
        lines += _threshold_lines(m.reach_means, m.threshold)
        lines += _threshold_difference_lines(m.threshold_differences, m.threshold)
        lines += ["## Learning curves", "",
                  "Mean greedy success over seeds against main attempts and against total environment steps "
                  "(labels included); bands: Student-t intervals of the mean over seeds (the figure names n).", ""]
        for regime, curves in parts.curves.items():
            lines += [f"### Regime: {regime} ({regime_meaning(regime)})", "", *curves]
    lines += _spend_lines(m.spend, m.accounts, m.label_shares)
    lines += _behaviour_lines(m.behaviour, m.start)
    lines += _behaviour_difference_lines(m.behaviour_differences)
    lines += parts.prepared
    lines += audit_lines(parts.audits, link=parts.link, run_dir_text=parts.run_dir_text)
    lines += ["## CA-ID cards", "", cards_markdown(parts.cards)]
    if parts.checked:
        lines += ["## Checked CA-ID cards", "",
                  "Each field's falsification control, run by `jaxcredit card --check` on the arm's attempts cell "
                  "(its seed-0 final policy, a small shared subset; what each control means: docs/analysis.md, "
                  "Card checks).", ""]
        lines += [checked_card_markdown(checked) for checked in parts.checked["arms"].values()]
    lines += _made_lines(m, parts)
    return "\n".join(lines).rstrip("\n") + "\n"
