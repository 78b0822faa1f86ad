"""Greedy play on exact values (`jaxcredit.solver.greedy_play`), on a sweep's evaluation problems
(`jaxcredit greedy`), and its section on the results page."""

import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxcredit.cli import main
from jaxcredit.envs import make
from jaxcredit.solver import Graph, Values, greedy_play
from jaxcredit.solver_batch import greedy_reference_play

DATA = Path(__file__).parent / "data"


def _chain_graph():
    """Positions 0 -> 1 -> win: action 0 moves on (0 -> 1), action 1 at 1 wins; action 1 at 0 ends
    the episode with nothing."""
    return Graph(next_position=jnp.array([[1, 0], [1, 1]], jnp.int32),
                 reward=jnp.array([[0.0, 0.0], [0.0, 1.0]]),
                 terminal=jnp.array([[False, True], [False, True]]),
                 legal=jnp.ones((2, 2), bool), valid=jnp.ones(2, bool), observation=jnp.zeros((2, 1), jnp.int32))


def test_greedy_play_follows_the_values_turn_by_turn():
    graph = _chain_graph()
    q = jnp.zeros((4, 2, 2)).at[:, 0, 0].set(0.5).at[:, 1, 1].set(1.0)  # move on, then win
    won, turns = greedy_play(graph, Values(v=jnp.zeros((4, 2)), q=q), jnp.int32(0), horizon=3)
    assert bool(won) and int(turns) == 2
    q_bad = q.at[:, 0, 1].set(0.9)  # ending at once looks better: greedy ends with nothing
    won, turns = greedy_play(graph, Values(v=jnp.zeros((4, 2)), q=q_bad), jnp.int32(0), horizon=3)
    assert not bool(won) and int(turns) == 1
    won, turns = greedy_play(graph, Values(v=jnp.zeros((2, 2)), q=q[:2]), jnp.int32(0), horizon=1)
    assert not bool(won) and int(turns) == 1  # out of turns after moving on


def test_greedy_on_uniform_values_solves_three_number_arithmetic():
    """The source study's claim on its own rung: greedy play on Q^uniform wins every problem."""
    env = make("arithmetic", count=3, include_turns_left=True)
    out = greedy_reference_play(env, env.problem_sample("default", 24, 7), chunk_size=8)
    assert out["solvable"].all() and out["uniform_greedy_won"].all()
    assert (out["uniform_greedy_turns"] == 3).all()  # two combines and the final answer
    assert ((0 < out["uniform_value"]) & (out["uniform_value"] < 1)).all()


def test_greedy_command_writes_the_record_and_the_page_shows_it(tmp_path, capsys):
    sweep = tmp_path / "tiny-sweep"
    shutil.copytree(DATA / "tiny-sweep", sweep)
    assert main(["greedy", str(sweep)]) == 0
    assert "wins 32 of 32" in capsys.readouterr().out
    record = json.loads((sweep / "reference/greedy.json").read_text())
    assert record["kind"] == "reference-greedy" and record["families"]["default"]["won"] == 32
    page = tmp_path / "page" / "tiny.md"
    page.parent.mkdir()
    assert main(["report", str(sweep), "--page", str(page)]) == 0
    text = page.read_text()
    assert "## Greedy play on the uniform reference's exact values (no training)" in text
    assert "| default | 32 | 32 (1.000 [0.893, 1.000]) | 32 |" in text
    summary = json.loads((tmp_path / "page/tiny/summary.json").read_text())
    assert summary["reference_greedy"]["default"]["solvable"] == 32
    assert (tmp_path / "page/tiny/record/reference/greedy.json").is_file()  # regenerates from the record


def test_greedy_refuses_a_sweep_without_cells(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["greedy", str(tmp_path / "empty")]) == 2
    assert "no cell's config.json yet" in capsys.readouterr().err
    env = make("arithmetic", count=3)
    none = jax.tree_util.tree_map(lambda leaf: leaf[:0], env.problem_sample("default", 1, 0))
    with pytest.raises(ValueError, match="no problems"):
        greedy_reference_play(env, none)
