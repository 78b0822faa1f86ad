"""Held-out problems: the split by hash, rejection sampling of the training stream, evaluation and
validation sets that never meet the training stream, and `best` chosen on validation."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.envs import make
from jaxcredit.holdout import (
    EVALUATION,
    TRAIN,
    VALIDATION,
    distinct_identities,
    identity_hash,
    sample_in_split,
    split_of,
    split_of_batch,
)
from jaxcredit.train import config_from_dict, make_train, run_training
from jaxcredit.train.rundir import read_jsonl

QUICK_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}


def test_split_shares_and_hash_are_fixed():
    identities = jax.random.randint(jax.random.key(0), (100_000, 6), 0, 1000)
    hashes = np.asarray(jax.jit(jax.vmap(identity_hash))(identities))
    u = hashes / 2.0**32
    # 10% evaluation, 10% validation at holdout 0.2: binomial sd 0.00095
    assert abs((u < 0.1).mean() - 0.1) < 0.004 and abs(((u >= 0.1) & (u < 0.2)).mean() - 0.1) < 0.004
    # the hash is a fixed function (FNV-1a + murmur3 finaliser), the same on the host and under jit
    assert int(identity_hash(jnp.array([1, 2, 3], jnp.int32))) == int(jax.jit(identity_hash)(jnp.array([1, 2, 3])))
    assert len(set(hashes.tolist())) > 99_990


def test_arithmetic_identity_ignores_the_order_of_the_numbers(arithmetic):
    a = arithmetic.make_problem([2, 3, 4, 5], 14)
    b = arithmetic.make_problem([5, 3, 2, 4], 14)
    c = arithmetic.make_problem([2, 3, 4, 5], 15)
    np.testing.assert_array_equal(arithmetic.problem_identity(a), [2, 3, 4, 5, 14])
    assert int(identity_hash(arithmetic.problem_identity(a))) == int(identity_hash(arithmetic.problem_identity(b)))
    assert int(identity_hash(arithmetic.problem_identity(a))) != int(identity_hash(arithmetic.problem_identity(c)))
    assert int(split_of(arithmetic, a, holdout_fraction=0.2)) == int(split_of(arithmetic, b, holdout_fraction=0.2))


def test_rejection_sampling_stays_in_its_part():
    env = make("mad", **QUICK_MAD)
    draw = jax.jit(jax.vmap(lambda key: sample_in_split(env, key, TRAIN, holdout_fraction=0.2)))
    problems = draw(jax.random.split(jax.random.key(1), 4000))  # 16 candidates: all miss w.p. 0.2^16
    np.testing.assert_array_equal(split_of_batch(env, problems, holdout_fraction=0.2), TRAIN)
    # the task's distribution conditioned on the training part: one-useful-cell tapes (18 of its
    # 155) carry 51.2% of its mass; binomial sd over 4000 draws 0.8%
    useful = (np.asarray(problems) >= 0).sum(axis=1)
    assert abs((useful == 1).mean() - 0.512) < 0.03


def _training_problems(trainer, iterations, seed=0):
    state = trainer.init(jnp.int32(seed))
    draw = jax.jit(jax.vmap(lambda i: trainer.sample_episodes(state.replace(iteration=i))[0]))
    problems = draw(jnp.arange(iterations))
    return jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:]), problems)


def test_training_never_sees_an_evaluation_or_validation_problem():
    """The quick preset's MAD (180 tapes): 1,504 training problems (its 6,000-attempt budget)
    against the evaluation and validation sets: no overlap."""
    base = {"env": "mad", "env_overrides": QUICK_MAD, "eval_problems": 128, "problems_per_iteration": 16,
            "attempts_per_problem": 4, "d_model": 16, "num_layers": 1, "num_heads": 2, "mlp_dim": 32}
    held = make_train(config_from_dict(base))
    env = held.env
    evaluation = distinct_identities(env, held.eval_sets["default"])
    validation = distinct_identities(env, held.validation_set)
    training = distinct_identities(env, _training_problems(held, 94))
    # measured: 14 distinct evaluation tapes, 11 validation, 154 training (of 155 in the training part)
    assert len(evaluation) >= 10 and len(validation) >= 8 and len(training) >= 140
    assert not evaluation & training and not validation & training and not evaluation & validation
    for problems, split in ((held.eval_sets["default"], EVALUATION), (held.validation_set, VALIDATION)):
        np.testing.assert_array_equal(split_of_batch(env, problems, holdout_fraction=0.2), split)
    # Before the split (holdout_fraction 0, the old streams) every one of the 74 distinct evaluation
    # tapes was among these 1,504 training problems (docs/training.md, "Held-out evaluation").


def test_a_space_too_small_to_hold_out_is_a_clear_error():
    tiny = {"env": "mad", "env_overrides": {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2,
                                            "max_turns": 5}, "eval_problems": 8}
    with pytest.raises(ValueError, match="too small to hold out 8 problems: raise holdout_fraction"):
        make_train(config_from_dict(tiny))  # 18 tapes: none falls in the evaluation part at 0.2
    with pytest.raises(ValueError, match=r"config.holdout_fraction must be in \[0, 1\), got 1"):
        config_from_dict({"holdout_fraction": 1})


def test_best_checkpoint_is_chosen_on_validation(tmp_path, tiny_arm):
    """The tiny task (no holdout possible: `holdout_fraction` 0) still keeps a validation set apart
    from the evaluation set (another seed's stream), and `best` follows its greedy success."""
    trainer, _ = tiny_arm()
    config = dataclasses.replace(trainer.config, num_evals=3, budget=384)
    run_training(config, str(tmp_path / "run"), progress=False)
    rows = read_jsonl(str(tmp_path / "run" / "metrics.jsonl"))
    by_eval = {}
    for r in rows:
        if r["eval_index"] > 0:
            by_eval.setdefault(r["eval_index"], []).append(r["validation_success_greedy"])
    means = {j: float(np.mean(v)) for j, v in by_eval.items()}
    chosen = json.load(open(os.path.join(tmp_path, "run", "checkpoints", "best.json")))
    assert chosen["eval_index"] == max(means, key=lambda j: (means[j], -j))  # the first best
    assert chosen["validation_success_greedy"] == pytest.approx(max(means.values()))
    # the validation and evaluation sets are different draws
    assert not np.array_equal(np.asarray(trainer.validation_set[:16]), np.asarray(trainer.eval_sets["default"][:16]))
