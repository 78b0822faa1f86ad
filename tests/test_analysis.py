"""Analysis: paired comparisons, reliability measures, action classes, cards, plots, reports, audit."""

import json
import os

import jax
import jax.numpy as jnp
import matplotlib.image
import numpy as np
import pytest
from scipy import stats as scipy_stats

from jaxcredit.analysis import (
    CLASSES,
    action_values,
    card_for_config,
    classify_actions,
    compare_arms,
    compare_sweep,
    credit_from_q,
    exact_credit,
    exact_step_values,
    format_comparison_table,
    learning_curve,
    markdown_links,
    mc_error_by_k,
    paired_comparison,
    plot_learning_curves,
    sample_completions,
    sampled_audit,
    sign_agreement,
    split_half_correlation,
    write_report,
)
from jaxcredit.cli import main
from jaxcredit.policy_fn import uniform_policy_fn
from jaxcredit.rollout import replay

# ----- synthetic sweep directory (no training) --------------------------------------------------

ARMS = ("outcome", "mc")
NUM_SEEDS, NUM_EVALS = 6, 5
# mc minus outcome at every evaluation after the start; in `matched`, mc's attempts run minus the
# outcome run given mc's total env steps
PLANTED = {"attempts": 0.2, "matched": -0.05, "fixed-steps": -0.1}
CELLS = [("attempts", "outcome"), ("attempts", "mc"), ("matched", "outcome/to-mc"), ("fixed-steps", "outcome"),
         ("fixed-steps", "mc")]


def _rows(regime: str, cell: str) -> list[dict]:
    rng = np.random.default_rng(CELLS.index((regime, cell)))
    rows = []
    for seed in range(NUM_SEEDS):
        base = 0.3 + 0.05 * seed  # shared by both arms: the pairing
        offset = {"mc": PLANTED[regime], "outcome/to-mc": PLANTED["attempts"] - PLANTED["matched"]}.get(cell, 0.0)
        for e in range(NUM_EVALS + 1):
            success = 0.05 if e == 0 else base + 0.05 * e + offset
            success += 0.005 * rng.standard_normal() if e else 0.0
            steps = (e * 1000) * (20 if (cell == "mc" and regime == "attempts") or regime == "matched" else 1)
            rows.append({"eval_index": e, "seed_index": seed, "iteration": 10 * e, "success_greedy": success,
                         "success_sampled": success, "total_env_steps": steps, "main_episodes": e * 100})
    return rows


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    spec = {"name": "synthetic", "description": "planted differences", "reference_arm": "outcome",
            "base": {"env": "mad", "num_seeds": NUM_SEEDS, "num_evals": NUM_EVALS, "eval_problems": 64,
                     "learning_rate": 0.003},
            "arms": {"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 2}},
            "budgets": {"attempts": 500, "fixed-steps": 5000}, "regimes": list(PLANTED), "num_seeds": None}
    (out / "sweep_spec.json").write_text(json.dumps(spec))
    for regime, cell in CELLS:
        run = out / regime / cell
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({**spec["base"], **spec["arms"][cell.split("/")[0]]}))
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(regime, cell)))
    return str(out)


def test_paired_comparison_recovers_planted_difference(sweep_dir):
    comparison = compare_sweep(sweep_dir)
    for regime, planted in PLANTED.items():
        entry = comparison["regimes"][regime]["mc"]["vs_reference"]
        for measure in ("final_success", "average_success"):
            d = entry[measure]
            assert d["mean_diff"] == pytest.approx(planted, abs=0.01)
            assert d["low"] - 0.01 <= planted <= d["high"] + 0.01 and d["high"] - d["low"] < 0.03
            assert d["low"] > 0 if planted > 0 else d["high"] < 0  # the interval excludes no difference
            assert (d["arm_wins"], d["baseline_wins"]) == ((NUM_SEEDS, 0) if planted > 0 else (0, NUM_SEEDS))
    # the average over training: evaluations 1..5 of base + 0.05 e -> base + 0.15, seed 0 base 0.3
    outcome = comparison["regimes"]["attempts"]["outcome"]
    assert outcome["average_success"] == pytest.approx(np.mean([0.45 + 0.05 * s for s in range(NUM_SEEDS)]),
                                                       abs=0.01)
    matched = comparison["regimes"]["matched"]["mc"]
    assert matched["reference"] == "outcome" and "matched to mc's total" in matched["budget"]
    assert matched["spend"]["reference"]["total_env_steps"] == 20 * NUM_EVALS * 1000
    text = format_comparison_table(comparison)
    assert text.count("paired Student-t interval over n = 6 seed(s)") == 3 and "WARNING" not in text
    assert compare_arms(sweep_dir, "mc", "outcome", "matched")["final_success"]["mean_diff"] == pytest.approx(
        PLANTED["matched"], abs=0.01)
    with pytest.raises(ValueError, match="label arm"):
        compare_arms(sweep_dir, "outcome", "mc", "matched")


def test_paired_comparison_refuses_unpaired_seeds():
    rows = _rows("attempts", "mc")
    with pytest.raises(ValueError, match="different seeds"):
        paired_comparison(rows, [r for r in rows if r["seed_index"] < 3])


def test_sign_agreement_and_split_half_on_known_inputs():
    rng = np.random.default_rng(0)
    valid = rng.random((4000, 9)) < 0.8
    valid[:, 0] = True
    a = rng.standard_normal((4000, 9))
    assert sign_agreement(a, a, valid)["agreement"] == 1.0
    assert split_half_correlation(a, a, valid)["correlation"] == pytest.approx(1.0)
    noise = sign_agreement(a, rng.standard_normal((4000, 9)), valid)
    assert noise["agreement"] == pytest.approx(0.5, abs=0.03) and noise["num_compared"] == 4000
    # signal + noise of equal variance: r = 1/2, Spearman-Brown 2/3
    signal = rng.standard_normal((4000, 9))
    half = split_half_correlation(signal + rng.standard_normal(signal.shape),
                                  signal + rng.standard_normal(signal.shape), valid)
    assert half["correlation"] == pytest.approx(0.5, abs=0.03)
    assert half["spearman_brown"] == pytest.approx(2 / 3, abs=0.03)
    zeros = np.zeros((3, 9))
    assert sign_agreement(zeros, zeros, valid[:3])["num_compared"] == 0  # no signal anywhere
    assert sign_agreement(zeros, a[:3], valid[:3])["agreement"] == 0.0  # a zero in the other half disagrees


def test_mc_error_matches_bernoulli_rate():
    rng = np.random.default_rng(1)
    q = rng.uniform(0.1, 0.9, (500, 5))
    returns = (rng.random((500, 5, 64)) < q[..., None]).astype(float)
    rows = mc_error_by_k(returns, q, np.full((500, 5), 0.2), np.ones((500, 5), bool), (1, 4, 16, 64))
    for r in rows:
        assert r["rmse_q"] == pytest.approx(r["bernoulli_rmse_q"], rel=0.1)
    assert rows[-1]["rmse_q"] < rows[0]["rmse_q"] / 6


def test_repaired_mad_episode_action_classes(mad):
    tape = mad.parse_tape("_ t04 _ _ t09 _ _ _")
    actions = jnp.array([[0, 1, 4, mad.submit_action, mad.length + 0, mad.submit_action]])
    trajectory, _ = replay(mad, jax.tree_util.tree_map(lambda x: x[None], mad.init_problem(tape)), actions)
    values = exact_step_values(mad, trajectory, reference="uniform")
    credit = exact_credit(trajectory, values)
    success = np.asarray(trajectory.episode_return) > 0
    classes = classify_actions(credit, values["v"], np.asarray(trajectory.live), success)
    assert [CLASSES[c] for c in classes[0]] == ["harmful-but-recovered", "load-bearing", "load-bearing",
                                                "harmful-but-recovered", "load-bearing", "load-bearing"]
    # Under the optimal policy with turns to spare no action changes V* = 1: all decorative.
    optimal = exact_step_values(mad, trajectory, reference="optimal")
    classes = classify_actions(exact_credit(trajectory, optimal), optimal["v"], np.asarray(trajectory.live), success)
    assert {CLASSES[c] for c in classes[0]} == {"decorative"}


# The repaired MAD episode on the small tape `_ t01 _ _`: select blank 0 (−), select useful 1
# (+), submit (wrong, −), unselect 0 (+), submit (+). The default tape's repaired episode has
# credits of 0.004 at V = 0.004 under the uniform policy, which would need ~10^5 completions
# per state to resolve; here every |Δ| that decides the statistic is at least 0.025.
REPAIRED_SMALL = "_ t01 _ _"
NUM_COMPLETIONS = 12_000


@pytest.fixture(scope="module")
def repaired_small(small_mad):
    tape = small_mad.parse_tape(REPAIRED_SMALL)
    submit = small_mad.submit_action
    # 48 copies of the episode, padded to max_turns: the shapes the audit command's exact values
    # have in test_audit_command_small_mad (one compiled program for both)
    actions = jnp.array([[0, 1, submit, small_mad.length + 0, submit, 0]] * 48)
    starts = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 48), small_mad.init_problem(tape))
    trajectory, _ = replay(small_mad, starts, actions)
    assert trajectory.episode_return[0] == 1.0 and trajectory.live[0].tolist() == [True] * 5 + [False]
    values = exact_step_values(small_mad, trajectory, reference="policy", policy_fn=uniform_policy_fn)
    states = jax.tree_util.tree_map(lambda x: x[0, :5], trajectory.states)
    legal = np.asarray(states.legal_action_mask)
    return states, values["q"][0, :5].astype(np.float64), legal / legal.sum(axis=1, keepdims=True)


def test_sampled_mode_signs_agree_with_exact_on_the_repaired_episode(small_mad, repaired_small):
    states, exact_q, probs = repaired_small
    out = sample_completions(small_mad, uniform_policy_fn, None, states, jax.random.key(3),
                             num_completions=NUM_COMPLETIONS)
    assert out["first_action"].shape == out["returns"].shape == (5, NUM_COMPLETIONS)
    summary = sampled_audit(out["first_action"], out["returns"], exact_q, probs, probs > 0)
    assert summary["total_completions"] == 5 * NUM_COMPLETIONS and summary["halves"] == [6000, 6000]
    assert summary["actions_taken_per_state"] == summary["legal_actions_per_state"] == 5
    # every state: the largest sampled credit has the exact sign, and the two halves agree
    assert summary["sign_agreement_vs_exact"] == {"agreement": 1.0, "num_compared": 5}
    assert summary["sign_agreement"] == {"agreement": 1.0, "num_compared": 10, "num_unmatched": 0}
    # every action whose exact credit is resolved (4 standard errors) has the exact sign
    _, count, credit, taken = action_values(out["first_action"], out["returns"], small_mad.num_actions)
    exact = credit_from_q(exact_q, probs, probs > 0)
    resolved = taken & (np.abs(exact) > 4 * np.sqrt(np.clip(exact_q, 1e-9, 1) / np.maximum(count, 1)))
    assert resolved.sum() >= 20 and np.all(np.sign(credit[resolved]) == np.sign(exact[resolved]))
    assert summary["q_error"]["rmse_q"] < 1.5 * summary["q_error"]["bernoulli_rmse_q"]
    assert summary["split_half"]["correlation"] > 0.95
    # the uniform policy's completions: one env step and one policy evaluation per live step
    assert out["env_steps"] == out["policy_evals"] > 5 * NUM_COMPLETIONS



def test_learning_curve_plot_has_one_line_per_arm(sweep_dir, tmp_path):
    from jaxcredit.analysis import sweep_cells

    runs = sweep_cells(sweep_dir)["attempts"]
    curves = {arm: learning_curve([json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))])
              for arm, run in runs.items()}
    assert curves["mc"]["x"][-1] == 20 * NUM_EVALS * 1000
    assert np.all(curves["mc"]["low"] <= curves["mc"]["mean"]) and np.all(curves["mc"]["mean"] <= curves["mc"]["high"])
    # the band is the Student-t interval of the mean over the 6 seeds at each evaluation
    at_last = [r["success_greedy"] for r in _rows("attempts", "mc") if r["eval_index"] == NUM_EVALS]
    half = scipy_stats.t.ppf(0.975, NUM_SEEDS - 1) * np.std(at_last, ddof=1) / np.sqrt(NUM_SEEDS)
    assert curves["mc"]["high"][-1] - curves["mc"]["mean"][-1] == pytest.approx(half)
    drawn = plot_learning_curves(curves, str(tmp_path / "c.png"))
    assert drawn["lines"] == list(ARMS)
    assert drawn["band"] == "band: 95% Student-t interval of the mean over n = 6 seeds"
    few = {arm: {**curve, "num_seeds": 2} for arm, curve in curves.items()}
    assert "n < 5" in plot_learning_curves(few, str(tmp_path / "d.png"))["band"]
    image = matplotlib.image.imread(drawn["path"])
    assert image.shape[:2] == (400, 640)
    # arms ending more than 10x apart in total env steps get a symlog axis, so the cheap arm is visible
    assert drawn["xscale"] == ("symlog" if curves["mc"]["x"][-1] > 10 * curves["outcome"]["x"][-1] else "linear")
    spread = {"cheap": {**curves["outcome"], "x": np.asarray(curves["outcome"]["x"]) / 1000}, "costly": curves["mc"]}
    assert plot_learning_curves(spread, str(tmp_path / "e.png"))["xscale"] == "symlog"
    assert plot_learning_curves(spread, str(tmp_path / "f.png"), x="main_episodes")["xscale"] == "linear"


def test_sweep_report_links_existing_files_and_readable_plots(sweep_dir):
    report = write_report(sweep_dir)
    text = open(report).read()
    links = markdown_links(text)
    pngs = [link for link in links if link.endswith(".png")]
    assert len(pngs) == 6  # 3 regimes x (steps, attempts)
    for link in links:
        assert os.path.exists(os.path.join(sweep_dir, link)), link
    for link in pngs:
        image = matplotlib.image.imread(os.path.join(sweep_dir, link))
        assert image.shape[0] > 100 and image.shape[1] > 100 and image.std() > 0
    cards = json.load(open(os.path.join(sweep_dir, "card.json")))
    assert [c["subject"] for c in cards] == ["sweep synthetic / arm outcome", "sweep synthetic / arm mc"]
    assert "continuation (K=2" in cards[1]["intervention_provenance"]
    for card in cards:  # every card names the interval method and n, and the matched budgets
        assert "paired Student-t interval over n = 6 seed(s)" in card["support_and_uncertainty"]
        assert "matched: the arms without label work get each label arm's total" in card["support_and_uncertainty"]
    assert "+0.200" in text or "+0.20" in text
    assert "paired Student-t interval over n = 6" in text
    # a single run directory gets its own report
    run_report = write_report(os.path.join(sweep_dir, "fixed-steps", "mc"))
    run_text = open(run_report).read()
    assert all(os.path.exists(os.path.join(sweep_dir, "fixed-steps", "mc", link)) for link in markdown_links(run_text))
    assert "95% Student-t interval over n = 6 seed(s)" in run_text


def test_cards_name_provenance_from_config():
    exact = card_for_config({"credit": "exact"}, subject="x")
    assert "exact, solver over the graph of positions reached" in exact.intervention_provenance
    assert exact.intervention_provenance.endswith("charged to the ledger's label account")
    assert card_for_config({"credit": "anchor"}, subject="x").intervention_provenance.endswith("no label work")
    solver = card_for_config({"credit": "solver", "solver_policy": "optimal"}, subject="x")
    assert "exact under fixed reference/optimal policy (optimal)" in solver.intervention_provenance
    assert "learned value" in card_for_config({"credit": "critic"}, subject="x").intervention_provenance
    outcome = card_for_config({"credit": "outcome", "attempts_per_problem": 8}, subject="x")
    assert "group-normalised" in outcome.unit_and_estimand and "8 attempts" in outcome.unit_and_estimand
    assert outcome.to_markdown().count("- **") == 6


def test_audit_command_small_mad(tmp_path, capsys):
    out = tmp_path / "audit"
    config = json.dumps({"length": 4, "num_tokens": 3, "min_useful": 1, "max_useful": 3, "max_turns": 6})
    code = main(["audit", "--env", "mad", "--env-config", config, "--policy", "uniform", "--states", "48",
                 "--continuations", "64", "--chunk-states", "32", "--out", str(out), "--json", "--no-progress"])
    assert code == 0
    audit = json.loads(capsys.readouterr().out)  # exactly one JSON object
    # both modes by default, on the same states, each with its completion count
    assert audit["modes"] == ["forced", "sampled"]
    assert audit["completions"] == {"forced": {"total": 48 * 5 * 64, "per_state": 5 * 64, "per_action": 64},
                                    "sampled": {"total": 48 * 57, "per_state": 57.0}}
    assert audit["sampled"]["halves"] == [28, 29] and audit["sampled"]["q_error"]["num_pairs"] <= 48 * 5
    assert audit["num_states"] == 48 and audit["max_legal_actions"] == 5 and audit["num_state_actions"] == 48 * 5
    assert [r["k"] for r in audit["mc_error"]] == [1, 2, 4, 8, 16, 32, 64]
    last = audit["mc_error"][-1]
    assert last["rmse_q"] < 2 * last["bernoulli_rmse_q"] and last["rmse_q"] < audit["mc_error"][0]["rmse_q"]
    assert 0 <= audit["credit_before_final"]["exact"] <= 1
    assert audit["classes"]["total"] == round(audit["mean_episode_length"] * 48)
    assert 0.5 < audit["split_half"]["correlation"] <= 1
    text = open(audit["report"]).read()
    for link in markdown_links(text):
        assert os.path.exists(out / link), link
    assert matplotlib.image.imread(out / "plots" / "mc-error.png").shape[2] in (3, 4)
    assert "| forced mode: completions total / per state | 15360 / 320 |" in text
    assert "| sampled mode: completions total / per state | 2736 / 57 |" in text


def test_report_errors_are_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "neither a sweep" in err


def test_sweep_command_writes_report_at_the_end(sweep_dir, tmp_path, monkeypatch, capsys):
    import shutil

    import jaxcredit.train

    def fake_run_sweep(spec, out, **kwargs):  # the synthetic cells stand in for training
        shutil.copytree(sweep_dir, out, dirs_exist_ok=True)
        return {}

    monkeypatch.setattr(jaxcredit.train, "run_sweep", fake_run_sweep)
    out = tmp_path / "sweep"
    assert main(["sweep", "--preset", "quick", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {}
    assert (out / "report.md").exists() and (out / "plots" / "fixed-steps-curve-attempts.png").exists()
    assert (out / "plots" / "matched-curve-steps.png").exists()


def test_audit_of_a_checkpoint_matches_exact_values(small_mad, tmp_path, capsys):
    from jaxcredit.checkpoint import save_policy
    from jaxcredit.policy import PolicyConfig, make_policy

    config = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32)
    init_fn, _, _ = make_policy(config, small_mad)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 2.0 * jax.random.normal(jax.random.key(1), head["kernel"].shape)  # far from uniform
    env_config = small_mad.config()
    run = tmp_path / "run"
    save_policy(run / "policies" / "seed-0", params, policy_config=config, env_name="mad", env_config=env_config)
    assert main(["audit", "--checkpoint", str(run), "--states", "16", "--continuations", "256", "--json",
                 "--mode", "forced", "--no-progress"]) == 0
    audit = json.loads(capsys.readouterr().out)
    assert audit["policy"].endswith("seed-0") and audit["env_config"] == env_config
    last = audit["mc_error"][-1]  # the exact values are those of the network the continuations play
    assert last["k"] == 256 and last["rmse_q"] < 1.5 * last["bernoulli_rmse_q"]
    assert audit["modes"] == ["forced"] and "sampled" not in audit


def test_audit_initial_is_the_network_a_run_starts_from(tmp_path, capsys):
    """`--initial` audits the untrained parameters `Trainer.init` draws for that seed, rebuilt from the
    run's config.json alone; a directory without one, or a seed the run does not have, is one line."""
    from jaxcredit.train import TrainConfig, make_train
    from jaxcredit.train.loop import initial_policy

    config = TrainConfig(env="mad", env_overrides={"length": 4, "num_tokens": 3, "max_useful": 2, "max_turns": 6},
                         credit="outcome", d_model=16, num_layers=1, num_heads=2, mlp_dim=32, num_seeds=2, seed=7)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(config.to_dict()))
    _, _, params = initial_policy(config, 1)
    started = make_train(config).init(8).params
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(lambda a, b: bool(jnp.array_equal(a, b)), params, started))
    assert main(["audit", "--checkpoint", str(run), "--initial", "--seed-index", "1", "--states", "8",
                 "--mode", "sampled", "--completions", "4", "--json", "--no-progress"]) == 0
    audit = json.loads(capsys.readouterr().out)
    assert audit["policy"] == f"untrained network: the initial parameters of {run} seed 1"
    assert audit["num_states"] == 8 and audit["env_config"] == make_train(config).env.config()
    for argv, words in ((["--checkpoint", str(tmp_path)], "no config.json"),
                        (["--checkpoint", str(run), "--seed-index", "2"], "seed index 2 is not one of the run's 2"),
                        ([], "--initial needs --checkpoint")):
        assert main(["audit", "--initial", *argv, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1


def test_decorative_tolerance_is_symmetric_and_catches_small_costs_near_certainty():
    from jaxcredit.analysis.classes import decorative_tolerance

    # V = 0.999 and an action that costs 0.5 points: harmful (the old V-scaled threshold, 0.00999,
    # called it decorative); the mirror case at V = 0.001 gaining 0.5 points is load-bearing.
    value = np.array([[0.999, 0.001, 0.5, 0.5, 1.0, 0.0]])
    credit = np.array([[-0.005, 0.005, 0.004, -0.006, 0.0, 0.0]])
    classes = classify_actions(credit, value, np.ones((1, 6), bool), np.array([False]))
    assert [CLASSES[c] for c in classes[0]] == ["harmful", "load-bearing", "decorative", "harmful",
                                                "decorative", "decorative"]
    np.testing.assert_allclose(decorative_tolerance(value)[0], [1e-5, 1e-5, 0.005, 0.005, 1e-6, 1e-6])
    assert decorative_tolerance(0.3) == pytest.approx(decorative_tolerance(0.7))  # success and failure alike
    # purely absolute: relative_tolerance = 0
    absolute = classify_actions(credit, value, np.ones((1, 6), bool), np.array([True]),
                                absolute_tolerance=0.0045, relative_tolerance=0.0)
    assert [CLASSES[c] for c in absolute[0]] == ["harmful-but-recovered", "load-bearing", "decorative",
                                                 "harmful-but-recovered", "decorative", "decorative"]
    with pytest.raises(ValueError, match="tolerances must be >= 0"):
        classify_actions(credit, value, np.ones((1, 6), bool), np.array([True]), relative_tolerance=-1)


def test_threshold_differences_pair_the_seeds_that_reached_it_on_both_sides():
    """Seed 1 of the arm never reaches the threshold: it is left out of the pairing, counted as not reached."""
    from jaxcredit.analysis.page import first_reach, threshold_comparisons
    from jaxcredit.comparison import Pair

    def rows(costs):  # one seed per entry: its (main attempts, success) at each evaluation
        return [{"seed_index": s, "eval_index": j, "success_greedy": ok, "main_episodes": m, "total_env_steps": 10 * m}
                for s, evals in enumerate(costs) for j, (m, ok) in enumerate(evals)]

    arm = rows([[(0, 0.0), (64, 0.95)], [(0, 0.0), (64, 0.5), (128, 0.8)], [(0, 0.0), (64, 0.0), (128, 1.0)]])
    ref = rows([[(0, 0.0), (64, 0.5), (128, 0.9)], [(0, 0.0), (64, 0.9)], [(0, 0.0), (64, 0.0), (192, 1.0)]])
    reach = {"attempts": {"mc": first_reach(arm, 0.9), "outcome": first_reach(ref, 0.9)}}
    pair = Pair("attempts", "mc", ("attempts", "mc"), "outcome", ("attempts", "outcome"))
    out = threshold_comparisons([pair, Pair("attempts", "outcome", ("attempts", "outcome"), None, None)], reach)
    d = out["attempts"]["mc vs outcome"]
    assert list(out["attempts"]) == ["mc vs outcome"]
    assert (d["arm_reached"], d["reference_reached"], d["seeds"]) == (2, 3, 3)
    assert d["main_episodes"]["num_seeds"] == 2 and d["main_episodes"]["mean_diff"] == -64.0  # (64-128 + 128-192) / 2
    assert d["total_env_steps"]["mean_diff"] == -640.0
    none = threshold_comparisons([pair], {"attempts": {"mc": first_reach(arm, 2.0), "outcome": first_reach(ref, 2.0)}})
    assert none["attempts"]["mc vs outcome"]["main_episodes"] is None
