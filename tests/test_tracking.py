"""`--log tensorboard|mlflow`: the scalars of `metrics.jsonl`, per seed, read back with each tool's own reader."""

import json
import os

import pytest

from jaxcredit.cli import main
from jaxcredit.tracking import STATE_FILE, check_trackers
from jaxcredit.train import config_from_dict, run_training
from tests.conftest import TINY_TRAIN

pytest.importorskip("tensorboardX")
pytest.importorskip("mlflow")


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    """A tiny run logged to TensorBoard and MLflow, stopped after one evaluation and resumed."""
    out = str(tmp_path_factory.mktemp("tracked") / "run")
    config = config_from_dict({**TINY_TRAIN, "credit": "outcome"})
    assert run_training(config, out, progress=False, stop_after_evals=1,
                        log=("tensorboard", "mlflow")) == {"stopped_after": 1}
    run_training(config, out, progress=False, resume=True, log=("tensorboard", "mlflow"))
    with open(os.path.join(out, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return out, config, rows


def _expected(rows, seed, key):
    return [(r["eval_index"], float(r[key])) for r in rows if r["seed_index"] == seed]


def test_tensorboard_event_files_hold_every_row_once_per_seed(logged_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, config, rows = logged_run
    for seed in range(config.num_seeds):
        events = EventAccumulator(os.path.join(out, "tensorboard", f"seed-{seed}"))
        events.Reload()
        for key in ("success_greedy", "total_env_steps", "main_episodes"):
            got = [(e.step, e.value) for e in events.Scalars(key)]
            expected = _expected(rows, seed, key)
            assert [e[0] for e in got] == [e[0] for e in expected], key  # resumed: no row twice
            assert [e[1] for e in got] == pytest.approx([e[1] for e in expected]), key


def test_mlflow_store_holds_the_scalars_and_the_config(logged_run):
    from mlflow.tracking import MlflowClient

    out, config, rows = logged_run
    client = MlflowClient(tracking_uri=f"sqlite:///{os.path.abspath(out)}/mlflow.db")
    experiment = client.get_experiment_by_name("run")
    runs = {r.data.tags["seed_index"]: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == [str(s) for s in range(config.num_seeds)]
    for seed, run in runs.items():
        history = client.get_metric_history(run.info.run_id, "success_greedy")
        got, expected = sorted((m.step, m.value) for m in history), _expected(rows, int(seed), "success_greedy")
        assert [e[0] for e in got] == [e[0] for e in expected]
        assert [e[1] for e in got] == pytest.approx([e[1] for e in expected])
        assert run.data.params["credit"] == "outcome"
        assert run.data.params["learning_rate"] == json.dumps(config.learning_rate)
    with open(os.path.join(out, STATE_FILE)) as f:
        assert json.load(f)["rows_logged"] == len(rows)


def test_bad_log_names_are_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(ValueError, match="--log must be one of"):
        check_trackers(["neptune"])
    with pytest.raises(SystemExit) as stop:
        main(["train", "--out", str(tmp_path / "run"), "--log", "neptune"])
    assert stop.value.code == 2 and not (tmp_path / "run").exists()
