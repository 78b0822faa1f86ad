"""Problems and actions written by hand: one syntax for `jaxcredit play`, `jaxcredit solve` and scripts.

`parse_problem(env_name, ...)` turns a problem written as text or numbers into the environment
that holds it and its problem pytree:

- MAD: `tape="_ t04 _ _ t09 _ _ _"` (`_` a blank cell, `tNN` a token; the tape sizes the
  environment), or no tape and a `seed` (the tape `env.sample_problem` draws from it).
- Arithmetic: `numbers=[2, 3, 4, 5], target=14` (an environment of `count = len(numbers)`, its
  `max_number` raised to the largest number when needed), or a `family` and `seed` (the first
  problem of `problem_set(family, 1, seed)`).

With `env` given (e.g. a checkpoint's environment) the problem must fit that environment.
`replay_action_names(env, state, text)` plays `;`-separated actions named as `env.action_name`
names them (`"select 1; submit"`, `"COMBINE 2 + 3; UNDO"`; case, commas and parentheses are
ignored). Bad input raises `ValueError` with one line naming it.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxcredit.env import Environment, State
from jaxcredit.envs.mad import MAX_LENGTH
from jaxcredit.envs.problems import get_family, problem_set
from jaxcredit.envs.registry import make

PROBLEM_ENVIRONMENTS = ("arithmetic", "mad")  # the environments with a problem syntax


def parse_problem(env_name: str, *, tape: str | None = None, numbers: list[int] | None = None,
                  target: int | None = None, family: str | None = None, seed: int | None = None,
                  env: Environment | None = None, overrides: dict | None = None) -> tuple[Environment, Any]:
    """`(env, problem)`: the problem written as the arguments say (see the module docstring).

    Args:
      env_name: `"mad"` or `"arithmetic"`.
      tape: MAD's tape as text.
      numbers, target: arithmetic's numbers (ints) and target (int), given together.
      family: arithmetic's problem family (default `"default"`); with `seed` alone it picks the
        evaluation set the problem is drawn from.
      seed: draws the problem when none is written (default 0).
      env: the environment the problem must fit (its configuration is kept); None builds one.
      overrides: configuration fields of the environment built (e.g. `{"max_turns": 4}`); not with `env`.

    Raises `ValueError` naming a bad or missing argument, an unknown environment or family, or a
    problem the environment cannot hold.
    """
    if env_name not in PROBLEM_ENVIRONMENTS:
        raise ValueError(f"unknown environment {env_name!r}; choices: {', '.join(PROBLEM_ENVIRONMENTS)}")
    if env is not None and env.name != env_name:
        raise ValueError(f"the problem is for {env_name} but the environment is {env.name}")
    if env is not None and overrides:
        raise ValueError("give the environment or overrides of its configuration, not both")
    overrides = dict(overrides or {})
    seed = 0 if seed is None else seed
    if env_name == "mad":
        return _mad_problem(tape, numbers, target, family, seed, env, overrides)
    return _arithmetic_problem(tape, numbers, target, family, seed, env, overrides)


def _mad_problem(tape, numbers, target, family, seed, env, overrides):
    if numbers is not None or target is not None or family is not None:
        raise ValueError("numbers, target and family are for arithmetic; mad takes a tape or a seed")
    if tape is None:
        env = env if env is not None else make("mad", **overrides)
        return env, env.sample_problem(jax.random.key(seed))
    cells = tape.split()
    if env is not None:
        if len(cells) != env.length:
            raise ValueError(f"the tape has {len(cells)} cells but the environment's mad has length {env.length}")
        return env, env.parse_tape(tape)
    if not 1 <= len(cells) <= MAX_LENGTH:
        raise ValueError(f"a mad tape has 1 to {MAX_LENGTH} cells, got {len(cells)}")
    env = make("mad", **{"length": len(cells), "max_useful": min(4, len(cells)), **overrides})
    return env, env.parse_tape(tape)


def _arithmetic_problem(tape, numbers, target, family, seed, env, overrides):
    if tape is not None:
        raise ValueError("a tape is for mad; arithmetic takes numbers and a target, or a family and a seed")
    if (numbers is None) != (target is None):
        raise ValueError("give the numbers and the target together")
    spec = get_family(family if family is not None else (env.family if env is not None else "default"))
    if numbers is None:
        if env is None:
            env = make("arithmetic", **{"family": spec.name, **overrides})
        drawn = problem_set(spec.name, 1, seed, count=env.count)
        return env, jax.tree_util.tree_map(lambda x: x[0], drawn)
    if env is None:
        sizes = {"count": len(numbers), "family": spec.name}
        if numbers and max(numbers) > spec.number_high:  # larger numbers than the family's
            sizes["max_number"] = max(numbers)
        env = make("arithmetic", **{**sizes, **overrides})
    elif len(numbers) != env.count:
        raise ValueError(f"{len(numbers)} numbers given but the environment's arithmetic has count {env.count}")
    return env, env.make_problem(numbers, target)


def _normalise_action(text: str) -> str:
    for mark in "(),":
        text = text.replace(mark, " ")
    return " ".join(text.lower().split())


def action_by_name(env: Environment, name: str) -> int:
    """The action id `env.action_name` names `name` (case, commas and parentheses ignored);
    raises `ValueError` for an unknown name."""
    wanted = _normalise_action(name)
    for action in range(env.num_actions):
        if _normalise_action(env.action_name(action)) == wanted:
            return action
    raise ValueError(f"unknown action {name.strip()!r} (e.g. {env.action_name(0)!r})")


def replay_action_names(env: Environment, state: State, text: str | None) -> State:
    """`state` (one unbatched episode) after the `;`-separated actions named in `text` (None or
    blank: no action). Raises `ValueError` naming an empty, unknown or illegal action, or one
    after which the episode ended (there would be nothing left to evaluate)."""
    if not text or not text.strip():
        return state
    for number, name in enumerate(text.split(";"), start=1):
        if not name.strip():
            raise ValueError(f"action {number} is empty")
        action = action_by_name(env, name)
        if not bool(state.legal_action_mask[action]):
            raise ValueError(f"{name.strip()!r} (action {number}) is not legal at that point")
        state = env.step(state, action)
        if bool(state.done):
            raise ValueError(f"the episode ended after {name.strip()!r} (action {number})")
    return state
