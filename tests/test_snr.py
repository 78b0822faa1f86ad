"""Gradient SNR across decision densities: the measured log-log slope of SNR(exact)/SNR(outcome)
agrees with the closed form of docs/density.md on a small configuration; hand values; bad input."""

import numpy as np
import pytest

from jaxcredit.analysis.snr import SnrConfig, measure_snr, predicted_ratio, predicted_slope, tabular_policy
from jaxcredit.cli import main
from jaxcredit.envs import make

DENSITIES = (0.125, 0.25, 0.5, 1.0)  # D = 1, 2, 4, 8 decisions of H = 8


def test_measured_slope_within_its_interval_of_the_predicted_one():
    """Tabular policy at uniform init, rloo baseline, 64 batches of 8 problems x 4 attempts per density:
    the prediction (slope 0.299, ratios 3.67 .. 6.92) lies inside the jackknife interval of the measured
    slope, and every measured ratio is within 25% of its predicted value."""
    env = make("routine", horizon=8, density=1.0, failure="probabilistic", survival=0.5, num_choices=2)
    init_fn, policy_fn = tabular_policy(env)
    config = SnrConfig(densities=DENSITIES, estimators=("outcome", "exact"), num_batches=64, num_blocks=8,
                       problems_per_batch=8, group_size=4, baseline="rloo", seed=1)
    summary = measure_snr(env, policy_fn, init_fn(None), config)
    slope, ratios = predicted_slope(env, DENSITIES, group_size=4)
    assert slope == pytest.approx(0.2989, abs=1e-3)
    fit = summary["fit"]["exact/outcome"]
    assert fit["slope_low"] <= slope <= fit["slope_high"], (fit, slope)
    assert fit["slope_high"] - fit["slope_low"] < 0.5  # an interval that can miss
    np.testing.assert_allclose(summary["ratio"]["exact/outcome"], ratios, rtol=0.25)
    assert summary["num_decisions"] == [1, 2, 4, 8]


def test_predicted_ratio_hand_value():
    # fatal, C = 2, H = 4, one fixed decision, G = 2: V_R = 1/4, σ² = 1/2, κ² = 1/4, M2 = 1/8, M1 = 1/16;
    # outcome trace 16 σ² V_R + 4 M2 - 4 M1 = 2.25, exact trace 2 σ² V_R + 2 M2 - 4 M1 = 0.25: ratio 9.
    ratio = predicted_ratio(horizon=4, num_decisions=1, num_choices=2, failure="fatal", survival=0.5, group_size=2,
                            placement="fixed")
    assert ratio == pytest.approx(9.0)


@pytest.mark.parametrize("argv, message", [
    (["--env", "mad"], "snr measures the routine environment"),
    (["--density", "0.01,0.5", "--horizon", "16"], "rounds to 0 decisions"),
    (["--batches", "20", "--blocks", "8"], "multiple of num_blocks"),
    (["--estimators", "exact,mc"], "must include outcome"),
    (["--decisions", "2", "--horizon", "8"], "--horizon and --decisions exclude each other"),
    (["--decisions", "2", "--density", "0.5,0.49"], "repeated horizons [4, 4]"),
    (["--decisions", "2", "--density", "1,0.01"], "need horizon 200"),
    (["--decisions", "2", "--cue", "secret"], "routine.cue"),
    (["--seeds", "3"], "--seeds needs --decisions"),
])
def test_snr_command_bad_input(argv, message, capsys):
    assert main(["snr", *argv]) == 2
    assert message in capsys.readouterr().err


def test_density_study_preset_builds_every_cell():
    from jaxcredit.train import get_preset

    spec = get_preset("density-study")
    cells = spec.cell_configs()
    assert len(cells) == 2 * 3 * 4  # regimes x credits x densities
    config = cells[("fixed-steps", "exact-rho0.5")]
    assert config.env == "routine" and config.credit == "exact" and config.budget_counter == "total_env_steps"
    assert dict(config.env_overrides) == {"horizon": 8, "density": 0.5}


def test_decision_turn_probabilities_and_mc_noise_hand_values():
    from jaxcredit.analysis.snr_theory import decision_turn_probabilities, trace_terms

    p = decision_turn_probabilities(horizon=3, num_decisions=2, placement="random")
    np.testing.assert_allclose(p, [[2 / 3, 0], [1 / 3, 1 / 3], [0, 2 / 3]])
    # fatal, C = 2, H = 2, one decision fixed at turn 1, G = 2, K = 1: exact credit's group sum is
    # deterministic ((1/2)(e_r - u) whatever is chosen), so its trace is 0; mc adds, at the routine
    # turn, ((Q̂0 - Q̂1) / 2)² with Q̂a iid Bernoulli(1/2): 1/8 per episode, times ||s||² = 1/2, times G.
    terms = trace_terms(horizon=2, num_decisions=1, num_choices=2, failure="fatal", survival=0.5, group_size=2,
                        placement="fixed", cue="index", mc_continuations=1)
    assert terms["exact"] == pytest.approx(0.0) and terms["mc"] == pytest.approx(1 / 8)
    assert terms["outcome"] == pytest.approx(1.0) and terms["mean_sq"] == pytest.approx(1 / 8)


def test_closed_form_snr_matches_monte_carlo_on_a_tiny_fixed_decision_case():
    """Tabular policy at uniform init, D = 2 decisions at density 1/2 (H = 4), fatal, cue 'index',
    random placement, 4 problems x 4 attempts per batch, mc with K = 2: the measured SNR of
    outcome (rloo), exact and mc over 512 batches is within 10% of `predicted_snr`, and so is the
    ratio exact/outcome (predicted 3.32)."""
    import jax

    from jaxcredit.analysis.snr import _snr, seeded_moments
    from jaxcredit.analysis.snr_theory import predicted_snr

    env = make("routine", decisions=2, density=0.5, cue="index")
    config = SnrConfig(densities=(1.0, 0.5), estimators=("outcome", "exact", "mc"), num_batches=512, num_blocks=4,
                       problems_per_batch=4, group_size=4, baseline="rloo", mc_continuations=2)
    init_fn, policy_fn = tabular_policy(env)
    params = jax.tree_util.tree_map(lambda x: x[None], init_fn(None))
    sums, squares = seeded_moments(env, policy_fn, params, jax.random.key(7)[None], config=config)
    measured = _snr(np.asarray(sums, np.float64).sum(1), np.asarray(squares, np.float64).sum(1), 512)[0][0]
    predicted = predicted_snr(env, problems_per_batch=4, group_size=4, mc_continuations=2)
    assert predicted["exact"] / predicted["outcome"] == pytest.approx(3.32, abs=0.01)
    np.testing.assert_allclose(measured, [predicted[n] for n in ("outcome", "exact", "mc")], rtol=0.1)
    assert predicted["outcome"] < predicted["mc"] < predicted["exact"]


def test_density_fixed_preset_keeps_d_fixed_and_hides_the_answer():
    from jaxcredit.train import get_preset

    spec = get_preset("density-fixed")
    cells = spec.cell_configs()
    assert len(cells) == 2 * 3 * 5 and spec.base["num_seeds"] >= 5
    horizons = set()
    for (regime, _arm), config in cells.items():
        env = make("routine", **dict(config.env_overrides))
        assert env.num_decisions == 4 and env.cue == "index" and env.vocab_size == 64 + 2 + 4
        horizons.add(env.horizon)
        if regime == "attempts":  # an evaluation after every update
            assert config.budget // config.num_evals == config.episodes_per_iteration
    assert horizons == {4, 8, 16, 32, 64}


def test_snr_command_fixed_decisions_json(capsys):
    """`snr --decisions 2 --json`: horizons D / ρ, one SNR per seed and density, and fits whose
    amplitude slope is half the power slope, with the closed form beside the tabular policy."""
    import json

    argv = ["snr", "--decisions", "2", "--density", "1,0.5", "--cue", "index", "--policy", "tabular",
            "--estimators", "outcome,outcome-rloo,exact", "--batches", "8", "--blocks", "2", "--problems", "2",
            "--seeds", "2", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["horizons"] == [2, 4] and summary["seeds"] == [0, 1]
    assert np.asarray(summary["snr"]["exact"]).shape == (2, 2)
    fit = summary["fit"]["exact/outcome-rloo"]
    assert fit["amplitude"]["slope"] == pytest.approx(fit["power"]["slope"] / 2)
    assert summary["predicted"]["outcome"] == "outcome-rloo" and len(summary["predicted"]["snr"]["exact"]) == 2


def test_snr_command_fixed_decisions_from_a_checkpoint(capsys):
    """The committed partly trained policy (D = 2, cue index, V = 64) reads every horizon of a D = 2
    grid; a D = 4 grid needs another network, which is refused in one line."""
    import json

    argv = ["snr", "--decisions", "2", "--checkpoint", "docs/density/policy-d2", "--density", "1,0.5",
            "--estimators", "outcome,exact", "--batches", "4", "--blocks", "2", "--problems", "2", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["policy"] == "checkpoint" and summary["horizons"] == [2, 4]
    assert summary["config"]["env"]["cue"] == "index" and summary["config"]["env"]["vocab_horizon"] == 64
    assert main(["snr", "--decisions", "4", "--checkpoint", "docs/density/policy-d2", "--density", "1,0.5"]) == 2
    assert "train it with the same decisions" in capsys.readouterr().err


def test_a_registered_arm_is_measured_by_the_snr_study():
    """A plugin arm is an estimator of the study, computed by its own `compute` on the study's
    batches (P problems, G attempts each): twice the outcome advantage, whose gradient SNR (scale
    free, and x2 is exact in floating point) equals outcome's bit for bit. An arm with one-time work
    or a fitted head is refused."""
    import dataclasses

    import jaxcredit
    from jaxcredit.arm_registry import CREDIT_ARMS
    from jaxcredit.credit import outcome_advantage

    @dataclasses.dataclass(frozen=True)
    class DoubleOptions(jaxcredit.ArmOptions):
        arm = "snr-test-double"
        scale: float = jaxcredit.option(2.0, low=0.0)

    seen = []

    def double(context, trajectory, problems, key):
        seen.append((context.config.attempts_per_problem, problems.decision.shape[0], trajectory.reward.shape[0]))
        advantage = outcome_advantage(trajectory, group_size=context.config.attempts_per_problem)
        return jaxcredit.CreditResult(context.options.scale * advantage, None, {})

    jaxcredit.register_credit_arm(jaxcredit.CreditArm("snr-test-double", None, False, "2 x outcome", double,
                                                      options=DoubleOptions))
    try:
        env = make("routine", horizon=4, density=1.0, failure="probabilistic", survival=0.5, num_choices=2)
        init_fn, policy_fn = tabular_policy(env)
        config = SnrConfig(densities=(0.5, 1.0), estimators=("outcome", "snr-test-double"), num_batches=4,
                           num_blocks=2, problems_per_batch=3, group_size=2, seed=0)
        summary = measure_snr(env, policy_fn, init_fn(None), config)
    finally:
        CREDIT_ARMS.pop("snr-test-double", None)
    assert seen and set(seen) == {(2, 3, 6)}
    assert summary["estimators"] == ["outcome", "snr-test-double"]
    assert summary["snr"]["snr-test-double"] == summary["snr"]["outcome"]
    assert all(np.isfinite(summary["snr"]["outcome"]))
    assert summary["ratio"]["snr-test-double/outcome"] == [1.0, 1.0]
    with pytest.raises(ValueError, match="must include outcome"):
        SnrConfig(estimators=("outcome", "critic"))  # a fitted value head: not measured here
    with pytest.raises(ValueError, match="must include outcome"):
        SnrConfig(estimators=("outcome", "snr-test-double"))  # no longer registered


def test_only_an_environment_that_says_so_is_measured(capsys):
    from jaxcredit.envs import ENVIRONMENTS

    assert [name for name, cls in ENVIRONMENTS.items() if cls.supports_density_snr] == ["routine"]
    assert main(["snr", "--env", "umbrella"]) == 2
    assert capsys.readouterr().err == "jaxcredit: error: snr measures the routine environment, not 'umbrella'\n"
