"""MAD selective copy: select the non-blank tape positions, repair mistakes, submit.

A problem is a tape of `length` cells, each blank (`-1`) or a token id in `[0, num_tokens)`.
The agent selects and unselects cells; `submit` is correct when the selection equals exactly
the non-blank cells (reward 1, episode ends). A wrong submit earns 0 and the episode goes on,
so a mistake can be repaired by unselecting. The `decorative_actions` D actions `note k` change
nothing but use a turn (`note 0` is the `null_action`), and the default turn limit leaves slack
for them.

Action layout (A = 2 * length + 1 + D), observation (L = length + 1 tokens, vocabulary
2 + 2V + 1), positions (the selection bitmask, S = 2**length) and the turn-limit rule: see
docs/environments.md#mad-selective-copy.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit.env import MAX_TURNS, Environment, HiddenVariable, State
from jaxcredit.env_registry import register_environment
from jaxcredit.envs.mad_reference import MadReference
from jaxcredit.validation import require_int

BLANK = -1
DEFAULT_MAX_TURNS = 12  # the turn limit without decorative actions
MAX_DECORATIVE = 64  # decorative actions: each is one more action id of the policy head
MAX_LENGTH = 16  # positions are 2**length bitmasks; the exact solver enumerates them all
MAX_TOKENS = 2**30 - 2  # observation tokens reach 2 + 2 * num_tokens, which must stay an int32


@dataclasses.dataclass(frozen=True)
class MadSelectiveCopy(Environment):
    """MAD selective copy. See the module docstring for actions, observations, positions."""

    length: int = 8
    num_tokens: int = 12
    min_useful: int = 1
    max_useful: int = 4
    max_turns: int | None = None  # None: DEFAULT_MAX_TURNS, plus decorative_slack with decorative actions
    decorative_actions: int = 0
    decorative_slack: int = 4
    name: ClassVar[str] = "mad"

    def __post_init__(self):
        owner = "mad"
        require_int(f"{owner}.length", self.length, 1, MAX_LENGTH)
        require_int(f"{owner}.num_tokens", self.num_tokens, 1, MAX_TOKENS)
        require_int(f"{owner}.min_useful", self.min_useful, 0, self.length)
        require_int(f"{owner}.max_useful", self.max_useful, self.min_useful, self.length)
        require_int(f"{owner}.decorative_actions", self.decorative_actions, 0, MAX_DECORATIVE)
        require_int(f"{owner}.decorative_slack", self.decorative_slack, 0, MAX_TURNS - DEFAULT_MAX_TURNS)
        if self.max_turns is None:  # the documented rule; the resolved value is what config() records
            slack = self.decorative_slack if self.decorative_actions else 0
            object.__setattr__(self, "max_turns", DEFAULT_MAX_TURNS + slack)
        require_int(f"{owner}.max_turns", self.max_turns, 1, MAX_TURNS)

    # ----- sizes -----
    @property
    def num_actions(self) -> int:
        return 2 * self.length + 1 + self.decorative_actions

    @property
    def observation_length(self) -> int:
        return self.length + 1

    @property
    def vocab_size(self) -> int:
        return 2 + 2 * self.num_tokens + 1

    @property
    def num_positions(self) -> int:
        return 2**self.length

    @property
    def submit_action(self) -> int:
        return 2 * self.length

    def is_answer_action(self, action: int) -> bool:
        """`submit` answers."""
        return action == self.submit_action

    @property
    def null_action(self) -> int | None:
        """`note 0` when the environment has decorative actions, else None."""
        return 2 * self.length + 1 if self.decorative_actions else None

    def decorative_action_mask(self) -> np.ndarray:
        """bool `[A]`: True on the `decorative_actions` notes (`note k`), False elsewhere."""
        return np.arange(self.num_actions) > self.submit_action

    # ----- problems -----
    def sample_problem(self, key: jax.Array) -> jax.Array:
        """int32 `[length]` tape: a uniform number of useful cells in `[min_useful, max_useful]`
        at uniform places, each holding a uniform token. Consumes `key`."""
        count_key, place_key, token_key = jax.random.split(key, 3)
        num_useful = jax.random.randint(count_key, (), self.min_useful, self.max_useful + 1)
        rank = jnp.argsort(jax.random.permutation(place_key, self.length))
        tokens = jax.random.randint(token_key, (self.length,), 0, self.num_tokens)
        return jnp.where(rank < num_useful, tokens, BLANK).astype(jnp.int32)

    def check_problem(self, problem) -> None:
        tape = np.asarray(problem)
        if tape.shape != (self.length,):
            raise ValueError(f"mad tape must have shape ({self.length},), got {tape.shape}")
        if not np.issubdtype(tape.dtype, np.integer):
            raise ValueError(f"mad tape must hold integer token ids, got dtype {tape.dtype}")
        bad = (tape != BLANK) & ((tape < 0) | (tape >= self.num_tokens))
        if bad.any():
            raise ValueError(
                f"mad tape token ids must be {BLANK} (blank) or in [0, {self.num_tokens}), "
                f"got {tape[bad].tolist()} at cells {np.flatnonzero(bad).tolist()}"
            )

    def parse_tape(self, text: str) -> np.ndarray:
        """Host: `"_ t04 _ _ t09 _ _ _"` -> int32 `[length]` tape; raises `ValueError`."""
        cells = text.split()
        tape = []
        for cell in cells:
            if cell == "_":
                tape.append(BLANK)
            elif len(cell) > 1 and cell[0] == "t" and cell[1:].isascii() and cell[1:].isdigit():
                if len(cell) > 11 or int(cell[1:]) >= self.num_tokens:  # checked before the int32 cast
                    raise ValueError(f"mad tape cell {cell!r}: token ids are t00..t{self.num_tokens - 1:02d}")
                tape.append(int(cell[1:]))
            else:
                raise ValueError(f"unknown tape cell {cell!r}: use '_' for blank or tNN for a token (ASCII digits)")
        tape = np.asarray(tape, np.int32)
        self.check_problem(tape)
        return tape

    # ----- text protocol and transcripts (the `Environment` hooks) -----
    def text_protocol(self):
        """`MadText`: `select N`, `unselect N`, `submit` (and `note N` with decorative actions)."""
        from jaxcredit.envs.text_protocol import MadText

        return MadText(self)

    def hidden_variables(self) -> dict[str, HiddenVariable]:
        """`turns_left`: the observation never shows the clock (no configuration does); the text
        protocol's prompt does."""
        return {"turns_left": HiddenVariable("the turns left",
                                             hidden={}, shown=None, text_shows=True)}

    def problem_to_json(self, problem) -> dict:
        """`{"tape": "_ t04 _ ..."}`."""
        cells = ["_" if t == BLANK else f"t{t:02d}" for t in np.asarray(problem).tolist()]
        return {"tape": " ".join(cells)}

    def problem_from_json(self, obj: dict) -> np.ndarray:
        """The tape of `{"tape": ...}`, as text or a list of token ids (-1 blank)."""
        if set(obj) != {"tape"}:
            raise ValueError(f"mad problem needs exactly the key tape, got {sorted(obj)}")
        tape = obj["tape"]
        if isinstance(tape, str):
            return self.parse_tape(tape)
        if not isinstance(tape, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in tape):
            raise ValueError("mad tape must be a string like '_ t04 _' or a list of token ids (-1 blank)")
        array = np.asarray(tape, np.int64)
        self.check_problem(array)
        return array.astype(np.int32)

    # ----- dynamics -----
    def _init(self, problem):
        return jnp.zeros((self.length,), bool)

    def _step(self, problem, selected, action):
        # Only legal actions reach here, so `select i` finds cell i unselected and `unselect i`
        # finds it selected: both flip one bit; submit and the decorative notes flip none. An
        # elementwise flip instead of a scatter (`.at[cell].set`) keeps the batched step one cheap
        # fusion on CPU.
        is_submit = action == self.submit_action
        flip = (jnp.arange(self.length) == action % self.length) & (action < self.submit_action)
        correct = is_submit & ~jnp.any(selected ^ (problem != BLANK))
        return selected ^ flip, correct.astype(jnp.float32), correct

    def _observe(self, problem, selected, turn):
        cells = jnp.where(problem == BLANK, selected, 2 + 2 * problem + selected)
        return jnp.append(cells, 2 + 2 * self.num_tokens).astype(jnp.int32)

    def _legal_action_mask(self, problem, selected):
        return jnp.concatenate([~selected, selected, jnp.ones((1 + self.decorative_actions,), bool)])

    def _position(self, problem, index):
        selected = (index >> jnp.arange(self.length)) & 1
        valid = (index >= 0) & (index < self.num_positions)
        return selected.astype(bool), valid

    def _position_index(self, problem, selected):
        return jnp.sum(selected.astype(jnp.int32) << jnp.arange(self.length))

    # ----- host helpers -----
    def action_name(self, action: int) -> str:
        action = int(action)
        if 0 <= action < self.length:
            return f"select {action}"
        if self.length <= action < 2 * self.length:
            return f"unselect {action - self.length}"
        if action == self.submit_action:
            return "submit"
        if self.submit_action < action < self.num_actions:
            return f"note {action - self.submit_action - 1}"
        return f"invalid action {action}"

    def render(self, state: State) -> str:
        tape = np.asarray(state.problem)
        selected = np.asarray(state.env_state)
        cells = []
        for token, sel in zip(tape.tolist(), selected.tolist()):
            cell = "_" if token == BLANK else f"t{token:02d}"
            cells.append(f"[{cell}]" if sel else f" {cell} ")
        status = "terminated" if bool(state.terminated) else "truncated" if bool(state.truncated) else "live"
        return (
            f"tape: {''.join(cells)}\n"
            f"turn {int(state.turn)}/{self.max_turns}  reward {float(state.reward):g}  "
            f"{status}{'  (last action refused)' if bool(state.rejected) else ''}"
        )


register_environment(MadSelectiveCopy, reference=MadReference, ids=("MAD-v0",))
