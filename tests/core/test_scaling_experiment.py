"""Why 1/sqrt(d_k): the experiment's direction, its limits against an independent Monte Carlo,
its determinism, and the pipeline's unscaled toggle."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import DEFAULT_D_KS, AttentionConfig, run, scaling_experiment

SENTENCE = ["the", "cat", "sat", "on", "the", "mat", "because", "the", "cat", "was", "tired"]


@pytest.fixture(scope="module")
def default():
    return scaling_experiment()


def test_shapes_and_bounds(default):
    n = len(DEFAULT_D_KS)
    np.testing.assert_array_equal(default.d_ks, DEFAULT_D_KS)
    for name in ("max_weight_scaled", "max_weight_unscaled", "entropy_scaled", "entropy_unscaled"):
        assert getattr(default, name).shape == (n,)
    for m in (default.max_weight_scaled, default.max_weight_unscaled):
        assert np.all((m >= 1 / default.t) & (m <= 1))  # the largest of t weights summing to 1
    for h in (default.entropy_scaled, default.entropy_unscaled):
        assert np.all((h >= 0) & (h <= default.uniform_entropy + 1e-12))
    assert default.uniform_entropy == math.log(16)


def test_unscaled_softmax_collapses_toward_one_hot(default):
    m, h = default.max_weight_unscaled, default.entropy_unscaled
    assert m[0] < 0.6 and m[-1] > 0.9  # d_k = 4 vs 1024: score spread 2 vs 32
    assert np.all(np.diff(m) > 0)  # every doubling of d_k sharpens it
    assert h[-1] < 0.2 and np.all(np.diff(h) < 0)


def test_scaled_softmax_stays_flat(default):
    m, h = default.max_weight_scaled, default.entropy_scaled
    assert np.ptp(m) < 0.05 and np.ptp(h) < 0.1
    assert np.all(m < default.max_weight_unscaled)  # scaling always softens, from d_k = 4 on


def test_scaled_limit_matches_softmax_of_unit_normal_scores():
    # Independent check: for large d_k, q.k / sqrt(d_k) given q is N(0, |q|^2 / d_k) ~ N(0, 1), iid over keys.
    t, rows = 16, 200_000
    z = np.random.default_rng(123).standard_normal((rows, t))
    w = np.exp(z - z.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    mc_max, mc_entropy = w.max(axis=1).mean(), -(w * np.log(w)).sum(axis=1).mean()
    result = scaling_experiment((1024,), n_seeds=256, t=t)  # 4096 rows
    # 4 standard errors of a 4096-row mean (max weight sd ~0.09, entropy sd ~0.2), plus the d_k = 1024 bias
    assert abs(result.max_weight_scaled[0] - mc_max) < 4 * 0.09 / 64 + 0.005
    assert abs(result.entropy_scaled[0] - mc_entropy) < 4 * 0.2 / 64 + 0.01


def test_width_one_makes_both_columns_identical():
    r = scaling_experiment((1,), n_seeds=4, t=5)  # sqrt(1) = 1: the same draws, the same numbers
    assert r.max_weight_scaled[0] == r.max_weight_unscaled[0]
    assert r.entropy_scaled[0] == r.entropy_unscaled[0]


def test_each_width_has_its_own_stream_and_seed_matters(default):
    alone = scaling_experiment((64,))
    i = DEFAULT_D_KS.index(64)
    assert alone.max_weight_unscaled[0] == default.max_weight_unscaled[i]
    assert alone.entropy_scaled[0] == default.entropy_scaled[i]
    assert scaling_experiment((64,), seed=1).max_weight_unscaled[0] != alone.max_weight_unscaled[0]


def test_bad_arguments_are_refused():
    for kwargs in ({"n_seeds": 0}, {"t": 0}, {"d_ks": (4, 0)}):
        with pytest.raises(ValueError, match="positive"):
            scaling_experiment(**kwargs)


# --- the pipeline's unscaled toggle ---------------------------------------------------------------


def test_default_config_is_scaled():
    assert AttentionConfig().scaled is True
    assert run(SENTENCE, AttentionConfig()).trace.scale == 1 / math.sqrt(16)


@pytest.mark.parametrize("positional", ["none", "rope"])
def test_unscaled_run_multiplies_scores_by_sqrt_d_k(positional):
    scaled = run(SENTENCE, AttentionConfig(positional=positional)).trace
    unscaled = run(SENTENCE, AttentionConfig(positional=positional, scaled=False)).trace
    assert unscaled.scale == 1.0
    np.testing.assert_array_equal(unscaled.q, scaled.q)
    np.testing.assert_allclose(unscaled.scores, unscaled.q @ np.swapaxes(unscaled.k, -1, -2), rtol=1e-15)
    np.testing.assert_allclose(unscaled.scores, scaled.scores * 4.0, rtol=1e-14)  # sqrt(d_k = 16)


def test_unscaled_heads_are_sharper_and_collapse_for_wide_heads():
    distinct = ["one", "two", "three", "four", "five", "six", "seven", "eight"]  # no copies to share a maximum
    scaled = run(distinct, AttentionConfig(d_model=512, n_heads=1)).trace.weights
    unscaled = run(distinct, AttentionConfig(d_model=512, n_heads=1, scaled=False)).trace.weights
    assert unscaled.max(axis=-1).mean() > 0.95  # score spread ~sqrt(512) ~ 23: nearly one-hot rows (0.99 measured)
    assert scaled.max(axis=-1).mean() < 0.6  # spread ~1: 0.38 measured
