"""Routine: an episode of H turns of which exactly D are decisions, the rest routine.

The decision-density environment, a controlled lab for the density ρ = decisions / turns. Every
turn the agent picks one of `num_choices` actions (all legal). At a *decision* turn one action is
right (`cue`: the observation shows it, or only the decision's ordinal); a wrong choice lowers the
final success. At a *routine* turn every action leads to the same next position, so the exact
solver's `Q - V` is 0 there and non-zero at every decision turn. Two designs: a fixed horizon
(`decisions=0`) or fixed decisions (`decisions=D`: routine turns inserted, the task otherwise the
same). The last accepted action ends the episode with reward `success(w)` for w wrong decisions
(`failure`: `fatal` or `probabilistic`). Problem layout, observation tokens and positions: see
docs/density.md#the-environment-makeroutine--routine-v0.

Shape letters: H turns (the horizon), A actions, L observation length, S positions.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.env import Environment, HiddenVariable, State, compiled_method
from jaxcredit.env_registry import register_environment
from jaxcredit.envs.routine_reference import RoutineReference
from jaxcredit.validation import require_float, require_int

MAX_HORIZON = 128
PLACEMENTS = ("random", "fixed")
FAILURES = ("fatal", "probabilistic")
CUES = ("right", "index")
DEFAULT_HORIZON = 16


@struct.dataclass
class RoutineProblem:
    """One decision layout. `decision` bool `[H]`; `right` int32 `[H]` (0 at routine turns)."""

    decision: jax.Array
    right: jax.Array


@struct.dataclass
class RoutineState:
    """`progress` int32 `[]` (accepted actions, k) and `wrong` int32 `[]` (w, capped at W)."""

    progress: jax.Array
    wrong: jax.Array


def num_decisions_of(density: float, horizon: int) -> int:
    """Host: D = `round(density * horizon)`, rounded half up (not Python's half-to-even)."""
    return int(np.floor(density * horizon + 0.5))


def horizon_of(num_decisions: int, density: float) -> int:
    """Host: the fixed-decisions horizon `H = round(num_decisions / density)`, rounded half up."""
    return int(np.floor(num_decisions / density + 0.5))


def answer_table(answer_seed: int, num_choices: int) -> np.ndarray:
    """Host: int32 `[MAX_HORIZON]`, the right action of the j-th decision under cue `"index"`.
    Entry j depends only on `answer_seed`, `num_choices` and j (not on H or D)."""
    return np.random.default_rng(answer_seed).integers(0, num_choices, MAX_HORIZON).astype(np.int32)


def decision_layout(key: jax.Array, *, horizon: int, num_decisions: jax.Array, placement: str,
                    num_choices: int, answers: np.ndarray | None = None) -> RoutineProblem:
    """A `RoutineProblem` with `num_decisions` (int `[]`, may be traced, in `[0, horizon]`) decision
    turns placed by `placement`; right actions uniform per problem, or, given `answers` (int
    `[>= horizon]`, see `answer_table`), `answers[j]` at the j-th decision. Consumes `key`."""
    place_key, right_key = jax.random.split(key)
    turns = jnp.arange(horizon)
    num_decisions = jnp.asarray(num_decisions, jnp.int32)
    if placement == "random":
        rank = jnp.argsort(jax.random.permutation(place_key, horizon))
        decision = rank < num_decisions
    elif placement == "fixed":
        spots = ((2 * turns + 1) * horizon) // jnp.maximum(2 * num_decisions, 1)  # j = 0..H-1
        used = turns < num_decisions
        decision = jnp.any((spots[None, :] == turns[:, None]) & used[None, :], axis=1)
    else:
        raise ValueError(f"unknown routine placement {placement!r}; choices: {', '.join(PLACEMENTS)}")
    if answers is None:
        right = jax.random.randint(right_key, (horizon,), 0, num_choices)
    else:
        ordinal = jnp.cumsum(decision) - 1  # j of the decision at each turn
        right = jnp.asarray(answers, jnp.int32)[jnp.clip(ordinal, 0, horizon - 1)]
    return RoutineProblem(decision=decision, right=jnp.where(decision, right, 0).astype(jnp.int32))


@dataclasses.dataclass(frozen=True)
class Routine(Environment):
    """The decision-density environment. See the module docstring for the rules and layouts."""

    horizon: int | None = None  # None: 16 (fixed horizon) or round(decisions / density) (fixed decisions)
    density: float = 0.25
    placement: str = "random"
    num_choices: int = 2
    failure: str = "fatal"
    survival: float = 0.5
    decisions: int = 0
    cue: str = "right"
    answer_seed: int = 0
    vocab_horizon: int = 0
    name: ClassVar[str] = "routine"
    supports_density_snr: ClassVar[bool] = True  # the gradient-SNR study's environment (jaxcredit snr)

    def __post_init__(self):
        owner = "routine"
        require_float(f"{owner}.density", self.density, 0.0, 1.0)
        require_int(f"{owner}.decisions", self.decisions, 0, MAX_HORIZON)
        if self.decisions:
            if self.density <= 0:
                raise ValueError(f"routine.density must be > 0 with decisions={self.decisions}")
            derived = horizon_of(self.decisions, self.density)
            if derived > MAX_HORIZON:
                raise ValueError(f"routine: {self.decisions} decisions at density {self.density:g} need horizon "
                                 f"{derived} > {MAX_HORIZON}; use density >= {self.decisions / MAX_HORIZON:g}")
            if self.horizon is not None and self.horizon != derived:
                raise ValueError(f"routine.horizon {self.horizon} disagrees with decisions / density = "
                                 f"{self.decisions} / {self.density:g} -> {derived}; give decisions and density only")
            object.__setattr__(self, "horizon", derived)
        elif self.horizon is None:
            object.__setattr__(self, "horizon", DEFAULT_HORIZON)
        require_int(f"{owner}.horizon", self.horizon, 1, MAX_HORIZON)
        require_int(f"{owner}.num_choices", self.num_choices, 2, 64)
        require_float(f"{owner}.survival", self.survival, 0.0, 1.0)
        if self.placement not in PLACEMENTS:
            raise ValueError(f"routine.placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")
        if self.failure not in FAILURES:
            raise ValueError(f"routine.failure must be one of {', '.join(FAILURES)}, got {self.failure!r}")
        if self.cue not in CUES:
            raise ValueError(f"routine.cue must be one of {', '.join(CUES)}, got {self.cue!r}")
        require_int(f"{owner}.answer_seed", self.answer_seed, 0)
        require_int(f"{owner}.vocab_horizon", self.vocab_horizon, 0, MAX_HORIZON)
        if self.vocab_horizon and self.vocab_horizon < self.horizon:
            raise ValueError(f"routine.vocab_horizon ({self.vocab_horizon}) must be 0 or at least the horizon "
                             f"({self.horizon})")
        if self.num_decisions < 1:
            raise ValueError(f"routine.density {self.density:g} x horizon {self.horizon} rounds to 0 decisions; "
                             f"use density >= {0.5 / self.horizon:g} or a longer horizon")

    # ----- sizes -----
    @property
    def max_turns(self) -> int:
        return self.horizon

    @property
    def num_decisions(self) -> int:
        """D: `decisions` (fixed decisions) or `round(density * horizon)` (half up, fixed horizon)."""
        return self.decisions or num_decisions_of(self.density, self.horizon)

    @property
    def realised_density(self) -> float:
        """D / H, the density the layouts have (`density` up to rounding)."""
        return self.num_decisions / self.horizon

    @property
    def token_horizon(self) -> int:
        """V: `vocab_horizon`, or the horizon when it is 0."""
        return self.vocab_horizon or self.horizon

    def answers(self) -> np.ndarray | None:
        """Host: int32 `[MAX_HORIZON]` fixed right actions by decision ordinal (cue `"index"`), else None."""
        return answer_table(self.answer_seed, self.num_choices) if self.cue == "index" else None

    @property
    def max_wrong(self) -> int:
        """W: the cap on the counted wrong decisions (1 fatal, H probabilistic)."""
        return 1 if self.failure == "fatal" else self.horizon

    @property
    def num_actions(self) -> int:
        return self.num_choices

    @property
    def observation_length(self) -> int:
        return 2

    @property
    def vocab_size(self) -> int:
        return self.token_horizon + 2 + (self.num_choices if self.cue == "right" else self.num_decisions)

    @property
    def num_positions(self) -> int:
        return self.horizon * (self.max_wrong + 1)

    observation_shows_turns = False  # the observation shows progress (a position), never the clock

    def success_table(self) -> np.ndarray:
        """float32 `[W + 1]`: the final reward after w wrong decisions."""
        if self.failure == "fatal":
            return np.array([1.0, 0.0], np.float32)
        return np.array([self.survival**w for w in range(self.max_wrong + 1)], np.float32)

    # ----- problems -----
    def sample_problem(self, key: jax.Array) -> RoutineProblem:
        """A layout with exactly D decisions (see `decision_layout`). Consumes `key`."""
        return decision_layout(key, horizon=self.horizon, num_decisions=self.num_decisions,
                               placement=self.placement, num_choices=self.num_choices, answers=self.answers())

    def check_problem(self, problem) -> None:
        decision, right = np.asarray(problem.decision), np.asarray(problem.right)
        for field, value in (("decision", decision), ("right", right)):
            if value.shape != (self.horizon,):
                raise ValueError(f"routine problem.{field} must have shape ({self.horizon},), got {value.shape}")
        if decision.dtype != np.bool_ or not np.issubdtype(right.dtype, np.integer):
            raise ValueError(f"routine problem needs bool decision and integer right, got {decision.dtype}, "
                             f"{right.dtype}")
        if ((right < 0) | (right >= self.num_choices)).any() or (right[~decision] != 0).any():
            raise ValueError(f"routine problem.right must be in [0, {self.num_choices}) at decisions and 0 "
                             f"elsewhere, got {right.tolist()}")
        if int(decision.sum()) != self.num_decisions:
            raise ValueError(f"routine problem has {int(decision.sum())} decisions; density {self.density:g} x "
                             f"horizon {self.horizon} needs {self.num_decisions}")
        if self.cue == "index":
            expected = self.answers()[:self.num_decisions]
            if right[decision].tolist() != expected.tolist():
                raise ValueError(f"routine problem.right at the decisions must be the fixed answers "
                                 f"{expected.tolist()} (cue 'index'), got {right[decision].tolist()}")

    # ----- dynamics -----
    def _init(self, problem):
        zero = jnp.zeros((), jnp.int32)
        return RoutineState(progress=zero, wrong=zero)

    @compiled_method
    def _step(self, problem, st, action):
        k = jnp.minimum(st.progress, self.horizon - 1)
        wrong_now = jnp.asarray(problem.decision)[k] & (action != jnp.asarray(problem.right)[k])
        wrong = jnp.minimum(st.wrong + wrong_now.astype(jnp.int32), self.max_wrong)
        progress = st.progress + 1
        terminated = progress >= self.horizon
        reward = jnp.where(terminated, jnp.asarray(self.success_table())[wrong], 0.0)
        return RoutineState(progress=progress, wrong=wrong), reward, terminated

    @compiled_method
    def _observe(self, problem, st, turn):
        k = jnp.minimum(st.progress, self.horizon - 1)
        live = st.progress < self.horizon
        decision = jnp.asarray(problem.decision)[k] & live
        if self.cue == "right":
            shown = jnp.asarray(problem.right)[k]
        else:  # the decision's ordinal: decisions before turn k
            shown = jnp.sum(jnp.asarray(problem.decision) & (jnp.arange(self.horizon) < k))
        cue = jnp.where(decision, self.token_horizon + 2 + shown, self.token_horizon + 1)
        return jnp.stack([st.progress, cue]).astype(jnp.int32)

    def _legal_action_mask(self, problem, st):
        return jnp.ones((self.num_choices,), bool)

    @compiled_method
    def _position(self, problem, index):
        stride = self.max_wrong + 1
        k, w = index // stride, index % stride
        before = jnp.sum(jnp.asarray(problem.decision) & (jnp.arange(self.horizon) < k))
        valid = (index >= 0) & (index < self.num_positions) & (w <= jnp.minimum(before, self.max_wrong))
        return RoutineState(progress=jnp.clip(k, 0, self.horizon - 1).astype(jnp.int32),
                            wrong=w.astype(jnp.int32)), valid

    @compiled_method
    def _position_index(self, problem, st):
        k = jnp.minimum(st.progress, self.horizon - 1)
        return k * (self.max_wrong + 1) + st.wrong

    def hidden_variables(self) -> dict[str, HiddenVariable]:
        """`cue`: the right action at a decision, hidden by cue `index` (shown by `right`); `wrong`: the
        wrong decisions so far, which no observation or prompt shows."""
        return {
            "cue": HiddenVariable("the right action at a decision turn (cue 'index' shows only the decision's "
                                  "ordinal)", hidden={"cue": "index"}, shown={"cue": "right"}, text_shows=False),
            "wrong": HiddenVariable("the wrong decisions so far (no observation shows them)", hidden={}, shown=None,
                                    text_shows=False),
        }

    # ----- host helpers -----
    def text_protocol(self):
        """`RoutineText`: `choose N`."""
        from jaxcredit.envs.text_protocol import RoutineText

        return RoutineText(self)

    def action_name(self, action: int) -> str:
        action = int(action)
        return f"choose {action}" if 0 <= action < self.num_choices else f"invalid action {action}"

    def render(self, state: State) -> str:
        decision = np.asarray(state.problem.decision).tolist()
        right = np.asarray(state.problem.right).tolist()
        k, w = int(state.env_state.progress), int(state.env_state.wrong)
        cells = []
        for turn, (is_decision, r) in enumerate(zip(decision, right)):
            cell = str(r) if is_decision else "."
            cells.append(f"[{cell}]" if turn == k else f" {cell} ")
        status = "terminated" if bool(state.terminated) else "truncated" if bool(state.truncated) else "live"
        return (
            f"turns: {''.join(cells)}  (digit: decision with its right action; '.': routine)\n"
            f"turn {int(state.turn)}/{self.max_turns}  wrong {w}  reward {float(state.reward):g}  "
            f"{status}{'  (last action refused)' if bool(state.rejected) else ''}"
        )


register_environment(Routine, reference=RoutineReference, ids=("Routine-v0",))
