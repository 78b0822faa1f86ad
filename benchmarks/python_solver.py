"""A plain-Python recursive solver over the reference environments: the solver's oracle and baseline.

It knows nothing of graphs or JAX: from a live reference episode it recursively tries every
legal action on a copy of the episode, memoised on (position, turns left), exactly as one would
write it by hand. An illegal action is a refusal (the position stays, a turn is used), so its Q
is the value of the same position with one turn fewer without stepping. Values follow the
convention of `jaxcredit.solver`: `V(s, 0) = 0`, `Q(s, a, t) = r + (not ended) * V(s', t - 1)`.

A reference is any object with `reset(problem)`, `step(action)`, `legal_action_mask`, `reward`,
`terminated`, `turn`, `max_turns`, `num_actions`; `position_index()` (or, lacking it, its
attributes) identifies the position.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence

_CLOCK = ("turn", "reward", "terminated", "truncated", "rejected")

# policy(reference, turns_left) -> probabilities over all actions (0 on illegal ones)
ReferencePolicy = Callable[[object, int], Sequence[float]]


def uniform_reference_policy(reference, turns_left: int) -> list[float]:
    """Uniform over the legal actions of `reference`'s current position."""
    del turns_left
    legal = reference.legal_action_mask
    count = sum(legal)
    return [1.0 / count if ok else 0.0 for ok in legal]


def position_key(reference):
    """A hashable identity of the position (the state without the clock)."""
    if hasattr(reference, "position_index"):
        return reference.position_index()
    return repr(sorted((k, v) for k, v in vars(reference).items() if k not in _CLOCK))


def _copy(reference):
    # pickle round trip: a deep copy, measured faster than copy.deepcopy on the references
    return pickle.loads(pickle.dumps(reference, pickle.HIGHEST_PROTOCOL))


class RecursiveSolver:
    """Exact V and Q of one policy (or the optimal values) by memoised recursion.

    `policy` is a `ReferencePolicy`, `"uniform"` or `"optimal"`. `value(ref, turns_left)` and
    `q_values(ref, turns_left)` take a live reference episode and never modify it; the episode
    must have at least `turns_left` turns before its own limit (`ref.turn + turns_left <=
    ref.max_turns`) so the reference's truncation never cuts the recursion short.
    """

    def __init__(self, policy: ReferencePolicy | str = "uniform"):
        self.optimal = policy == "optimal"
        self.policy = uniform_reference_policy if policy in ("uniform", "optimal") else policy
        self.memo: dict = {}
        self.steps = 0

    def q_values(self, reference, turns_left: int) -> list[float]:
        """Q of every action (illegal ones included, as refusals) with `turns_left` turns left."""
        if turns_left <= 0:
            return [0.0] * reference.num_actions
        if reference.turn + turns_left > reference.max_turns:
            raise ValueError(f"turns_left {turns_left} exceeds the episode's turns left "
                             f"{reference.max_turns - reference.turn}")
        stay = self.value(reference, turns_left - 1)
        q = []
        for action, ok in enumerate(reference.legal_action_mask):
            if not ok:
                q.append(stay)
                continue
            child = _copy(reference).step(action)
            self.steps += 1
            later = 0.0 if child.terminated else self.value(child, turns_left - 1)
            q.append(child.reward + later)
        return q

    def value(self, reference, turns_left: int) -> float:
        """V of `reference`'s position with `turns_left` turns left (0 once the episode ended)."""
        if turns_left <= 0 or reference.terminated:
            return 0.0
        key = (position_key(reference), turns_left)
        if key not in self.memo:
            q = self.q_values(reference, turns_left)
            if self.optimal:
                legal = reference.legal_action_mask
                best = [x for x, ok in zip(q, legal) if ok]
                self.memo[key] = max(best) if best else q[0]
            else:
                probs = self.policy(reference, turns_left)
                self.memo[key] = sum(p * x for p, x in zip(probs, q))
        return self.memo[key]


def solve_start(reference, problem, *, policy: ReferencePolicy | str = "uniform",
                turns_left: int | None = None) -> tuple[float, list[float]]:
    """`(V, Q [A])` of the start of an episode on `problem` (a fresh solver, empty memo)."""
    reference.reset(problem)
    turns_left = reference.max_turns if turns_left is None else turns_left
    solver = RecursiveSolver(policy)
    return solver.value(reference, turns_left), solver.q_values(reference, turns_left)
