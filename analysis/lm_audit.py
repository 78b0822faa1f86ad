"""Audit of language-model transcripts with exact values: what every reply did, turn by turn.

`audit_transcripts(transcripts)` replays each transcript (`jaxcredit.envs.transcripts.replay`:
the environment decides what a reply did), solves its problem's complete graph
(`jaxcredit.solver.solve`) under the uniform reference policy and under optimal play (and,
optionally, a network policy from a checkpoint), and labels every turn: its exact `V(s)` and
`Q(s, a)` (a refused reply is valued as what it is, one turn used: `V` with one turn fewer), the
advantage `Q − V`, the action class (`jaxcredit.analysis.classes`, under each reference), the
invalid-command category and intended action of a refused reply (`jaxcredit.analysis.intent`),
the exact-best action and the gap `V*(s) − Q*(s, a)` between the agent's choice and it, and
whether an answer action (FINAL; MAD: submit) was chosen while the target was reached.
`summarize` aggregates them; `credit_labels` exports per-turn labels for LM fine-tuning.

Shape letters: B transcripts, T turns (`max_turns`, padded), A actions.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.analysis.classes import CLASSES, class_summary, classify_actions
from jaxcredit.analysis.intent import CATEGORIES, categorize
from jaxcredit.envs.text_protocol import Refusal
from jaxcredit.envs.transcripts import replay
from jaxcredit.solver import solve
from jaxcredit.solver_values import reference_values

ANSWER_TYPES = ("FINAL", "submit")  # the action type that submits an answer
REPAIR_TYPES = ("UNDO", "unselect")  # the action type that takes a move back
OPTIMAL_TOLERANCE = 1e-6  # a gap at most this is an optimal choice (float32 round-off)


def action_types(env) -> tuple[str, ...]:
    """The action types of `env` (first words of its action names, in action order), then `invalid`."""
    names = []
    for action in range(env.num_actions):
        word = env.action_name(action).split()[0]
        if word not in names:
            names.append(word)
    return (*names, "invalid")


@functools.partial(jax.jit, static_argnames=("env", "policy_fn"))
def _network_values(env, policy_fn, params, problem):
    values, _ = reference_values(env, problem, policy="network", policy_fn=policy_fn, params=params)
    return values.v, values.q


def _values(env, problem, references: dict) -> dict:
    """Host `{reference: (v [T + 1, S], q [T + 1, S, A])}` of one problem."""
    out = {}
    for name, policy in references.items():
        if policy in ("uniform", "optimal"):
            values = solve(env, problem, policy=policy)
            out[name] = (np.asarray(values.v), np.asarray(values.q))
        else:
            policy_fn, params = policy
            v, q = _network_values(env, policy_fn, params, jax.tree_util.tree_map(jnp.asarray, problem))
            out[name] = (np.asarray(v), np.asarray(q))
    return out


def _turn_rows(transcript: dict, references: dict) -> list[dict]:
    """The per-turn labels of one transcript (see the module docstring)."""
    env, protocol, states, parsed = replay(transcript)
    values = _values(env, states[0].problem, references)
    rows = []
    for k, result in enumerate(parsed):
        if result is None:  # the agent gave no reply: the transcript ends here
            break
        state, turn = states[k], transcript["turns"][k]
        legal = np.asarray(state.legal_action_mask)
        tl, pos = env.max_turns - int(state.turn), int(env.position_index(state))
        accepted = not isinstance(result, Refusal)
        prompt = protocol.render_prompt(state)  # from the environment: a stored prompt must agree
        if turn.get("prompt") is not None and turn["prompt"] != prompt:
            raise ValueError(f"transcript {transcript['id']} turn {k}: its stored prompt is not the prompt of its "
                             "problem at this turn (edited problem or prompt?); the audit labels the environment's")
        row = {"transcript": transcript["id"], "turn": k, "turns_left": tl, "position": pos,
               "prompt": prompt, "reply": turn["reply"],
               "accepted": accepted, "action": env.action_name(result) if accepted else None,
               "action_id": int(result) if accepted else None,
               "refusal": None if accepted else result.reason, "category": None, "intended": None,
               "type": env.action_name(result).split()[0] if accepted else "invalid"}
        if not accepted:
            row["category"], intended = categorize(protocol, turn["reply"], result, state)
            row["intended"] = None if intended is None else env.action_name(intended)
            row["intended_type"] = None if intended is None else env.action_name(intended).split()[0]
        for name, (v, q) in values.items():
            chosen = q[tl, pos, result] if accepted else v[tl - 1, pos]
            row[f"v_{name}"], row[f"q_{name}"] = float(v[tl, pos]), float(chosen)
            row[f"advantage_{name}"] = float(chosen - v[tl, pos])
        q_opt, q_uni = values["optimal"][1][tl, pos], values["uniform"][1][tl, pos]
        best = np.flatnonzero(legal & (q_opt >= q_opt[legal].max()))
        best = best[np.argmax(q_uni[best])]  # among the optimal actions, the best under the uniform reference
        row["best_action"] = env.action_name(best)
        row["gap_optimal"] = float(q_opt[best] - row["q_optimal"])
        row["gap_uniform"] = float(q_uni[legal].max() - row["q_uniform"])
        answers = [a for a in np.flatnonzero(legal) if env.action_name(a).split()[0] in ANSWER_TYPES]
        intent = row["type"] if accepted else row.get("intended_type")
        row["answer"] = intent in ANSWER_TYPES
        # Q*(s, a) with one turn left is the reward of a: an answer is right now iff it is positive
        row["target_reached"] = bool(any(values["optimal"][1][1, pos, a] > 0 for a in answers))
        row["uniform_answer_rate"] = len(answers) / max(1, int(legal.sum()))
        rows.append(row)
    final = states[len(rows)]
    success = bool(final.terminated) and float(final.reward) > 0
    for row in rows:
        row["outcome"] = float(success)
    return rows


def audit_transcripts(transcripts: list[dict], *, policy: tuple[Any, Any] | None = None,
                      progress: Any = None) -> dict:
    """Label every turn of every transcript and aggregate (`summarize`).

    `transcripts`: validated transcripts (`jaxcredit.envs.transcripts.read_transcripts`), all of
    one environment. `policy`: an optional `(policy_fn, params)` (a checkpoint's network), a
    third reference. `progress`: an optional callable run after each transcript. Returns
    `{"turns": [row, ...], "transcripts": [...], "summary": {...}}`; raises `ValueError` for
    transcripts of several environments or one that does not replay.
    """
    envs = sorted({t["env"] for t in transcripts})
    if len(envs) != 1:
        raise ValueError(f"audit one environment at a time; these transcripts are of {', '.join(envs)}")
    references = {"uniform": "uniform", "optimal": "optimal", **({"policy": policy} if policy else {})}
    rows, per = [], []
    for transcript in transcripts:
        turns = _turn_rows(transcript, references)
        rows += turns
        per.append(_transcript_entry(transcript, turns))
        if progress is not None:
            progress()
    env = replay({**transcripts[0], "turns": []}).env
    _classify(rows, per, list(references))
    return {"env": env.name, "references": list(references), "turns": rows, "transcripts": per,
            "summary": summarize(rows, per, action_types(env), list(references))}


def _transcript_entry(transcript: dict, turns: list[dict]) -> dict:
    gaps = [r["gap_optimal"] for r in turns]
    first = next((r["turn"] for r in turns if r["gap_optimal"] > OPTIMAL_TOLERANCE), None)
    return {"id": transcript["id"], "agent": transcript.get("agent"), "success": bool(turns and turns[0]["outcome"]),
            "turns": len(turns), "error": transcript.get("error"),
            "invalid": {c: sum(r["category"] == c for r in turns) for c in CATEGORIES},
            "repairs": sum(r["type"] in REPAIR_TYPES for r in turns), "total_gap_optimal": float(sum(gaps)),
            "first_suboptimal_turn": first, "start_value_optimal": turns[0]["v_optimal"] if turns else None,
            "start_value_uniform": turns[0]["v_uniform"] if turns else None}


def _classify(rows: list[dict], per: list[dict], references: list[str]) -> None:
    """Add `class_<reference>` to every row (`classify_actions` over `[B, T]` padded arrays)."""
    index = {entry["id"]: b for b, entry in enumerate(per)}
    shape = (len(per), max([r["turn"] + 1 for r in rows], default=1))
    live = np.zeros(shape, bool)
    success = np.array([entry["success"] for entry in per], bool)
    for name in references:
        credit, value = np.zeros(shape), np.zeros(shape)
        for r in rows:
            b, t = index[r["transcript"]], r["turn"]
            live[b, t], credit[b, t], value[b, t] = True, r[f"advantage_{name}"], r[f"v_{name}"]
        classes = classify_actions(credit, value, live, success)
        for r in rows:
            r[f"class_{name}"] = CLASSES[classes[index[r["transcript"]], r["turn"]]]


def summarize(rows: list[dict], per: list[dict], types: tuple[str, ...], references: list[str]) -> dict:
    """Aggregates over all turns: success, invalid commands, classes by type, repairs, answers, gaps."""
    n, turns = len(per), len(rows)
    refused = [r for r in rows if not r["accepted"]]
    invalid = {}
    for c in CATEGORIES:
        these = [r for r in refused if r["category"] == c]
        intended: dict = {}
        for r in these:
            intended[r.get("intended_type") or "none"] = intended.get(r.get("intended_type") or "none", 0) + 1
        invalid[c] = {"count": len(these), "share_of_turns": len(these) / turns if turns else 0.0,
                      "intended": intended, "examples": [r["reply"][:80] for r in these[:3]]}
    type_index = {name: i for i, name in enumerate(types)}
    classes = {}
    for name in references:
        labels = np.array([[CLASSES.index(r[f"class_{name}"]) for r in rows]], np.int32).reshape(1, -1)
        kinds = np.array([[type_index[r["type"]] for r in rows]]).reshape(1, -1)
        credit = np.array([[r[f"advantage_{name}"] for r in rows]]).reshape(1, -1)
        classes[name] = class_summary(labels, kinds, types, credit)
    answers = {}
    for reached in (True, False):
        these = [r for r in rows if r["target_reached"] == reached]
        chosen = sum(r["answer"] for r in these)
        answers["reached" if reached else "not reached"] = {
            "turns": len(these), "answer_chosen": chosen, "rate": chosen / len(these) if these else None,
            "uniform_rate": float(np.mean([r["uniform_answer_rate"] for r in these])) if these else None}
    gaps = np.array([r["gap_optimal"] for r in rows])
    by_type = {t: float(np.mean([r["gap_optimal"] for r in rows if r["type"] == t]))
               for t in types if any(r["type"] == t for r in rows)}
    repair = [r for r in rows if r["type"] in REPAIR_TYPES]
    return {
        "transcripts": n, "turns": turns, "success_rate": sum(e["success"] for e in per) / n if n else None,
        "errors": sum(e["error"] is not None for e in per), "invalid": invalid,
        "invalid_share": len(refused) / turns if turns else 0.0, "classes": classes,
        "repairs": {"type": next((t for t in types if t in REPAIR_TYPES), None), "count": len(repair),
                    "transcripts_using": sum(e["repairs"] > 0 for e in per),
                    "share_of_turns": len(repair) / turns if turns else 0.0},
        "answers": answers,
        "gap": {"mean": float(gaps.mean()) if turns else None,
                "optimal_choice_rate": float((gaps <= OPTIMAL_TOLERANCE).mean()) if turns else None,
                "by_type": by_type,
                "by_turn": [float(gaps[[r["turn"] == t for r in rows]].mean())
                            for t in range(max([r["turn"] + 1 for r in rows], default=0))]},
    }


LABEL_FIELDS = ("transcript", "turn", "prompt", "reply", "accepted", "action", "category", "intended", "outcome")


def credit_labels(audit: dict) -> list[dict]:
    """Per-turn training rows for an LM fine-tuning pipeline: the prompt and reply text, the
    episode outcome, the exact advantage under every reference, and the classes."""
    out = []
    for r in audit["turns"]:
        row = {key: r.get(key) for key in LABEL_FIELDS}
        for name in audit["references"]:
            row[f"advantage_{name}"] = r[f"advantage_{name}"]
            row[f"class_{name}"] = r[f"class_{name}"]
        out.append(row)
    return out
