"""Named sweeps (`get_preset`): `quick` (its settings from `quick-tuning`), `mad-study`, `arithmetic-study`,
`density-study`, `density-fixed`, `mad-study-tuned`, `decorative-study` and the label-price studies
`credit-price`, `credit-price-decorative` and `credit-price-routine`, and `text-matched-study`.

Every preset runs the regimes `attempts` (equal main attempts) and `fixed-steps` (a fixed cap on
total env steps), and most also `matched` (the outcome arm given exactly each label arm's total env
steps, seed by seed: one shared outcome run as long as the largest). The matched outcome run is
what makes a study long: its length is the label arms' label work, in outcome iterations. Each
preset's `description` and `cpu_minutes` (run times on a 2-core CPU) say what it runs and how long
it takes. What each preset compares, and its results: see
docs/training.md#presets.
"""

from __future__ import annotations

import dataclasses

from jaxcredit.train.sweep import SweepSpec

_SMALL_MAD = {"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}
DENSITY_STUDY_DENSITIES = (0.125, 0.25, 0.5, 1.0)
# the families whose numbers the default environment's bound covers (numbers up to 9, 4 digits): large_values
# (numbers 10-99) would need max_number 99, and it is refused here (jaxcredit.envs.Arithmetic.check_family)
ARITHMETIC_STUDY_FAMILIES = ("default", "small_targets", "multiplication")
# the rung the learnability gate passed on (docs/results/arithmetic-gates.json, `afterstate-3-60k`)
ARITHMETIC_STUDY_ENV = {"count": 3, "family": "default", "include_turns_left": True}
_DECORATIVE_MAD = {**_SMALL_MAD, "decorative_actions": 2, "max_turns": 12}
_UNIFORM_VALUES = {"credit": "solver", "credit_options.policy": "uniform"}
_DENSITY_CREDITS = {"outcome": {"credit": "outcome"}, "exact": {"credit": "exact"},
                    "mc": {"credit": "mc", "credit_options.continuations": 2}}


DENSITY_FIXED_DECISIONS = 4
DENSITY_FIXED_DENSITIES = (1.0, 0.5, 0.25, 0.125, 0.0625)


def _fixed_decision_arms() -> dict:
    """`{credit}-rho{density}` -> config fields: Routine (fatal, random placement) with D = 4 decisions,
    H = 4 / ρ, right actions hidden (cue `index`), one token layout for every horizon (V = 64)."""
    return {f"{name}-rho{density:g}": {**fields, "env_overrides": {
        "decisions": DENSITY_FIXED_DECISIONS, "density": density, "cue": "index", "vocab_horizon": 64}}
        for density in DENSITY_FIXED_DENSITIES for name, fields in _DENSITY_CREDITS.items()}


def _density_arms() -> dict:
    """`{credit}-rho{density}` -> config fields: every credit at every density (Routine, fatal, H = 8)."""
    return {f"{name}-rho{density:g}": {**fields, "env_overrides": {"horizon": 8, "density": density}}
            for density in DENSITY_STUDY_DENSITIES for name, fields in _DENSITY_CREDITS.items()}


# One grid for every arm (issue: equal tuning), chosen on the validation set at equal attempts.
EQUAL_TUNING = {"grid": {"learning_rate": [3e-4, 1e-3, 3e-3], "entropy_coef": [0.0, 0.01]},
                "arm_grid": {"outcome": {"credit_options.baseline": ["grpo", "rloo"]}}, "num_seeds": 3, "seed": 1000}

# the first mad-study's design (5 seeds, no tuning): mad-study-tuned's base and arms
_UNTUNED_MAD_STUDY = SweepSpec(
    name="mad-study",
    description="default MAD, outcome vs mc vs exact vs critic, three regimes, 5 paired seeds",
    base={"env": "mad", "learning_rate": 1e-3, "num_seeds": 5, "num_evals": 10, "eval_problems": 256,
          "problems_per_iteration": 16, "attempts_per_problem": 4},
    arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 4},
          "exact": {"credit": "exact"}, "critic": {"credit": "critic"}},
    budgets={"attempts": 40_000, "fixed-steps": 4_000_000},
    cpu_minutes="measured on a 2-core CPU, a second study or audits running beside it: attempts "
                "1h38m of training segments (outcome 12m, mc 52m, exact 21m, critic 13m), fixed-steps 3h09m of "
                "cells' wall time (outcome 1h46m, critic 1h07m, mc 12m, exact 4m); matched: the one outcome "
                "run (5 seeds) to exact's ~23.3M env steps runs at 230-620 env steps/s per seed beside a second "
                "study and 780-970 alone (its segments' seconds), about 7-8 hours alone (estimate from those "
                "rates)",
)

# the predictor's labeller in mad-study: outcome (rloo, learning rate 3e-3, entropy 0.01) trained 32,000
# attempts on 3 seeds from seed 1000; seed 0 ends nearest greedy success 0.5 (0.484; docs/results/mad-study.md)
MAD_STUDY_LABELLER = "docs/results/mad-study/labeller"

# mad-study's claim, stated before its cells run (written with its date to the sweep's claim.json)
MAD_STUDY_CLAIM = (
    "Primary endpoint: exact − outcome in average greedy validation success (over the evaluations after the "
    "first) at 40,000 main attempts, 15 paired seeds; the source study reports +8.60 points.\n"
    "Secondary: exact − outcome in final greedy success at 40,000 attempts; every label arm − outcome at "
    "5,000, 10,000, 20,000 and 40,000 attempts; outcome given each label arm's total env steps, and its "
    "total policy evaluations (matched, 5 seeds), and a fixed 4M env steps (5 seeds).\n"
    "Test: the two-sided paired sign-flip permutation test (exact enumeration), Holm-adjusted over the arms "
    "compared with outcome in each regime and measure; supported where the Holm p < 0.05, inconclusive "
    "otherwise. Paired t and bootstrap 95% intervals are shown beside it.\n"
    "Settings: each arm at the point the tuner chooses (area score, successive halving, 5 tuning seeds, "
    "grids extended until the choice is interior or three steps out), fixed before the cells run.")

_MAD_STUDY = SweepSpec(
    name="mad-study",
    description="default MAD, outcome vs mc vs exact vs critic vs solver-uniform, tuned by area with successive "
                "halving on 5 seeds, attempts at 15 paired seeds read at four budgets, matched (both currencies) "
                "and fixed-steps at 5, a claim stated before the run",
    base={"env": "mad", "learning_rate": 1e-3, "num_seeds": 5, "num_evals": 10, "eval_problems": 256,
          "problems_per_iteration": 16, "attempts_per_problem": 4},
    arms={**_UNTUNED_MAD_STUDY.arms,
          # K = 16: the smallest K whose held-out sign agreement ties the best of K = 1-16
          # (docs/results/mad-study/predictor-quality.json, `jaxcredit quality`)
          "predictor": {"credit": "predictor", "credit_options.labeller": MAD_STUDY_LABELLER,
                        "credit_options.labeller_seed": 0, "credit_options.continuations": 16},
          "solver-uniform": dict(_UNIFORM_VALUES)},
    budgets={"attempts": 40_000, "fixed-steps": 4_000_000},
    match_on=("env_steps", "policy_evals"),
    # 40 evaluations in the attempts runs: one every 1,000 attempts, so the run reads at each of the
    # four budgets (the learning rate is constant: a run read at B is a run of budget B)
    regime_fields={"attempts": {"num_seeds": 15, "num_evals": 40}},
    readings={"attempts": [5_000, 10_000, 20_000, 40_000]},
    tune={**EQUAL_TUNING, "num_seeds": 5, "rule": "halving", "eta": 3, "rungs": 3},
    claim=MAD_STUDY_CLAIM,
    nonparametric=True,
    cpu_minutes="not measured yet; projected on a 2-core CPU from mad-study-tuned's cells: tuning 3-4 hours "
                "(its 3-seed full-grid runs re-scored, 2 more seeds each through the halving rungs, the extensions' "
                "points new), attempts about 6 hours (15 seeds), fixed-steps about 3 hours, matched 8-16 hours",
)

# quick: a 4-cell MAD tape (32 problems, every one trained and evaluated) and a small network, so
# both arms learn within the README's few minutes; each arm runs at the point `quick-tuning` chose
QUICK_MAD = {"length": 4, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 6}
QUICK_NETWORK = {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}
QUICK_TUNING_RECORD = "docs/results/quick-tuning.json"
_QUICK = SweepSpec(
    name="quick",
    description="tiny MAD (4 cells, every problem trained on), outcome vs mc (K=2), three regimes, 8 paired seeds, "
                "each arm at its tuned setting",
    base={"env": "mad", "env_overrides": QUICK_MAD, **QUICK_NETWORK, "holdout_fraction": 0.0,
          "learning_rate": 3e-3, "num_seeds": 8, "num_evals": 6, "eval_problems": 64, "problems_per_iteration": 16,
          "attempts_per_problem": 4},
    arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 2}},
    budgets={"attempts": 4_000, "fixed-steps": 80_000},
    tuned=QUICK_TUNING_RECORD,
    cpu_minutes="1m52s for the README's first command on a fresh clone, install included (22 s from a local "
                "wheel mirror), on a 2-core Intel Xeon with a study running beside it "
                "(docs/results.md#the-quick-sweep)",
)

PRESETS: dict[str, SweepSpec] = {
    "quick": _QUICK,
    "mad-study": _MAD_STUDY,
    "arithmetic-study": SweepSpec(
        name="arithmetic-study",
        description="arithmetic on the gate's rung (afterstate input, 3 numbers, turns left shown), outcome vs "
                    "solver-uniform vs exact-policy vs solver-optimal vs dense-uniform, 5 paired seeds, equal tuning",
        base={"env": "arithmetic", "env_overrides": ARITHMETIC_STUDY_ENV, "policy_input": "afterstate",
              "learning_rate": 1e-3, "num_seeds": 5, "num_evals": 6, "eval_problems": 64,
              "eval_families": ARITHMETIC_STUDY_FAMILIES, "problems_per_iteration": 4, "attempts_per_problem": 4},
        arms={"outcome": {"credit": "outcome"},
              "solver-uniform": {"credit": "solver", "credit_options.policy": "uniform"},
              "exact-policy": {"credit": "exact"},
              "solver-optimal": {"credit": "solver", "credit_options.policy": "optimal",
                                 "credit_options.tie_break": "fastest", "credit_options.add_outcome": True},
              "dense-uniform": {**_UNIFORM_VALUES, "objective": "dense"}},
        budgets={"attempts": 4_000, "fixed-steps": 300_000},
        tune=EQUAL_TUNING,
        # sized from single cells (5 seeds, 1,600 attempts): every arm costs 2.1-2.5 s an update of
        # 16 attempts for the 5 seeds, most of it the network on every action's afterstate
        cpu_minutes="20h11m measured on a 2-core AMD EPYC (the sum of the cells' wall times, resumes included; "
                    "tuning runs two at a time): tuning 16h02m (36 runs), attempts 2h31m, fixed-steps 1h03m, "
                    "matched 35m; audits 20-39 minutes each (605 states, both modes)",
    ),
    "density-study": SweepSpec(
        name="density-study",
        description="Routine (fatal, H=8), outcome vs exact vs mc (K=2) at densities 1/8..1, equal attempts and "
                    "equal total env steps, 3 paired seeds",
        base={"env": "routine", "learning_rate": 3e-3, "num_seeds": 3, "num_evals": 16, "eval_problems": 256,
              "problems_per_iteration": 16, "attempts_per_problem": 4, "holdout_fraction": 0.0},
        arms=_density_arms(),
        # 16 evaluations over 2,000 attempts (one per 125): cells reach greedy success 1.0 early, so
        # a coarser schedule would time nothing
        budgets={"attempts": 2_000, "fixed-steps": 100_000},
        reference_arm="outcome-rho0.125",
        regimes=("attempts", "fixed-steps"),
        cpu_minutes="34m of cells' wall time measured on a 2-core CPU",
    ),
    "density-fixed": SweepSpec(
        name="density-fixed",
        description="Routine (fatal), D=4 decisions at densities 1..1/16 (H=4..64), right actions hidden, outcome "
                    "vs exact vs mc (K=2), equal attempts and equal total env steps, 5 paired seeds",
        base={"env": "routine", "learning_rate": 3e-3, "num_seeds": 5, "num_evals": 64, "eval_problems": 128,
              "problems_per_iteration": 16, "attempts_per_problem": 4, "holdout_fraction": 0.0},
        arms=_fixed_decision_arms(),
        # 64 evaluations: every update (64 attempts) in `attempts`; every 4,096 env steps in
        # `fixed-steps` (one outcome update at H = 64, sixteen at H = 4)
        budgets={"attempts": 4_096, "fixed-steps": 262_144},
        reference_arm="outcome-rho1",
        regimes=("attempts", "fixed-steps"),
        # every (credit, density) arm tuned on the same grid first; outcome also on its baseline. Scored
        # on the area under the validation curve: every tuning point ends at validation success 1.000,
        # so the final score ties everywhere and would pick the grid's first (slowest) point.
        tune={**EQUAL_TUNING, "score": "area",
              "arm_grid": {f"outcome-rho{d:g}": EQUAL_TUNING["arm_grid"]["outcome"] for d in DENSITY_FIXED_DENSITIES}},
        cpu_minutes="8h34m measured on a 2-core CPU (cells' wall time, other jobs beside it): tuning 6h56m "
                    "(120 runs of 3 seeds), attempts 1h02m, fixed-steps 36m. Results: docs/results/density-fixed.md",
    ),
}


PRESETS["mad-study-tuned"] = dataclasses.replace(
    _UNTUNED_MAD_STUDY, name="mad-study-tuned",
    description="mad-study plus the offline predictor arm (its dataset charged once), every arm tuned on one grid "
                "first (learning rate x entropy bonus, outcome also its baseline; 3 tuning seeds at the attempts "
                "budget), matched on env steps and on policy evaluations",
    arms={**_UNTUNED_MAD_STUDY.arms, "predictor": {"credit": "predictor"}},
    match_on=("env_steps", "policy_evals"), tune=EQUAL_TUNING,
    # projected from mad-study's measured cells (5 seeds): a tuning run has 3 seeds at the same budget
    cpu_minutes="not measured yet; projected about 15 hours on a 2-core CPU: the 36 tuning runs about 4 hours "
                "two at a time (mad-study's attempts cells, 5 seeds, took 12-52 minutes per arm), the study's "
                "cells about 3 hours, and the matched outcome run to exact's ~23M env steps per seed 7-8 hours "
                "on its own")

# quick's tuning: its arms on the equal-tuning grid, 5 tuning seeds, scored by area; its tuning.json
# is QUICK_TUNING_RECORD, which quick names
PRESETS["quick-tuning"] = dataclasses.replace(
    _QUICK, name="quick-tuning", tuned="", regimes=("attempts",), tune={**EQUAL_TUNING, "num_seeds": 5},
    description="quick's arms tuned on the equal-tuning grid (learning rate x entropy bonus, outcome also its "
                "baseline; 5 tuning seeds, area score, edges extended) at quick's attempts budget",
    cpu_minutes="35 tuning runs of 5 seeds, 20-45 s each on a 2-core CPU beside a study, then quick's attempts cells")

PRESETS["decorative-study"] = SweepSpec(
    name="decorative-study",
    description="small MAD with 2 decorative actions, outcome vs progress-soft vs exact counterfactual credit under "
                "each replacement (on-policy, uniform, null), equal attempts and equal total env steps, 5 paired seeds",
    base={"env": "mad", "env_overrides": _DECORATIVE_MAD, "learning_rate": 3e-3, "num_seeds": 5, "num_evals": 16,
          "eval_problems": 128, "problems_per_iteration": 16, "attempts_per_problem": 4},
    arms={"outcome": {"credit": "outcome"},
          "progress-soft": {"credit": "progress-soft", "credit_options.continuations": 4},
          **{f"exact-{r}": {"credit": "exact", "credit_options.replacement": r}
             for r in ("on-policy", "uniform", "null")}},
    budgets={"attempts": 4_000, "fixed-steps": 200_000},
    regimes=("attempts", "fixed-steps"),
    tune=EQUAL_TUNING,
    cpu_minutes="1h48m42s of cells' wall time measured on a 2-core CPU at a load of 5-11 (two cells at a time on a "
                "local Ray): tuning 1h18m51s (36 runs), attempts 11m47s, fixed-steps 18m05s",
)


# credit-price: cheaper labels priced against outcome. Each label arm's work is charged at every price p
# of PRICE_GRID below 1 (the matched regime's `prices`), so outcome is matched to main + p x label.
CREDIT_PRICE_PRICES = tuple(2.0 ** -k for k in range(6, 0, -1))  # 1/64 .. 1/2; price 1 is the plain target
CHEAP_ARMS = {"mc-k1": {"credit": "mc", "credit_options.continuations": 1},
              "mc-select-0.25": {"credit": "mc", "credit_options.branch_fraction": 0.25}}
_CREDIT_PRICE_TUNING = {**EQUAL_TUNING, "num_seeds": 5, "rule": "halving", "eta": 3, "rungs": 3}
PRESETS["credit-price"] = dataclasses.replace(
    _MAD_STUDY, name="credit-price",
    description="default MAD, outcome vs critic vs mc with K = 1 vs mc branching 1/4 of the steps, tuned as "
                "mad-study is, 5 paired seeds at 40,000 attempts, outcome matched to each label arm's total "
                "with its labels at every price from 1/64 to 1",
    arms={"outcome": {"credit": "outcome"}, "critic": {"credit": "critic"}, **CHEAP_ARMS},
    regimes=("attempts", "matched"), budgets={"attempts": 40_000}, match_on=("env_steps",),
    regime_fields=None, readings=None, claim="", prices=CREDIT_PRICE_PRICES, tune=_CREDIT_PRICE_TUNING,
    cpu_minutes="not measured yet; projected on a 2-core CPU from mad-study's cells: tuning about 4.5 hours "
                "(4 arms; mad-study's 6 took about 5 hours of wall time), attempts about 45 minutes (mad-study's "
                "15 seeds: outcome 23m, critic 27m, mc with K = 4 1h37m), matched about 45 minutes (to mc "
                "branching 1/4's ~2.5M env steps per seed)")
PRESETS["credit-price-decorative"] = dataclasses.replace(
    PRESETS["decorative-study"], name="credit-price-decorative",
    description="small MAD with 2 decorative actions, outcome vs mc with K = 1 vs mc branching 1/4 of the "
                "steps, tuned as mad-study is, 5 paired seeds, outcome matched at every price from 1/64 to 1",
    arms={"outcome": {"credit": "outcome"}, **CHEAP_ARMS}, regimes=("attempts", "matched"),
    budgets={"attempts": 4_000}, prices=CREDIT_PRICE_PRICES, tune=_CREDIT_PRICE_TUNING,
    cpu_minutes="not measured yet; projected about 1 hour on a 2-core CPU (decorative-study: 1h19m of tuning for "
                "5 arms on 3 seeds, 12m of attempts cells)")
PRESETS["credit-price-routine"] = SweepSpec(
    name="credit-price-routine",
    description="Routine (fatal), D = 4 decisions at density 1/8 (H = 32), right actions hidden, outcome vs mc "
                "with K = 1 vs mc branching 1/4 of the steps, tuned as mad-study is, 5 paired seeds, outcome "
                "matched at every price from 1/64 to 1",
    base={"env": "routine", "env_overrides": {"decisions": DENSITY_FIXED_DECISIONS, "density": 0.125, "cue": "index"},
          "learning_rate": 3e-3, "num_seeds": 5, "num_evals": 16, "eval_problems": 128, "problems_per_iteration": 16,
          "attempts_per_problem": 4, "holdout_fraction": 0.0},
    arms={"outcome": {"credit": "outcome"}, **CHEAP_ARMS},
    budgets={"attempts": 4_096}, regimes=("attempts", "matched"), prices=CREDIT_PRICE_PRICES,
    tune={**_CREDIT_PRICE_TUNING, "score": "area"},
    cpu_minutes="not measured yet; projected about 1.5 hours on a 2-core CPU (density-fixed: 6h56m of tuning for "
                "15 arms on 3 seeds)")


# text-matched credit in training: small MAD, whose token observation hides the turns left, so logged steps
# matched by observation pool states whose exact credit differs (docs/results/identification.md)
PRESETS["text-matched-study"] = SweepSpec(
    name="text-matched-study",
    description="small MAD (turns left hidden from the observation), outcome vs text-matched credit (logged steps "
                "matched by observation, a replay window of 4 batches) vs restored-state exact credit, tuned as "
                "mad-study is, 5 paired seeds at equal attempts",
    base={"env": "mad", "env_overrides": _SMALL_MAD, "learning_rate": 3e-3, "num_seeds": 5, "num_evals": 16,
          "eval_problems": 128, "problems_per_iteration": 16, "attempts_per_problem": 4},
    arms={"outcome": {"credit": "outcome"}, "text-matched": {"credit": "text-matched"},
          "exact": {"credit": "exact"}},
    budgets={"attempts": 4_000}, regimes=("attempts",), tune=_CREDIT_PRICE_TUNING, nonparametric=True,
    cpu_minutes="not measured yet; projected about 1 hour on a 2-core CPU (decorative-study: 1h19m of tuning for 5 "
                "arms on 3 seeds of a 12-turn small MAD)")


def get_preset(name: str) -> SweepSpec:
    """The preset called `name`; raises `ValueError` listing the choices."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choices: {', '.join(PRESETS)}")
    return PRESETS[name]
