"""NumPy-vectorized MAD selective copy: the benchmark's vectorized baseline.

Same rules as `jaxcredit.envs.mad` (absorbing end, refusal of illegal or out-of-range actions
using a turn, turn-limit truncation, observation tokens, legal mask all False once ended), written
the way a careful NumPy programmer would batch an environment without JAX: the whole batch is a
handful of `[B, ...]` arrays and every step a few whole-array operations; the selection is an
integer bitmask per episode, so a move is one XOR and a correct submit one integer comparison;
legal masks and selection bits come from lookup tables `[2**N, ...]` built once. Checked step by
step against the plain-Python `MadReference` (tests/test_bench_envs.py).

Shape letters: B episodes, N tape length, A = 2N + 1 actions, L = N + 1 observation tokens.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxcredit.envs.mad import BLANK


class MadNumpyState(NamedTuple):
    """A batch of MAD episodes; the first seven field names mirror `jaxcredit.State`.

    Attributes:
      observation: int32 `[B, L]` tokens.
      legal_action_mask: bool `[B, A]`; all False once an episode has ended.
      reward: float32 `[B]`, the reward of the last step.
      terminated, truncated, rejected: bool `[B]`.
      turn: int32 `[B]`, steps taken.
      problem: int32 `[B, N]` tapes (`BLANK` or a token id).
      selection: int32 `[B]` bitmask of selected cells (bit i: cell i), the position index.
      wanted: int32 `[B]` bitmask of the non-blank cells (a correct submit needs `selection == wanted`).
      observation_base: int32 `[B, N]` the observation of each cell when unselected.
    """

    observation: np.ndarray
    legal_action_mask: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    rejected: np.ndarray
    turn: np.ndarray
    problem: np.ndarray
    selection: np.ndarray
    wanted: np.ndarray
    observation_base: np.ndarray


class MadNumpy:
    """A batch of MAD episodes in NumPy: `reset(tapes)`, then `step(state, actions)` repeatedly.

    Configured with the same keywords as `MadSelectiveCopy` (unused ones are ignored). Both
    methods are pure: they return a new `MadNumpyState` and never modify their inputs.
    """

    def __init__(self, *, length: int = 8, num_tokens: int = 12, max_turns: int = 12, decorative_actions: int = 0,
                 **_ignored):
        if decorative_actions:
            raise ValueError("MadNumpy has no decorative actions; use decorative_actions=0")
        if not 1 <= length <= 16:
            raise ValueError(f"MadNumpy length must be in [1, 16], got {length}")
        self.length = length
        self.num_tokens = num_tokens
        self.max_turns = max_turns
        self.num_actions = 2 * length + 1
        self.submit_action = 2 * length
        bitmasks = np.arange(2**length)
        # Tables indexed by a selection bitmask: its cells as bools `[2**N, N]`, its legal mask `[2**N, A]`.
        self._selected_cells = ((bitmasks[:, None] >> np.arange(length)) & 1).astype(bool)
        self._legal_table = np.concatenate(
            [~self._selected_cells, self._selected_cells, np.ones((2**length, 1), bool)], axis=1)

    def _state(self, tapes, selection, wanted, base, *, reward, terminated, truncated,
               rejected, turn) -> MadNumpyState:
        batch = tapes.shape[0]
        observation = np.empty((batch, self.length + 1), np.int32)
        np.add(base, self._selected_cells[selection], out=observation[:, :-1])
        observation[:, -1] = 2 + 2 * self.num_tokens
        legal = self._legal_table[selection]
        legal[terminated | truncated] = False
        return MadNumpyState(observation, legal, reward, terminated, truncated, rejected, turn,
                             tapes, selection, wanted, base)

    def reset(self, tapes) -> MadNumpyState:
        """Start one episode per tape: int `[B, N]` -> a fresh `MadNumpyState`."""
        tapes = np.asarray(tapes, np.int32)
        if tapes.ndim != 2 or tapes.shape[1] != self.length:
            raise ValueError(f"mad tapes must have shape [B, {self.length}], got {list(tapes.shape)}")
        batch = tapes.shape[0]
        useful = tapes != BLANK
        wanted = (useful.astype(np.int32) << np.arange(self.length, dtype=np.int32)).sum(axis=1, dtype=np.int32)
        base = np.where(useful, 2 + 2 * tapes, 0).astype(np.int32)
        false = np.zeros(batch, bool)
        return self._state(
            tapes, np.zeros(batch, np.int32), wanted, base, reward=np.zeros(batch, np.float32),
            terminated=false, truncated=false.copy(), rejected=false.copy(), turn=np.zeros(batch, np.int32))

    def step(self, state: MadNumpyState, actions) -> MadNumpyState:
        """Take one action per episode: int `[B]` -> the next `MadNumpyState`.

        Ended episodes are returned unchanged with reward 0; an illegal or out-of-range action
        uses a turn, changes nothing else and sets `rejected`; reaching `max_turns` without a
        correct submit truncates.
        """
        actions = np.asarray(actions)
        live = ~(state.terminated | state.truncated)
        safe_action = np.clip(actions, 0, self.num_actions - 1)
        # The legal mask is all False for ended episodes, so `accepted` implies live.
        accepted = (actions == safe_action) & state.legal_action_mask[np.arange(actions.shape[0]), safe_action]
        is_submit = safe_action == self.submit_action
        correct = accepted & is_submit & (state.selection == state.wanted)
        # A legal select finds its cell unselected and a legal unselect finds it selected: a flip.
        flip = np.where(accepted & ~is_submit, 1 << (safe_action % self.length), 0).astype(np.int32)
        turn = state.turn + live
        terminated = state.terminated | correct
        return self._state(
            state.problem, state.selection ^ flip, state.wanted, state.observation_base,
            reward=correct.astype(np.float32), terminated=terminated,
            truncated=state.truncated | (live & ~correct & (turn >= self.max_turns)),
            rejected=np.where(live, ~accepted, state.rejected), turn=turn.astype(np.int32, copy=False))
