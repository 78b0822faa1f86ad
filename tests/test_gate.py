"""The learnability gate: its config, its record, and how an arithmetic results page shows it
(a page whose gate failed says so first and compares no arms)."""

import json
import shutil
from pathlib import Path

import pytest

from jaxcredit.analysis import write_results_page
from jaxcredit.analysis.gates import gate_status
from jaxcredit.cli import main
from jaxcredit.train.gate import GATE_NAME, gate_config, gate_record

DATA = Path(__file__).parent / "data"


def test_gate_config_imitates_the_tie_broken_optimal_policy_on_the_studys_family():
    config = gate_config(count=3, family="small_targets", fields={"budget": 64, "env_overrides": {"max_turns": 5}})
    assert (config.objective, config.credit, config.credit_options.policy, config.credit_options.tie_break) == (
        "hard", "solver", "optimal", "fastest")
    assert dict(config.env_overrides) == {"count": 3, "family": "small_targets", "include_turns_left": True,
                                          "max_turns": 5}
    assert config.eval_families == ("small_targets",) and config.budget == 64
    with pytest.raises(ValueError, match="the gate fixes credit, objective"):
        gate_config(fields={"objective": "pg", "credit": "outcome"})
    # the environment is built for the gate's family, so its bound covers the family's numbers
    assert gate_config(family="large_values").eval_families == ("large_values",)
    with pytest.raises(ValueError, match=r"config.env_overrides: arithmetic.max_number must be >= 99"):
        gate_config(family="large_values", fields={"env_overrides": {"max_number": 9}})


def test_gate_record_reads_each_seeds_last_evaluation():
    config = gate_config(count=3, fields={"budget": 64, "num_seeds": 2})
    rows = [{"seed_index": s, "eval_index": e, "success_greedy": v, "main_episodes": 32 * e,
             "total_env_steps": 1000 * e, "label_env_steps": 900 * e}
            for s, e, v in ((0, 0, 0.0), (0, 2, 0.95), (0, 1, 0.5), (1, 2, 0.8), (1, 0, 0.0))]
    record = gate_record(config, rows, {"mean": {"final_success": 0.875}}, threshold=0.9, run_seconds=12.5)
    assert record["success"] == {"default": pytest.approx(0.875)} and record["success_per_seed"] == {
        "default": [0.95, 0.8]}
    assert record["passed"] is False and record["cost"]["total_env_steps"] == 2000.0
    assert record["rung"] == {"policy_input": "tokens", "afterstate_lookahead": 0, "count": 3, "family": "default",
                              "include_turns_left": True}
    passed = gate_record(config, rows, {"mean": {"final_success": 0.875}}, threshold=0.8, run_seconds=1.0)
    assert passed["passed"] is True


def _arithmetic_sweep(tmp_path, records: dict) -> Path:
    """The committed tiny sweep relabelled as an arithmetic study, with hand-made gate records."""
    sweep = tmp_path / "sweep"
    shutil.copytree(DATA / "tiny-sweep", sweep)
    spec = json.loads((sweep / "sweep_spec.json").read_text())
    spec["base"] = {**spec["base"], "env": "arithmetic", "env_overrides": {"count": 3}}
    (sweep / "sweep_spec.json").write_text(json.dumps(spec))
    for name, (count, passed, success) in records.items():
        (sweep / "gates" / name).mkdir(parents=True)
        record = {"kind": "learnability-gate", "version": 1, "threshold": 0.9, "passed": passed,
                  "success": {"default": success}, "run_seconds": 75.0,
                  "rung": {"policy_input": "tokens", "afterstate_lookahead": 0, "count": count, "family": "default",
                           "include_turns_left": True},
                  "cost": {"main_episodes": 4000.0, "total_env_steps": 123456.0, "label_env_steps": 100000.0}}
        (sweep / "gates" / name / GATE_NAME).write_text(json.dumps(record))
    return sweep


def test_a_failed_gate_comes_first_and_no_arm_is_compared(tmp_path):
    sweep = _arithmetic_sweep(tmp_path, {"tokens-3": (3, False, 0.41), "tokens-4": (4, True, 0.95)})
    page = tmp_path / "pages" / "study.md"
    write_results_page(str(sweep), str(page))
    text = page.read_text()
    body = text.split("-->", 1)[1].lstrip()
    assert body.startswith("## Learnability gate\n\n**Learnability gate: FAILED** on the study's problems (tokens; "
                           "3 numbers, default)")
    for compared in ("## Findings", "## Paired comparisons", "## Learning curves", "## Time to a success threshold"):
        assert compared not in text
    assert ("| tokens-3 | tokens | 3 numbers, default | yes | default 0.410 | 0.9 | failed | 4,000 | 123,456 | "
            "01m15s | [tokens-3.json](study/gates/tokens-3.json) |") in text
    assert "| tokens-4 | tokens | 4 numbers, default | yes | default 0.950 | 0.9 | passed |" in text
    summary = json.loads((tmp_path / "pages" / "study" / "summary.json").read_text())
    assert summary["gate"] == {"status": "failed", "records": ["tokens-3", "tokens-4"]}
    assert json.loads((tmp_path / "pages" / "study" / "gates" / "tokens-3.json").read_text())["passed"] is False


def test_a_passed_gate_keeps_the_comparison_and_a_missing_one_is_named(tmp_path):
    sweep = _arithmetic_sweep(tmp_path, {"tokens-3": (3, True, 0.97)})
    page = tmp_path / "pages" / "study.md"
    write_results_page(str(sweep), str(page))
    text = page.read_text()
    assert "**Learnability gate: passed** on the study's problems (tokens; 3 numbers, default)" in text
    assert text.index("## Learnability gate") < text.index("## Paired comparisons")
    spec = json.loads((sweep / "sweep_spec.json").read_text())
    assert gate_status({**spec, "base": {**spec["base"], "env_overrides": {}}}, {}) == "not run"


def test_gate_command_trains_writes_gate_json_and_prints_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["gate", "--out", "gate", "--count", "2", "--no-progress", "--set", "budget=16", "--set",
                 "num_evals=1", "--set", "eval_problems=8", "--set", "validation_problems=8", "--set", "d_model=16",
                 "--set", "mlp_dim=32", "--set", "num_layers=1", "--set", "num_heads=2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads((tmp_path / "gate" / GATE_NAME).read_text())
    assert out == (f"learnability gate (tokens, 2 numbers, default): held-out greedy success default "
                   f"{record['success']['default']:.3f} against 0.9: {'PASSED' if record['passed'] else 'FAILED'} "
                   f"in {record['run_seconds']:.0f}s; gate/{GATE_NAME}\n")
    assert record["cost"]["main_episodes"] >= 16 and record["cost"]["label_env_steps"] > 0
    assert record["config"]["credit_options"]["tie_break"] == "fastest" and record["machine"]["cpus"] >= 1
    assert (tmp_path / "gate" / "summary.json").exists()


def test_page_compares_the_arms_on_every_evaluation_family(tmp_path):
    """Metrics with two families (hand-made from the tiny sweep's: `easy` = success, `hard` = success / 2)
    give a paired table and curves per family, with each family's own numbers."""
    sweep = tmp_path / "sweep"
    shutil.copytree(DATA / "tiny-sweep", sweep)
    for metrics in sweep.rglob("metrics.jsonl"):
        rows = [json.loads(line) for line in metrics.read_text().splitlines()]
        for row in rows:
            row["success_greedy/easy"], row["success_greedy/hard"] = row["success_greedy"], row["success_greedy"] / 2
        metrics.write_text("".join(json.dumps(row) + "\n" for row in rows))
    page = tmp_path / "pages" / "families.md"
    write_results_page(str(sweep), str(page))
    text = page.read_text()
    section = text[text.index("## Per evaluation family"): text.index("## Time to a success threshold")]
    assert "mean over the 2 evaluation families (easy, hard)" in section
    last = {}
    for line in (sweep / "attempts" / "mc" / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["seed_index"] not in last or row["eval_index"] > last[row["seed_index"]]["eval_index"]:
            last[row["seed_index"]] = row
    final = sum(r["success_greedy"] for r in last.values()) / len(last)
    easy, hard = section.split("### Family: hard")
    assert f"| mc | outcome | 2 | {final:.3f} / " in easy and f"| mc | outcome | 2 | {final / 2:.3f} / " in hard
    assert "(families/plots/attempts-hard-curve-attempts.png)" in hard
    assert (tmp_path / "pages" / "families" / "plots" / "attempts-hard-curve-attempts.png").exists()
    summary = json.loads((tmp_path / "pages" / "families" / "summary.json").read_text())
    assert set(summary["families"]) == {"easy", "hard"}


def test_sweep_table_compares_the_arms_on_every_evaluation_family():
    """`summarize` keeps each family's final and average success per seed, and the sweep's table
    (`table.md`) has a paired table per family with those numbers (hand-made rows)."""
    from jaxcredit.train import get_preset, summarize
    from jaxcredit.train.sweep import format_table, sweep_table

    def rows(easy, hard):  # two seeds, evaluations 0 and 1; the mean over families as the trainer writes it
        return [{"seed_index": s, "eval_index": e, "iteration": e, "success_greedy": (a + b) / 2,
                 "success_greedy/easy": a, "success_greedy/hard": b, "success_sampled": 0.0,
                 "main_episodes": 10 * e, "total_env_steps": 100 * e}
                for s in range(2) for e, a, b in ((0, 0.0, 0.0), (1, easy[s], hard[s]))]

    spec = get_preset("arithmetic-study")
    outcome, arm = summarize(rows([0.5, 0.7], [0.1, 0.1]), 2), summarize(rows([0.9, 0.8], [0.1, 0.3]), 2)
    assert outcome["seeds"][1]["by_family"] == {"easy": {"final_success": 0.7, "average_success": 0.7},
                                                "hard": {"final_success": 0.1, "average_success": 0.1}}
    table = sweep_table({("attempts", "outcome"): outcome, ("attempts", "solver-uniform"): arm}, spec)
    easy = table["families"]["easy"]["regimes"]["attempts"]["solver-uniform"]
    assert easy["final_success"] == pytest.approx(0.85) and easy["reference_final_success"] == pytest.approx(0.6)
    assert table["regimes"]["attempts"]["solver-uniform"]["final_success"] == pytest.approx(0.525)
    text = format_table(table)
    assert "## Per evaluation family" in text and "mean over the 2 evaluation families (easy, hard)" in text
    hard = text.split("### Family: hard")[1]
    assert "| solver-uniform | outcome | 2 | 0.200 / 0.100 |" in hard
