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

CREDITS = ("outcome", "mc", "exact", "solver", "anchor", "critic")
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
        def choice(field, choices):
            value = getattr(self, field)
            if value not in choices:
                raise ValueError(f"config.{field}: unknown value {value!r}; choices: {', '.join(choices)}")

        def at_least(field, low, high=None):
            value = getattr(self, field)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low
            if not ok or (high is not None and value > high):
                allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise ValueError(f"config.{field} must be {allowed}, got {value!r}")

        choice("credit", CREDITS)
        choice("outcome_baseline", OUTCOME_BASELINES)
        choice("mc_variant", MC_VARIANTS)
        choice("solver_policy", SOLVER_POLICIES)
        choice("budget_counter", BUDGET_COUNTERS)
        choice("loss_normalisation", LOSS_NORMALISATIONS)
        for field in ("mc_continuations", "critic_continuations", "critic_label_states", "problems_per_iteration",
                      "ppo_epochs", "d_model", "num_layers", "num_heads", "mlp_dim", "num_evals",
                      "eval_problems", "validation_problems", "num_seeds", "shard_devices"):
            at_least(field, 1)
        at_least("attempts_per_problem", 2 if self.outcome_baseline == "rloo" else 1)
        at_least("learning_rate", 0.0)
        for field in ("clip_epsilon", "entropy_coef", "max_grad_norm", "critic_coef",
                      "solver_weight", "anchor_weight"):
            at_least(field, 0.0)
        at_least("budget", 1, MAX_BUDGET)
        at_least("anchor_discount", 0.0, 1.0)
        at_least("critic_lambda", 0.0, 1.0)
        fraction = self.holdout_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction < 1:
            raise ValueError(f"config.holdout_fraction must be in [0, 1), got {fraction!r}")
        temperature = self.solver_temperature
        number = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
        if not number or not 0 < temperature < float("inf"):
            raise ValueError(f"config.solver_temperature must be a finite number > 0, got {temperature!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"config.d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.budget < self.num_evals:
            raise ValueError(f"config.budget ({self.budget}) must be at least num_evals ({self.num_evals})")

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


FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig))


def config_from_dict(values: dict, *, base: TrainConfig | None = None) -> TrainConfig:
    """`base` (default: the defaults) updated with `values`; unknown fields raise `ValueError`."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown}; fields: {', '.join(FIELDS)}")
    values = dict(values)
    if "env_overrides" in values:
        overrides = values["env_overrides"]
        values["env_overrides"] = tuple(sorted(dict(overrides).items()))
    if "eval_families" in values:
        values["eval_families"] = tuple(values["eval_families"])
    return dataclasses.replace(base or TrainConfig(), **values)
