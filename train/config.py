"""Training configuration: one frozen dataclass, validated before anything is traced.

`TrainConfig` holds everything a run needs (environment, credit arm and its options, batch,
optimiser, policy size, budget, evaluation); `config_from_dict` builds one from JSON-like data
and names any unknown field with the choices. The credit arm's own hyper-parameters are its
options (`credit_options`, the arm's frozen dataclass, `jaxcredit.arm_registry`), set as a JSON
object or one at a time by dotted name, `credit_options.NAME`. The budget is a ledger counter
and an amount: a run ends when `ledger[budget_counter] >= budget` (checked after every
iteration), and evaluates each time the counter crosses another `budget / num_evals`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxcredit.afterstate import POLICY_INPUTS, check_afterstate_lookahead
from jaxcredit.arm_registry import (
    CREDIT_ARMS,
    OPTIONS_FIELD,
    ArmOptions,
    credit_arm,
    credit_names,
    legacy_field_names,
    options_to_dict,
    split_options,
)
from jaxcredit.objectives import OBJECTIVES
from jaxcredit.validation import INT32_MAX, require_float, require_int

LOSS_NORMALISATIONS = ("step", "sequence")
BUDGET_COUNTERS = ("main_episodes", "total_env_steps", "total_policy_evals")
MAX_BUDGET = 2**31 - 1  # the ledger's int32 counters


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs; every field can be set with `jaxcredit train --set FIELD=VALUE`.

    Attributes:
      env: the environment's name (`jaxcredit.envs.make`): `mad`, `arithmetic`, `routine` or `umbrella`.
      env_overrides: environment configuration fields replacing its defaults (a JSON object; kept
        as sorted `(field, value)` pairs), e.g. `{"length": 5}`.
      credit: the credit arm, a registered name (`jaxcredit.arm_registry.credit_names()`: outcome, mc,
        exact, solver, anchor, critic, predictor, progress-soft, progress-hard, progress-model, and any
        a plugin registers).
      credit_options: the arm's options, an instance of its `options` class (`CREDIT_ARMS[credit].options`;
        None: its defaults), written in `config.json` as a JSON object; a dict sets some of them
        over the defaults, and `credit_options.NAME` (in `config_from_dict` or `--set`) sets one.
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
      afterstate_lookahead: 0, or 1 with `policy_input="afterstate"`: each afterstate's encoding also
        summarizes its legal successors (one more environment step per legal successor, in the same
        `afterstate_env_steps`); an upper bound, since it does part of the search in code.
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
      eval_families: arithmetic problem families evaluated on (empty: the environment's own choice,
        `Environment.evaluation_families`; arithmetic: `default`).
      num_seeds: seeds run at once (`jax.vmap`), `seed .. seed + num_seeds - 1`.
      seed: the first seed (initial parameters and the stream of training problems).
      shard_devices: devices the episode batch axis is split over (`jaxcredit.sharding`); 1: no sharding.
    """

    env: str = "mad"
    env_overrides: tuple[tuple[str, Any], ...] = ()
    credit: str = "outcome"
    credit_options: Any = None
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
    afterstate_lookahead: int = 0
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

        choice("credit", credit_names())
        self._set_options()
        choice("budget_counter", BUDGET_COUNTERS)
        choice("loss_normalisation", LOSS_NORMALISATIONS)
        choice("policy_input", POLICY_INPUTS)
        check_afterstate_lookahead("config.afterstate_lookahead", self.afterstate_lookahead, self.policy_input)
        for field in ("problems_per_iteration", "attempts_per_problem", "ppo_epochs", "d_model", "num_layers",
                      "num_heads", "mlp_dim", "num_evals", "eval_problems", "validation_problems", "num_seeds",
                      "shard_devices"):
            integer(field, 1)
        integer("budget", 1, MAX_BUDGET)
        integer("eval_seed", 0)
        integer("seed", 0, INT32_MAX - self.num_seeds + 1)  # seeds seed .. seed + num_seeds - 1 are int32
        integer("episodes_per_iteration", 1)
        for field in ("learning_rate", "clip_epsilon", "entropy_coef", "max_grad_norm"):
            number(field)
        if require_float("config.holdout_fraction", self.holdout_fraction, 0.0, 1.0) >= 1.0:
            raise ValueError(f"config.holdout_fraction must be in [0, 1), got {self.holdout_fraction!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"config.d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.budget < self.num_evals:
            raise ValueError(f"config.budget ({self.budget}) must be at least num_evals ({self.num_evals})")
        self._check_objective()
        arm = credit_arm(self.credit)
        if arm.check is not None:
            arm.check(self.credit_options, self)
        object.__setattr__(self, "env_overrides", _env_overrides(self.env_overrides))
        object.__setattr__(self, "eval_families", _eval_families(self.eval_families))
        self._check_environment()

    def _set_options(self) -> None:
        """`credit_options` as an instance of the arm's options class (None: its defaults; a dict:
        some options over the defaults); raises `ValueError` naming an unknown option or a bad value."""
        options = self.credit_options
        if options is None or isinstance(options, (dict, ArmOptions)):
            options, _ = split_options({} if options is None else {OPTIONS_FIELD: options}, self.credit)
        else:
            raise ValueError(f"config.credit_options must be a JSON object of credit {self.credit!r}'s options, "
                             f"got {options!r}")
        object.__setattr__(self, "credit_options", options)

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

    def _check_environment(self) -> None:
        """Build the environment once: its constructor checks every override (and its limits)."""
        from jaxcredit.envs import ENVIRONMENTS, make

        if not isinstance(self.env, str) or self.env not in ENVIRONMENTS:
            raise ValueError(f"config.env: unknown value {self.env!r}; choices: {', '.join(sorted(ENVIRONMENTS))} (an "
                             "environment of a plugin needs --plugin)")
        try:
            env = make(self.env, **self.env_kwargs)
        except (TypeError, ValueError) as error:
            raise ValueError(f"config.env_overrides: {error}") from None
        env.evaluation_families(self.eval_families)  # raises ValueError naming a family it does not have
        for family in self.eval_families:  # its values must fit the observation (arithmetic's bound)
            env.check_family(family, label="config.eval_families")
        arm = credit_arm(self.credit)
        if arm.check_environment is not None:  # e.g. the null replacement needs a null action
            arm.check_environment(self.credit_options, env)

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
        out["credit_options"] = options_to_dict(self.credit_options)
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


def config_from_dict(values: dict, *, base: TrainConfig | None = None, legacy: bool = True) -> TrainConfig:
    """`base` (default: the defaults) updated with `values`; unknown fields raise `ValueError`.

    The arm's options come from `credit_options` (a JSON object of some of them) and
    `credit_options.NAME` entries, over `base`'s options when the arm is `base`'s, else over the
    arm's defaults. With `legacy` (reading what older versions wrote), the flat fields they kept
    the options in (`mc_continuations`, `solver_policy`, ...) are read too: the named arm's into its
    options, the other arms' dropped; without it (the command line), such a field is refused with
    its new name.
    """
    if not isinstance(values, dict):
        raise ValueError(f"a config must be a JSON object of fields, got {type(values).__name__}")
    old = sorted(set(values) & legacy_field_names())
    if old and not legacy:
        renamed = [f"{field} -> {OPTIONS_FIELD}.{arm.legacy_fields[field]} (credit {name!r})"
                   for field in old for name, arm in CREDIT_ARMS.items() if field in arm.legacy_fields]
        raise ValueError(f"config field(s) {old} are now options of their credit arm: {'; '.join(renamed)}")
    base = base or TrainConfig()
    credit = values.get("credit", base.credit)
    if not isinstance(credit, str) or credit not in CREDIT_ARMS:
        raise ValueError(f"config.credit: unknown value {credit!r}; choices: {', '.join(credit_names())}")
    options, rest = split_options(values, credit, base.credit_options)
    unknown = sorted(set(rest) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}; fields: {', '.join(FIELDS)} "
                         f"({OPTIONS_FIELD}.NAME: one of credit {credit!r}'s options)")
    return dataclasses.replace(base, **{**rest, OPTIONS_FIELD: options})
