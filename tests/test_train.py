"""The trainer: real learning, reproducibility, exact resume, budget matching, bad input.

All runs use one tiny MAD configuration so the compiled programs are shared (the driver caches
them by everything but budget, seeds and evaluation schedule).
"""

import hashlib
import json
import os

import numpy as np
import pytest

from jaxcredit.cli import main
from jaxcredit.train import config_from_dict, run_training
from jaxcredit.train import driver as driver_module
from jaxcredit.train.rundir import read_jsonl

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY = {"env": "mad", "env_overrides": TINY_MAD, "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64,
        "problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 64,
        "num_seeds": 2, "num_evals": 2, "budget": 256,
        "holdout_fraction": 0.0}  # 18 tapes: too few to hold out


def tiny(**fields):
    return config_from_dict({**TINY, **fields})


def rows_without_timing(path):
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in rows]


def tree_digest(path):
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(full.encode())
            with open(full, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


class CompileEvents:
    """Every jaxpr trace, lowering and backend compile JAX reports while in the `with` block
    (`jax.monitoring`'s `/jax/core/compile/...` events), as `(event, function name)` pairs."""

    def __enter__(self):
        import jax

        self.events, self._listener = [], self._record
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def _record(self, event, seconds, **kwargs):
        if event.startswith("/jax/core/compile/"):
            self.events.append((event.rsplit("/", 1)[1], kwargs.get("fun_name")))

    def __exit__(self, *exc):
        import jax

        jax.monitoring.unregister_event_duration_listener(self._listener)


def test_learning_is_real(tmp_path):
    summary = run_training(tiny(budget=6_000, num_evals=3), str(tmp_path / "run"), progress=False)
    for seed in summary["seeds"]:
        assert seed["initial_success"] < 0.4
        assert seed["final_success"] >= seed["initial_success"] + 0.4, summary


def test_same_seed_same_metrics_and_resume_matches(tmp_path):
    config = tiny(num_evals=3, budget=384)
    run_training(config, str(tmp_path / "a"), progress=False)
    run_training(config, str(tmp_path / "b"), progress=False)
    assert rows_without_timing(tmp_path / "a") == rows_without_timing(tmp_path / "b")

    stopped = run_training(config, str(tmp_path / "c"), progress=False, stop_after_evals=1)
    assert stopped == {"stopped_after": 1}
    assert not os.path.exists(tmp_path / "c" / "summary.json")
    assert max(r["eval_index"] for r in read_jsonl(str(tmp_path / "c" / "metrics.jsonl"))) == 1
    with CompileEvents() as seen:  # the restored state is laid out as a fresh one: no new compile
        run_training(config, str(tmp_path / "c"), progress=False, resume=True)
    assert seen.events == []
    assert rows_without_timing(tmp_path / "c") == rows_without_timing(tmp_path / "a")
    assert len(rows_without_timing(tmp_path / "a")) == 2 * 4  # seeds x (initial + 3 evaluations)


def test_interrupt_keeps_last_segment_and_resume_matches(tmp_path, monkeypatch):
    config = tiny(num_evals=3, budget=384)
    run_training(config, str(tmp_path / "full"), progress=False)
    init, segment, evaluate = driver_module.compiled_programs(config)
    calls = {"n": 0}

    def interrupted_segment(*args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return segment(*args)

    monkeypatch.setattr(driver_module, "compiled_programs", lambda c: (init, interrupted_segment, evaluate))
    with pytest.raises(KeyboardInterrupt):  # one call per segment: interrupted inside the second
        run_training(config, str(tmp_path / "cut"), progress=False, checkpoint_seconds=None)
    monkeypatch.undo()
    assert json.load(open(tmp_path / "cut" / "checkpoints" / "latest.json"))["eval_index"] == 1
    run_training(config, str(tmp_path / "cut"), progress=False, resume=True)
    assert rows_without_timing(tmp_path / "cut") == rows_without_timing(tmp_path / "full")


def test_a_resumed_run_s_progress_bar_starts_at_its_count(tmp_path, capsys):
    """The bar opens at the resumed count, so its rate and time left are this session's, not the
    whole count over this session's seconds."""
    config = tiny(num_evals=3, budget=384)
    run_training(config, str(tmp_path / "run"), progress=False, stop_after_evals=1)
    done = min(r["main_episodes"] for r in read_jsonl(str(tmp_path / "run" / "metrics.jsonl")) if r["eval_index"] == 1)
    capsys.readouterr()
    run_training(config, str(tmp_path / "run"), progress=True, resume=True)
    shown = capsys.readouterr().err.replace("\r", "\n").splitlines()
    shown = [line for line in shown if "/384" in line]
    assert f" {done}/384 [00:00<?" in shown[0], shown[:3]
    assert "384/384" in shown[-1]


def test_equal_env_steps_end_within_one_iteration(tmp_path):
    budget = 20_000
    finals = {}
    for credit in ("outcome", "mc"):
        config = tiny(credit=credit, budget_counter="total_env_steps", budget=budget,
                      **({"credit_options": {"continuations": 2}} if credit == "mc" else {}))
        run_training(config, str(tmp_path / credit), progress=False)
        finals[credit] = [r for r in read_jsonl(str(tmp_path / credit / "metrics.jsonl")) if r["eval_index"] == 2]
    for credit, rows in finals.items():
        for r in rows:
            # the run stopped at the first iteration that reached the budget
            assert budget <= r["total_env_steps"] < budget + r["last_iteration_env_steps"], (credit, r)
    assert finals["mc"][0]["label_env_steps"] > 0 and finals["outcome"][0]["label_env_steps"] == 0
    assert finals["outcome"][0]["main_episodes"] > finals["mc"][0]["main_episodes"]
    per_iteration = max(r["last_iteration_env_steps"] for rows in finals.values() for r in rows)
    totals = [r["total_env_steps"] for rows in finals.values() for r in rows]
    assert max(totals) - min(totals) < per_iteration


@pytest.mark.parametrize("argv, message", [
    (["train", "--out", "X", "--set", "colour=3"], "unknown config field(s) ['colour']; fields:"),
    (["train", "--out", "X", "--set", "budget=0"], "config.budget must be in [1, 2147483647], got 0"),
    (["train", "--out", "X", "--set", "budget=99999999999"], "config.budget must be in [1, 2147483647]"),
])
def test_bad_input_is_one_line(argv, message, capsys, tmp_path):
    argv = [str(tmp_path / a) if a == "X" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxcredit: error: ") and message in err and "\n" not in err
    assert not os.path.exists(tmp_path / "X")


def test_resume_errors_change_nothing(tmp_path, capsys):
    config = tiny(num_evals=2, budget=256)
    out = str(tmp_path / "run")
    args = ["train", "--out", out, "--resume", "--no-progress"] + [
        f"--set={k}={json.dumps(v)}" for k, v in TINY.items() if k not in ("budget", "num_evals")
    ] + ["--set=budget=256", "--set=num_evals=2"]
    assert main(args) == 2
    assert "nothing to resume" in capsys.readouterr().err

    run_training(config, out, progress=False, stop_after_evals=1)
    latest = json.load(open(os.path.join(out, "checkpoints", "latest.json")))["directory"]
    for root, _, files in os.walk(os.path.join(out, "checkpoints", latest)):
        for name in files:
            with open(os.path.join(root, name), "wb") as f:
                f.write(b"garbage")
    before = tree_digest(out)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "corrupted checkpoint" in err and err.count("\n") == 1
    assert tree_digest(out) == before

    with pytest.raises(ValueError, match="already holds a run"):
        run_training(config, out, progress=False)
    with pytest.raises(ValueError, match="config.json differs"):
        run_training(tiny(num_evals=2, budget=512), out, progress=False, resume=True)


def test_summary_and_policies_written(tmp_path):
    out = tmp_path / "run"
    summary = run_training(tiny(), str(out), progress=False)
    assert set(summary["mean"]) >= {"final_success", "average_success", "initial_success"}
    assert sorted(os.listdir(out / "policies")) == ["seed-0", "seed-1"]
    rows = read_jsonl(str(out / "metrics.jsonl"))
    assert {r["seed_index"] for r in rows} == {0, 1}
    assert all(r["main_episodes"] >= 256 for r in rows if r["eval_index"] == 2)
    np.testing.assert_allclose(
        summary["seeds"][0]["final_success"],
        [r["success_greedy"] for r in rows if r["eval_index"] == 2 and r["seed_index"] == 0][0])


def test_solve_with_a_trained_policy_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    run_training(tiny(), str(out), progress=False)
    policy = str(out / "policies" / "seed-0")
    assert main(["solve", "mad", "--tape", "_ t01 t00", "--policy", policy, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    qs = [a["q"] for a in result["actions"]]
    assert len(qs) == 4  # select 0, 1, 2 and submit
    assert qs == sorted(qs, reverse=True) and 0.0 <= result["value"] <= 1.0
    assert min(qs) - 1e-6 <= result["value"] <= max(qs) + 1e-6  # V is a mixture of the Qs
    assert main(["solve", "mad", "--tape", "_ t01 t00 _", "--policy", policy]) == 2
    assert "the environment's mad has length 3" in capsys.readouterr().err
    assert main(["solve", "arithmetic", "--numbers", "1", "2", "--target", "3", "--policy", policy]) == 2
    assert "was trained on 'mad'" in capsys.readouterr().err


@pytest.mark.parametrize("fields", [
    {"credit": "anchor"},
    {"credit": "exact"},
    {"credit": "solver", "credit_options": {"policy": "optimal", "add_outcome": True}},
    {"credit": "critic", "credit_options": {"label_states": 8, "continuations": 2}},
    {"credit": "mc", "credit_options": {"variant": "q", "continuations": 2}},
], ids=lambda f: "-".join(str(v) for v in f.values()))
def test_every_arm_takes_a_finite_step_and_charges_its_ledger(fields, tiny_arm):
    import jax
    import jax.numpy as jnp

    trainer, iterate = tiny_arm(**fields)  # TINY's compiled iteration, shared with tests/test_learning.py
    assert trainer.config == tiny(**fields)
    state = trainer.init(jnp.int32(0))
    after = iterate(state)
    ledger = after.ledger
    assert int(ledger.main_episodes) == 32
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), state.params, after.params)
    assert any(jax.tree_util.tree_leaves(changed))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(after.params))
    env = trainer.env  # MAD length 3: S = 8 selections, A = 7 actions, every position valid
    if fields["credit"] in ("exact", "solver"):
        # graph enumeration, by hand: from the empty selection all 8 selections are reached; at
        # each, 3 select/unselect moves and submit are legal (the 3 others are refused, free):
        # 8 x 4 = 32 env steps per problem, 8 problems
        assert int(ledger.label_env_steps) == 8 * 8 * 4 == 256
        expected_evals = 8 * env.num_positions if fields["credit"] == "exact" else 0
        assert int(ledger.label_policy_evals) == expected_evals
    elif fields["credit"] == "mc":
        assert int(ledger.label_env_steps) > 0 and int(ledger.critic_env_steps) == 0
    elif fields["credit"] == "critic":
        assert int(ledger.critic_env_steps) > 0 and int(ledger.label_env_steps) == 0
    else:
        assert int(ledger.label_env_steps) == 0 and int(ledger.critic_env_steps) == 0


def test_graph_label_cost_through_the_trainer_equals_hand_counts():
    """Arithmetic with 2 numbers, charged by `Trainer.advantages` (the solver arm; the exact arm
    charges through the same line, hand-counted on MAD above). [2, 3] -> 5: the start has 5
    accepted combinations (2+3, 3+2, 3-2, 2*3, 3*2; 2-3 negative, 2/3 and 3/2 inexact) and 2
    FINALs (UNDO illegal): 7; each of the 5 children has UNDO and one FINAL: 10; 17 in all.
    [2, 2] -> 4: 8 combinations (+ - * / in both orders, all accepted) and 2 FINALs: 10; each of
    the 8 children: UNDO and one FINAL: 16; 26 in all. Refused moves cost nothing."""
    import jax
    import jax.numpy as jnp

    from jaxcredit.ledger import init_ledger
    from jaxcredit.rollout import rollout
    from jaxcredit.train import make_train

    trainer = make_train(config_from_dict({
        **TINY, "env": "arithmetic", "env_overrides": {"count": 2, "max_turns": 4}, "credit": "solver",
        "problems_per_iteration": 2, "attempts_per_problem": 2}))
    env = trainer.env
    problems = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), env.make_problem([2, 3], 5),
                                      env.make_problem([2, 2], 4))
    params = trainer.init(jnp.int32(0)).params

    @jax.jit
    def label_cost(params):
        starts = jax.vmap(env.init_problem)(jax.tree_util.tree_map(lambda x: jnp.repeat(x, 2, axis=0), problems))
        trajectory, _ = rollout(env, trainer.policy_fn, params, starts, jax.random.key(0), num_turns=env.max_turns)
        _, _, ledger = trainer.advantages(params, trajectory, problems, jax.random.key(1), init_ledger())
        return ledger

    ledger = label_cost(params)
    assert int(ledger.label_env_steps) == 17 + 26
    assert int(ledger.main_env_steps) == 0 and int(ledger.critic_env_steps) == 0


# ----- no retrace: the training step traces and compiles once ------------------------------------------
def test_iterate_traces_once_across_iterations_and_seeds(tiny_arm):
    import jax.numpy as jnp

    trainer, iterate = tiny_arm(credit="anchor")  # shared with the test above; chex allows it one trace
    iterate(trainer.init(jnp.int32(0)))  # compiled here when this test runs without the one above
    with CompileEvents() as seen:
        for seed in (0, 1):
            state = trainer.init(jnp.int32(seed))
            for _ in range(3):
                state = iterate(state)
            assert int(state.iteration) == 3 and int(state.ledger.main_episodes) == 3 * 32
    assert [e for e in seen.events if "iterate" in str(e[1])] == []
    assert iterate._cache_size() == 1


def test_driver_programs_trace_once_across_segments_and_regimes(tmp_path):
    """After one run has compiled (or reused) the driver's programs, a run of the same arm with another
    budget, evaluation schedule and seeds traces and compiles nothing for any of its iterations,
    evaluations and segments."""
    run_training(tiny(num_evals=3, budget=384), str(tmp_path / "first"), progress=False)
    other = tiny(num_evals=4, budget=512, seed=5)
    programs = driver_module.compiled_programs(other)
    assert programs == driver_module.compiled_programs(tiny())  # one set of programs per arm
    compiled = [program._cache_size() for program in programs]
    with CompileEvents() as seen:
        run_training(other, str(tmp_path / "other"), progress=False)
    assert seen.events == []
    assert [program._cache_size() for program in programs] == compiled
    rows = read_jsonl(str(tmp_path / "other" / "metrics.jsonl"))
    assert [r["iteration"] for r in rows if r["seed_index"] == 0] == [0, 4, 8, 12, 16]  # 128 episodes a segment


def test_accelerator_mad_study_cell_at_quick_size():
    """`bench accelerator`'s mad-study cell with --quick: the preset's mc arm on this file's tiny task
    (its compiled programs are the mc ones above), two segments of one iteration, timed end to end."""
    import time

    from jaxcredit.benchmarks import accelerator_stages as stages

    result = stages.mad_study_cell_stage(stages.StageContext(quick=True, deadline=time.monotonic() + 1e6))
    assert result["config"] == tiny(credit="mc", credit_options={"continuations": 2}, budget=64, num_evals=2).to_dict()
    segments = result["segments"]
    assert [(s["eval_index"], s["iterations"], s["main_episodes"]) for s in segments] == [(1, 1, 64), (2, 1, 64)]
    assert result["wall_seconds"] > sum(s["seconds"] for s in segments) > 0
    assert result["steady_seconds_per_iteration"] == segments[1]["seconds"]
    assert result["full_cell_budget"] == 40_000 and result["mean"]["total_env_steps"] > 2 * 32 * 1
    extra = segments[1]["seconds"] / 64 * 2 * (40_000 - 64)
    assert result["full_cell_estimate_seconds"] == pytest.approx(result["wall_seconds"] + extra)
