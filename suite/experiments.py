"""The suite's fixed experiments: settings, seeds, budgets, tags, and how each is scored.

Each `Experiment` is one of two kinds:

- `labels`: no training; every arm labels the same trajectories of fixed policies
  (`jaxcredit.suite.labels`); score `1 − normalised error` against the exact `Q^π − V^π`;
- `learning`: every arm trains through a sweep (`jaxcredit.train.sweep`) in the `attempts` regime
  (equal main attempts) and the `fixed-steps` regime (equal total env steps, labels included);
  score the area under the greedy-success curve over the budget, relative to the exact optimal
  success of the evaluation problems (`jaxcredit.suite.learning`), one score per regime.

`SUITES["full"]` is the published suite (>= 8 seeds per experiment); `SUITES["quick"]` is the
same experiments at their quick sizes (2 seeds, small budgets), what the docs run.
"""

from __future__ import annotations

import dataclasses

KINDS = ("labels", "learning")
SCORE_TAGS = {"labels": ("label-quality",), "learning": ("equal-attempts", "equal-cost")}

_TINY_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}
_REPAIR_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 12}
_NETWORK = {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment of the suite.

    Attributes:
      name: the experiment's name (its folder in the suite's output).
      kind: `labels` or `learning` (`KINDS`).
      tags: what it measures, for aggregation (its score tags from `SCORE_TAGS` are added).
      config: `TrainConfig` fields shared by every arm and setting (env, batch, network, evaluation).
      settings: the grid: each a dict of `env_overrides` (its score is the mean over settings).
      seeds: paired seeds per setting (learning: `num_seeds` of each sweep cell; labels: one
        trajectory batch, and one trained policy, per seed).
      budgets: learning: `{"attempts": main attempts, "fixed-steps": total env steps}`; labels:
        `{"train_episodes": main attempts of the trained policy}`.
      description: one line for the report.
      policies: labels: the fixed policies labelled (`uniform`, `trained`).
    """

    name: str
    kind: str
    tags: tuple
    config: dict
    settings: tuple
    seeds: int
    budgets: dict
    description: str = ""
    policies: tuple = ("uniform", "trained")

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"experiment {self.name!r}: unknown kind {self.kind!r}; choices: {', '.join(KINDS)}")
        if self.seeds < 1 or not self.settings:
            raise ValueError(f"experiment {self.name!r}: needs at least one seed and one setting")

    @property
    def score_tags(self) -> tuple:
        """The tags its scores are aggregated under: each score tag, and the experiment's own tags."""
        return SCORE_TAGS[self.kind]

    def setting_name(self, index: int) -> str:
        """`s<i>`: the folder of setting `index`."""
        return f"s{index}"

    def setting_label(self, index: int) -> str:
        """Setting `index`'s env overrides as `k=v, ...` (what the report shows)."""
        return ", ".join(f"{k}={v}" for k, v in sorted(self.settings[index].items())) or "defaults"


def _experiments(quick: bool) -> tuple:
    seeds = 2 if quick else 8
    evals = {"num_evals": 4 if quick else 8, "eval_problems": 32 if quick else 128,
             "validation_problems": 16 if quick else 64}
    learning = {"problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3, **_NETWORK, **evals}
    labels = {"problems_per_iteration": 16 if quick else 32, "attempts_per_problem": 4, **_NETWORK,
              "eval_problems": 16, "validation_problems": 16}
    experiments = (
        Experiment("labels-mad", "labels", ("mad",), {"env": "mad", **labels},
                   ({**_TINY_MAD},) if quick else ({**_TINY_MAD}, {**_REPAIR_MAD}), seeds,
                   {"train_episodes": 512}, "tiny MAD: labels on trajectories of the uniform and a trained policy"),
        Experiment("learn-mad", "learning", ("mad",), {"env": "mad", **learning},
                   ({**_TINY_MAD},), seeds,
                   {"attempts": 1_000 if quick else 3_000, "fixed-steps": 20_000 if quick else 80_000},
                   "tiny MAD (5 cells, 4 tokens, 1-2 useful, 8 turns)"),
        Experiment("labels-umbrella", "labels", ("umbrella",), {"env": "umbrella", **labels},
                   ({"chain_length": 5, "n_distractor": 2},) if quick else
                   ({"chain_length": 5, "n_distractor": 2}, {"chain_length": 10, "n_distractor": 8}), seeds,
                   {"train_episodes": 512}, "bsuite's umbrella chain: only the first action matters"),
        Experiment("umbrella-length", "learning", ("umbrella", "horizon"), {"env": "umbrella", **learning},
                   ({"chain_length": 5, "n_distractor": 2},) if quick else
                   tuple({"chain_length": n, "n_distractor": 2} for n in (3, 10, 30)), seeds,
                   {"attempts": 1_000 if quick else 3_000, "fixed-steps": 20_000 if quick else 150_000},
                   "umbrella chain at growing length (bsuite's umbrella_length, shortened)"),
        Experiment("umbrella-distract", "learning", ("umbrella", "distractors"), {"env": "umbrella", **learning},
                   ({"chain_length": 5, "n_distractor": 8},) if quick else
                   tuple({"chain_length": 10, "n_distractor": n} for n in (0, 4, 16)), seeds,
                   {"attempts": 1_000 if quick else 3_000, "fixed-steps": 20_000 if quick else 80_000},
                   "umbrella chain with growing distractor observations (bsuite's umbrella_distract, shortened)"),
        Experiment("learn-mad-repairs", "learning", ("mad", "repairs"), {"env": "mad", **learning},
                   ({**_REPAIR_MAD},), seeds,
                   {"attempts": 1_000 if quick else 3_000, "fixed-steps": 20_000 if quick else 80_000},
                   "tiny MAD with 12 turns: room to select a distractor and repair it"),
    )
    # the quick suite: both label experiments and one learning experiment per environment
    return tuple(e for e in experiments if not quick or e.name not in QUICK_LEAVES_OUT)


QUICK_LEAVES_OUT = ("umbrella-distract", "learn-mad-repairs")
SUITES = {"quick": _experiments(True), "full": _experiments(False)}
BUILTIN_ARMS = {
    "outcome": {"credit": "outcome"},
    "anchor": {"credit": "anchor"},
    "mc": {"credit": "mc"},
    "exact": {"credit": "exact"},
    "solver-uniform": {"credit": "solver", "credit_options.policy": "uniform"},
    "solver-optimal": {"credit": "solver", "credit_options.policy": "optimal", "credit_options.add_outcome": True},
    "critic": {"credit": "critic"},
    "predictor": {"credit": "predictor"},
}


QUICK_ARMS = ("outcome", "mc", "exact")  # `--quick`'s default arms; `--arms` chooses others


def get_suite(name: str) -> tuple:
    """The experiments of suite `name` (`quick` or `full`)."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; choices: {', '.join(SUITES)}")
    return SUITES[name]
