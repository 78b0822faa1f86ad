"""Umbrella: bsuite's umbrella chain, with every random draw in the problem so that `step` is deterministic.

The credit-assignment diagnostic of bsuite (Osband et al., 2020, `umbrella_chain`). An episode
lasts `chain_length` L steps with two actions, "leave umbrella" (0) and "take umbrella" (1); only
the first has an effect. The last step pays +1 if the agent has the umbrella exactly when one is
needed, else -1; every step before it pays +1 or -1 whatever the agent does, and the observation
carries `n_distractor` bits of no information. bsuite's coins are drawn by `sample_problem` as the
problem (`UmbrellaProblem`), so the exact solver enumerates the positions `(k, have)`. bsuite's two
experiments are `LENGTH_SWEEP` and `DISTRACT_SWEEP`, scored by `bsuite_score`. The problem's
fields, the observation, exact values, what differs from bsuite and how parity is checked: see
docs/environments.md#umbrella-bsuites-umbrella-chain.

Shape letters: L chain length, D distractors, A actions, S positions, N episodes, G settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.env import MAX_TURNS, Environment, State, compiled_method
from jaxcredit.env_registry import register_environment
from jaxcredit.envs.umbrella_reference import UmbrellaReference
from jaxcredit.validation import require_int

MAX_DISTRACTORS = 1024
LEAVE, TAKE = 0, 1

# bsuite's sweeps (`bsuite.experiments.umbrella_length.sweep`, `umbrella_distract`): the same
# log-spaced grid of 23 values for the chain length and for the number of distractors.
_LOG_SPACED = (*range(1, 11), 12, 14, 17, 20, 25, *range(30, 105, 10))
LENGTH_SWEEP = tuple({"chain_length": n, "n_distractor": 20} for n in _LOG_SPACED)
DISTRACT_SWEEP = tuple({"chain_length": 20, "n_distractor": n} for n in _LOG_SPACED)
NUM_EPISODES = 10_000  # bsuite's episodes per setting; the score reads the regret after them
REGRET_THRESHOLD = 0.5


@struct.dataclass
class UmbrellaProblem:
    """One episode's draws: `need_umbrella`, `start_umbrella` bool `[]`, `noise_positive` bool `[L]`,
    `distractors` bool `[L + 1, max(D, 1)]` (see the module docstring)."""

    need_umbrella: jax.Array
    start_umbrella: jax.Array
    noise_positive: jax.Array
    distractors: jax.Array


@struct.dataclass
class UmbrellaState:
    """`progress` int32 `[]` (accepted actions, k) and `umbrella` bool `[]` (the agent has one)."""

    progress: jax.Array
    umbrella: jax.Array


def average_regret(final_rewards) -> float:
    """Host: bsuite's regret per episode, `mean(1 - r)` over the final-step rewards r (+1 or -1)
    of float `[N]` episodes (bsuite adds 2 to its total regret for each -1; the noise rewards of
    the other steps do not count)."""
    final_rewards = np.asarray(final_rewards, np.float64)
    if final_rewards.ndim != 1 or final_rewards.size == 0:
        raise ValueError(f"average_regret needs a non-empty 1-d array of final rewards, got shape "
                         f"{final_rewards.shape}")
    return float(np.mean(1.0 - final_rewards))


def bsuite_score(average_regrets: Sequence[float]) -> float:
    """Host: bsuite's umbrella score, the fraction of settings whose average regret (float `[G]`,
    one per setting of a sweep: the regret per episode over all of the setting's first
    `NUM_EPISODES` episodes, learning included) is below `REGRET_THRESHOLD`."""
    regrets = np.asarray(average_regrets, np.float64)
    if regrets.ndim != 1 or regrets.size == 0:
        raise ValueError(f"bsuite_score needs one average regret per setting, got shape {regrets.shape}")
    return float(np.mean(regrets < REGRET_THRESHOLD))


@dataclasses.dataclass(frozen=True)
class Umbrella(Environment):
    """bsuite's umbrella chain. See the module docstring for the rules, observation and positions."""

    chain_length: int = 20
    n_distractor: int = 0
    name: ClassVar[str] = "umbrella"

    def __post_init__(self):
        require_int("umbrella.chain_length", self.chain_length, 1, MAX_TURNS)
        require_int("umbrella.n_distractor", self.n_distractor, 0, MAX_DISTRACTORS)

    # ----- sizes -----
    @property
    def max_turns(self) -> int:
        return self.chain_length

    @property
    def num_actions(self) -> int:
        return 2

    @property
    def observation_length(self) -> int:
        return 3 + self.n_distractor

    @property
    def vocab_size(self) -> int:
        return self.chain_length + 3

    @property
    def num_positions(self) -> int:
        return 2 * self.chain_length

    @property
    def distractor_columns(self) -> int:
        """The columns of `problem.distractors`: D, or 1 (never shown) when D is 0."""
        return max(self.n_distractor, 1)

    observation_shows_turns = False  # the observation shows progress (a position), never the clock

    # ----- problems -----
    def sample_problem(self, key: jax.Array) -> UmbrellaProblem:
        """Every draw a fair coin, as bsuite's; the unused last noise entry is False. Consumes `key`."""
        length = self.chain_length
        need_key, start_key, noise_key, distractor_key = jax.random.split(key, 4)
        noise = jax.random.bernoulli(noise_key, 0.5, (length,)) & (jnp.arange(length) < length - 1)
        return UmbrellaProblem(
            need_umbrella=jax.random.bernoulli(need_key, 0.5, ()),
            start_umbrella=jax.random.bernoulli(start_key, 0.5, ()),
            noise_positive=noise,
            distractors=jax.random.bernoulli(distractor_key, 0.5, (length + 1, self.distractor_columns))
            & (self.n_distractor > 0),
        )

    def check_problem(self, problem) -> None:
        length = self.chain_length
        shapes = {"need_umbrella": (), "start_umbrella": (), "noise_positive": (length,),
                  "distractors": (length + 1, self.distractor_columns)}
        for field, shape in shapes.items():
            value = np.asarray(getattr(problem, field))
            if value.shape != shape or value.dtype != np.bool_:
                raise ValueError(f"umbrella problem.{field} must be bool with shape {shape}, got "
                                 f"{value.dtype} with shape {value.shape}")
        if bool(np.asarray(problem.noise_positive)[-1]):
            raise ValueError("umbrella problem.noise_positive[-1] must be False: the final step pays the "
                             "umbrella outcome, not noise")
        if self.n_distractor == 0 and np.asarray(problem.distractors).any():
            raise ValueError("umbrella problem.distractors must be False with n_distractor 0 (its one column "
                             "is never shown)")

    # ----- dynamics -----
    def _init(self, problem):
        return UmbrellaState(progress=jnp.zeros((), jnp.int32), umbrella=jnp.asarray(problem.start_umbrella, bool))

    @compiled_method
    def _step(self, problem, st, action):
        length = self.chain_length
        umbrella = jnp.where(st.progress == 0, action == TAKE, st.umbrella)
        progress = st.progress + 1
        terminated = progress >= length
        outcome = jnp.where(umbrella == problem.need_umbrella, 1.0, -1.0)
        noise = jnp.where(jnp.asarray(problem.noise_positive)[jnp.minimum(st.progress, length - 1)], 1.0, -1.0)
        reward = jnp.where(terminated, outcome, noise)
        return UmbrellaState(progress=progress, umbrella=umbrella), reward, terminated

    @compiled_method
    def _observe(self, problem, st, turn):
        length = self.chain_length
        k = jnp.clip(st.progress, 0, length)
        head = jnp.stack([jnp.asarray(problem.need_umbrella, jnp.int32), st.umbrella.astype(jnp.int32),
                          2 + length - k])
        distractors = jnp.asarray(problem.distractors)[k, : self.n_distractor].astype(jnp.int32)
        return jnp.concatenate([head, distractors]).astype(jnp.int32)

    def _legal_action_mask(self, problem, st):
        return jnp.ones((2,), bool)

    @compiled_method
    def _position(self, problem, index):
        k, have = index // 2, index % 2 == 1
        valid = (index >= 0) & (index < self.num_positions) & ((k > 0) | (have == problem.start_umbrella))
        return UmbrellaState(progress=jnp.clip(k, 0, self.chain_length - 1).astype(jnp.int32), umbrella=have), valid

    @compiled_method
    def _position_index(self, problem, st):
        return 2 * jnp.minimum(st.progress, self.chain_length - 1) + st.umbrella.astype(jnp.int32)

    def episode_success(self, final_state: State, episode_return: jax.Array) -> jax.Array:
        """bool `[...]`: the episode ended with the umbrella exactly when needed (its final step
        paid +1; bsuite's regret is 0). The return is no guide: it adds the noise rewards."""
        del episode_return
        return final_state.terminated & (final_state.env_state.umbrella == final_state.problem.need_umbrella)

    # ----- host helpers -----
    def action_name(self, action: int) -> str:
        action = int(action)
        return {LEAVE: "leave umbrella", TAKE: "take umbrella"}.get(action, f"invalid action {action}")

    def render(self, state: State) -> str:
        k = int(state.env_state.progress)
        need, have = bool(state.problem.need_umbrella), bool(state.env_state.umbrella)
        row = np.asarray(state.problem.distractors)[min(k, self.chain_length), : self.n_distractor]
        bits = "".join("1" if b else "0" for b in row)
        status = "terminated" if bool(state.terminated) else "truncated" if bool(state.truncated) else "live"
        return (
            f"need umbrella: {'yes' if need else 'no'}  have umbrella: {'yes' if have else 'no'}  "
            f"time to live {self.chain_length - k}/{self.chain_length}"
            + (f"  distractors {bits}" if bits else "") + "\n"
            f"turn {int(state.turn)}/{self.max_turns}  reward {float(state.reward):g}  "
            f"{status}{'  (last action refused)' if bool(state.rejected) else ''}"
        )


register_environment(Umbrella, reference=UmbrellaReference, ids=("Umbrella-v0",))
