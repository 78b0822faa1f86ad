"""The ranking study (`jaxcredit.analysis.ranking`): classes, labels and exact credit on the hand-built
episode of tests/test_replacement_progress.py, the measures on a hand-made set of steps, Δ equal to
the exact arm's credit under every replacement, and `jaxcredit rank` end to end on a tiny policy."""

import dataclasses
import json
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.analysis.exact import exact_step_values
from jaxcredit.analysis.ranking import (
    RANK_CLASSES,
    above_median_share,
    across_checkpoints,
    counterfactual_credit,
    rank_trajectory,
    ranking_measures,
)
from jaxcredit.arm_registry import split_options
from jaxcredit.checkpoint import save_policy
from jaxcredit.cli import main
from jaxcredit.cli.analysis import _rank_policy_paths
from jaxcredit.conformance import check_decorative_actions, rollout_random
from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext
from jaxcredit.envs import MadSelectiveCopy, make
from jaxcredit.policy import PolicyConfig, make_policy
from jaxcredit.rollout import rollout
from tests.test_replacement_progress import ENV, HAND, _episodes, half_note_policy

LB, DEC, HBR = (RANK_CLASSES.index(c) for c in ("load-bearing", "decorative", "harmful-but-recovered"))
TINY = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "decorative_actions": 1, "max_turns": 6}
NETWORK = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32)


def hand_value_fn(params, observation, legal_action_mask):
    """Φ_θ of the hand episode's states: empty 1/8, {1} 3/8, {0, 1} 7/8, {0} 5/8."""
    return 0.5 * (observation[..., 0] == 3) + 0.25 * (observation[..., 1] == 1) + 0.125


def test_decorative_action_mask_is_the_notes_and_conformance_checks_it():
    mask = make("mad", length=3, max_useful=2, decorative_actions=2).decorative_action_mask()
    assert mask.tolist() == [False] * 7 + [True] * 2
    assert not make("mad").decorative_action_mask().any() and not make("arithmetic").decorative_action_mask().any()

    @dataclasses.dataclass(frozen=True)
    class SelectIsDecorative(MadSelectiveCopy):
        def decorative_action_mask(self):
            return np.arange(self.num_actions) == 0

    wrong = SelectIsDecorative(**make("mad", **TINY).config())
    _, states, _ = rollout_random(wrong, seed=0, num_episodes=8, num_steps=3, illegal_fraction=0.0)
    with pytest.raises(AssertionError, match=r"decorative action 0 \(select 0\) (is not legal|changed)"):
        check_decorative_actions(wrong, states)


def test_the_hand_episode_classes_credit_and_mean_labels():
    """note 0 (decorative), select 1 (harmful, repaired later), select 0, unselect 1, submit (load-bearing)."""
    trajectory = _episodes(1)
    steps = rank_trajectory(ENV, half_note_policy, None, trajectory, jax.random.key(0), continuations=4,
                            value_fn=hand_value_fn, value_params=None)
    assert steps["class"].tolist() == [DEC, HBR, LB, LB, LB]
    for replacement, hand in HAND.items():
        np.testing.assert_allclose(steps["references"][replacement], hand, atol=1e-6)
    np.testing.assert_allclose(steps["labels"]["progress-model"], [0.0, 0.25, 0.5, -0.25, 0.375])
    soft, hard = steps["labels"]["progress-soft"], steps["labels"]["progress-hard"]
    assert np.allclose(soft * 4, np.round(soft * 4)) and set(hard.tolist()) <= {-1.0, 0.0, 1.0}
    options = split_options({"credit_options": {"continuations": 4}}, "progress-hard")[0]
    context = CreditContext(ENV, half_note_policy, None, types.SimpleNamespace(credit_options=options))
    arm = CREDIT_ARMS["progress-hard"].compute(context, trajectory, None, jax.random.key(0)).advantage
    np.testing.assert_array_equal(np.asarray(arm)[0, :5], hard)  # the arm's label, the same continuations
    means = ranking_measures(steps)["mean_label"]
    by_hand = {"Δ on-policy": (-5 / 64, 44 / 192, -32 / 64), "Δ uniform": (5 / 128, 80 / 192, -22 / 64),
               "Δ null": (0.0, 88 / 192, -24 / 64), "progress-model": (0.0, 0.625 / 3, 0.25)}
    for kind, (decorative, load_bearing, recovered) in by_hand.items():
        got = means[kind]
        assert got["decorative"] == pytest.approx(decorative, abs=1e-6), kind
        assert got["load-bearing"] == pytest.approx(load_bearing, abs=1e-6), kind
        assert got["harmful-but-recovered"] == pytest.approx(recovered, abs=1e-6), kind
        assert got["harmful"] is None and got["neutral"] is None


def test_the_measures_on_hand_made_steps():
    """Three load-bearing, two decorative, one repaired harmful step; the label ranks the decorative
    steps on top, Δ below every load-bearing one."""
    label = np.array([0.1, 0.2, 0.3, 0.5, 0.6, -0.3])
    delta = np.array([0.3, 0.4, 0.45, -0.02, -0.01, -0.5])
    classes = np.array([LB, LB, LB, DEC, DEC, HBR])
    steps = {"class": classes, "value": np.full(6, 0.5), "labels": {"progress-soft": label},
             "references": {"on-policy": delta}}
    out = ranking_measures(steps)
    assert above_median_share(label, classes) == 1.0 and above_median_share(delta, classes) == 0.0
    assert out["decorative_above_median"] == {"progress-soft": 1.0, "Δ on-policy": 0.0}
    assert out["class_counts"] == {"load-bearing": 3, "decorative": 2, "harmful-but-recovered": 1, "harmful": 0,
                                   "neutral": 0}
    measures = out["measures"]["progress-soft"]["on-policy"]
    assert measures["load-bearing"]["sign_agreement"] == 1.0 and measures["load-bearing"]["rank_correlation"] == 1.0
    assert measures["decorative"]["sign_agreement"] == 0.0 and measures["harmful"]["steps"] == 0
    assert measures["all"]["sign_agreement"] == pytest.approx(4 / 6)
    d = out["disagreement"]["progress-soft"]["on-policy"]
    # mean percentile ranks among the 6: label LB (2,3,4), DEC (5,6), HBR 1; Δ LB (4,5,6), DEC (2,3), HBR 1
    assert d["rank_gap"] == pytest.approx({"load-bearing": -1 / 3, "decorative": 0.5, "harmful-but-recovered": 0.0})
    assert d["order"] == ["decorative", "load-bearing", "harmful-but-recovered"] and d["top"] == "decorative"
    assert d["sign_disagreement"]["decorative"] == 1.0
    assert out["mean_label"]["progress-soft"]["decorative"] == pytest.approx(0.55)


def test_across_checkpoints_is_each_checkpoint_then_a_t_interval():
    """Two hand-made checkpoints: the decorative mean label is 0.55 in one and 0.15 in the other, so
    the mean is 0.35 with half-width t(0.975, 1) * 0.2 (sd 0.2 * sqrt 2 over sqrt 2)."""
    classes = np.array([LB, LB, DEC, DEC])
    parts = [{"class": classes, "value": np.full(4, 0.5), "labels": {"progress-soft": label},
              "references": {"on-policy": np.array([0.3, 0.4, -0.02, -0.01])}}
             for label in (np.array([0.1, 0.2, 0.5, 0.6]), np.array([0.1, 0.2, 0.1, 0.2]))]
    out = across_checkpoints(parts)
    decorative = out["mean_label"]["progress-soft"]["decorative"]
    half = 12.706204736174707 * 0.2
    assert out["n"] == 2 and decorative["values"] == pytest.approx([0.55, 0.15])
    assert decorative["mean"] == pytest.approx(0.35) and decorative["high"] == pytest.approx(0.35 + half)
    assert out["decorative_above_median"]["progress-soft"]["values"] == [1.0, 0.5]  # 0.1 and 0.2 vs median 0.15
    assert out["mean_label"]["progress-soft"]["harmful"]["n"] == 0  # no such steps: left out


def tilted_policy(params, observation, legal_action_mask):
    """A fixed policy that is neither uniform nor deterministic: logit 0.3 a for action a."""
    return jnp.broadcast_to(0.3 * jnp.arange(legal_action_mask.shape[-1], dtype=jnp.float32), legal_action_mask.shape)


def test_delta_under_each_replacement_is_the_exact_arms_credit():
    env = make("mad", **TINY)
    starts = jax.vmap(env.init)(jax.random.split(jax.random.key(2), 8))
    trajectory, _ = rollout(env, tilted_policy, None, starts, jax.random.key(3), num_turns=env.max_turns)
    values = exact_step_values(env, trajectory, reference="policy", policy_fn=tilted_policy, params=None)
    delta = counterfactual_credit(env, trajectory, values)
    contexts = {}
    for replacement in ("on-policy", "uniform", "null"):
        options = split_options({"credit_options": {"replacement": replacement}}, "exact")[0]
        config = types.SimpleNamespace(attempts_per_problem=1, objective="pg", credit_options=options)
        contexts[replacement] = CreditContext(env, tilted_policy, None, config)
    arm = jax.jit(lambda t, p: {r: CREDIT_ARMS["exact"].compute(c, t, p, jax.random.key(0)).advantage
                                for r, c in contexts.items()})(trajectory, trajectory.states.problem[:, 0])
    for replacement in contexts:
        np.testing.assert_allclose(delta[replacement], arm[replacement], atol=1e-5)
    assert np.abs(delta["null"] - delta["on-policy"]).max() > 1e-3  # the replacements differ
    assert np.abs(delta["uniform"] - delta["on-policy"]).max() > 1e-3


def _saved(tmp_path, name, **overrides):
    env = make("mad", **{**TINY, **overrides})
    params = make_policy(NETWORK, env).init_fn(jax.random.key(0))
    return save_policy(tmp_path / name, params, policy_config=NETWORK, env_name=env.name, env_config=env.config())


def test_rank_command_writes_its_three_files(tmp_path, capsys):
    path = _saved(tmp_path, "policy")
    out = tmp_path / "ranking"
    assert main(["rank", "--policy", f"tiny={path}", "--episodes", "8", "--continuations", "2", "--fit-steps", "5",
                 "--out", str(out), "--no-progress"]) == 0
    assert sorted(os.listdir(out)) == ["ranking.json", "ranking.md", "ranking.png"]
    result = json.loads((out / "ranking.json").read_text())
    entry = result["policies"]["tiny"]
    assert entry["checkpoints"] == [path] and entry["replacements"] == ["on-policy", "uniform", "null"]
    assert entry["steps"] == sum(entry["class_counts"].values()) == sum(entry["steps_per_checkpoint"]) > 8
    first, last = entry["fit_loss"][0]
    assert last < first  # the value head learned something
    assert entry["class_counts"]["decorative"] > 0  # an untrained network takes the note
    markdown = (out / "ranking.md").read_text()
    assert "## tiny" in markdown and "### Against Δ null" in markdown and "### Where they disagree most" in markdown
    assert "wrote" in capsys.readouterr().out


def test_rank_policy_paths_take_a_run_directorys_seeds(tmp_path):
    for seed in (10, 2, 0):
        (tmp_path / "cell" / "policies" / f"seed-{seed}").mkdir(parents=True)
    name, paths = _rank_policy_paths(f"outcome={tmp_path / 'cell'}")
    assert name == "outcome" and [os.path.basename(p) for p in paths] == ["seed-0", "seed-2", "seed-10"]
    assert _rank_policy_paths(str(tmp_path / "cell") + "/")[0] == str(tmp_path / "cell")


def test_rank_command_errors_are_one_line(tmp_path, capsys):
    assert main(["rank", "--policy", f"x={tmp_path / 'nowhere'}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neither a policy checkpoint nor a run directory" in err
    plain = _saved(tmp_path, "plain", decorative_actions=0)
    assert main(["rank", "--policy", f"plain={plain}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "policy 'plain': environment 'mad' as configured has no decorative actions" in err
