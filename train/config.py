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

from jaxcredit.credit_arms import CREDIT_NAMES
from jaxcredit.validation import INT32_MAX, require_float, require_int

CREDITS = CREDIT_NAMES  # the registered credit arms (jaxcredit.credit_arms)
OUTCOME_BASELINES = ("grpo", "rloo", "mean")
MC_VARIANTS = ("td", "q")
SOLVER_POLICIES = ("uniform", "optimal", "soft")
LOSS_NORMALISATIONS = ("step", "sequence")
BUDGET_COUNTERS = ("main_episodes", "total_env_steps")
MAX_BUDGET = 2**31 - 1  # the ledger's int32 counters


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs. See the README's "Training" section for each field."""

    env: str = "mad"
    env_overrides: tuple[tuple[str, Any], ...] = ()
    credit: str = "outcome"
    outcome_baseline: str = "grpo"
    mc_variant: str = "td"
    mc_continuations: int = 4
    solver_policy: str = "uniform"
    solver_weight: float = 1.0
    solver_temperature: float = 0.3  # of solver_policy="soft" (solver.DEFAULT_TEMPERATURE), in success probability
    solver_add_outcome: bool = False
    anchor_weight: float = 1.0
    anchor_discount: float = 0.95  # GiGPO's step-level discount (the paper's value)
    critic_label_states: int = 32
    critic_continuations: int = 4
    critic_coef: float = 1.0
    critic_lambda: float = 0.95  # GAE λ of the critic arm's advantage (PPO's; 0: one-step TD)
    problems_per_iteration: int = 16
    attempts_per_problem: int = 4
    learning_rate: float = 1e-3
    ppo_epochs: int = 1
    clip_epsilon: float = 0.0
    entropy_coef: float = 0.0
    loss_normalisation: str = "step"  # "step": mean over all live steps; "sequence": per episode, then over episodes
    max_grad_norm: float = 1.0
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    mlp_dim: int = 256
    budget_counter: str = "main_episodes"
    budget: int = 20_000
    num_evals: int = 10
    eval_problems: int = 256
    validation_problems: int = 128  # held-out problems the `best` checkpoint is chosen on
    holdout_fraction: float = 0.2  # share of the problem space kept out of training (half validation, half
    # evaluation); 0: no split (spaces too small to hold out; evaluation then overlaps training)
    eval_seed: int = 12_345
    eval_families: tuple[str, ...] = ()
    num_seeds: int = 2
    seed: int = 0
    shard_devices: int = 1  # devices the episode batch axis is split over (jaxcredit.sharding); 1: no sharding

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
        for field in ("mc_continuations", "critic_continuations", "critic_label_states", "problems_per_iteration",
                      "ppo_epochs", "d_model", "num_layers", "num_heads", "mlp_dim", "num_evals",
                      "eval_problems", "validation_problems", "num_seeds", "shard_devices"):
            integer(field, 1)
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
        if require_float("config.solver_temperature", self.solver_temperature, 0.0) <= 0.0:
            raise ValueError(f"config.solver_temperature must be a finite number > 0, got {self.solver_temperature!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"config.d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.budget < self.num_evals:
            raise ValueError(f"config.budget ({self.budget}) must be at least num_evals ({self.num_evals})")
        object.__setattr__(self, "env_overrides", _env_overrides(self.env_overrides))
        object.__setattr__(self, "eval_families", _eval_families(self.eval_families))
        self._check_environment()

    def _check_environment(self) -> None:
        """Build the environment once: its constructor checks every override (and its limits)."""
        from jaxcredit.envs import ENVIRONMENTS, make
        from jaxcredit.envs.problems import get_family

        if not isinstance(self.env, str) or self.env not in ENVIRONMENTS:
            raise ValueError(f"config.env: unknown value {self.env!r}; choices: {', '.join(sorted(ENVIRONMENTS))}")
        try:
            make(self.env, **self.env_kwargs)
        except (TypeError, ValueError) as error:
            raise ValueError(f"config.env_overrides: {error}") from None
        for family in self.eval_families:
            get_family(family)
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
