"""NumPy-vectorized interactive arithmetic: the benchmark's vectorized baseline.

Same rules as `jaxcredit.envs.arithmetic` (absorbing end, refusal of illegal or out-of-range
actions using a turn, turn-limit truncation, observation tokens, legal mask all False once
ended), batched the way a careful NumPy programmer would: the batch is a few `[B, ...]` arrays;
the legal mask is computed per ordered pair `[B, C(C-1)]` and broadcast over the four ops; a
step updates only the rows that combine (or undo) with fancy indexing; static index tables
(pair -> slots) are built once. Proven to follow the same rules step by step against the
plain-Python `ArithmeticReference` (tests/test_arithmetic_numpy.py).

Shape letters: B episodes, C numbers (`count`), A = 4C(C-1) + 1 + C actions, L observation length.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxcredit.envs.arithmetic import ACT, BLANK, DEAD, LIVE, TARGET, TURNS_LEFT
from jaxcredit.envs.problems import FAMILIES


class ArithmeticNumpyState(NamedTuple):
    """A batch of arithmetic episodes; the first seven field names mirror `jaxcredit.State`.

    Attributes:
      observation: int32 `[B, L]`; legal_action_mask: bool `[B, A]` (all False once ended).
      reward: float32 `[B]`; terminated, truncated, rejected: bool `[B]`; turn: int32 `[B]`.
      target: int32 `[B]`; values: int32 `[B, C]`; live: bool `[B, C]`; depth: int32 `[B]`;
      path: int32 `[B, C-1]` accepted COMBINE ids; replaced: int32 `[B, C-1]` slot i's value before each.
    """

    observation: np.ndarray
    legal_action_mask: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    rejected: np.ndarray
    turn: np.ndarray
    target: np.ndarray
    values: np.ndarray
    live: np.ndarray
    depth: np.ndarray
    path: np.ndarray
    replaced: np.ndarray


class ArithmeticNumpy:
    """A batch of arithmetic episodes in NumPy: `reset(problems)`, then `step(state, actions)`.

    Configured with the same keywords as `Arithmetic` (unused ones are ignored). Both methods
    are pure: they return a new `ArithmeticNumpyState` and never modify their inputs.
    """

    def __init__(self, *, count: int = 4, max_turns: int = 7, require_all_used: bool = True,
                 include_turns_left: bool = False, family: str = "default", max_number: int | None = None,
                 **_ignored):
        self.count, self.max_turns = count, max_turns
        self.require_all_used, self.include_turns_left = require_all_used, include_turns_left
        limit = FAMILIES[family].number_high if max_number is None else max_number
        self.digits = len(str(max(2, limit) ** count))
        pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
        self.pair_i = np.array([i for i, _ in pairs], np.intp)
        self.pair_j = np.array([j for _, j in pairs], np.intp)
        self.undo_action = 4 * len(pairs)
        self.num_actions = self.undo_action + 1 + count
        self.powers = 10 ** np.arange(self.digits - 1, -1, -1, dtype=np.int32)

    def _digits(self, values):
        return (values[..., None] // self.powers) % 10

    def _state(self, target, values, live, depth, path, replaced, *, reward, terminated, truncated,
               rejected, turn) -> ArithmeticNumpyState:
        batch = values.shape[0]
        slots = np.where(live[:, :, None], self._digits(values), BLANK)
        parts = [np.full((batch, 1), TARGET, np.int32), self._digits(target),
                 np.concatenate([np.where(live, LIVE, DEAD)[:, :, None], slots], axis=2).reshape(batch, -1)]
        if self.include_turns_left:
            parts.append((TURNS_LEFT + np.maximum(self.max_turns - turn, 0))[:, None])
        parts.append(np.full((batch, 1), ACT, np.int32))
        observation = np.concatenate(parts, axis=1).astype(np.int32)

        a, b = values[:, self.pair_i], values[:, self.pair_j]
        pair_live = live[:, self.pair_i] & live[:, self.pair_j]
        exact = (b != 0) & (a % np.where(b == 0, 1, b) == 0)
        combine = np.stack([pair_live, pair_live & (a >= b), pair_live, pair_live & exact], axis=2).reshape(batch, -1)
        legal = np.concatenate([combine, (depth > 0)[:, None], live], axis=1)
        legal[terminated | truncated] = False
        return ArithmeticNumpyState(observation, legal, reward, terminated, truncated, rejected, turn,
                                    target, values, live, depth, path, replaced)

    def reset(self, problems) -> ArithmeticNumpyState:
        """Start one episode per problem: numbers int `[B, C]`, target int `[B]` -> a fresh batch."""
        values = np.asarray(problems.numbers, np.int32)
        target = np.asarray(problems.target, np.int32)
        if values.ndim != 2 or values.shape[1] != self.count or target.shape != values.shape[:1]:
            raise ValueError(f"arithmetic problems must have numbers [B, {self.count}] and target [B], "
                             f"got {list(values.shape)} and {list(target.shape)}")
        batch = values.shape[0]
        false = np.zeros(batch, bool)
        return self._state(
            target, values.copy(), np.ones((batch, self.count), bool), np.zeros(batch, np.int32),
            np.full((batch, self.count - 1), -1, np.int32), np.zeros((batch, self.count - 1), np.int32),
            reward=np.zeros(batch, np.float32), terminated=false, truncated=false.copy(),
            rejected=false.copy(), turn=np.zeros(batch, np.int32))

    def step(self, state: ArithmeticNumpyState, actions) -> ArithmeticNumpyState:
        """Take one action per episode: int `[B]` -> the next batch (see the env's rules)."""
        actions = np.asarray(actions)
        rows_all = np.arange(actions.shape[0])
        live_episode = ~(state.terminated | state.truncated)
        safe = np.clip(actions, 0, self.num_actions - 1)
        accepted = (actions == safe) & state.legal_action_mask[rows_all, safe]  # mask is False once ended
        values, live, depth = state.values.copy(), state.live.copy(), state.depth.copy()
        path, replaced = state.path.copy(), state.replaced.copy()

        rows = np.flatnonzero(accepted & (safe < self.undo_action))
        if rows.size:
            action = safe[rows]
            pair, op = action // 4, action % 4
            i, j, d = self.pair_i[pair], self.pair_j[pair], depth[rows]
            a, b = values[rows, i], values[rows, j]
            result = np.select([op == 0, op == 1, op == 2], [a + b, a - b, a * b], a // np.where(b == 0, 1, b))
            values[rows, i] = result
            live[rows, j] = False
            path[rows, d], replaced[rows, d] = action, a
            depth[rows] = d + 1

        rows = np.flatnonzero(accepted & (safe == self.undo_action))
        if rows.size:
            d = depth[rows] - 1
            pair = path[rows, d] // 4
            values[rows, self.pair_i[pair]] = replaced[rows, d]
            live[rows, self.pair_j[pair]] = True
            path[rows, d], replaced[rows, d] = -1, 0
            depth[rows] = d

        slot = np.clip(safe - self.undo_action - 1, 0, self.count - 1)
        correct = accepted & (safe > self.undo_action) & (state.values[rows_all, slot] == state.target)
        if self.require_all_used:
            correct &= state.live.sum(axis=1) == 1
        turn = state.turn + live_episode
        return self._state(
            state.target, values, live, depth, path, replaced, reward=correct.astype(np.float32),
            terminated=state.terminated | correct,
            truncated=state.truncated | (live_episode & ~correct & (turn >= self.max_turns)),
            rejected=np.where(live_episode, ~accepted, state.rejected), turn=turn.astype(np.int32, copy=False))
