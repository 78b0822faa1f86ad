"""The audit's two modes (forced actions, completions sampled under the policy) and the FINAL-context
analysis of arithmetic: hand-computed values, agreement with exact values, reports."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.analysis import (
    action_values,
    audit_markdown_summary,
    class_summary,
    final_context_summary,
    sampled_audit,
    sign_agreement,
    write_audit,
)
from jaxcredit.envs import make
from jaxcredit.stats import wilson_interval

# ----- sampled mode ---------------------------------------------------------------------------


def test_action_values_and_one_sided_sign_agreement_by_hand():
    # one state, 6 completions: actions 0, 0, 1, 2, 2, 2 with returns 1, 0, 0, 1, 1, 1 -> V̂ = 4/6
    q, count, credit, taken = action_values(np.array([[0, 0, 1, 2, 2, 2]]), np.array([[1., 0, 0, 1, 1, 1]]), 4)
    np.testing.assert_allclose(q[0], [0.5, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(count[0], [2, 1, 3, 0])
    np.testing.assert_allclose(credit[0], [0.5 - 4 / 6, -4 / 6, 1 - 4 / 6, 0.0])
    np.testing.assert_array_equal(taken[0], [True, True, True, False])
    # Half a chooses action 1 (|-0.5|), which b did not take: not compared. b chooses action 2
    # (+0.4), which a has with sign +: agreement 1 over one comparison.
    a = np.array([[0.1, -0.5, 0.2]])
    b = np.array([[0.0, 0.0, 0.4]])
    result = sign_agreement(a, b, np.array([[True, True, True]]), valid_b=np.array([[False, False, True]]))
    assert result == {"agreement": 1.0, "num_compared": 1, "num_unmatched": 1}
    # without valid_b the result is what it always was (b's 0 at action 1 disagrees)
    assert sign_agreement(a, b, np.ones((1, 3), bool)) == {"agreement": 0.5, "num_compared": 1}



# ----- FINAL context --------------------------------------------------------------------------


def _arithmetic_states(env, numbers, target, paths):
    """The states reached from `numbers`/`target` by each action list of `paths`, stacked `[N]`."""
    problem = env.make_problem(numbers, target)
    states = []
    for path in paths:
        state = env.init_problem(problem)
        for action in path:
            state = env.step(state, action)
        states.append(state)
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)


def test_final_context_hand_values():
    env = make("arithmetic", count=3, max_turns=4)
    plus = 0
    first, second = env.combine_action(0, plus, 1), env.combine_action(0, plus, 2)  # [2, 3, 4] -> [5, 4] -> [9]
    states = _arithmetic_states(env, [2, 3, 4], 9, [[], [first], [first, second]])
    legal = np.asarray(states.legal_action_mask)
    # [2, 3, 4]: 16 legal combinations + 3 FINALs; [5, ., 4]: 5 + UNDO + 2; [9, ., .]: UNDO + 1
    assert legal.sum(axis=1).tolist() == [19, 8, 2]
    uniform = legal / legal.sum(axis=1, keepdims=True)
    final_0 = env.final_action(0)
    chosen = np.array([final_0, first, final_0])
    summary = final_context_summary(env, states, uniform, chosen)
    contexts = summary["contexts"]
    assert list(contexts) == ["target_only_live", "target_live_with_others", "target_not_live", "all"]
    assert contexts["target_only_live"]["n"] == 1 and contexts["target_not_live"]["n"] == 2
    assert contexts["target_live_with_others"]["n"] == 0
    assert contexts["target_live_with_others"]["policy_final_probability"] is None
    assert contexts["target_only_live"]["uniform_final_probability"] == pytest.approx(1 / 2)
    assert contexts["target_only_live"]["uniform_winning_probability"] == pytest.approx(1 / 2)
    assert contexts["target_not_live"]["uniform_final_probability"] == pytest.approx((3 / 19 + 2 / 8) / 2)
    assert contexts["target_not_live"]["uniform_winning_probability"] == 0.0
    assert contexts["all"]["policy_final_probability"] == pytest.approx((3 / 19 + 2 / 8 + 1 / 2) / 3)
    assert contexts["target_not_live"]["chosen"] == 1 and contexts["target_only_live"]["chosen"] == 1
    assert contexts["all"]["chosen_rate"] == pytest.approx(2 / 3)
    # a policy that always submits slot 0
    always = np.zeros_like(uniform)
    always[:, final_0] = 1.0
    greedy = final_context_summary(env, states, always)["contexts"]
    assert greedy["all"]["policy_final_probability"] == 1.0
    assert greedy["target_only_live"]["policy_winning_probability"] == 1.0
    assert "chosen" not in greedy["all"]
    # the target among other live slots: [2, 3, 9] with target 9, and without require_all_used
    states = _arithmetic_states(env, [2, 3, 9], 9, [[]])
    legal = np.asarray(states.legal_action_mask)
    uniform = legal / legal.sum(axis=1, keepdims=True)
    assert final_context_summary(env, states, uniform)["contexts"]["target_live_with_others"]["n"] == 1
    loose = make("arithmetic", count=3, max_turns=4, require_all_used=False)
    contexts = final_context_summary(loose, states, uniform)["contexts"]
    assert list(contexts) == ["target_live", "target_not_live", "all"] and contexts["target_live"]["n"] == 1
    assert contexts["target_live"]["uniform_winning_probability"] == pytest.approx(1 / legal.sum())
    with pytest.raises(ValueError, match="for arithmetic, not mad"):
        final_context_summary(make("mad"), states, uniform)


def test_wilson_interval_hand_values():
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert all(np.isnan(wilson_interval(0, 0)))
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        wilson_interval(3, 2)


# ----- the report of a sampled-only arithmetic audit ------------------------------------------


def test_report_of_a_sampled_arithmetic_audit_shows_final_context(tmp_path):
    env = make("arithmetic", count=3, max_turns=4)
    states = _arithmetic_states(env, [2, 3, 4], 9, [[]])
    legal = np.asarray(states.legal_action_mask)
    final = final_context_summary(env, states, legal / legal.sum(), np.array([env.final_action(1)]))
    sampled = sampled_audit(np.array([[0, 1, 0, 1]]), np.array([[1., 0, 1, 0]]), np.array([[0.9, 0.1]]),
                            np.array([[0.5, 0.5]]), np.ones((1, 2), bool))
    audit = {"env": "arithmetic", "env_config": env.config(), "modes": ["sampled"], "num_states": 1,
             "max_legal_actions": 2, "episode_success": 0.0, "mean_episode_length": 1.0,
             "credit_before_final": {"exact": 0.5, "steps_before_final": 0.0},
             "classes": class_summary(np.array([[0]]), np.array([[2]]), ("COMBINE", "UNDO", "FINAL"), np.ones((1, 1))),
             "thresholds": {"relative": 0.01, "absolute": 1e-6},
             "completions": {"sampled": {"total": 4, "per_state": 4.0}},
             "sampled": {**sampled, "env_steps": 4, "policy_evals": 4, "seconds": 0.0},
             "final_context": final, "seconds": {"episodes": 0.0, "total": 0.0}, "policy": "uniform policy"}
    summary = audit_markdown_summary(audit)
    assert "forced" not in summary and "| sign agreement, exact top action (among those taken)" in summary
    assert "| target_not_live: no live slot equals the target (every FINAL loses) | 1 | 0.158 | 0.158 |" in summary
    assert "1/1 = 1.000 [0.207, 1.000]" in summary
    report = write_audit(str(tmp_path), audit)
    text = open(report).read()
    assert "FINAL choice by context" in text and "mc-error.png" not in text
    card = json.load(open(tmp_path / "card.json"))[0]
    assert "completions sampled under the policy (4 per state, halves of 2 and 2" in card["intervention_provenance"]
