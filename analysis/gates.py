"""Learnability gates on results pages: whether the policy can imitate the optimal policy at all.

A sweep's gate records live in `SWEEP/gates/<rung>/gate.json` (written by `jaxcredit gate --out
SWEEP/gates/<rung>`, `jaxcredit.train.gate`), one per rung of the ladder (policy input, problem
size). The page of a study on an environment with a gate (`Environment.has_learnability_gate`:
arithmetic) starts with them: its gate passes when a rung on the study's own
problems and policy input passed, fails when such rungs exist and none passed, and is `not run`
otherwise. A page whose gate failed says so first and compares no arms: a credit comparison
between policies that cannot learn the task from perfect labels measures nothing about credit.
"""

from __future__ import annotations

import glob
import os

from jaxcredit.analysis.rundirs import read_json
from jaxcredit.envs import environment_class

GATES_DIR, GATE_NAME = "gates", "gate.json"
PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"
_RUNG_DEFAULTS = {"policy_input": "tokens", "afterstate_lookahead": 0}


def read_gates(sweep_dir: str) -> dict:
    """`{rung name: gate record}` of `sweep_dir/gates/*/gate.json`, by name."""
    found = sorted(glob.glob(os.path.join(sweep_dir, GATES_DIR, "*", GATE_NAME)))
    return {os.path.basename(os.path.dirname(path)): read_json(path, expect=dict) for path in found}


def study_rung(spec: dict) -> dict:
    """The rung a sweep's arms train on: problem size, family and policy input (its base config)."""
    base = spec.get("base", {})
    env = base.get("env_overrides", {}) or {}
    rung = {name: base.get(name, default) for name, default in _RUNG_DEFAULTS.items()}
    return {**rung, "count": env.get("count", 4), "family": env.get("family", "default")}


def _matches(record: dict, rung: dict) -> bool:
    mine = {**_RUNG_DEFAULTS, **record.get("rung", {})}
    return all(mine.get(key) == value for key, value in rung.items())


def has_gate(spec: dict) -> bool:
    """Whether a sweep's page has a learnability gate: a sweep on an environment that declares one
    (`Environment.has_learnability_gate`: arithmetic)."""
    env_class = environment_class(spec.get("base", {}).get("env", "mad"))
    return bool(getattr(env_class, "has_learnability_gate", False))


def gate_status(spec: dict, gates: dict) -> str:
    """`passed`, `failed` or `not run` for the study's own rung (see the module docstring)."""
    rung = study_rung(spec)
    mine = [record for record in gates.values() if _matches(record, rung)]
    if not mine:
        return NOT_RUN
    return PASSED if any(record.get("passed") for record in mine) else FAILED


def _rung_text(rung: dict) -> str:
    text = f"{rung.get('policy_input', 'tokens')}"
    if rung.get("afterstate_lookahead"):
        text += f", lookahead {rung['afterstate_lookahead']}"
    return text + f"; {rung.get('count')} numbers, {rung.get('family')}"


def gate_lines(spec: dict, gates: dict, *, link: str, duration_text) -> list:
    """Markdown: the gate's one-line result, then every rung's result and cost (nothing for a
    sweep that is not on arithmetic). Links go to `{link}gates/<name>.json`."""
    if not has_gate(spec):
        return []
    status = gate_status(spec, gates)
    rung = _rung_text(study_rung(spec))
    if status == PASSED:
        head = (f"**Learnability gate: passed** on the study's problems ({rung}): imitating the optimal policy, "
                "the policy reaches the threshold on held-out problems, so the task is learnable and the arms "
                "below are compared.")
    elif status == FAILED:
        head = (f"**Learnability gate: FAILED** on the study's problems ({rung}): imitating the optimal policy "
                "(perfect labels), the policy does not reach the threshold on held-out problems. No arm is compared "
                "on this page: a difference between arms would not be about credit.")
    else:
        head = (f"**Learnability gate: not run** on the study's problems ({rung}): nothing shows the policy can "
                f"learn them from perfect labels (`jaxcredit gate --out SWEEP/{GATES_DIR}/<rung>`, then regenerate "
                "the page); read the comparisons with that in mind.")
    lines = ["## Learnability gate", "", head, ""]
    if not gates:
        return lines
    lines += ["Every rung run: supervised imitation of the optimal policy (objective `hard`, credit `solver`, "
              "`solver_policy` optimal, ties broken toward the fastest win), greedy success on the family's "
              "held-out evaluation problems (mean over seeds at the last evaluation) against the threshold.", "",
              "| rung | policy input | problems | turns left shown | greedy success | threshold | result | "
              "main attempts | total env steps | run time | record |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, record in gates.items():
        r = {**_RUNG_DEFAULTS, **record.get("rung", {})}
        policy_input = r["policy_input"] + (f", lookahead {r['afterstate_lookahead']}" if r["afterstate_lookahead"]
                                            else "")
        success = ", ".join(f"{family} {value:.3f}" for family, value in record.get("success", {}).items())
        cost = record.get("cost", {})
        lines.append(f"| {name} | {policy_input} | {r.get('count')} numbers, {r.get('family')} | "
                     f"{'yes' if r.get('include_turns_left') else 'no'} | {success} | {record.get('threshold', 0):g} | "
                     f"{'passed' if record.get('passed') else 'failed'} | {cost.get('main_episodes', 0):,.0f} | "
                     f"{cost.get('total_env_steps', 0):,.0f} | {duration_text(float(record.get('run_seconds', 0)))} | "
                     f"[{name}.json]({link}{GATES_DIR}/{name}.json) |")
    return lines + [""]
