"""Ready-made agents that answer in the protocol's own text: scripted, uniform and optimal.

- `ScriptedAgent(replies)`: returns the given replies in order (tests, worked examples).
- `UniformAgent(seed=...)`: a uniformly random legal action each turn, the reference policy
  of the exact values (its own NumPy generator: reproducible from the seed).
- `OptimalAgent()`: the legal action of highest exact optimal value `Q*` from the complete
  graph of the problem (`jaxcredit.solver`), so it solves every problem solvable within the
  turns left; among equally good actions, the one that succeeds with the fewest turns (the
  largest sum of `Q*` over fewer turns left), then the first in action order.

The last two see the state (`respond(prompts, states, protocol)`), which no language model
does: they are the reference points an LM agent is measured against, not LM agents.
"""

from __future__ import annotations

from collections import OrderedDict

import jax
import numpy as np

from jaxcredit import solver
from jaxcredit.agents.loop import AgentError


class ScriptedAgent:
    """A callable `prompt -> reply` that returns `replies` in order; `AgentError` once they run out."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.used = 0
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.used >= len(self.replies):
            raise AgentError(f"the script has only {len(self.replies)} replies")
        self.used += 1
        return self.replies[self.used - 1]


def _legal(state) -> np.ndarray:
    return np.flatnonzero(np.asarray(state.legal_action_mask))


class UniformAgent:
    """A uniformly random legal action each turn, answered in the protocol's text."""

    def __init__(self, *, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def respond(self, prompts, states, protocol) -> list[str]:
        return [protocol.reply(state, int(self.rng.choice(_legal(state)))) for state in states]


class OptimalAgent:
    """The legal action of highest exact `Q*` each turn (solver over the complete graph).

    The values of the last `cache` problems are kept (arithmetic with 4 numbers: ~18 MB each).
    """

    def __init__(self, *, cache: int = 4):
        self.cache = cache
        self._values: OrderedDict = OrderedDict()

    def q_values(self, env, state) -> np.ndarray:
        """float32 `[t + 1, A]`: `Q*` of every action at `state` with 0..t turns left (t: its turns left)."""
        key = (env, b"".join(np.asarray(x).tobytes() for x in jax.tree_util.tree_leaves(state.problem)))
        if key not in self._values:
            values = solver.solve(env, state.problem, policy="optimal")
            self._values[key] = np.asarray(values.q)
            while len(self._values) > self.cache:
                self._values.popitem(last=False)
        self._values.move_to_end(key)
        turns_left = env.max_turns - int(state.turn)
        return self._values[key][:turns_left + 1, int(env.position_index(state))]

    def respond(self, prompts, states, protocol) -> list[str]:
        replies = []
        for state in states:
            legal = _legal(state)
            q = self.q_values(protocol.env, state)  # [T + 1, A], rows = turns left up to now
            best = legal[q[-1, legal] >= q[-1, legal].max()]
            quickest = best[np.argmax(q[1:, best].sum(axis=0))]  # ties: the one that succeeds with fewest turns
            replies.append(protocol.reply(state, int(quickest)))
        return replies

