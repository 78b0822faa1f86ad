"""Population programs: points x seeds in one vmapped program give each member the metrics of its
separate run, compile once for any learning rates and entropy bonuses, resume, refuse points that
change the program, and old checkpoints (written before the state carried its hyper-parameters)
still resume.

Every run is `TINY_TRAIN` (tests/conftest.py) at a small budget, so the separate runs share the
driver's compiled programs with tests/test_train.py."""

import os

import jax
import numpy as np
import optax
import pytest
from flax import struct

from jaxcredit.train import config_from_dict, run_training
from jaxcredit.train import driver as driver_module
from jaxcredit.train.guards import checkpointed
from jaxcredit.train.population import population_configs, population_programs, run_population, train_population
from jaxcredit.train.rundir import RunDir, read_json, read_jsonl
from tests.conftest import TINY_TRAIN

BASE = {**TINY_TRAIN, "budget": 96, "num_evals": 3, "eval_problems": 32, "validation_problems": 16}
POINTS = [{"learning_rate": 3e-3, "entropy_coef": 0.0}, {"learning_rate": 3e-2, "entropy_coef": 0.05}]
INTEGERS_EXACT = (int, bool, str)


def rows_of(path):
    """A run's metrics rows without their timing."""
    rows = read_jsonl(os.path.join(path, "metrics.jsonl"))
    return [{k: v for k, v in r.items() if k != "segment_seconds"} for r in rows]


def assert_same_rows(got, want):
    """Equal row by row: counters, indices and names exactly, float metrics to float tolerance."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(b[key], INTEGERS_EXACT):
                assert a[key] == b[key], (key, a, b)
            else:
                assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (key, a, b)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each point as its own run (2 seeds), and both points as one population (4 members)."""
    root = tmp_path_factory.mktemp("population")
    base = config_from_dict(BASE)
    configs = population_configs(base, POINTS)
    separate = [run_training(config, str(root / f"separate-{k}"), progress=False) for k, config in enumerate(configs)]
    outs = [str(root / f"population-{k}") for k in range(len(POINTS))]
    population = train_population(base, POINTS, outs, progress=False)
    return {"root": root, "base": base, "configs": configs, "separate": separate, "population": population,
            "outs": outs}


def test_each_member_has_the_metrics_of_its_separate_run(runs):
    root = runs["root"]
    for k in range(len(POINTS)):
        alone, together = rows_of(root / f"separate-{k}"), rows_of(runs["outs"][k])
        assert_same_rows(together, alone)
        assert len(together) == 2 * 4  # seeds x (initial + 3 evaluations)
        curve = [r["validation_success_greedy"] for r in together if r["seed_index"] == 1]
        assert curve == pytest.approx([r["validation_success_greedy"] for r in alone if r["seed_index"] == 1])
        for got, want in zip(runs["population"][k]["seeds"], runs["separate"][k]["seeds"]):
            assert got["final_success"] == pytest.approx(want["final_success"])
            assert (got["total_env_steps"], got["main_episodes"]) == (want["total_env_steps"], want["main_episodes"])
    # the points train differently: each member trained with its own point's settings
    assert rows_of(runs["outs"][0]) != rows_of(runs["outs"][1])
    assert read_json(os.path.join(runs["outs"][1], "config.json"))["learning_rate"] == 3e-2
    assert os.path.isdir(os.path.join(runs["outs"][1], "policies", "seed-1"))


def test_other_settings_compile_nothing_new(runs, tmp_path):
    from tests.test_train import CompileEvents

    init, segment, evaluate = population_programs(runs["configs"][0])
    assert population_programs(runs["configs"][1]) == (init, segment, evaluate)  # one program for every point
    other = [{"learning_rate": 1e-3, "entropy_coef": 0.01}, {"learning_rate": 1e-2, "entropy_coef": 0.0}]
    with CompileEvents() as seen:
        train_population(runs["base"], other, [str(tmp_path / "a"), str(tmp_path / "b")], progress=False)
    assert [e for e in seen.events if e[0] == "backend_compile_duration" and e[1] in ("init", "run_until")] == []
    assert init._cache_size() == segment._cache_size() == 1


def test_a_stopped_population_resumes_to_the_same_rows_alone_or_together(runs, tmp_path):
    outs = [str(tmp_path / f"p{k}") for k in range(len(POINTS))]
    assert run_population(runs["configs"], outs, progress=False, stop_after_evals=1) == [{"stopped_after": 1}] * 2
    assert [max(r["eval_index"] for r in rows_of(out)) for out in outs] == [1, 1]
    run_population(runs["configs"][1:], outs[1:], progress=False, resume=True, stop_after_evals=2)  # ahead by one
    summaries = run_population(runs["configs"], outs, progress=False, resume=True)  # at evaluations 1 and 2
    assert [s["seeds"][0]["iterations"] for s in summaries] == [s["seeds"][0]["iterations"] for s in runs["population"]]
    for k, out in enumerate(outs):
        assert_same_rows(rows_of(out), rows_of(runs["outs"][k]))
    alone = str(tmp_path / "alone")  # a population's point resumes as a run of its own
    run_population(runs["configs"][:1], [alone], progress=False, stop_after_evals=2)
    run_training(runs["configs"][0], alone, progress=False, resume=True)
    assert_same_rows(rows_of(alone), rows_of(runs["root"] / "separate-0"))


@pytest.mark.parametrize("point, field", [
    ({"d_model": 64}, "d_model"),
    ({"credit": "mc"}, "credit"),
    ({"env_overrides.length": 4}, "env_overrides.length"),
    ({"budget": 128}, "budget"),
    ({"learnin_rate": 1e-3}, "learnin_rate"),
])
def test_a_point_that_changes_the_program_is_refused_naming_the_field(point, field):
    with pytest.raises(ValueError, match=rf"population point 1.*{field}") as error:
        population_configs(config_from_dict(BASE), [{}, point])
    assert "\n" not in str(error.value)


def test_an_option_of_the_arm_is_named(runs, tmp_path):
    base = config_from_dict({**BASE, "credit": "mc", "credit_options": {"continuations": 2}})
    with pytest.raises(ValueError, match=r"changes credit_options\.continuations \(2 in point 0, 3 here\)"):
        population_configs(base, [{}, {"credit_options.continuations": 3}])
    with pytest.raises(ValueError, match="share a run directory"):
        run_population(runs["configs"], [str(tmp_path / "x")] * 2, progress=False)
    assert not (tmp_path / "x").exists()


@struct.dataclass
class OldTrainState:
    """The training state as checkpoints held it before it carried its hyper-parameters."""

    params: object
    opt_state: object
    ledger: object
    iteration: jax.Array
    seed: jax.Array
    last_iteration_env_steps: jax.Array
    prepared: object = None
    nonfinite: object = None


def test_a_checkpoint_of_the_old_state_resumes(runs, tmp_path):
    """A run stopped after its first evaluation whose latest checkpoint is rewritten as the old
    state's pytree resumes, alone and in a population, to the uninterrupted run's rows."""
    for k, how in enumerate(("alone", "population")):
        out = str(tmp_path / how)
        config = runs["configs"][k]
        run_training(config, out, progress=False, stop_after_evals=1)
        run = RunDir(out)
        info = run.checkpoint_info("latest")
        init, _, _ = driver_module.compiled_programs(config)
        fresh = driver_module._replicated(init(np.arange(2, dtype=np.int32) + config.seed), 1)
        state, _ = run.restore_checkpoint("latest", checkpointed(fresh))
        old = OldTrainState(**{name: getattr(state, name) for name in ("params", "opt_state", "ledger", "iteration",
                                                                        "seed", "last_iteration_env_steps")})
        old_optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))
        assert (jax.tree_util.tree_structure(old.opt_state)
                == jax.tree_util.tree_structure(jax.vmap(old_optimizer.init)(state.params)))
        run.save_checkpoint("latest", info["eval_index"], old, {k: v for k, v in info.items() if k != "directory"})
        run.close()
        if how == "alone":
            run_training(config, out, progress=False, resume=True)
        else:
            run_population([config], [out], progress=False, resume=True)
        assert_same_rows(rows_of(out), rows_of(runs["root"] / f"separate-{k}"))


def test_a_tuning_phase_as_populations_records_what_separate_runs_record(monkeypatch, tmp_path):
    """Halving over two learning rates (rungs at evaluations 2 and 3): with `tune.population` each
    rung's pending points train as one population, each point in its own directory, and the record
    and every point's rows are those of the phase run point by point."""
    from jaxcredit.train import SweepSpec
    from jaxcredit.train import backends as backends_module
    from jaxcredit.train.sweep import _design, run_tuning, spec_record

    tune = {"grid": {"learning_rate": [3e-3, 3e-2]}, "num_seeds": 2, "seed": 100, "budget": 96, "rule": "halving",
            "eta": 2, "rungs": 2, "extend": 0}
    spec = SweepSpec(name="tuned", description="test", base=BASE, arms={"outcome": {"credit": "outcome"}},
                     budgets={"attempts": 96}, regimes=("attempts",), tune=tune)
    together = SweepSpec(**{**spec.__dict__, "tune": {**tune, "population": True}})
    straight = run_tuning(spec, str(tmp_path / "straight"), progress=False)
    calls = []

    def counted(configs, outs, **options):
        calls.append((len(configs), options["stop_after_evals"]))
        return run_population(configs, outs, **options)

    monkeypatch.setattr(backends_module, "run_population", counted)
    assert run_tuning(together, str(tmp_path / "together"), progress=False) == straight
    assert calls[0] == (2, 2)  # the first rung: both points in one program, paused at evaluation 2
    for point in straight["arms"]["outcome"]["points"]:
        name = point["point"]
        assert_same_rows(rows_of(tmp_path / "together" / "tune" / "outcome" / name),
                         rows_of(tmp_path / "straight" / "tune" / "outcome" / name))
        assert os.path.exists(tmp_path / "together" / "tune" / "outcome" / name / "timing.json")
    assert _design(spec_record(spec, None)) == _design(spec_record(together, None))  # resuming may switch it
    with pytest.raises(ValueError, match="tune.population must be true or false"):
        SweepSpec(**{**spec.__dict__, "tune": {**tune, "population": 1}}).check()
