"""A whole `jaxcredit agent play` session: build the agent, draw the problems, play into a directory.

`play_into(out, env, agent, problems)` writes the kind marker (`transcripts`), then
`out/transcripts.jsonl` one transcript per line (ids `<run id>-p<k>`, the run id random) as
each episode ends (flushed to disk, so a crash or an agent failure loses nothing played) and,
last, `out/summary.json`; the directory is locked (`jaxcredit.rundir_io.RunLock`) meanwhile.
`make_agent(kind, ...)` builds `http`, `uniform` or `optimal`; `draw_problems(env, n, seed)` the
seeded problems (`Environment.problem_sample`; arithmetic: its family's evaluation set).
"""

from __future__ import annotations

import os
import uuid

import jax
import numpy as np

from jaxcredit.agents.http import ChatCompletionsAgent
from jaxcredit.agents.loop import play, split_problems
from jaxcredit.agents.reference import OptimalAgent, UniformAgent
from jaxcredit.env import Environment
from jaxcredit.output_dirs import check_kind, write_kind
from jaxcredit.rundir_io import RunLock, check_writable_dir, dumps_strict, write_json_atomic

AGENTS = ("http", "uniform", "optimal")
TRANSCRIPTS = "transcripts.jsonl"


def make_agent(kind: str, *, seed: int = 0, base_url: str | None = None, model: str | None = None,
               **http_options) -> tuple[object, str]:
    """`(agent, name)` of the agent `kind` (`AGENTS`); `http` needs `base_url` and `model`."""
    if kind == "uniform":
        return UniformAgent(seed=seed), f"uniform (seed {seed})"
    if kind == "optimal":
        return OptimalAgent(), "optimal"
    if kind == "http":
        if not base_url or not model:
            raise ValueError("the http agent needs --base-url and --model")
        return ChatCompletionsAgent(base_url, model, **http_options), f"http:{model}"
    raise ValueError(f"unknown agent {kind!r}; choices: {', '.join(AGENTS)}")


def draw_problems(env: Environment, n: int, seed: int):
    """`n` seeded problems of `env` (a batched problem pytree, leaves `[n, ...]`: `env.problem_sample` of its
    own family), checked against the environment's bounds; raises `ValueError`."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of problems must be an integer >= 1, got {n!r}")
    drawn = jax.tree_util.tree_map(np.asarray, env.problem_sample(None, n, seed))
    env.check_problems(drawn, label="agent play")  # e.g. arithmetic numbers beyond its max_number
    return drawn


def _append_line(path: str, row: dict) -> None:
    with open(path, "a") as f:
        f.write(dumps_strict(row, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def play_into(out: str, env: Environment, agent, problems, *, agent_name: str, protocol: str = "text",
              progress: bool = False, batched: bool = False) -> dict:
    """Play `problems` into the directory `out` (see the module docstring); returns the summary:
    problems, played, solved, success rate over the played, the agent's error (None) and paths."""
    out = check_writable_dir(out)
    check_kind(out, "transcripts", "agent play")
    path = os.path.join(out, TRANSCRIPTS)
    run_id = uuid.uuid4().hex[:12]  # transcript ids <run id>-p<k>: unique across runs, so files concatenate
    count = len(split_problems(problems))
    with RunLock(out, "agent play"):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            raise ValueError(f"--out {out} already holds {TRANSCRIPTS}; choose a new directory")
        write_kind(out, "transcripts")
        open(path, "w").close()
        transcripts = play(env, agent, problems, protocol=protocol, agent_name=agent_name, progress=progress,
                           batched=batched, on_transcript=lambda t: _append_line(path, t),
                           ids=[f"{run_id}-p{k}" for k in range(count)])
        errors = [t["error"] for t in transcripts if t["error"]]
        solved = sum(t["outcome"]["success"] for t in transcripts)
        summary = {"agent": agent_name, "env": env.name, "protocol": protocol,
                   "problems": len(jax.tree_util.tree_leaves(problems)[0]) if not isinstance(problems, list)
                   else len(problems), "played": len(transcripts), "solved": solved,
                   "success_rate": solved / len(transcripts) if transcripts else None,
                   "error": errors[0] if errors else None, "transcripts": path}
        write_json_atomic(os.path.join(out, "summary.json"), summary)
    return summary
