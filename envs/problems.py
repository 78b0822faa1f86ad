"""Arithmetic problem families, the seeded evaluation sets, and a plain-Python exact search.

A problem is `count` numbers and a target (`ArithmeticProblem`). A family names the range the
numbers are drawn from and the range the target must fall in. Every problem is solvable by
construction: draw the numbers, play a uniformly random legal combination path down to one number,
and take it as the target, kept when the family accepts it. `problem_set(family, n, seed)` is the
host-side (NumPy) generator of the fixed evaluation sets (the same call, the same set);
`Arithmetic.sample_problem` is the jittable generator of training streams. `find_solution` is a
plain-Python depth-first search for a winning sequence of combinations, which the tests use to
prove solvability. See docs/environments.md#interactive-arithmetic (Problem families).

Shape letters: N problems, C numbers per problem (`count`).
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
from flax import struct

from jaxcredit.validation import require_int

OPS = ("+", "-", "*", "/")
INT32_LIMIT = 2**31 - 1


@struct.dataclass
class ArithmeticProblem:
    """One problem, or a batch of them.

    Attributes:
      numbers: int32 `[C]` (or `[N, C]`), the starting numbers, each in `[0, max_number]`.
      target: int32 `[]` (or `[N]`).
    """

    numbers: np.ndarray
    target: np.ndarray


@dataclasses.dataclass(frozen=True)
class Family:
    """A named problem family: numbers uniform in `[number_low, number_high]`, targets in
    `[target_low, target_high]`; `needs_multiplication` also requires `target > sum(numbers)`,
    which no path without `*` can reach (`+ - /` never exceed the sum of non-negative numbers)."""

    name: str
    number_low: int
    number_high: int
    target_low: int
    target_high: int
    needs_multiplication: bool = False

    def accepts(self, numbers, target) -> bool:
        """Host: whether `target` (int) is a target of this family for `numbers` (ints)."""
        if not self.target_low <= target <= self.target_high:
            return False
        return not self.needs_multiplication or target > sum(int(x) for x in numbers)


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("default", 1, 9, 1, 100),
        Family("small_targets", 1, 9, 1, 10),
        Family("multiplication", 2, 9, 1, 1000, needs_multiplication=True),
        Family("large_values", 10, 99, 100, 9999),
    )
}


def get_family(name: str) -> Family:
    """The family called `name`; raises `ValueError` listing the choices."""
    if name not in FAMILIES:
        raise ValueError(f"unknown problem family {name!r}; choices: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def apply_op(a: int, op: int, b: int) -> int | None:
    """Host: `a op b` under the game's rules, or None when the rules refuse it
    (`-` going negative, `/` by zero or inexact)."""
    if op == 0:
        return a + b
    if op == 1:
        return a - b if a >= b else None
    if op == 2:
        return a * b
    return a // b if b != 0 and a % b == 0 else None


def find_solution(numbers, target: int, *, require_all_used: bool = True,
          ops: tuple[int, ...] = (0, 1, 2, 3)) -> list[tuple[int, int, int]] | None:
    """Host: exact depth-first search. Returns a list of slot combinations `(i, op, j)` (result
    into slot i, slot j dies) after which a FINAL of the target is correct, or None when the
    problem has no solution using only the op ids `ops` (which index `OPS`)."""
    values = [int(x) for x in numbers]
    target = int(target)
    failed: set[tuple[int, ...]] = set()

    def search(slots: list[int | None]) -> list[tuple[int, int, int]] | None:
        live = [k for k, v in enumerate(slots) if v is not None]
        if require_all_used:
            if len(live) == 1:
                return [] if slots[live[0]] == target else None
        elif any(slots[k] == target for k in live):
            return []
        key = tuple(sorted(slots[k] for k in live))
        if key in failed:
            return None
        for i in live:
            for j in live:
                if i == j:
                    continue
                for op in ops:
                    result = apply_op(slots[i], op, slots[j])
                    if result is None:
                        continue
                    child = list(slots)
                    child[i], child[j] = result, None
                    found = search(child)
                    if found is not None:
                        return [(i, op, j)] + found
        failed.add(key)
        return None

    return search(list(values))


def _random_target(rng: np.random.Generator, numbers: list[int]) -> int:
    """Play a uniformly random legal combination path to one number; return it."""
    slots: list[int | None] = list(numbers)
    for _ in range(len(numbers) - 1):
        live = [k for k, v in enumerate(slots) if v is not None]
        moves = [(i, op, j) for i in live for j in live if i != j for op in range(4)
                 if apply_op(slots[i], op, slots[j]) is not None]
        i, op, j = moves[int(rng.integers(len(moves)))]
        slots[i], slots[j] = apply_op(slots[i], op, slots[j]), None
    return next(v for v in slots if v is not None)


def problem_set(family: str, n: int, seed: int, *, count: int = 4) -> ArithmeticProblem:
    """Host: the evaluation set `(family, n, seed)`: `ArithmeticProblem` with numbers int32
    `[N, C]` and target int32 `[N]`. Deterministic: the same arguments give the same set, and
    the first `n` problems of a larger set with the same seed are the same problems."""
    spec = get_family(family)
    n = require_int("problem_set: n", n, 0)
    count = require_int("problem_set: count", count, 2, 5)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(family.encode()), count])
    numbers = np.zeros((n, count), np.int32)
    targets = np.zeros((n,), np.int32)
    for row in range(n):
        while True:
            drawn = [int(x) for x in rng.integers(spec.number_low, spec.number_high + 1, size=count)]
            target = _random_target(rng, drawn)
            if spec.accepts(drawn, target):
                break
        numbers[row], targets[row] = drawn, target
    return ArithmeticProblem(numbers=numbers, target=targets)
