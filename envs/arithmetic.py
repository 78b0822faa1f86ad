"""Interactive arithmetic: combine numbers with `+ - * /` to reach a target, undo, submit.

A problem (`ArithmeticProblem`) is `count` numbers (slots) and a target. `COMBINE(i, op, j)`
replaces slot i by `value[i] op value[j]` and kills slot j (`-` only when the result is
non-negative, `/` only when exact with a non-zero divisor); `UNDO` reverses the latest accepted
combination; `FINAL(k)` submits slot k. A FINAL is correct when the value equals the target
and, with `require_all_used` (default), slot k is the only live slot: reward 1, the episode
ends. A wrong FINAL earns 0, uses a turn and the episode goes on.

Action layout (A = 4C(C-1) + 1 + C; 53 for C = 4), the observation tokens, the value bound that
keeps the digits exact, and the positions (paths of accepted combinations, S = 10,417 for C = 4):
see docs/environments.md#interactive-arithmetic.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxcredit.env import MAX_TURNS, Environment, HiddenVariable, State, compiled_method, tree_select
from jaxcredit.env_registry import register_environment
from jaxcredit.envs.arithmetic_reference import ArithmeticReference
from jaxcredit.envs.problems import FAMILIES, OPS, ArithmeticProblem, apply_op, get_family
from jaxcredit.validation import require_int

BLANK, TARGET, LIVE, DEAD, ACT, TURNS_LEFT = 10, 11, 12, 13, 14, 15
MAX_COUNT = 5
NUM_CANDIDATES = 32  # sample_problem draws this many candidate problems and keeps the first accepted
MAX_VALUE = 10**9 - 1  # at most 9 digits: the observation computes 10**digits in int32



@struct.dataclass
class ArithmeticState:
    """The environment-specific state.

    Attributes:
      values: int32 `[C]`; a dead slot keeps the value it had when it died.
      live: bool `[C]`.
      depth: int32 `[]`, the number of accepted combinations not undone.
      path: int32 `[C-1]`, the COMBINE action ids of those combinations (-1 past `depth`).
      replaced: int32 `[C-1]`, the value slot i held before each of them (0 past `depth`).
    """

    values: jax.Array
    live: jax.Array
    depth: jax.Array
    path: jax.Array
    replaced: jax.Array


@dataclasses.dataclass(frozen=True)
class Arithmetic(Environment):
    """Interactive arithmetic. See the module docstring for actions, observations, positions."""

    count: int = 4
    max_turns: int = 7
    require_all_used: bool = True
    include_turns_left: bool = False
    family: str = "default"
    max_number: int | None = None  # None: the family's largest number
    name: ClassVar[str] = "arithmetic"

    def __post_init__(self):
        owner = "arithmetic"
        spec = get_family(self.family)
        require_int(f"{owner}.count", self.count, 2, MAX_COUNT)
        require_int(f"{owner}.max_turns", self.max_turns, self.count, MAX_TURNS)  # C-1 combinations + FINAL
        for field in ("require_all_used", "include_turns_left"):
            if not isinstance(getattr(self, field), bool):
                raise ValueError(f"{owner}.{field} must be True or False, got {getattr(self, field)!r}")
        if self.max_number is not None:
            require_int(f"{owner}.max_number", self.max_number, spec.number_high)
        if self.value_bound > MAX_VALUE:
            raise ValueError(f"{owner}: values can reach max(2, max_number)**count = {self.value_bound}, "
                             f"{len(str(self.value_bound))} digits; observations hold at most {len(str(MAX_VALUE))} "
                             "(int32 digit arithmetic); lower count or max_number")

    # ----- sizes -----
    @property
    def number_limit(self) -> int:
        """The largest starting number a problem may hold."""
        return FAMILIES[self.family].number_high if self.max_number is None else self.max_number

    @property
    def value_bound(self) -> int:
        """No reachable value (nor a target) exceeds this."""
        return max(2, self.number_limit) ** self.count

    @property
    def digits(self) -> int:
        """D: decimal digits per value in the observation."""
        return len(str(self.value_bound))

    @property
    def num_combine_actions(self) -> int:
        return 4 * self.count * (self.count - 1)

    @property
    def undo_action(self) -> int:
        return self.num_combine_actions

    # ----- evaluation sets, audits, play (the `Environment` hooks) -----
    audit_details: ClassVar[tuple[str, ...]] = ("final_context",)
    has_learnability_gate: ClassVar[bool] = True  # `jaxcredit gate` imitates the optimal policy on its problems

    def evaluation_families(self, requested: tuple[str, ...]) -> tuple[str, ...]:
        """Any registered families (`envs.problems.FAMILIES`); empty: `default`."""
        for family in requested:
            get_family(family)
        return tuple(requested) or ("default",)

    def problem_stream(self, family: str | None, seed: int):
        """`draw(m)`: `problem_set(family, m, seed)` (None: the environment's own family)."""
        from jaxcredit.envs.problems import problem_set

        return lambda m: problem_set(family or self.family, m, seed, count=self.count)

    def problem_sample(self, family: str | None, n: int, seed: int):
        """`problem_set(family, n, seed)` (None: the environment's own family)."""
        from jaxcredit.envs.problems import problem_set

        return problem_set(family or self.family, n, seed, count=self.count)

    def is_answer_action(self, action: int) -> bool:
        """The FINAL actions answer."""
        return action > self.undo_action

    def text_protocol(self):
        """`ArithmeticText`: `<ACT>COMBINE a op b = c</ACT>`, `<ACT>UNDO</ACT>`, `<FINAL>n</FINAL>`."""
        from jaxcredit.envs.text_protocol import ArithmeticText

        return ArithmeticText(self)

    def hidden_variables(self) -> dict[str, HiddenVariable]:
        """`turns_left` (hidden unless `include_turns_left`) and `undo_target`, the position UNDO
        returns to: the observation shows the live values, never the path; the prompt's history does."""
        return {
            "turns_left": HiddenVariable("the turns left", hidden={"include_turns_left": False},
                                         shown={"include_turns_left": True}, text_shows=True),
            "undo_target": HiddenVariable("the position UNDO returns to (the observation shows the live values, "
                                          "not the path of combinations)", hidden={}, shown=None, text_shows=True),
        }

    def problem_to_json(self, problem: ArithmeticProblem) -> dict:
        """`{"numbers": [...], "target": t}`."""
        return {"numbers": [int(x) for x in np.asarray(problem.numbers)], "target": int(np.asarray(problem.target))}

    def problem_from_json(self, obj: dict) -> ArithmeticProblem:
        """The problem of `{"numbers": [...], "target": t}` (`make_problem`)."""
        if set(obj) != {"numbers", "target"}:
            raise ValueError(f"arithmetic problem needs exactly the keys numbers and target, got {sorted(obj)}")
        return self.make_problem(obj["numbers"], obj["target"])

    def problem_mix(self, n: int, *, seed: int) -> ArithmeticProblem:
        """`n // len(FAMILIES)` problems of every family's `problem_set`, concatenated in family order."""
        from jaxcredit.envs.problems import problem_set

        sets = [problem_set(name, n // len(FAMILIES), seed=seed, count=self.count) for name in FAMILIES]
        return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *sets)

    def final_action(self, slot: int) -> int:
        """The action id of `FINAL(slot)`."""
        return self.num_combine_actions + 1 + slot

    def combine_action(self, i: int, op: int, j: int) -> int:
        """The action id of `COMBINE(i, op, j)` (op indexes `+ - * /`)."""
        return 4 * (i * (self.count - 1) + (j if j < i else j - 1)) + op

    @property
    def num_actions(self) -> int:
        return self.num_combine_actions + 1 + self.count

    @property
    def observation_length(self) -> int:
        return 1 + self.digits + self.count * (1 + self.digits) + int(self.include_turns_left) + 1

    @property
    def vocab_size(self) -> int:
        return TURNS_LEFT + (self.max_turns + 1 if self.include_turns_left else 0)

    @property
    def _radices(self) -> list[int]:
        return [4 * (self.count - k) * (self.count - k - 1) for k in range(self.count - 1)]

    @property
    def _offsets(self) -> list[int]:
        """Index of the first path of each depth 0..C-1, then S."""
        offsets, size = [0], 1
        for radix in self._radices:
            offsets.append(offsets[-1] + size)
            size *= radix
        return offsets + [offsets[-1] + size]

    @property
    def num_positions(self) -> int:
        return self._offsets[-1]

    def _strides(self) -> np.ndarray:
        """int32 `[C, C-1]`: weight of choice k in a path of depth d (0 for k >= d)."""
        radices = self._radices
        strides = np.zeros((self.count, self.count - 1), np.int32)
        for d in range(self.count):
            for k in range(d):
                strides[d, k] = math.prod(radices[k + 1:d])
        return strides

    def _decode(self, action):
        """COMBINE action id -> `(i, j, op)` (ints or int arrays). Shifts and compares only:
        an integer division would cut the batched step into separate XLA fusions."""
        pair, op = action >> 2, action & 3
        i = sum((pair >= (self.count - 1) * k) * 1 for k in range(1, self.count))
        jj = pair - (self.count - 1) * i
        return i, jj + (jj >= i) * 1, op

    # ----- problems -----
    def sample_problem(self, key: jax.Array) -> ArithmeticProblem:
        """A problem of the configured family: numbers uniform in the family's range and the
        value of a uniformly random legal combination path as the target, the first of
        `NUM_CANDIDATES` candidates the family accepts (the first candidate if none is, which
        is still solvable). Consumes `key`."""
        spec = FAMILIES[self.family]
        # one uniform draw feeds everything: C numbers, then one score per COMBINE per step
        noise = jax.random.uniform(key, (NUM_CANDIDATES, self.count + (self.count - 1) * self.num_combine_actions))
        span = spec.number_high - spec.number_low + 1
        numbers = spec.number_low + jnp.minimum((noise[:, :self.count] * span).astype(jnp.int32), span - 1)
        scores = noise[:, self.count:].reshape(NUM_CANDIDATES, self.count - 1, self.num_combine_actions)

        def path_value(numbers, scores):
            def combine_random(st, step_scores):
                legal_scores = jnp.where(self._combine_mask(st), step_scores, -1.0)
                return self._combine(st, jnp.argmax(legal_scores).astype(jnp.int32)), None

            start = self._init(ArithmeticProblem(numbers=numbers, target=jnp.zeros((), jnp.int32)))
            st, _ = jax.lax.scan(combine_random, start, scores)
            return jnp.sum(jnp.where(st.live, st.values, 0))

        targets = jax.vmap(path_value)(numbers, scores)
        accepted = (targets >= spec.target_low) & (targets <= spec.target_high)
        if spec.needs_multiplication:
            accepted &= targets > numbers.sum(axis=1)
        first = jnp.argmax(accepted)
        return ArithmeticProblem(numbers=numbers[first].astype(jnp.int32), target=targets[first].astype(jnp.int32))

    def problem_identity(self, problem: ArithmeticProblem) -> jax.Array:
        """int32 `[C + 1]`: the numbers in ascending order, then the target (the order of the
        numbers does not change the problem)."""
        return jnp.concatenate([jnp.sort(jnp.asarray(problem.numbers, jnp.int32)),
                                jnp.asarray(problem.target, jnp.int32)[None]])

    def check_problem(self, problem) -> None:
        numbers, target = np.asarray(problem.numbers), np.asarray(problem.target)
        if numbers.shape != (self.count,) or target.shape != ():
            raise ValueError(f"arithmetic problem must have {self.count} numbers and one target, "
                             f"got numbers of shape {numbers.shape} and target of shape {target.shape}")
        for what, value in (("numbers", numbers), ("target", target)):
            if not np.issubdtype(value.dtype, np.integer):
                raise ValueError(f"arithmetic {what} must be integers, got dtype {value.dtype}")
        if numbers.min() < 0 or numbers.max() > self.number_limit:
            raise ValueError(f"arithmetic numbers must be in [0, {self.number_limit}] "
                             f"(max_number), got {numbers.tolist()}")
        if not 0 <= int(target) <= self.value_bound:
            raise ValueError(f"arithmetic target must be in [0, {self.value_bound}], got {int(target)}")

    def _bound_text(self) -> str:
        return (f"numbers in [0, {self.number_limit}] (max_number), so that every value an episode can reach, at "
                f"most max(2, max_number)**count = {self.value_bound}, is shown exactly in {self.digits} digits")

    def check_family(self, family: str, *, label: str) -> None:
        """Host: refuse (`ValueError` starting with `label`) a family whose numbers can exceed this
        environment's bound, `[0, number_limit]`: the observation's D digits would then show values
        modulo `10**D`. Every problem of an accepted family is within bounds (`check_problems`)."""
        spec = get_family(family)
        if spec.number_high > self.number_limit:
            raise ValueError(f"{label}: family {family!r} draws numbers up to {spec.number_high}, beyond the "
                             f"environment's bound ({self._bound_text()}); set env_overrides max_number >= "
                             f"{spec.number_high} (and family) or evaluate in-distribution only")

    def check_problems(self, problems, *, label: str) -> None:
        """Host: a batch (numbers `[N, C]`, target `[N]`) is within bounds: `C == count`, every
        number in `[0, number_limit]` and every target in `[0, value_bound]`. Then every value an
        episode can reach (at most `value_bound`, see the module docstring) fits the observation's
        D digits exactly. Raises `ValueError` starting with `label`, naming the bound and the first
        offending value."""
        numbers, target = np.asarray(problems.numbers), np.asarray(problems.target)
        if numbers.ndim != 2 or numbers.shape[1] != self.count or target.shape != numbers.shape[:1]:
            raise ValueError(f"{label}: a batch of arithmetic problems needs numbers [N, {self.count}] and "
                             f"targets [N], got {numbers.shape} and {target.shape}")
        for what, value in (("numbers", numbers), ("target", target)):
            if not np.issubdtype(value.dtype, np.integer):
                raise ValueError(f"{label}: arithmetic {what} must be integers, got dtype {value.dtype}")
        outside = (numbers < 0) | (numbers > self.number_limit)
        if outside.any():
            row = int(np.flatnonzero(outside.any(axis=1))[0])
            value = int(numbers[row][outside[row]][0])
            raise ValueError(f"{label}: problem {row} holds the number {value}, outside the environment's bound "
                             f"({self._bound_text()})")
        outside = (target < 0) | (target > self.value_bound)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            raise ValueError(f"{label}: problem {row} has the target {int(target[row])}, outside [0, "
                             f"{self.value_bound}] ({self._bound_text()})")

    def make_problem(self, numbers, target) -> ArithmeticProblem:
        """Host: a validated problem from Python ints; raises `ValueError`."""
        numbers = [require_int("arithmetic.numbers", x, 0, self.number_limit)
                   for x in np.asarray(numbers, object).reshape(-1)]  # before any int32 cast
        if len(numbers) != self.count:
            raise ValueError(f"arithmetic needs exactly {self.count} numbers (count), got {len(numbers)}")
        target = require_int("arithmetic.target", np.asarray(target, object).reshape(())[()], 0,
                                  self.value_bound)
        problem = ArithmeticProblem(numbers=np.asarray(numbers, np.int32), target=np.asarray(target, np.int32))
        self.check_problem(problem)
        return problem

    # ----- dynamics -----
    def _init(self, problem):
        return ArithmeticState(
            values=jnp.asarray(problem.numbers, jnp.int32),
            live=jnp.ones((self.count,), bool),
            depth=jnp.zeros((), jnp.int32),
            path=jnp.full((self.count - 1,), -1, jnp.int32),
            replaced=jnp.zeros((self.count - 1,), jnp.int32),
        )

    # The batched step is written for XLA on CPU: slots are read and written through one-hot
    # masks (`jnp.where`) instead of gathers and scatters; the legal mask and the observation are
    # each one elementwise expression over static per-action / per-token tables (no stacking or
    # concatenation), which XLA fuses into one vectorized loop; integer division, which is not
    # vectorized on CPU and splits fusions, is replaced by exact float32 division below 2**22.
    @property
    def _float_exact(self) -> bool:
        """Values stay below 2**22, so float32 division and flooring are exact (see `_floor_div`)."""
        return self.value_bound < 2**22

    def _floor_div(self, a, b):
        """int32 `a // b` for `0 <= a <= value_bound`, `b > 0`. Below 2**22 in float32: `a / b`
        is at least `1 / (a + 1) > 2**-22` (relative) from the next integer, more than float32
        rounding moves it, so the floor is exact; float division fuses where integer division does not."""
        if self._float_exact:
            return jnp.floor(a.astype(jnp.float32) / b.astype(jnp.float32)).astype(jnp.int32)
        return a // b

    def _apply(self, a, op, b):
        """`a op b` (int32) and whether the rules allow it, elementwise; op ids index `+ - * /`."""
        safe_b = jnp.where(b == 0, 1, b)
        quotient = self._floor_div(a, safe_b)
        result = jnp.where(op == 0, a + b, jnp.where(op == 1, a - b, jnp.where(op == 2, a * b, quotient)))
        exact = (b != 0) & (quotient * safe_b == a)
        return result, jnp.where(op == 1, a >= b, jnp.where(op == 3, exact, True))

    @staticmethod
    def _pick(array, one_hot):
        """The entry of `array` `[n]` where the bool `one_hot` `[n]` is set (0 if none), unrolled
        into elementwise ops (a reduction would be a separate XLA fusion)."""
        return sum(jnp.where(one_hot[k], array[k], 0) for k in range(array.shape[0]))

    def _slot(self, index):
        """bool `[C]`: the one-hot mask of slot `index`."""
        return jnp.arange(self.count) == index

    def _combine(self, st, action):
        i, j, op = self._decode(action)
        slot_i, slot_j = self._slot(i), self._slot(j)
        a = self._pick(st.values, slot_i)
        result, _ = self._apply(a, op, self._pick(st.values, slot_j))
        depth = jnp.arange(self.count - 1) == st.depth
        return ArithmeticState(
            values=jnp.where(slot_i, result, st.values), live=st.live & ~slot_j, depth=st.depth + 1,
            path=jnp.where(depth, action, st.path), replaced=jnp.where(depth, a, st.replaced))

    def _undo(self, st):
        depth = jnp.arange(self.count - 1) == st.depth - 1
        i, j, _ = self._decode(self._pick(st.path, depth))
        return ArithmeticState(
            values=jnp.where(self._slot(i), self._pick(st.replaced, depth), st.values),
            live=st.live | self._slot(j), depth=st.depth - 1,
            path=jnp.where(depth, -1, st.path), replaced=jnp.where(depth, 0, st.replaced))

    @compiled_method
    def _step(self, problem, st, action):
        is_combine = action < self.undo_action
        is_undo = action == self.undo_action
        moved = tree_select(is_combine, self._combine(st, jnp.where(is_combine, action, 0)),
                            tree_select(is_undo, self._undo(st), st))
        submitted = self._pick(st.values, self._slot(action - self.undo_action - 1))
        all_used = sum(st.live[k] * 1 for k in range(self.count)) == 1 if self.require_all_used else True
        correct = (action > self.undo_action) & (submitted == problem.target) & all_used
        return moved, correct.astype(jnp.float32), correct

    @compiled_method
    def _legal_action_mask(self, problem, st):
        # Per ordered pair (i, j): the `[C, C]` outer comparison, then its off-diagonal entries in
        # row-major order (drop the first entry, view as `[C-1, C+1]`, drop the last column), which
        # is COMBINE pair order; broadcast over the four ops. The divisibility test runs once per
        # pair rather than once per action, and no gather or stacking is needed.
        count = self.count

        def off_diagonal(x):
            return jnp.broadcast_to(x, (count, count)).reshape(-1)[1:].reshape(count - 1, count + 1)[:, :-1].reshape(-1)

        _, exact = self._apply(st.values[:, None], 3, st.values[None, :])
        a, b = off_diagonal(st.values[:, None]), off_diagonal(st.values[None, :])
        both = off_diagonal(st.live[:, None] & st.live[None, :])
        op = jnp.arange(4)
        rule = jnp.where(op == 1, (a >= b)[:, None], jnp.where(op == 3, off_diagonal(exact)[:, None], True))
        combine = both[:, None] & rule
        return jnp.concatenate([combine.reshape(-1), (st.depth > 0)[None], st.live])

    def _combine_mask(self, st):
        """bool `[4C(C-1)]`: which COMBINE actions are legal."""
        return self._legal_action_mask(None, st)[:self.num_combine_actions]

    def _token_tables(self) -> dict[str, np.ndarray]:
        """Static `[L]` tables of the observation layout: each token's kind (0 a constant, 1 a
        target digit, 2 a slot flag, 3 a slot digit, 4 turns left), slot, power of ten, constant."""
        kind, slot, power, constant = [0], [0], [1], [TARGET]
        for p in range(self.digits - 1, -1, -1):
            kind, slot, power, constant = kind + [1], slot + [0], power + [10**p], constant + [0]
        for c in range(self.count):
            kind, slot, power, constant = kind + [2], slot + [c], power + [1], constant + [0]
            for p in range(self.digits - 1, -1, -1):
                kind, slot, power, constant = kind + [3], slot + [c], power + [10**p], constant + [0]
        if self.include_turns_left:
            kind, slot, power, constant = kind + [4], slot + [0], power + [1], constant + [0]
        kind, slot, power, constant = kind + [0], slot + [0], power + [1], constant + [ACT]
        return {name: np.asarray(x) for name, x in
                (("kind", kind), ("slot", slot), ("power", power), ("constant", constant))}

    @compiled_method
    def _observe(self, problem, st, turn):
        tables = self._token_tables()
        kind, power = tables["kind"], tables["power"]
        at = [tables["slot"] == c for c in range(self.count)]
        value = jnp.where(kind == 1, problem.target, sum(jnp.where(at[c], st.values[c], 0) for c in range(self.count)))
        alive = sum(jnp.where(at[c], st.live[c], False) for c in range(self.count)) > 0
        high = self._floor_div(value, jnp.asarray(power * 10, jnp.int32))
        digit = self._floor_div(value, jnp.asarray(power, jnp.int32)) - 10 * high
        turns_left = TURNS_LEFT + jnp.clip(self.max_turns - turn, 0, self.max_turns)
        token = jnp.where(kind == 2, jnp.where(alive, LIVE, DEAD), jnp.where(kind == 3, jnp.where(alive, digit, BLANK),
                          jnp.where(kind == 4, turns_left, tables["constant"])))
        return jnp.where(kind == 1, digit, token).astype(jnp.int32)

    # ----- positions -----
    def _choice_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Static tables indexed by the live-slot bitmask `sum_s live[s] 2**s`: int32
        `[2**C, 4C(C-1)]` local choice -> COMBINE action, and COMBINE action -> local choice."""
        to_action = np.zeros((2**self.count, self.num_combine_actions), np.int32)
        to_choice = np.zeros((2**self.count, self.num_combine_actions), np.int32)
        for code in range(2**self.count):
            live = [s for s in range(self.count) if code >> s & 1]
            for rank_i, i in enumerate(live):
                others = [s for s in live if s != i]
                for rank_j, j in enumerate(others):
                    for op in range(4):
                        choice = (rank_i * len(others) + rank_j) * 4 + op
                        action = self.combine_action(i, op, j)
                        to_action[code, choice], to_choice[code, action] = action, choice
        return to_action, to_choice

    def _live_code(self, live):
        return jnp.sum(live.astype(jnp.int32) << jnp.arange(self.count))

    @compiled_method
    def _position(self, problem, index):
        offsets = jnp.asarray(self._offsets, jnp.int32)
        valid = (index >= 0) & (index < self.num_positions)
        index = jnp.clip(index, 0, self.num_positions - 1)
        depth = jnp.sum(index >= offsets[1:-1]).astype(jnp.int32)
        local = index - offsets[depth]
        strides = jnp.asarray(self._strides())[depth]
        to_action = jnp.asarray(self._choice_tables()[0])
        st = self._init(problem)
        for k, radix in enumerate(self._radices):
            choice = (local // jnp.maximum(strides[k], 1)) % radix
            action = to_action[self._live_code(st.live), choice]
            i, j, op = self._decode(action)
            _, allowed = self._apply(self._pick(st.values, self._slot(i)), op, self._pick(st.values, self._slot(j)))
            active = k < depth
            valid &= ~active | allowed
            st = tree_select(active, self._combine(st, action), st)
        return st, valid

    @compiled_method
    def _position_index(self, problem, st):
        st = jax.tree_util.tree_map(jnp.asarray, st)
        to_choice = jnp.asarray(self._choice_tables()[1].reshape(-1))
        actions = jnp.maximum(st.path, 0)
        _, dying, _ = self._decode(actions)
        strides = jnp.asarray(self._strides())[st.depth]
        index = jnp.asarray(self._offsets, jnp.int32)[st.depth]
        # A running live-slot code and one flat table lookup per depth (no scatter): every slot
        # is live before the first combination, and combination k kills slot dying[k].
        code = jnp.int32(2**self.count - 1)
        for k in range(self.count - 1):
            active = k < st.depth
            index += jnp.where(active, to_choice[code * self.num_combine_actions + actions[k]] * strides[k], 0)
            code = code - jnp.where(active, jnp.left_shift(jnp.int32(1), dying[k]), 0)
        return index.astype(jnp.int32)

    # ----- host helpers -----
    def action_name(self, action: int) -> str:
        """`COMBINE i op j` (slots), `UNDO` or `FINAL k` (slot); the first word is the action type."""
        action = int(action)
        if 0 <= action < self.undo_action:
            i, j, op = (int(x) for x in self._decode(action))
            return f"COMBINE {i} {OPS[op]} {j}"
        if action == self.undo_action:
            return "UNDO"
        if self.undo_action < action < self.num_actions:
            return f"FINAL {action - self.undo_action - 1}"
        return f"invalid action {action}"

    def history(self, state: State) -> list[tuple[int, str, int, int]]:
        """Host: the accepted combinations not undone, as `(a, op, b, result)` values."""
        st = jax.tree_util.tree_map(np.asarray, state.env_state)
        steps = []
        for k in range(int(st.depth)):
            i, j, op = (int(x) for x in self._decode(int(st.path[k])))
            a, b = int(st.replaced[k]), int(st.values[j])
            steps.append((a, OPS[op], b, apply_op(a, op, b)))
        return steps

    def render(self, state: State) -> str:
        st = jax.tree_util.tree_map(np.asarray, state.env_state)
        slots = [f"{int(v)}" if alive else "_" for v, alive in zip(st.values.tolist(), st.live.tolist())]
        history = "; ".join(f"{a} {op} {b} = {c}" for a, op, b, c in self.history(state)) or "none"
        status = "terminated" if bool(state.terminated) else "truncated" if bool(state.truncated) else "live"
        return (
            f"target {int(state.problem.target)}  slots [{' '.join(slots)}]  history: {history}\n"
            f"turn {int(state.turn)}/{self.max_turns}  reward {float(state.reward):g}  "
            f"{status}{'  (last action refused)' if bool(state.rejected) else ''}"
        )


register_environment(Arithmetic, reference=ArithmeticReference, ids=("Arithmetic-v0",))
