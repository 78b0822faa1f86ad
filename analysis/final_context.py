"""The FINAL-context analysis of arithmetic: how often a policy answers where answering wins.

A FINAL action is excellent when the target has been reached and harmful otherwise. Each visited
state gets a context from its live slots and the target: with `require_all_used` (the default)
`target_only_live` (its FINAL wins), `target_live_with_others` (every FINAL is wrong) or
`target_not_live`; without it `target_live` or `target_not_live`. Per context and overall
(`all`): the number of states `n`; the policy's exact FINAL probability and its probability of a
winning FINAL, averaged over the states; the same two for the uniform reference; and how many of
the actions taken were a FINAL (`chosen`), with the rate's Wilson interval (indicative: the steps
of one episode are not independent draws). See
docs/analysis.md#final-context-arithmetic-analysisfinal_contextpy.

Shape letters: N states, A actions, C slots.
"""

from __future__ import annotations

import numpy as np

from jaxcredit.analysis.formatting import format_number
from jaxcredit.env import Environment, State
from jaxcredit.stats import wilson_interval

CONTEXTS_ALL_USED = ("target_only_live", "target_live_with_others", "target_not_live")
CONTEXTS_ANY_SLOT = ("target_live", "target_not_live")
CONTEXT_MEANING = {
    "target_only_live": "the only live slot equals the target (its FINAL wins)",
    "target_live_with_others": "a live slot equals the target, other slots live (every FINAL loses)",
    "target_live": "a live slot equals the target (its FINAL wins)",
    "target_not_live": "no live slot equals the target (every FINAL loses)",
    "all": "every visited state",
}


def context_names(env: Environment) -> tuple[str, ...]:
    """The contexts of `env` (an arithmetic environment), in order."""
    if "final_context" not in env.audit_details:
        raise ValueError(f"the FINAL-context analysis is for arithmetic, not {env.name}")
    return CONTEXTS_ALL_USED if env.require_all_used else CONTEXTS_ANY_SLOT


def final_contexts(env: Environment, states: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host: `(context int [N], final bool [A], winning bool [N, A])` of arithmetic `states`
    (leaves `[N, ...]`): each state's index into `context_names(env)`, which actions are FINALs,
    and which FINALs would be rewarded in each state."""
    context_names(env)  # an arithmetic environment
    values = np.asarray(states.env_state.values)
    live = np.asarray(states.env_state.live)
    on_target = live & (values == np.asarray(states.problem.target)[:, None])  # [N, C]
    reached = on_target.any(axis=1)
    only = live.sum(axis=1) == 1
    if env.require_all_used:
        context = np.where(reached & only, 0, np.where(reached, 1, 2))
        wins = on_target & only[:, None]
    else:
        context = np.where(reached, 0, 1)
        wins = on_target
    final_ids = np.array([env.final_action(k) for k in range(env.count)])
    final = np.zeros(env.num_actions, bool)
    final[final_ids] = True
    winning = np.zeros((values.shape[0], env.num_actions), bool)
    winning[:, final_ids] = wins
    return context.astype(np.int32), final, winning


def final_context_summary(env: Environment, states: State, probs: np.ndarray, chosen: np.ndarray | None = None, *,
                          confidence: float = 0.95) -> dict:
    """The FINAL rates per context (see the module) of a policy with action probabilities
    `probs` float `[N, A]` at arithmetic `states` (leaves `[N, ...]`; live states only), and,
    with `chosen` int `[N]`, of the actions it took there. JSON-able:
    `{"contexts": {name: {...}}, "meaning", "require_all_used", "confidence", "interval"}`."""
    context, final, winning = final_contexts(env, states)
    legal = np.asarray(states.legal_action_mask, bool)
    probs = np.asarray(probs, np.float64)
    if probs.shape != legal.shape:
        raise ValueError(f"probs must be [N, A] = {legal.shape}, got {probs.shape}")
    policy_final = (probs * final).sum(axis=1)
    policy_winning = (probs * winning).sum(axis=1)
    num_legal = np.maximum(legal.sum(axis=1), 1)
    uniform_final = (legal & final).sum(axis=1) / num_legal
    uniform_winning = (legal & winning).sum(axis=1) / num_legal
    took_final = None if chosen is None else final[np.clip(np.asarray(chosen), 0, env.num_actions - 1)]
    out = {}
    names = context_names(env)
    for name, mask in [*((n, context == i) for i, n in enumerate(names)), ("all", np.ones(context.shape, bool))]:
        n = int(mask.sum())
        entry = {"n": n}
        for key, values in (("policy_final_probability", policy_final), ("policy_winning_probability", policy_winning),
                            ("uniform_final_probability", uniform_final),
                            ("uniform_winning_probability", uniform_winning)):
            entry[key] = float(values[mask].mean()) if n else None
        if took_final is not None:
            k = int(took_final[mask].sum())
            low, high = wilson_interval(k, n, confidence=confidence)
            entry.update(chosen=k, chosen_rate=k / n if n else None, chosen_interval=[low, high])
        out[name] = entry
    return {"contexts": out, "meaning": {name: CONTEXT_MEANING[name] for name in out},
            "require_all_used": bool(env.require_all_used), "confidence": confidence,
            "interval": "Wilson score interval of the chosen rate over visited steps (steps of one episode are "
                        "not independent: indicative)"}


def final_context_markdown(summary: dict) -> str:
    """Markdown table of `final_context_summary`."""
    lines = ["| context | states n | policy P(FINAL) | uniform P(FINAL) | policy P(winning FINAL) | "
             f"uniform P(winning FINAL) | FINAL chosen ({summary['confidence']:.0%} Wilson) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]

    for name, entry in summary["contexts"].items():
        chosen = "n/a"
        if entry.get("chosen_rate") is not None:
            low, high = entry["chosen_interval"]
            chosen = f"{entry['chosen']}/{entry['n']} = {entry['chosen_rate']:.3f} [{low:.3f}, {high:.3f}]"
        lines.append(f"| {name}: {summary['meaning'][name]} | {entry['n']} | "
                     f"{format_number(entry['policy_final_probability'])} | "
                     f"{format_number(entry['uniform_final_probability'])} | "
                     f"{format_number(entry['policy_winning_probability'])} | "
                     f"{format_number(entry['uniform_winning_probability'])} | {chosen} |")
    return "\n".join(lines) + "\n"
