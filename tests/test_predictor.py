"""The offline action-value predictor arm: its dataset charged once, its accuracy on held-out states
against exact values, learning on the tiny task, and exact resume.

One configuration (`conftest.TINY_TRAIN`, 3 seeds, the predictor arm) runs through the driver once
per module (`full`) and once interrupted and resumed (`cut`); every test reads those directories,
so the programs (init with the dataset and the fit, the segment, the evaluation) compile once.
"""

import json
import os
import re

import numpy as np
import pytest

from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext, PredictorOptions
from jaxcredit.predictor import PREDICTOR_FILE
from jaxcredit.train import config_from_dict, run_training
from jaxcredit.train.rundir import read_jsonl
from tests.conftest import TINY_TRAIN

STATES, K = 128, 4
PREDICTOR = {"credit": "predictor", "credit_options": {"states": STATES, "continuations": K, "steps": 300,
                                                       "learning_rate": 3e-3, "eval_states": 32}}
SEEDS = 3
BUDGET = 150 * 32  # 150 iterations of 32 main episodes per seed, as tests/test_learning.py


def _config(**fields):
    return config_from_dict({**TINY_TRAIN, **PREDICTOR, "num_seeds": SEEDS, "budget": BUDGET, **fields})


def _rows(path):
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """`(full, cut)`: an uninterrupted run, and the same run stopped after its first evaluation and resumed."""
    root = tmp_path_factory.mktemp("predictor")
    full, cut = str(root / "full"), str(root / "cut")
    run_training(_config(), full, progress=False)
    assert run_training(_config(), cut, progress=False, stop_after_evals=1) == {"stopped_after": 1}
    run_training(_config(), cut, progress=False, resume=True)
    return full, cut


def test_dataset_is_charged_once_before_training(runs):
    """Tiny MAD: every live state has 4 legal actions (3 select/unselect moves and submit), so the
    dataset holds 128 states x 4 actions x K=4 continuations = 2,048 continuations; each costs a
    forced env step without a policy evaluation, every other step of the account (the visiting
    episodes and the continuations after their first step) costs one of each: env steps - policy
    evaluations = 2,048.
    The charge is on the ledger before the first iteration (row 0) and never grows."""
    full, _ = runs
    rows = _rows(full)
    for seed in range(SEEDS):
        mine = sorted((r for r in rows if r["seed_index"] == seed), key=lambda r: r["eval_index"])
        first = mine[0]
        assert first["iteration"] == 0 and first["main_episodes"] == 0
        assert first["predictor_env_steps"] - first["predictor_policy_evals"] == STATES * 4 * K == 2048
        # at least one visiting step and one forced step per continuation; at most 5 turns each
        assert STATES + 2048 <= first["predictor_env_steps"] <= STATES * 5 + 2048 * 5
        for row in mine:
            assert (row["predictor_env_steps"], row["predictor_policy_evals"]) == (
                first["predictor_env_steps"], first["predictor_policy_evals"])
            assert row["label_env_steps"] == row["critic_env_steps"] == 0
            assert row["total_env_steps"] == row["main_env_steps"] + row["predictor_env_steps"]
    record = json.load(open(os.path.join(full, PREDICTOR_FILE)))
    assert [s["predictor_env_steps"] for s in record["seeds"]] == [
        next(r["predictor_env_steps"] for r in rows if r["seed_index"] == s and r["eval_index"] == 0)
        for s in range(SEEDS)]
    assert all(s["dataset_states"] == STATES and s["dataset_pairs"] == STATES * 4 for s in record["seeds"])


def test_predictions_correlate_with_exact_values_on_heldout_states(runs):
    """The fitted model's advantage `Q̂(s, a) - Σ π₀ Q̂` on 32 held-out states (128 state-action pairs;
    the tiny MAD has 18 tapes, so they are held out from the dataset's draw, not from its tapes)
    against the exact `Q^π₀ - V^π₀`. A model before fitting predicts 0 everywhere: correlation 0,
    sign agreement 0; one predicting at random correlates within about ±0.2 at n = 128 and agrees
    in sign about half the time; one fitted to sign-flipped labels correlates negatively."""
    full, _ = runs
    record = json.load(open(os.path.join(full, PREDICTOR_FILE)))
    assert record["config"]["predictor_continuations"] == K
    for seed in record["seeds"]:
        assert seed["states"] == 32 and seed["pairs"] == 32 * 4 and seed["sign_pairs"] >= 40
        assert seed["fit_loss_last"] < 0.5 * seed["fit_loss_first"], seed
        # measured (seeds 0, 1, 2): advantage correlation 0.73, 0.81, 0.91; Q correlation 0.59, 0.82, 0.89
        assert seed["advantage_pearson"] > 0.5, seed
    # measured: 0.60, 0.79, 0.71 (many exact advantages are tiny, so their sign is easy to miss)
    assert np.mean([seed["sign_agreement"] for seed in record["seeds"]]) > 0.6, record["seeds"]


def test_predictor_arm_learns_the_tiny_task(runs):
    """The criterion of tests/test_learning.py: every seed starts at greedy success 0; after 150
    iterations the mean is at least 0.5 and no seed is at 0. The predictor's labels are frozen, so
    a sign-flipped or zero advantage would leave the policy at 0."""
    full, _ = runs
    summary = json.load(open(os.path.join(full, "summary.json")))
    start = [s["initial_success"] for s in summary["seeds"]]
    final = [s["final_success"] for s in summary["seeds"]]
    assert start == [0.0] * SEEDS
    assert np.mean(final) >= 0.5 and min(final) > 0.0, final


def test_resume_matches_and_charges_the_dataset_once(runs):
    """The resumed run restores the predictor from the checkpoint: the same metrics (ledger included,
    so the dataset's cost once), the same predictor record."""
    full, cut = runs
    assert _rows(cut) == _rows(full)
    assert json.load(open(os.path.join(cut, PREDICTOR_FILE))) == json.load(open(os.path.join(full, PREDICTOR_FILE)))


def test_predictor_arm_without_its_model_is_a_clear_error():
    context = CreditContext(env=None, policy_fn=None, params=None, config=None)
    with pytest.raises(ValueError, match="needs its prepared model"):
        CREDIT_ARMS["predictor"].compute(context, None, None, None)


@pytest.mark.parametrize("option, value, message", [
    ("states", 0, "credit_options.states of credit 'predictor' must be in [1, "),
    ("continuations", 1.5, "credit_options.continuations of credit 'predictor' must be an integer"),
    ("eval_states", -1, "credit_options.eval_states of credit 'predictor' must be in [0, "),
    ("learning_rate", 0.0, "credit_options.learning_rate of credit 'predictor' must be a finite number > 0"),
    ("stats", 1, "credit 'predictor' has no option(s) ['stats']; its options: states, continuations, steps, "
                 "learning_rate, eval_states, labeller, labeller_seed"),
])
def test_bad_predictor_options_are_one_line_errors(option, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _config(**{f"credit_options.{option}": value})


def test_an_old_predictor_config_reads_its_flat_fields_into_the_options():
    """A `config.json` written before the arms owned their options: the predictor's flat fields
    become its options, the other arms' flat fields are dropped."""
    old = {**TINY_TRAIN, "credit": "predictor", "predictor_states": 7, "predictor_eval_states": 0,
           "mc_continuations": 9, "critic_coef": 2.0}
    config = config_from_dict(old)
    assert config.credit_options == PredictorOptions(states=7, eval_states=0)
    assert config.to_dict()["credit_options"] == {"states": 7, "continuations": 4, "steps": 500,
                                                  "learning_rate": 1e-3, "eval_states": 0, "labeller": "",
                                                  "labeller_seed": 0}


def test_report_shows_the_label_accuracy_and_the_card(runs):
    from jaxcredit.analysis.report import write_report

    full, _ = runs
    record = json.load(open(os.path.join(full, PREDICTOR_FILE)))
    text = open(write_report(full)).read()
    assert "## Predictor label accuracy" in text
    first = record["seeds"][0]
    assert f"| 0 | {first['predictor_env_steps']:,} | 128 | {first['advantage_pearson']:.3f} |" in text
    assert "charged to the ledger's predictor account" in text


def test_prepare_under_jit_with_a_held_out_validation_set():
    """With a holdout the validation set's leaves are host (NumPy) arrays: the predictor picks its
    scored problems from them with a static index, so `init` traces (a traced index into a NumPy
    array raised TracerArrayConversionError) and scores every asked-for state."""
    import jax

    from jaxcredit.train import make_train

    config = config_from_dict({**TINY_TRAIN, "env_overrides": {"length": 5, "num_tokens": 4, "min_useful": 1,
                                                               "max_useful": 2, "max_turns": 8},
                               "holdout_fraction": 0.2, "validation_problems": 8, "d_model": 16, "mlp_dim": 32,
                               "credit": "predictor", "num_seeds": 1,
                               "credit_options": {"states": 8, "continuations": 2, "steps": 2, "eval_states": 12}})
    trainer = make_train(config)
    assert isinstance(jax.tree_util.tree_leaves(trainer.validation_set)[0], np.ndarray)
    state = jax.jit(trainer.init)(0)
    summary = {k: float(v) for k, v in state.prepared["summary"].items()}
    assert summary["states"] == 12 and summary["dataset_states"] == 8 and summary["pairs"] > 0
    assert all(np.isfinite(v) for k, v in summary.items() if k != "advantage_pearson")


def test_a_labeller_run_labels_the_dataset_and_its_training_is_charged_once(runs, tmp_path):
    """`credit_options.labeller`: the dataset comes from the named run's final policy, and that run's
    training is charged once, with the dataset, before the first iteration. The labeller here is
    `full` (a finished predictor run): its seed 1's total env steps minus policy evaluations is its
    own dataset's 2,048 forced steps, so this run's predictor account holds 2,048 + 2,048 of them."""
    import jax

    from jaxcredit.checkpoint import load_policy
    from jaxcredit.train import make_train

    full, _ = runs
    labeller = json.load(open(os.path.join(full, "summary.json")))["seeds"][1]
    options = {"credit_options.labeller": full, "credit_options.labeller_seed": 1}
    out = str(tmp_path / "labelled")
    run_training(_config(num_seeds=1, budget=2 * 32, **options), out, progress=False)
    rows = _rows(out)
    first = rows[0]
    assert first["predictor_env_steps"] - first["predictor_policy_evals"] == 2 * STATES * 4 * K
    assert first["predictor_env_steps"] > labeller["total_env_steps"] + STATES * 4 * K
    assert all(r["predictor_env_steps"] == first["predictor_env_steps"] for r in rows)  # once
    record = json.load(open(os.path.join(out, PREDICTOR_FILE)))
    assert record["config"]["labeller"] == full and record["config"]["labeller_seed"] == 1
    assert record["seeds"][0]["labeller_env_steps"] == labeller["total_env_steps"]
    # the labelling parameters are the checkpoint's, not the run's initial network
    state = jax.jit(make_train(_config(num_seeds=1, **options)).init)(0)
    _, saved, _ = load_policy(os.path.join(full, "policies", "seed-1"))
    for ours, theirs in zip(jax.tree_util.tree_leaves(state.prepared["labelling_params"]),
                            jax.tree_util.tree_leaves(saved)):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("fields, message", [
    ({"credit_options.labeller_seed": 7}, "credit_options.labeller_seed 7 is not one of its 3 seeds"),
    ({"d_model": 16}, "its network is not this run's"),
    ({"env_overrides": {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}},
     "trained on mad"),
])
def test_a_labeller_that_does_not_fit_the_run_is_refused_in_one_line(runs, tmp_path, fields, message):
    from jaxcredit.train import make_train

    full, _ = runs
    config = _config(num_seeds=1, **{"credit_options.labeller": full, **fields})
    with pytest.raises(ValueError, match=re.escape(message)):
        make_train(config).init(0)
    with pytest.raises(ValueError, match="not a finished training run"):
        make_train(_config(num_seeds=1, **{"credit_options.labeller": str(tmp_path)})).init(0)
