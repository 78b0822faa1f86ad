"""The environment contract: one `State` pytree and a base class that owns the shared rules.

Every jaxcredit environment is a frozen (hashable) dataclass of static configuration whose
dynamics are pure functions of JAX arrays, written for one episode and batched by the caller
with `jax.vmap`. The base class here enforces the rules all environments share -- absorbing
end, refusal of illegal or out-of-range actions, the turn limit -- so a subclass writes only
its own `_init`, `_step`, `_observe`, `_legal_action_mask` and the positions contract used by
the exact solver.

Shape letters used in this module: A actions, L observation length, S positions.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

MAX_TURNS = 1024  # episodes scan over max_turns steps and the solver over as many turns left: keep them bounded
Problem = Any  # a pytree of arrays describing one problem (a tape, a set of numbers)
EnvState = Any  # a pytree of arrays: the environment-specific part of the state


@struct.dataclass
class State:
    """One episode's full state. Copying it is branching.

    Attributes:
      observation: int32 `[L]` tokens, fixed length.
      legal_action_mask: bool `[A]`; all False once the episode has ended.
      reward: float32 `[]`, the reward of the last step.
      terminated: bool `[]`, the episode ended by its own rules (e.g. a correct submit).
      truncated: bool `[]`, the episode ran out of turns.
      rejected: bool `[]`, the last action was illegal or out of range and was refused.
      turn: int32 `[]`, the number of steps taken.
      problem: the problem pytree, constant through the episode.
      env_state: the environment-specific pytree (e.g. the selection bitmap).
    """

    observation: jax.Array
    legal_action_mask: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    rejected: jax.Array
    turn: jax.Array
    problem: Problem
    env_state: EnvState

    @property
    def done(self) -> jax.Array:
        """bool `[]`: the episode has ended (terminated or truncated)."""
        return self.terminated | self.truncated


class HiddenVariable(NamedTuple):
    """A state variable the dynamics depend on and an observation can leave out
    (`Environment.hidden_variables`; docs/analysis.md#text-matched-credit-analysisidentificationpy).

    Attributes:
      description: what the variable is, in one line.
      hidden: configuration overrides under which the token observation hides it (`{}`: it always does).
      shown: overrides under which the token observation shows it, with the same positions and
        dynamics; None when no configuration shows it.
      text_shows: whether the text protocol's rendering shows it (under `hidden`).
    """

    description: str
    hidden: dict
    shown: dict | None
    text_shows: bool


def tree_select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Elementwise `jnp.where(pred, a, b)` over two pytrees of the same structure.

    `pred` is a scalar bool (or broadcastable to every leaf).
    """
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def _is_concrete(x: Any) -> bool:
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


class Environment(abc.ABC):
    """Base class of every environment: the shared rules, the public API, and the contract.

    Subclasses are frozen dataclasses that define `max_turns` and the abstract members below.
    Public API (all pure and jittable): `init(key)`, `init_problem(problem)`, `step(state,
    action)`, `position(problem, index)`, `position_index(state)`. Host-only helpers:
    `action_name(a)`, `render(state)`, `check_problem(problem)`, `config()`.

    `name` is a class variable (the name `jaxcredit.envs.make` knows it by), not a configuration
    field: the dataclass fields are exactly the static configuration, which `config()` returns.
    """

    name: ClassVar[str] = "environment"
    max_turns: int

    def config(self) -> dict:
        """The static configuration: `{field: value}` of every dataclass field, so that
        `type(env)(**env.config()) == env` (what run directories and checkpoints record)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    # ----- sizes every environment declares -------------------------------------------------
    @property
    @abc.abstractmethod
    def num_actions(self) -> int:
        """A: the number of actions."""

    @property
    @abc.abstractmethod
    def observation_length(self) -> int:
        """L: the number of observation tokens."""

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """The number of distinct observation tokens (ids are `0..vocab_size-1`)."""

    @property
    @abc.abstractmethod
    def num_positions(self) -> int:
        """S: static maximum number of positions (states without the clock) of one problem."""

    # ----- what each environment writes ----------------------------------------------------
    @abc.abstractmethod
    def sample_problem(self, key: jax.Array) -> Problem:
        """Draw one problem; consumes `key`."""

    @abc.abstractmethod
    def _init(self, problem: Problem) -> EnvState:
        """The environment-specific state at the start of an episode."""

    @abc.abstractmethod
    def _step(self, problem: Problem, env_state: EnvState, action: jax.Array):
        """Apply a legal, in-range `action`. Returns `(env_state, reward, terminated)`."""

    @abc.abstractmethod
    def _observe(self, problem: Problem, env_state: EnvState, turn: jax.Array) -> jax.Array:
        """int32 `[L]` observation tokens."""

    @abc.abstractmethod
    def _legal_action_mask(self, problem: Problem, env_state: EnvState) -> jax.Array:
        """bool `[A]`: which actions the rules accept in this position."""

    @abc.abstractmethod
    def _position(self, problem: Problem, index: jax.Array) -> tuple[EnvState, jax.Array]:
        """The env state of position `index` and whether that index is a real position."""

    @abc.abstractmethod
    def _position_index(self, problem: Problem, env_state: EnvState) -> jax.Array:
        """int32 `[]`: the index of the position of `env_state`, in `[0, S)`."""

    def check_problem(self, problem: Problem) -> None:
        """Host-side validation of a concrete problem; raises `ValueError`. Default: accept."""

    def check_problems(self, problems: Problem, *, label: str) -> None:
        """Host-side validation of a concrete batch of problems (leaves `[N, ...]`), e.g. an
        evaluation set before it is traced (a traced `init_problem` cannot check); raises
        `ValueError` starting with `label` and naming the first offending problem. Default:
        `check_problem` on every row."""
        leaves = jax.tree_util.tree_leaves(problems)
        for row in range(leaves[0].shape[0] if leaves else 0):
            try:
                self.check_problem(jax.tree_util.tree_map(lambda x, row=row: np.asarray(x)[row], problems))
            except ValueError as error:
                raise ValueError(f"{label}: problem {row}: {error}") from None

    @abc.abstractmethod
    def action_name(self, action: int) -> str:
        """Host-side human-readable name of an action."""

    @abc.abstractmethod
    def render(self, state: State) -> str:
        """Host-side text picture of one (unbatched) state."""

    def action_types(self) -> tuple[tuple[str, ...], np.ndarray]:
        """Host: the action types (first word of `action_name`, e.g. select/unselect/submit or
        COMBINE/UNDO/FINAL) in order of first appearance, and the type index of every action
        int32 `[A]`. Training evaluation and audits report per-type rates with these."""
        words = [self.action_name(a).split()[0] for a in range(self.num_actions)]
        names = tuple(dict.fromkeys(words))
        return names, np.array([names.index(w) for w in words], np.int32)

    def decorative_action_mask(self) -> np.ndarray:
        """Host: bool `[A]`, the actions that are decorative by construction: legal in every live
        position, they change nothing but the turn (MAD's `note k`). The ranking study
        (`jaxcredit.analysis.ranking`) puts the steps that took one in the decorative class.
        Default: none (all False)."""
        return np.zeros(self.num_actions, bool)

    @property
    def null_action(self) -> int | None:
        """The id of the environment's null action, or None (the default) when it has none.

        A null action is decorative: legal in every live position, it changes nothing but the turn
        (same env state and position, reward 0, never ends the episode but by the turn limit;
        `conformance.check_null_action` checks it). Counterfactual credit with the `null`
        replacement compares each action with it (`jaxcredit.credit.REPLACEMENTS`)."""
        return None

    def problem_identity(self, problem: Problem) -> jax.Array:
        """int32 `[K]`: what makes two problems the same problem (`jaxcredit.holdout` hashes it to
        keep evaluation problems out of training). Default: every leaf of the problem, flattened;
        an environment whose problems have equivalent forms (e.g. the same numbers in another
        order) returns a canonical form. Pure and jittable; vmap it for a batch."""
        leaves = jax.tree_util.tree_leaves(problem)
        return jnp.concatenate([jnp.ravel(jnp.asarray(x)).astype(jnp.int32) for x in leaves])

    # ----- what belongs to the environment beyond its dynamics ---------------------------
    # (evaluation sets, audits, play): defaults here, overridden by the environments that differ,
    # so nothing outside an environment branches on its name.
    audit_details: ClassVar[tuple[str, ...]] = ()  # extra sections an audit computes for it, e.g. "final_context"
    # the gradient-SNR study (`jaxcredit.analysis.snr`, `jaxcredit snr`) can measure it: its problems place
    # a chosen number of decisions among routine turns (`decision_layout`), as routine's do
    supports_density_snr: ClassVar[bool] = False
    # the learnability gate (`jaxcredit gate`) is defined on its problems, so a results page of a sweep on it
    # opens with the gate's result (`jaxcredit.analysis.gates`), as arithmetic's does
    has_learnability_gate: ClassVar[bool] = False

    def text_protocol(self):
        """Host: the free-form text protocol language-model agents play it through (an object with
        `render_prompt(state)`, `parse(text, state)`, `reply(state, action)`, `step(state, text)` and
        `lenient_reply(text, state)`: `jaxcredit.envs.text_protocol`), or None, the default: no protocol."""
        return None

    def hidden_variables(self) -> dict[str, HiddenVariable]:
        """Host: the state variables the dynamics depend on that the token observation can hide, by
        name (what `jaxcredit identify --hide` varies). Default: none declared."""
        return {}

    def problem_to_json(self, problem: Problem) -> dict:
        """Host: one concrete problem as the JSON object a transcript records (`jaxcredit.envs.transcripts`;
        `problem_from_json` reads it back). Default: `ValueError`, no transcript format."""
        raise ValueError(f"environment {self.name!r} has no transcript problem format")

    def problem_from_json(self, obj: dict) -> Problem:
        """Host: the problem pytree of a transcript's JSON object (`problem_to_json`'s inverse), validated;
        raises `ValueError`. Default: `ValueError`, no transcript format."""
        raise ValueError(f"environment {self.name!r} has no transcript problem format")

    def problem_mix(self, n: int, *, seed: int):
        """Host: n seeded problems (leaves `[n, ...]`) spread over every family the environment has,
        what benchmarks time (`jaxcredit bench solver`). Default: `problem_sample(None, n, seed)`."""
        return self.problem_sample(None, n, seed)

    def evaluation_families(self, requested: tuple[str, ...]) -> tuple[str, ...]:
        """The problem families a run evaluates on, given `config.eval_families` (empty: the
        default). Default: the one `default` family; anything else raises `ValueError`."""
        if tuple(requested) not in ((), ("default",)):
            raise ValueError(f"config.eval_families: environment {self.name!r} has only the 'default' family")
        return ("default",)

    def check_family(self, family: str, *, label: str) -> None:
        """Host: refuse (`ValueError` starting with `label`) a family whose problems this environment
        cannot show exactly. Default: nothing to refuse (arithmetic checks its numbers' bound)."""
        del family, label

    def problem_stream(self, family: str | None, seed: int):
        """Host: `draw(m)`, the first m problems (leaves `[m, ...]`) of the seeded stream of `family`
        (None: the environment's own) that held-out sets are filtered from. Default: problem i is
        `sample_problem(fold_in(key(seed), i))` (one family)."""
        key = jax.random.key(seed)
        return lambda m: _sample_stream(self, key, jnp.arange(m))

    def problem_sample(self, family: str | None, n: int, seed: int):
        """Host: n problems (leaves `[n, ...]`) of `family`'s whole space, seeded (what evaluation
        uses without a holdout). Default: `sample_problem` on `split(key(seed), n)`, compiled once per
        configuration and n (not one small program per primitive)."""
        return _sample_keys(self, jax.random.split(jax.random.key(seed), n))

    def is_answer_action(self, action: int) -> bool:
        """Host: whether `action` commits an answer the reward judges (MAD's submit, arithmetic's
        FINALs). Default: False (no action is an answer)."""
        return False

    def episode_success(self, final_state: State, episode_return: jax.Array) -> jax.Array:
        """bool `[...]`: whether episodes succeeded, from their final states (leaves `[..., ...]`)
        and returns (float32 `[...]`). Default: a positive return, right for every environment
        whose only non-zero reward is its outcome; one that pays other rewards (umbrella's noise)
        overrides it. Training's evaluation and the audits report the mean of this."""
        del final_state
        return episode_return > 0

    # ----- the shared rules ---------------------------------------------------------------
    def _make_state(self, problem, env_state, *, turn, reward, terminated, truncated, rejected):
        done = terminated | truncated
        legal = self._legal_action_mask(problem, env_state) & ~done
        return State(
            observation=self._observe(problem, env_state, turn).astype(jnp.int32),
            legal_action_mask=legal,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.asarray(truncated, bool),
            rejected=jnp.asarray(rejected, bool),
            turn=jnp.asarray(turn, jnp.int32),
            problem=problem,
            env_state=env_state,
        )

    def init(self, key: jax.Array) -> State:
        """Draw a problem and start an episode; consumes `key`."""
        return self.init_problem(self.sample_problem(key))

    def init_problem(self, problem: Problem) -> State:
        """Start an episode on a given problem. Concrete problems are validated on the host."""
        if _is_concrete(problem):
            self.check_problem(problem)
        problem = jax.tree_util.tree_map(jnp.asarray, problem)
        false = jnp.zeros((), bool)
        return self._make_state(
            problem, self._init(problem), turn=jnp.zeros((), jnp.int32), reward=0.0,
            terminated=false, truncated=false, rejected=false,
        )

    def step(self, state: State, action: jax.Array) -> State:
        """Take one action. Deterministic, never raises under jit.

        An ended episode is returned unchanged with reward 0. An illegal or out-of-range
        action is refused: it uses a turn, changes nothing else and sets `rejected`.
        Reaching `max_turns` without terminating truncates with reward 0. `action` must be an
        integer (any integer dtype, range-checked before it is narrowed to int32; see
        `_int32_action`); a float or bool action raises `ValueError` when traced or called.
        """
        action = self._int32_action(action)
        live = ~state.done
        safe_action = jnp.clip(action, 0, self.num_actions - 1)
        # The legal mask at `action` through a one-hot compare (an out-of-range action matches no
        # entry): under `vmap` an indexed read is a gather, which XLA on CPU runs as a scalar loop
        # in its own fusion; the compare fuses with the rest of the step.
        accepted = live & jnp.any(state.legal_action_mask & (jnp.arange(self.num_actions) == action))

        # An ended episode is left unchanged by gating every update on `live`/`accepted` rather
        # than by selecting between two whole states at the end: the observation and legal mask
        # are then recomputed from unchanged inputs, and XLA fuses the step without computing
        # everything twice (a final whole-state select made batched rollouts ~5x slower on CPU).
        moved_state, reward, terminated = self._step(state.problem, state.env_state, safe_action)
        env_state = tree_select(accepted, moved_state, state.env_state)
        terminated = accepted & terminated
        reward = jnp.where(accepted, reward, 0.0)
        turn = state.turn + live.astype(jnp.int32)
        truncated = state.truncated | (live & ~terminated & (turn >= self.max_turns))
        return self._make_state(
            state.problem, env_state, turn=turn, reward=reward,
            terminated=state.terminated | terminated, truncated=truncated,
            rejected=jnp.where(live, ~accepted, state.rejected),
        )

    def _int32_action(self, action: Any) -> jax.Array:
        """`action` as int32 with every out-of-range value (anything outside `[0, A)`, checked in
        its own dtype before the cast) replaced by `A`, which `step` refuses.

        Floats and bools are refused by dtype, which is static under jit: `ValueError` at trace
        time, never a silent truncation. Host values (Python ints, NumPy arrays) are checked on the
        host, because converting them to a JAX array would wrap a 64-bit value first. (Under your
        own `jax.jit` with 64-bit types off, JAX's default, JAX narrows a NumPy int64 argument to
        int32 at the jit boundary before this code runs: pass int32 actions.)
        """
        num_actions = self.num_actions
        if isinstance(action, (bool, np.bool_)):
            raise ValueError(f"{self.name}.step: an action must be an integer, got {action!r}")
        if isinstance(action, int):  # a Python int can be any size
            return jnp.int32(action if 0 <= action < num_actions else num_actions)
        if not isinstance(action, jax.Array):
            action = np.asarray(action)
        dtype = np.dtype(action.dtype)
        if not np.issubdtype(dtype, np.integer):
            raise ValueError(f"{self.name}.step: actions must be integers, got dtype {dtype}")
        if np.can_cast(dtype, np.int32):  # int8, uint16, int32, ...: the cast is exact
            return jnp.asarray(action, jnp.int32)
        if isinstance(action, np.ndarray):  # uint32, int64, uint64 on the host
            return jnp.asarray(np.where((action >= 0) & (action < num_actions), action, num_actions).astype(np.int32))
        in_range = (action >= 0) & (action < jnp.asarray(num_actions, dtype))  # traced uint32, or int64 under x64
        return jnp.where(in_range, action, jnp.asarray(num_actions, dtype)).astype(jnp.int32)

    # ----- the positions contract (consumed by the exact solver) ---------------------------
    def position(self, problem: Problem, index: jax.Array, *, turn: jax.Array = 0):
        """The live state at position `index` (turn `turn`) and whether the index is valid.

        Returns `(state, valid)` where `valid` is bool `[]`; an invalid index gives an
        arbitrary but well-formed state.
        """
        env_state, valid = self._position(problem, jnp.asarray(index, jnp.int32))
        false = jnp.zeros((), bool)
        state = self._make_state(
            problem, env_state, turn=jnp.asarray(turn, jnp.int32), reward=0.0,
            terminated=false, truncated=false, rejected=false,
        )
        return state, valid

    def position_index(self, state: State) -> jax.Array:
        """int32 `[]`: the index of `state`'s position, in `[0, num_positions)`."""
        return self._position_index(state.problem, state.env_state).astype(jnp.int32)

    # ----- automatic reset (consumed by the gymnax adapter) ---------------------------------
    def step_or_restart(self, state: State, action: jax.Array, next_problem: Problem) -> tuple[State, State]:
        """`(stepped, next_state)`: `stepped = step(state, action)`, and `next_state` equal to
        `tree_select(stepped.done, init_problem(next_problem), stepped)` -- the same state, or
        the start of `next_problem` when this step ended the episode.

        Computed with one observation and one legal mask for `next_state` (the mask of `stepped`
        is dead code unless the caller reads it), not two whole states and a select: under
        `vmap` every episode pays for the restart on every step, so its cost is the step's.
        """
        stepped = self.step(state, action)
        done = stepped.done
        problem = tree_select(done, jax.tree_util.tree_map(jnp.asarray, next_problem), stepped.problem)
        env_state = tree_select(done, self._init(problem), stepped.env_state)
        false = jnp.zeros((), bool)
        next_state = self._make_state(
            problem, env_state, turn=jnp.where(done, 0, stepped.turn), reward=jnp.where(done, 0.0, stepped.reward),
            terminated=false, truncated=false, rejected=~done & stepped.rejected,
        )
        return stepped, next_state


def compiled_method(method):
    """Jit an environment method once per configuration (`self` is static: a frozen, hashable
    dataclass). Under an outer jit it is inlined; eager callers (the conformance check, the text
    protocols, `play`) then dispatch one compiled computation instead of many small ops."""
    jitted = jax.jit(method, static_argnums=0)

    @functools.wraps(method)
    def call(self, *args):
        return jitted(self, *args)

    return call


@functools.partial(jax.jit, static_argnums=0)
def _sample_keys(env: Environment, keys: jax.Array):
    """Problems (leaves `[n, ...]`) of `env.sample_problem` on `keys` `[n]`; jitted once per configuration."""
    return jax.vmap(env.sample_problem)(keys)


@functools.partial(jax.jit, static_argnums=0)
def _sample_stream(env: Environment, key: jax.Array, indices: jax.Array):
    """Problems (leaves `[m, ...]`) `sample_problem(fold_in(key, i))` for i in `indices` `[m]`."""
    return jax.vmap(lambda i: env.sample_problem(jax.random.fold_in(key, i)))(indices)
