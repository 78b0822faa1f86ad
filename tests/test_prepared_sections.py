"""Reports' sections on an arm's record of its work before training (`jaxcredit.analysis.prepared`):
the view of a registered arm's `prepared_file` renders each run's file under the view's title;
a run of an arm that is not registered, or without the file, adds nothing. No training.
"""

import json

from jaxcredit.analysis.prepared import prepared_sections
from jaxcredit.predictor import PREDICTOR_FILE

SEED = {"seed_index": 0, "predictor_env_steps": 1234, "predictor_policy_evals": 1000, "pairs": 10,
        "advantage_pearson": 0.5, "sign_agreement": 0.75, "sign_pairs": 8, "q_pearson": 0.25, "q_rmse": 0.125}
RECORD = {"config": {"predictor_states": 16, "predictor_continuations": 4, "predictor_steps": 50},
          "seeds": [SEED, {**SEED, "seed_index": 1, "predictor_env_steps": 1000, "advantage_pearson": 0.25}]}


def _run(path, credit, record=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"credit": credit}))
    if record is not None:
        (path / PREDICTOR_FILE).write_text(json.dumps(record))
    return str(path)


def test_a_predictor_run_gets_its_accuracy_table_and_others_nothing(tmp_path):
    runs = {"attempts/predictor": _run(tmp_path / "a", "predictor", RECORD),
            "attempts/outcome": _run(tmp_path / "b", "outcome"),
            "attempts/predictor-without-file": _run(tmp_path / "c", "predictor"),
            "attempts/plugin": _run(tmp_path / "d", "an-arm-not-registered-here", RECORD)}
    text = "\n".join(prepared_sections(runs, heading="##"))
    assert text.startswith("## Predictor label accuracy\n\n### attempts/predictor\n")
    assert text.count("### ") == 1
    assert "| 0 | 1,234 | 10 | 0.500 | 0.750 (8) | 0.250 | 0.125 |" in text
    assert "| **mean** | 1,117 | 20 | 0.375 | 0.750 | 0.250 | 0.125 |" in text
    assert prepared_sections({"attempts/outcome": runs["attempts/outcome"]}) == []


def test_a_record_without_scores_says_so(tmp_path):
    unscored = {"config": RECORD["config"], "seeds": [{"seed_index": 0, "predictor_env_steps": 5, "pairs": 0}]}
    text = "\n".join(prepared_sections({"run predictor": _run(tmp_path / "a", "predictor", unscored)}))
    assert "| 0 | 5 | 0 | n/a | n/a (0) | n/a | n/a |" in text
    assert "Not scored against exact values (`predictor_eval_states` = 0)." in text
