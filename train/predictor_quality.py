"""The predictor's label quality at several K, before a study fixes its K.

For each number of continuations K, the `predictor` arm's one-time work (its dataset from the
labelling policy, its fit, its held-out score against exact values: `jaxcredit.predictor`) runs
for every seed of a config, with no training. The record gives, per K, what the dataset costs in
env steps and how well the fitted model's advantages agree with the exact ones on held-out
states; `choose_continuations` names the K a study uses: the smallest whose held-out sign
agreement ties the best (`tuning_rules.tied`). See docs/training.md#the-offline-action-value-predictor-predictor.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxcredit.arm_registry import credit_arm
from jaxcredit.ledger import ledger_to_dict
from jaxcredit.train.config import TrainConfig
from jaxcredit.train.loop import make_train
from jaxcredit.train.tuning_rules import mean_se, tied

QUALITY_MEASURES = ("sign_agreement", "advantage_pearson", "q_pearson")


def predictor_quality(config: TrainConfig, continuations: list[int]) -> dict:
    """The record of the predictor arm's preparation under `config` (credit `predictor`, or an arm
    that prepares a dataset like it; its `num_seeds` seeds) at each K in `continuations`. Returns
    `{"config", "rows", "chosen"}`: one row per K with per-seed `dataset_env_steps` (the dataset's
    own work; a labeller's training, the same at every K, is `labeller_env_steps`), the measures of
    `QUALITY_MEASURES` per seed, and `chosen` (`choose_continuations`). Raises `ValueError` for
    another arm, an empty K list or no held-out states."""
    fields = {f.name for f in dataclasses.fields(config.credit_options)}
    if credit_arm(config.credit).prepare is None or not {"continuations", "eval_states"} <= fields:
        raise ValueError(f"label quality needs an arm that prepares a dataset scored on held-out states (options "
                         f"continuations and eval_states, as 'predictor'), got credit {config.credit!r}")
    if not continuations or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in continuations):
        raise ValueError(f"continuations must be a non-empty list of integers >= 1, got {continuations!r}")
    if not config.credit_options.eval_states:
        raise ValueError("predictor quality scores the model on held-out states: credit_options.eval_states must "
                         "be > 0")
    rows = []
    for k in continuations:
        options = dataclasses.replace(config.credit_options, continuations=k)
        trainer = make_train(dataclasses.replace(config, credit_options=options))
        seeds = np.arange(config.seed, config.seed + config.num_seeds, dtype=np.int32)
        state = jax.jit(jax.vmap(trainer.init))(seeds)
        summary = jax.tree_util.tree_map(np.asarray, state.prepared["summary"])
        ledgers = [ledger_to_dict(jax.tree_util.tree_map(lambda x, i=i: x[i], state.ledger))
                   for i in range(config.num_seeds)]
        labeller = [int(v) for v in summary.get("labeller_env_steps", np.zeros(config.num_seeds))]
        row = {"continuations": k, "labeller_env_steps": labeller,
               "dataset_env_steps": [ledger["predictor_env_steps"] - cost for ledger, cost in zip(ledgers, labeller)]}
        row.update({m: [float(v) for v in summary[m]] for m in QUALITY_MEASURES})
        rows.append(row)
    return {"config": config.to_dict(), "rows": rows, "chosen": choose_continuations(rows)}


def choose_continuations(rows: list[dict]) -> int:
    """The smallest K (`rows[i]["continuations"]`) whose per-seed held-out sign agreement ties the
    best mean (`tuning_rules.tied`): more continuations cost more and buy nothing the seeds can tell."""
    best = max(rows, key=lambda row: mean_se(row["sign_agreement"])[0])
    return min(row["continuations"] for row in rows if tied(row["sign_agreement"], best["sign_agreement"]))
