"""Equal tuning as a sweep feature, policy evaluations as a second currency, and matching on either.

One tiny tuned sweep on Routine (horizon 4, every episode exactly 4 accepted actions, so every
count is a hand count): outcome vs mc (`q`, K = 1: a forced first action is an env step but not a
policy evaluation, so the two currencies differ), tuned on learning rate {0, 0.03} (outcome also
on its baseline), the attempts regime and the matched regime in both currencies.

Hand counts per episode (H = 4 turns, A = 2 actions, K = 1): main 4 env steps = 4 policy evals;
mc's label work branches every live state s_t (t = 0..3) on each legal action: A K (H - t) env
steps, A K (H - t - 1) policy evaluations, so 2 x 10 = 20 env steps and 2 x 6 = 12 evaluations.
64 attempts: mc 64 x 24 = 1,536 env steps and 64 x 16 = 1,024 policy evaluations; outcome
64 x 4 = 256 of each, 4 x 16 = 64 per iteration.
"""

import json
import os

import numpy as np
import pytest

from jaxcredit.analysis import write_results_page
from jaxcredit.comparison import flops_text
from jaxcredit.overrides import apply_overrides
from jaxcredit.policy import PolicyConfig, TaskSizes, make_policy_from_sizes, policy_eval_flops
from jaxcredit.train import PRESETS, SweepSpec, run_sweep, tune_points
from jaxcredit.train.rundir import read_jsonl
from jaxcredit.train.sweep import config_policy_eval_flops

ROUTINE = {"horizon": 4, "density": 0.5, "num_choices": 2}
BASE = {"env": "routine", "env_overrides": ROUTINE, "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64,
        "problems_per_iteration": 4, "attempts_per_problem": 4, "eval_problems": 32, "validation_problems": 32,
        "num_seeds": 2, "num_evals": 2, "holdout_fraction": 0.0, "mc_variant": "q", "mc_continuations": 1}
TUNE = {"grid": {"learning_rate": [0.0, 0.03]}, "num_seeds": 2, "seed": 100, "budget": 32, "score": "final",
        "extend": 0}
SPEC = SweepSpec(name="tuned", description="tiny tuned sweep", base=BASE,
                 arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc"}}, budgets={"attempts": 64},
                 regimes=("attempts", "matched"), match_on=("env_steps", "policy_evals"), tune=TUNE)
PER_EPISODE = {"main": (4, 4), "label": (20, 12)}  # (env steps, policy evals) of one attempt, by hand


@pytest.fixture(scope="module")
def tuned_sweep(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("tuned") / "sweep")
    return out, run_sweep(SPEC, out, progress=False)


def _last(rows):
    last = {}
    for row in rows:
        if row["seed_index"] not in last or row["eval_index"] > last[row["seed_index"]]["eval_index"]:
            last[row["seed_index"]] = row
    return [last[s] for s in sorted(last)]


def test_policy_eval_flops_is_the_hand_count_and_near_xla():
    # one block (the last: keys and values of 9 tokens, the rest for the last token), D 32, M 64, A 4:
    # 2 (2*9*32*32 + 2*32*32 + 2*32*64) + 4*9*32 + 2*32*(4+1) = 49,152 + 1,152 + 320
    config, sizes = PolicyConfig(32, 1, 2, 64), TaskSizes(5, 9, 4)
    assert policy_eval_flops(config, sizes) == 50_624
    # two blocks add a full one: 2*9*(4*32*32 + 2*32*64) + 4*81*32
    assert policy_eval_flops(PolicyConfig(32, 2, 2, 64), sizes) == 50_624 + 2 * 9 * (4096 + 4096) + 4 * 81 * 32
    import jax
    import jax.numpy as jnp

    functions = make_policy_from_sizes(config, sizes)
    params = functions.init_fn(jax.random.key(0))
    cost = jax.jit(functions.policy_fn).lower(params, jnp.zeros((1, 9), jnp.int32),
                                              jnp.ones((1, 4), bool)).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    if cost and cost.get("flops"):  # XLA also counts LayerNorm and softmax: a little more, never less
        assert 1.0 <= cost["flops"] / 50_624 < 1.3


def test_grid_points_cross_the_shared_axes_with_the_arms_own_in_order():
    tune = {"grid": {"learning_rate": [3e-4, 1e-3], "entropy_coef": [0.0, 0.01]},
            "arm_grid": {"outcome": {"outcome_baseline": ["grpo", "rloo"]}}}
    assert tune_points(tune, "mc") == [{"learning_rate": 3e-4, "entropy_coef": 0.0},
                                       {"learning_rate": 3e-4, "entropy_coef": 0.01},
                                       {"learning_rate": 1e-3, "entropy_coef": 0.0},
                                       {"learning_rate": 1e-3, "entropy_coef": 0.01}]
    outcome = tune_points(tune, "outcome")
    assert len(outcome) == 8 and outcome[:2] == [{"learning_rate": 3e-4, "entropy_coef": 0.0, "outcome_baseline": b}
                                                 for b in ("grpo", "rloo")]
    assert PRESETS["mad-study-tuned"].tuning_configs()[("outcome", "p01")].credit_options.baseline == "rloo"
    tuned = PRESETS["mad-study-tuned"]  # every mad-study arm and the predictor, each on the same grid
    assert list(tuned.arms) == ["outcome", "mc", "exact", "critic", "predictor"] and tuned.arms["predictor"] == {
        "credit": "predictor"}
    assert len(tuned.tuning_configs()) == 12 + 4 * 6  # outcome also on its two baselines


def test_overrides_by_dotted_name():
    values = {"learning_rate": 1e-3, "env_overrides": {"horizon": 4}}
    assert apply_overrides(values, {"learning_rate": 3e-3, "env_overrides.density": 1.0}) == {
        "learning_rate": 3e-3, "env_overrides": {"horizon": 4, "density": 1.0}}
    assert apply_overrides({}, {"credit_options.baseline": "rloo"}) == {"credit_options": {"baseline": "rloo"}}
    assert values == {"learning_rate": 1e-3, "env_overrides": {"horizon": 4}}  # a copy
    with pytest.raises(ValueError, match="not an object of keys"):
        apply_overrides(values, {"learning_rate.x": 1})


def test_area_score_averages_the_evaluations_after_the_first_and_breaks_ties_at_the_ceiling(tmp_path):
    """Two points that both end at 1.0 tie on the final score, and the area breaks the tie; on the
    area (the default score) the faster one wins outright. The first evaluation (the untrained
    network) is left out of the area."""
    from jaxcredit.train.tuning import tuning_record, validation_scores

    def rows(curve_per_seed):
        return [{"seed_index": s, "eval_index": j, "validation_success_greedy": v}
                for s, curve in enumerate(curve_per_seed) for j, v in enumerate(curve)]

    slow, fast = rows([[0.0, 0.5, 1.0], [0.2, 0.25, 1.0]]), rows([[0.0, 1.0, 1.0], [0.2, 0.75, 1.0]])
    assert validation_scores(slow, "final") == validation_scores(fast, "final") == [1.0, 1.0]
    assert validation_scores(slow) == [0.75, 0.625] and validation_scores(fast) == [1.0, 0.875]
    assert validation_scores(fast, upto=1) == [1.0, 0.75] and validation_scores(fast, "final", upto=1) == [1.0, 0.75]
    tune = {"grid": {"learning_rate": [1e-3, 3e-3]}, "num_seeds": 2, "extend": 0}
    for k, point in enumerate((slow, fast)):
        os.makedirs(tmp_path / "tune" / "mc" / f"p{k:02d}")
        with open(tmp_path / "tune" / "mc" / f"p{k:02d}" / "metrics.jsonl", "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in point))
    final = tuning_record({**tune, "score": "final"}, ["mc"], str(tmp_path), budget=8, num_evals={"mc": 2})
    area = tuning_record(tune, ["mc"], str(tmp_path), budget=8, num_evals={"mc": 2})
    assert final["score"] == "final" and final["arms"]["mc"]["tie"] == {"points": ["p00", "p01"],
                                                                          "broken_by": "other score"}
    assert final["arms"]["mc"]["chosen"] == "p01"  # not the first grid point: the tie goes to the faster one
    assert area["arms"]["mc"]["chosen"] == "p01" and area["score"] == "area" and "area under" in area["rule"]
    assert area["arms"]["mc"]["points"][1]["mean"] == 0.9375 and "tie" not in area["arms"]["mc"]
    assert area["arms"]["mc"]["points"][1]["other"]["mean"] == 1.0
    # a point directory trained at another setting than its grid point is refused, not scored
    for k, rate in enumerate((1e-3, 3e-3)):
        with open(tmp_path / "tune" / "mc" / f"p{k:02d}" / "config.json", "w") as f:
            json.dump({"learning_rate": rate, "num_evals": 2, "credit_options": {"continuations": 2}}, f)
    assert tuning_record(tune, ["mc"], str(tmp_path), budget=8)["arms"]["mc"]["chosen"] == "p01"
    with pytest.raises(ValueError, match=r"p00 is not the grid point it is named for: learning_rate is 0.001 there, "
                                         r"0.003 in the grid"):
        tuning_record({**tune, "grid": {"learning_rate": [3e-3, 1e-3]}}, ["mc"], str(tmp_path), budget=8)


def test_bad_tune_and_match_on_are_refused_before_any_work(tmp_path):
    import dataclasses

    for change, message in ((dict(tune={**TUNE, "arm_grid": {"critic": {"x": [1]}}}), "unknown arm 'critic'"),
                            (dict(tune={**TUNE, "grid": {}}), "tune.grid must be a non-empty object"),
                            (dict(tune={**TUNE, "grid": {"learning_rate": [-1.0]}}), "config.learning_rate"),
                            (dict(tune={**TUNE, "seeds": 3}), r"unknown field\(s\) \['seeds'\]"),
                            (dict(tune={**TUNE, "score": "best"}), "tune.score must be one of final, area"),
                            (dict(match_on=("flops",)), "match_on must list one or both of env_steps, policy_evals")):
        with pytest.raises(ValueError, match=message):
            run_sweep(dataclasses.replace(SPEC, **change), str(tmp_path / "x"), progress=False)
    assert not os.path.exists(tmp_path / "x")


def test_tuning_picks_the_best_validation_setting(tuned_sweep):
    out, _ = tuned_sweep
    record = json.load(open(os.path.join(out, "tuning.json")))
    assert record["seeds"] == [100, 101] and record["budget"] == 32
    for arm, settings in (("outcome", [0.0, 0.03]), ("mc", [0.0, 0.03])):
        entry = record["arms"][arm]
        means = []
        for k, rate in enumerate(settings):
            run = os.path.join(out, "tune", arm, f"p{k:02d}")
            config = json.load(open(os.path.join(run, "config.json")))
            assert config["learning_rate"] == rate and config["seed"] == 100 and config["num_seeds"] == 2
            assert config["budget"] == 32 and config["budget_counter"] == "main_episodes"
            rows = read_jsonl(os.path.join(run, "metrics.jsonl"))
            final = [r["validation_success_greedy"] for r in _last(rows)]
            if rate == 0.0:  # no learning: the validation success of the initial network, at every evaluation
                assert final == [r["validation_success_greedy"] for r in rows if r["eval_index"] == 0]
            assert entry["points"][k]["scores"] == final and entry["points"][k]["n"] == 2
            means.append(np.mean(final))
        best = int(np.argmax(means))
        spread = np.hypot(*[np.std(p["scores"], ddof=1) / np.sqrt(2) for p in entry["points"]])
        if abs(means[0] - means[1]) <= spread:  # a tie within the standard error: reported, and broken by the area
            assert entry["tie"]["points"] == ["p00", "p01"] and entry["tie"]["broken_by"] != "grid order"
            best = int(entry["chosen"][1:])
        assert entry["chosen"] == f"p{best:02d}"
        # the study runs the arm at its chosen setting, on its own seeds; matched partners too
        partners = [("matched", arm), ("matched-policy-evals", arm)] if arm == "outcome" else []
        for cell in [("attempts", arm)] + partners:
            config = json.load(open(os.path.join(out, *cell, "config.json")))
            assert config["learning_rate"] == settings[best] and config["seed"] == 0, cell


def test_policy_evaluation_counts_are_the_hand_counts(tuned_sweep):
    out, table = tuned_sweep
    for arm, accounts in (("outcome", ("main",)), ("mc", ("main", "label"))):
        rows = read_jsonl(os.path.join(out, "attempts", arm, "metrics.jsonl"))
        for row in rows:
            attempts = row["main_episodes"]
            assert attempts == 16 * row["iteration"]
            for account, (steps, evals) in PER_EPISODE.items():
                charged = account in accounts
                assert row[f"{account}_env_steps"] == (steps * attempts if charged else 0), (arm, account, row)
                assert row[f"{account}_policy_evals"] == (evals * attempts if charged else 0), (arm, account, row)
        summary = json.load(open(os.path.join(out, "attempts", arm, "summary.json")))
        expected = sum(PER_EPISODE[a][1] for a in accounts) * 64
        assert [s["total_policy_evals"] for s in summary["seeds"]] == [expected] * 2
    # the table's budget column names both currencies and the FLOPs
    flops = config_policy_eval_flops(SPEC.arm_config("mc"))
    assert flops == policy_eval_flops(PolicyConfig(32, 1, 2, 64), TaskSizes(4 + 2 + 2, 2, 2))
    assert table["regimes"]["attempts"]["mc"]["budget"].startswith(
        f"mc: 64 attempts = 1,536 env steps = 1,024 policy evals ({flops_text(1024 * flops)} FLOPs) vs outcome: "
        f"64 attempts = 256 env steps = 256 policy evals")


def test_matching_on_policy_evaluations_gives_the_label_arms_count(tuned_sweep):
    out, table = tuned_sweep
    assert list(table["regimes"]) == ["attempts", "matched", "matched-policy-evals"]
    for regime, key, target in (("matched", "total_env_steps", 1_536), ("matched-policy-evals", "total_policy_evals",
                                                                         1_024)):
        view = os.path.join(out, regime, "outcome", "to-mc")
        record = json.load(open(os.path.join(view, "matched.json")))
        assert record["targets"] == [target, target]
        assert record.get("match_on", "env_steps") == key[len("total_"):]
        for row in _last(read_jsonl(os.path.join(view, "metrics.jsonl"))):
            # within one iteration (64 of either); 64 divides both targets, so exactly
            assert target <= row[key] < target + 64 and row[key] == target, (regime, row)
            assert row["label_env_steps"] == 0
    # the policy-evaluations view gives outcome fewer attempts than the env-steps view: 1,024 / 4 vs 1,536 / 4
    assert table["regimes"]["matched-policy-evals"]["mc"]["spend"]["reference"]["main_episodes"] == 256
    assert table["regimes"]["matched"]["mc"]["spend"]["reference"]["main_episodes"] == 384
    assert table["regimes"]["matched-policy-evals"]["mc"]["budget"].startswith(
        "outcome: 1,024 policy evals (")


def test_page_shows_the_tuning_table_and_both_matched_views(tuned_sweep, tmp_path):
    out, _ = tuned_sweep
    page = write_results_page(out, str(tmp_path / "page.md"))
    text = open(page).read()
    record = json.load(open(os.path.join(out, "tuning.json")))
    assert "## Equal tuning" in text and "tuning seeds, not the study's paired seeds" in text
    assert "on the same grid, `learning_rate` {0.0, 0.03}, at equal attempts: each grid point ran 2 seed(s)" in text
    for arm, entry in record["arms"].items():
        for point in entry["points"]:
            chosen = "**chosen**" if point["point"] == entry["chosen"] else ""
            setting = ", ".join(f"{k}={v}" for k, v in point["overrides"].items())
            scores = (f"{point['mean']:.3f} ± {point['se']:.3f} | {point['other']['mean']:.3f} ± "
                      f"{point['other']['se']:.3f} | " + ", ".join(f"{x:.3f}" for x in point["scores"]))
            assert f"| {arm} | {point['point']} | {setting} | {point['extension']} | {scores} | 2 |" in text
            assert text.split(f"| {arm} | {point['point']} | {setting} |")[1].split("\n")[0].endswith(
                f"| {chosen} |")
    assert "### Regime: matched (" in text and "### Regime: matched-policy-evals (" in text
    assert ("- **matched-policy-evals** (each label arm against the arms without label work given exactly its total "
            "policy evaluations, seed by seed): ") in text
    flops = flops_text(1024 * config_policy_eval_flops(SPEC.arm_config("mc")))
    assert f"| mc | 64 | 256 / 1,280 / 0 / 0 | 1,536 | 83.3% | 256 / 768 / 0 / 0 | 1,024 | {flops} |" in text
    assert "| measured run time |" in text and "tune " in text.split("| measured run time |")[1].split("\n")[0]
    summary = json.load(open(tmp_path / "page" / "summary.json"))
    assert summary["tuning"] == record


def test_halving_sweep_pauses_cut_points_at_their_rung_and_resumes_to_the_same_record(tmp_path):
    """A real halving tuning phase (3 points, eta 3, rungs ending at evaluations 1 and 3): every point
    reaches evaluation 1, only the kept ones evaluation 3; a phase stopped after its first rung and
    resumed writes the same record and the same curves as one run straight through."""
    import dataclasses

    from jaxcredit.train.backends import Cell, run_cells
    from jaxcredit.train.sweep import run_tuning

    tune = {"grid": {"learning_rate": [0.0, 0.01, 0.03]}, "num_seeds": 2, "seed": 100, "budget": 48,
            "rule": "halving", "eta": 3, "rungs": 2, "extend": 0}
    spec = dataclasses.replace(SPEC, arms={"outcome": {"credit": "outcome"}}, tune=tune, regimes=("attempts",),
                               match_on=("env_steps",), base={**BASE, "num_evals": 3})
    straight = str(tmp_path / "straight")
    record = run_tuning(spec, straight, progress=False)
    entry = record["arms"]["outcome"]
    kept = [p["point"] for p in entry["points"] if p["rungs"][0]["continued"]]
    for point in entry["points"]:
        rows = read_jsonl(os.path.join(straight, "tune", "outcome", point["point"], "metrics.jsonl"))
        last = max(r["eval_index"] for r in rows)
        assert last == (3 if point["point"] in kept else 1), point
        finished = os.path.exists(os.path.join(straight, "tune", "outcome", point["point"], "summary.json"))
        assert finished == (point["point"] in kept)
    assert entry["chosen"] in kept and len(kept) >= 1
    # stopped after the first rung, then resumed
    resumed = str(tmp_path / "resumed")
    first = spec.tuning_plan(resumed)
    assert [(r.point, r.evals) for r in first.pending] == [("p00", 1), ("p01", 1), ("p02", 1)]
    run_cells([Cell(("tune", "outcome", r.point), spec.tuning_config("outcome", r.overrides),
                    os.path.join(resumed, "tune", "outcome", r.point), False, r.point, stop_after_evals=1)
               for r in first.pending], progress=False)
    assert run_tuning(spec, resumed, progress=False) == record
    for point in kept:
        paths = [os.path.join(root, "tune", "outcome", point, "metrics.jsonl") for root in (straight, resumed)]
        strip = [[{k: v for k, v in r.items() if k != "segment_seconds"} for r in read_jsonl(p)] for p in paths]
        assert strip[0] == strip[1]
