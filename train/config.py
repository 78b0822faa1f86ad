"""Training configuration: one frozen dataclass, validated before anything is traced.

`TrainConfig` holds everything a run needs (environment, credit arm, batch, optimiser, policy
size, budget, evaluation); `config_from_dict` builds one from JSON-like data and names any
unknown field with the choices. The budget is a ledger counter and an amount: a run ends when
`ledger[budget_counter] >= budget` (checked after every iteration), and evaluates each time the
counter crosses another `budget / num_evals`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxcredit.afterstate import POLICY_INPUTS
from jaxcredit.credit import REPLACEMENTS
from jaxcredit.credit_arms import CREDIT_ARMS, CREDIT_NAMES, check_replacement_option
from jaxcredit.objectives import OBJECTIVES
from jaxcredit.solver import check_tie_break
from jaxcredit.validation import INT32_MAX, require_float, require_int

CREDITS = CREDIT_NAMES  # the registered credit arms (jaxcredit.credit_arms)
OUTCOME_BASELINES = ("grpo", "rloo", "mean")
MC_VARIANTS = ("td", "q")
SOLVER_POLICIES = ("uniform", "optimal", "soft")
LOSS_NORMALISATIONS = ("step", "sequence")
BUDGET_COUNTERS = ("main_episodes", "total_env_steps", "total_policy_evals")
MAX_BUDGET = 2**31 - 1  # the ledger's int32 counters


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs; every field can be set with `jaxcredit train --set FIELD=VALUE`.

    Attributes:
      env: the environment's name (`jaxcredit.envs.make`): `mad` or `arithmetic`.
      env_overrides: environment configuration fields replacing its defaults (a JSON object; kept
        as sorted `(field, value)` pairs), e.g. `{"length": 5}`.
      credit: the credit arm, one of `CREDITS` (outcome, mc, exact, solver, anchor, progress-soft,
        progress-hard, critic, predictor).
      outcome_baseline: the outcome arm's baseline within each problem's group of attempts:
        `grpo` (mean and standard deviation), `rloo` (leave-one-out mean) or `mean`.
      mc_variant: the mc arm's advantage: `td` (`r_t + V(s_{t+1}) - V(s_t)`) or `q` (`Q(s_t, a_t) - V(s_t)`).
      mc_continuations: K, Monte Carlo continuations per state (mc) or per action (mc `q`).
      solver_policy: the solver arm's reference policy μ: `uniform`, `optimal` (hard max) or `soft`.
      solver_tie_break: how the optimal reference breaks ties (`jaxcredit.solver.TIE_BREAKS`): `none`,
        `fastest` (toward the action whose value needs the fewest turns) or `discount` (toward the best
        value discounted by `solver_tie_break_discount` per turn); not `none` with `solver_policy="optimal"` only.
      solver_tie_break_discount: γ in (0, 1) of `solver_tie_break="discount"`.
      solver_weight: the factor the solver arm's `Q^μ - V^μ` advantage is multiplied by.
      solver_temperature: the Boltzmann temperature of `solver_policy="soft"`, in success
        probability (`jaxcredit.solver.DEFAULT_TEMPERATURE`).
      solver_add_outcome: the solver arm adds the outcome advantage to its own.
      replacement: what replaces the action in the counterfactual credit of the exact, solver and
        mc arms, `Q(s, a_t) - E_{a' ~ ρ}[Q(s, a')]` (`jaxcredit.credit.REPLACEMENTS`): `on-policy`
        (ρ is the policy the values are of: the baseline is V), `uniform` (over the legal actions)
        or `null` (the environment's null action: MAD with `decorative_actions`; JSON null reads as
        `"null"`, so `--set replacement=null` names it).
      progress_continuations: N, continuations per state of the progress-soft and progress-hard arms.
      anchor_weight: the anchor (GiGPO) arm's weight of the advantage within identical positions.
      anchor_discount: the anchor arm's discount of step returns (GiGPO's 0.95).
      critic_label_states: states per iteration the critic arm labels with Monte Carlo returns.
      critic_continuations: Monte Carlo continuations per labelled state (critic arm).
      critic_coef: the weight of the critic's squared error in the loss.
      critic_lambda: the critic arm's GAE λ (PPO's 0.95; 0: the one-step TD advantage).
      predictor_states: the predictor arm's dataset size: states visited by the initial policy (one
        per episode of a training problem), every legal action of each labelled once before training.
      predictor_continuations: K, the continuations per (state, legal action) of the predictor's labels.
      predictor_steps: full-batch Adam steps fitting the predictor to its dataset.
      predictor_learning_rate: the learning rate of those steps.
      predictor_eval_states: held-out states (one per validation problem) the fitted predictor is
        scored on against exact values; 0: not scored (an environment too large to enumerate).
      problems_per_iteration: P, problems drawn per iteration.
      attempts_per_problem: G, main attempts of each problem per iteration (the outcome baselines'
        group; `rloo` needs at least 2).
      learning_rate: Adam's learning rate.
      ppo_epochs: gradient steps on each iteration's batch.
      clip_epsilon: PPO's ratio clip ε; 0: no clipping.
      entropy_coef: the weight of the entropy bonus.
      loss_normalisation: `step` (the mean over all live steps) or `sequence` (per episode, then
        over episodes).
      objective: what the update trains on (`jaxcredit.objectives`): `pg` (the policy gradient on
        the taken actions' advantages) or a value-target loss on the exact values of every legal
        action at each visited state, `dense`, `pairwise` or `hard` (credit `exact` or `solver` only).
      objective_temperature: τ of the `dense` objective's target `softmax(Q / τ)`, in success probability.
      max_grad_norm: gradients are clipped to this global norm.
      d_model: the policy network's width (`jaxcredit.policy.PolicyConfig`).
      num_layers: the policy network's Transformer blocks.
      num_heads: the policy network's attention heads (must divide `d_model`).
      mlp_dim: the hidden width of each block's MLP.
      policy_input: what the policy network reads (`jaxcredit.afterstate`): `tokens` (the
        observation; one logit per action slot) or `afterstate` (the state every legal action
        leads to, computed with the environment's `step` and scored one by one; its steps are
        counted in the ledger's `afterstate_env_steps`, part of `total_env_steps`).
      budget_counter: the ledger counter the budget is counted in: `main_episodes`, `total_env_steps` or
        `total_policy_evals` (policy forward passes over every account; the matched regime's
        `match_on: policy_evals`).
      budget: the run ends once `ledger[budget_counter] >= budget` (checked after every iteration).
      num_evals: evaluations during the run, one each time the counter crosses another `budget / num_evals`
        (plus one before training).
      eval_problems: held-out evaluation problems (per family for arithmetic).
      validation_problems: held-out validation problems the `best` checkpoint is chosen on.
      holdout_fraction: the share of the problem space kept out of training (half validation, half
        evaluation); 0: no split (spaces too small to hold out; evaluation then overlaps training).
      eval_seed: the seed of the evaluation and validation sets (the same for every arm and seed).
      eval_families: arithmetic problem families evaluated on (empty: the training family).
      num_seeds: seeds run at once (`jax.vmap`), `seed .. seed + num_seeds - 1`.
      seed: the first seed (initial parameters and the stream of training problems).
      shard_devices: devices the episode batch axis is split over (`jaxcredit.sharding`); 1: no sharding.
    """

    env: str = "mad"
    env_overrides: tuple[tuple[str, Any], ...] = ()
    credit: str = "outcome"
    outcome_baseline: str = "grpo"
    mc_variant: str = "td"
    mc_continuations: int = 4
    solver_policy: str = "uniform"
    solver_tie_break: str = "none"
    solver_tie_break_discount: float = 0.9
    solver_weight: float = 1.0
    solver_temperature: float = 0.3
    solver_add_outcome: bool = False
    replacement: str = "on-policy"
    progress_continuations: int = 4
    anchor_weight: float = 1.0
    anchor_discount: float = 0.95
    critic_label_states: int = 32
    critic_continuations: int = 4
    critic_coef: float = 1.0
    critic_lambda: float = 0.95
    predictor_states: int = 256
    predictor_continuations: int = 4
    predictor_steps: int = 500
    predictor_learning_rate: float = 1e-3
    predictor_eval_states: int = 64
    problems_per_iteration: int = 16
    attempts_per_problem: int = 4
    learning_rate: float = 1e-3
    ppo_epochs: int = 1
    clip_epsilon: float = 0.0
    entropy_coef: float = 0.0
    loss_normalisation: str = "step"
    objective: str = "pg"
    objective_temperature: float = 0.1
    max_grad_norm: float = 1.0
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    mlp_dim: int = 256
    policy_input: str = "tokens"
    budget_counter: str = "main_episodes"
    budget: int = 20_000
    num_evals: int = 10
    eval_problems: int = 256
    validation_problems: int = 128
    holdout_fraction: float = 0.2
    eval_seed: int = 12_345
    eval_families: tuple[str, ...] = ()
    num_seeds: int = 2
    seed: int = 0
    shard_devices: int = 1

    def __post_init__(self):
        """Validate every field (types, finiteness, ranges the int32 arrays can hold) and the
        environment it names, before anything runs; raises `ValueError` naming the field."""
        def choice(field, choices):
            value = getattr(self, field)
            if not isinstance(value, str) or value not in choices:
                raise ValueError(f"config.{field}: unknown value {value!r}; choices: {', '.join(choices)}")

        def integer(field, low, high=INT32_MAX):
            require_int(f"config.{field}", getattr(self, field), low, high)

        def number(field, low=0.0):
            require_float(f"config.{field}", getattr(self, field), low)

        choice("credit", CREDITS)
        choice("outcome_baseline", OUTCOME_BASELINES)
        choice("mc_variant", MC_VARIANTS)
        choice("solver_policy", SOLVER_POLICIES)
        choice("budget_counter", BUDGET_COUNTERS)
        choice("loss_normalisation", LOSS_NORMALISATIONS)
        if self.replacement is None:  # `--set replacement=null` reads as JSON null: it names the null replacement
            object.__setattr__(self, "replacement", "null")
        choice("replacement", REPLACEMENTS)
        choice("policy_input", POLICY_INPUTS)
        for field in ("mc_continuations", "critic_continuations", "critic_label_states", "problems_per_iteration",
                      "ppo_epochs", "d_model", "num_layers", "num_heads", "mlp_dim", "num_evals",
                      "eval_problems", "validation_problems", "num_seeds", "shard_devices", "predictor_states",
                      "predictor_continuations", "predictor_steps"):
            integer(field, 1)
        integer("progress_continuations", 1)
        integer("predictor_eval_states", 0)
        integer("attempts_per_problem", 2 if self.outcome_baseline == "rloo" else 1)
        integer("budget", 1, MAX_BUDGET)
        integer("eval_seed", 0)
        integer("seed", 0, INT32_MAX - self.num_seeds + 1)  # seeds seed .. seed + num_seeds - 1 are int32
        integer("episodes_per_iteration", 1)
        for field in ("learning_rate", "clip_epsilon", "entropy_coef", "max_grad_norm", "critic_coef",
                      "solver_weight", "anchor_weight"):
            number(field)
        if not isinstance(self.solver_add_outcome, bool):
            raise ValueError(f"config.solver_add_outcome must be true or false, got {self.solver_add_outcome!r}")
        require_float("config.anchor_discount", self.anchor_discount, 0.0, 1.0)
        require_float("config.critic_lambda", self.critic_lambda, 0.0, 1.0)
        if require_float("config.holdout_fraction", self.holdout_fraction, 0.0, 1.0) >= 1.0:
            raise ValueError(f"config.holdout_fraction must be in [0, 1), got {self.holdout_fraction!r}")
        if require_float("config.predictor_learning_rate", self.predictor_learning_rate, 0.0) <= 0.0:
            raise ValueError(f"config.predictor_learning_rate must be a finite number > 0, "
                             f"got {self.predictor_learning_rate!r}")
        if require_float("config.solver_temperature", self.solver_temperature, 0.0) <= 0.0:
            raise ValueError(f"config.solver_temperature must be a finite number > 0, got {self.solver_temperature!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"config.d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.budget < self.num_evals:
            raise ValueError(f"config.budget ({self.budget}) must be at least num_evals ({self.num_evals})")
        self._check_solver_tie_break()
        self._check_objective()
        object.__setattr__(self, "env_overrides", _env_overrides(self.env_overrides))
        object.__setattr__(self, "eval_families", _eval_families(self.eval_families))
        self._check_environment()

    def _check_solver_tie_break(self) -> None:
        """The optimal reference's tie-break (`jaxcredit.solver.check_tie_break`): a known one, its
        discount in (0, 1), and `solver_policy="optimal"` unless it is `none`."""
        try:
            check_tie_break(self.solver_tie_break, self.solver_tie_break_discount)
        except ValueError as error:
            raise ValueError(f"config.solver_tie_break: {error}") from None
        if require_float("config.solver_tie_break_discount", self.solver_tie_break_discount, 0.0, 1.0) in (0.0, 1.0):
            raise ValueError(f"config.solver_tie_break_discount must be in (0, 1), "
                             f"got {self.solver_tie_break_discount!r}")
        if self.solver_tie_break != "none" and self.solver_policy != "optimal":
            raise ValueError(f"config.solver_tie_break {self.solver_tie_break!r} breaks ties of the optimal reference: "
                             f"it needs solver_policy 'optimal', got {self.solver_policy!r}")

    def _check_objective(self) -> None:
        """A value-target objective needs exact values of every legal action (an arm that enumerates
        the graph) and uses no advantage, so the fields that only shape the advantage are refused."""
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:
            raise ValueError(f"config.objective: unknown value {self.objective!r}; choices: {', '.join(OBJECTIVES)}")
        if require_float("config.objective_temperature", self.objective_temperature, 0.0) <= 0.0:
            raise ValueError(f"config.objective_temperature must be a finite number > 0, "
                             f"got {self.objective_temperature!r}")
        if self.objective == "pg":
            return
        value_credits = [name for name, arm in CREDIT_ARMS.items() if arm.enumerates]
        if self.credit not in value_credits:
            raise ValueError(f"config.objective {self.objective!r} trains on exact values of every legal action: "
                             f"it needs credit {' or '.join(map(repr, value_credits))}, got {self.credit!r}")
        if self.clip_epsilon > 0:
            raise ValueError(f"config.clip_epsilon applies to the policy gradient only; objective "
                             f"{self.objective!r} needs clip_epsilon 0, got {self.clip_epsilon!r}")
        if self.solver_add_outcome:
            raise ValueError(f"config.solver_add_outcome adds to the advantage, which objective {self.objective!r} "
                             f"does not use; set it false")

    def _check_environment(self) -> None:
        """Build the environment once: its constructor checks every override (and its limits)."""
        from jaxcredit.envs import ENVIRONMENTS, make
        from jaxcredit.envs.problems import get_family

        if not isinstance(self.env, str) or self.env not in ENVIRONMENTS:
            raise ValueError(f"config.env: unknown value {self.env!r}; choices: {', '.join(sorted(ENVIRONMENTS))}")
        try:
            env = make(self.env, **self.env_kwargs)
        except (TypeError, ValueError) as error:
            raise ValueError(f"config.env_overrides: {error}") from None
        check_replacement_option(env, credit=self.credit, replacement=self.replacement, mc_variant=self.mc_variant,
                                 objective=self.objective)
        for family in self.eval_families:
            get_family(family)
            if self.env == "arithmetic":  # its values must fit the observation (envs/arithmetic.py)
                env.check_family(family, label="config.eval_families")
        if self.env != "arithmetic" and self.eval_families not in ((), ("default",)):
            raise ValueError(f"config.eval_families: environment {self.env!r} has only the 'default' family")

    @property
    def episodes_per_iteration(self) -> int:
        """B: main attempts per iteration (problems x attempts per problem)."""
        return self.problems_per_iteration * self.attempts_per_problem

    @property
    def env_kwargs(self) -> dict:
        return dict(self.env_overrides)

    def to_dict(self) -> dict:
        """JSON-ready dict (the resolved config written into a run directory)."""
        out = dataclasses.asdict(self)
        out["env_overrides"] = dict(self.env_overrides)
        out["eval_families"] = list(self.eval_families)
        return out


def _env_overrides(value) -> tuple[tuple[str, Any], ...]:
    """`env_overrides` as sorted `(field, value)` pairs from a dict or pairs; values are JSON scalars."""
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, (tuple, list)) and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in value):
        pairs = [tuple(p) for p in value]
    else:
        raise ValueError(f"config.env_overrides must be a JSON object of environment fields, got {value!r}")
    for field, override in pairs:
        if not isinstance(field, str):
            raise ValueError(f"config.env_overrides: field names must be strings, got {field!r}")
        if override is not None and not isinstance(override, (bool, int, float, str)):
            raise ValueError(f"config.env_overrides.{field} must be a number, string or boolean, got {override!r}")
    return tuple(sorted(pairs))


def _eval_families(value) -> tuple[str, ...]:
    """`eval_families` as a tuple of family names from a list or tuple of strings."""
    if not isinstance(value, (tuple, list)) or not all(isinstance(f, str) for f in value):
        raise ValueError(f"config.eval_families must be a list of family names, got {value!r}")
    return tuple(value)


FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig))


def config_from_dict(values: dict, *, base: TrainConfig | None = None) -> TrainConfig:
    """`base` (default: the defaults) updated with `values`; unknown fields raise `ValueError`."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}; fields: {', '.join(FIELDS)}")
    if not isinstance(values, dict):
        raise ValueError(f"a config must be a JSON object of fields, got {type(values).__name__}")
    return dataclasses.replace(base or TrainConfig(), **values)
