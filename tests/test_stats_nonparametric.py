"""The paired sign-flip permutation test and the paired bootstrap interval, checked by hand."""

import itertools

import numpy as np
import pytest

from jaxcredit.stats import paired_bootstrap, sign_flip_p


def test_sign_flip_p_on_a_hand_computed_four_seed_case():
    # |±0.1 ± 0.2 ± 0.3 ± 0.05| >= 0.55 for 4 of the 16 patterns: ±0.65 (all one sign) and
    # ±0.55 (all but the 0.05): p = 4/16
    result = sign_flip_p([0.1, 0.2, 0.3, -0.05])
    assert result == {"p_value": 0.25, "num_seeds": 4, "flips": 16, "exact": True}


def test_sign_flip_p_floor_and_symmetry():
    assert sign_flip_p([0.2] * 5)["p_value"] == 2 / 32  # n = 5 cannot go below 0.0625
    assert sign_flip_p([0.0, 0.0, 0.0])["p_value"] == 1.0
    assert sign_flip_p([0.3, -0.1, 0.2])["p_value"] == sign_flip_p([-0.3, 0.1, -0.2])["p_value"]


def test_sign_flip_p_matches_brute_force_enumeration():
    diff = np.random.default_rng(3).normal(0.2, 1.0, 11)
    sums = [abs(sum(s * d for s, d in zip(signs, diff))) for signs in itertools.product((-1, 1), repeat=11)]
    brute = np.mean(np.asarray(sums) >= abs(diff.sum()) - 1e-12)
    assert sign_flip_p(diff)["p_value"] == pytest.approx(brute, abs=1e-12)
    sampled = sign_flip_p(np.random.default_rng(4).normal(0.0, 1.0, 24))  # above 20 seeds: sampled
    assert sampled["exact"] is False and 0 < sampled["p_value"] <= 1


def test_paired_bootstrap_percentiles():
    result = paired_bootstrap([0.1, 0.2, 0.3, -0.05], num_resamples=20_000)
    assert -0.05 <= result["low"] < 0.1375 < result["high"] <= 0.3  # inside the range, around the mean
    same = paired_bootstrap([0.4, 0.4, 0.4])
    assert same["low"] == pytest.approx(0.4) and same["high"] == pytest.approx(0.4)
    # the quantiles of resampled means, by hand for two seeds: means 0 (1/4), 0.5 (1/2), 1 (1/4)
    two = paired_bootstrap([0.0, 1.0], confidence=0.5)
    assert (two["low"], two["high"]) == (0.5, 0.5)
    with pytest.raises(ValueError, match="at least one difference"):
        paired_bootstrap([])
