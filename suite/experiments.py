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
import os

from jaxcredit.analysis.gates import NOT_RUN, PASSED, gate_status, study_rung
from jaxcredit.rundir_io import read_json
from jaxcredit.suite.labels import FIT_STEPS

KINDS = ("labels", "learning")
SCORE_TAGS = {"labels": ("label-quality",), "learning": ("equal-attempts", "equal-cost")}

_TINY_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}
_REPAIR_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 12}
_LABEL_BUDGETS = {"train_episodes": 512, "fit_steps": FIT_STEPS}  # the trained policy; a learned head's fit
_NETWORK = {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}
# Routine at a fixed number of decisions: H = 2 / density = 2, 8, 32 turns, one token layout (V = 32)
_ROUTINE_DENSITIES = (1.0, 0.25, 0.0625)
_ARITHMETIC = {"count": 3, "family": "default", "include_turns_left": True}  # the rung the gate passed on,
# `afterstate-3-60k`: the network below on afterstate input (`tokens-3`, on token input, failed)
_GATE_NETWORK = {"d_model": 64, "num_layers": 2, "num_heads": 4, "mlp_dim": 256, "policy_input": "afterstate"}
ARITHMETIC_GATES = "arithmetic-gates.json"  # `jaxcredit gate` records by rung, in GATE_RECORDS_DIR
# the repository's published results; absent from an installed wheel, where gated experiments are not run
GATE_RECORDS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "results")


def _routine(density: float) -> dict:
    return {"decisions": 2, "density": density, "cue": "index", "failure": "fatal", "vocab_horizon": 32}


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
        `{"train_episodes": main attempts of the trained policy, "fit_steps": updates of a learned
        head on the fixed policy's own episodes before it labels}`, and optionally `"noise_repeats"`
        (each label repeated with that many more independent keys, for its variance).
      description: one line for the report.
      policies: labels: the fixed policies labelled (`uniform`, `trained`).
      requires_gate: the file of learnability-gate records (`jaxcredit gate`, under
        `docs/results/`) that must hold a passing gate of the experiment's own rung (problem size,
        family, policy input) before it runs; until then the suite lists it as not run, with the
        reason (`gate_reason`). None: no gate.
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
    requires_gate: str | None = None

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
    label_budgets = _LABEL_BUDGETS if quick else {**_LABEL_BUDGETS, "noise_repeats": 4}  # full: each label's noise
    experiments = (
        Experiment("labels-mad", "labels", ("mad",), {"env": "mad", **labels},
                   ({**_TINY_MAD},) if quick else ({**_TINY_MAD}, {**_REPAIR_MAD}), seeds,
                   label_budgets, "tiny MAD: labels on trajectories of the uniform and a trained policy"),
        Experiment("learn-mad", "learning", ("mad",), {"env": "mad", **learning},
                   ({**_TINY_MAD},), seeds,
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 10_000 if quick else 80_000},
                   "tiny MAD (5 cells, 4 tokens, 1-2 useful, 8 turns)"),
        Experiment("labels-umbrella", "labels", ("umbrella",), {"env": "umbrella", **labels},
                   ({"chain_length": 5, "n_distractor": 2},) if quick else
                   ({"chain_length": 5, "n_distractor": 2}, {"chain_length": 10, "n_distractor": 8}), seeds,
                   label_budgets, "bsuite's umbrella chain: only the first action matters"),
        Experiment("umbrella-length", "learning", ("umbrella", "horizon"), {"env": "umbrella", **learning},
                   ({"chain_length": 5, "n_distractor": 2},) if quick else
                   tuple({"chain_length": n, "n_distractor": 2} for n in (3, 10, 30)), seeds,
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 10_000 if quick else 150_000},
                   "umbrella chain at growing length (bsuite's umbrella_length, shortened)"),
        Experiment("umbrella-distract", "learning", ("umbrella", "distractors"), {"env": "umbrella", **learning},
                   ({"chain_length": 5, "n_distractor": 8},) if quick else
                   tuple({"chain_length": 10, "n_distractor": n} for n in (0, 4, 16)), seeds,
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 10_000 if quick else 80_000},
                   "umbrella chain with growing distractor observations (bsuite's umbrella_distract, shortened)"),
        Experiment("learn-mad-repairs", "learning", ("mad", "repairs"), {"env": "mad", **learning},
                   ({**_REPAIR_MAD},), seeds,
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 10_000 if quick else 80_000},
                   "tiny MAD with 12 turns: room to select a distractor and repair it"),
        Experiment("learn-routine", "learning", ("routine", "horizon"),
                   {"env": "routine", **learning, "holdout_fraction": 0.0},
                   (_routine(0.25),) if quick else tuple(_routine(d) for d in _ROUTINE_DENSITIES), seeds,
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 10_000 if quick else 150_000},
                   "Routine at D = 2 decisions (cue index, fatal) and a growing horizon H = D / density"),
        Experiment("learn-arithmetic", "learning", ("arithmetic",), {"env": "arithmetic", **learning, **_GATE_NETWORK},
                   (dict(_ARITHMETIC),), seeds,
                   # fixed-steps 300,000: outcome's ~4,800 attempts there, minutes a cell on afterstate input
                   {"attempts": 500 if quick else 3_000, "fixed-steps": 50_000 if quick else 300_000},
                   "arithmetic, 3 numbers, turns left shown, afterstate input: behind its learnability gate",
                   requires_gate=ARITHMETIC_GATES),
    )
    # the quick suite: both label experiments and one learning experiment per environment
    return tuple(e for e in experiments if not quick or e.name not in QUICK_LEAVES_OUT)


# learn-arithmetic: its afterstate input costs minutes a cell
QUICK_LEAVES_OUT = ("umbrella-distract", "learn-mad-repairs", "learn-arithmetic")
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

# cheaper Monte Carlo labels (`mc` options), by name for `--arms`; not in the default set
CHEAP_LABEL_ARMS = {
    **{f"mc-k{k}": {"credit": "mc", "credit_options.continuations": k} for k in (1, 2, 4, 8)},
    "mc-crn": {"credit": "mc", "credit_options.common_random_numbers": True},
    **{f"mc-select-{q:g}": {"credit": "mc", "credit_options.branch_fraction": q} for q in (0.1, 0.25, 0.5)},
}


def suite_arms(names) -> dict:
    """`{name: config fields}` for arm `names`: a built-in suite arm (`BUILTIN_ARMS`, `CHEAP_LABEL_ARMS`)
    by its name, or any registered credit arm (a plugin's too) with its defaults."""
    named = {**BUILTIN_ARMS, **CHEAP_LABEL_ARMS}
    return {name: named.get(name, {"credit": name}) for name in names}


def gate_reason(experiment: Experiment, records_dir: str | None = None) -> str | None:
    """None when `experiment` may run (no `requires_gate`, or a passing gate record of its rung in
    `records_dir/<requires_gate>`, default `GATE_RECORDS_DIR`); else the reason it is not run."""
    if experiment.requires_gate is None:
        return None
    path = os.path.join(GATE_RECORDS_DIR if records_dir is None else records_dir, experiment.requires_gate)
    spec = {"base": {**experiment.config, "env_overrides": dict(experiment.settings[0])}}
    rung = study_rung(spec)
    rung_text = f"{rung['policy_input']} input, {rung['count']} numbers, {rung['family']}"
    if not os.path.exists(path):
        return f"its learnability gate ({rung_text}) has no record here (docs/results/{experiment.requires_gate})"
    gates = read_json(path, expect=dict)
    status = gate_status(spec, gates)
    if status == PASSED:
        return None
    if status == NOT_RUN:
        return f"no learnability gate (`jaxcredit gate`) has run on its rung ({rung_text})"
    mine = [record for record in gates.values() if gate_status(spec, {"record": record}) != NOT_RUN]
    best = max(float(r.get("final_success", 0.0)) for r in mine)
    threshold = min(float(r.get("threshold", 0.9)) for r in mine)
    return (f"the learnability gate (`jaxcredit gate`) does not pass on its rung ({rung_text}) yet: the best of "
            f"{len(mine)} records has held-out greedy success {best:.3f} against {threshold:g} "
            f"(docs/results/{experiment.requires_gate})")


def get_suite(name: str) -> tuple:
    """The experiments of suite `name` (`quick` or `full`)."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; choices: {', '.join(SUITES)}")
    return SUITES[name]
