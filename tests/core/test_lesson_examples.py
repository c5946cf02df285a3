"""The lessons' examples in core: each head's share of the output, a batch axis, and the spread of raw scores.

- ``head_contributions``: the output is the SUM of the per-head blocks Z_h W_O[rows of h] (lesson 3
  concatenates them, which gives the wrong shape); checked against the trace with plain NumPy.
- ``run_batch``: a batch of B copies has a leading B axis everywhere and every row equals the single run.
- ``score_spread``: the standard deviation of q.k for unit-variance q, k grows like sqrt(d_k), within the
  sampling error of a standard deviation computed here from the distribution's own kurtosis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import AttentionConfig, head_contributions, run, run_batch, score_spread, tokenize

TOKENS = tokenize("The bank of the river gave a loan")


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_the_output_is_the_sum_of_each_heads_contribution(n_heads):
    r = run(TOKENS, AttentionConfig(d_model=32, n_heads=n_heads, seed=3))
    parts = head_contributions(r.trace.context, r.projections.w_o)  # (h, T, d_model)
    t, d_k = len(TOKENS), 32 // n_heads
    assert parts.shape == (n_heads, t, 32)
    for h in range(n_heads):  # head h meets only its own rows of W_O
        rows = r.projections.w_o[h * d_k : (h + 1) * d_k]
        np.testing.assert_allclose(parts[h], r.trace.context[h] @ rows, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(parts.sum(axis=0), r.trace.output, rtol=1e-12, atol=1e-12)
    lesson = np.concatenate(list(parts), axis=1)  # lesson 3's np.concatenate(heads, axis=1)
    assert lesson.shape == (t, 32 * n_heads)  # not (T, d_model) unless there is one head


def test_a_batch_adds_a_leading_axis_and_repeats_the_run():
    for config in (AttentionConfig(causal=True), AttentionConfig(positional="rope"), AttentionConfig(scaled=False)):
        one = run(TOKENS, config)
        batch = run_batch(one, 3)
        t, h, d_k = len(TOKENS), config.n_heads, config.d_k
        assert batch.q.shape == (3, h, t, d_k)
        assert batch.weights.shape == (3, h, t, t)
        assert batch.output.shape == (3, t, config.d_model)
        for b in range(3):
            np.testing.assert_allclose(batch.output[b], one.trace.output, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(batch.weights[b], one.trace.weights, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        run_batch(one, 0)


def test_raw_score_spread_grows_like_sqrt_d_k():
    n = 20_000
    result = score_spread((4, 16, 64, 512), n=n)
    for d_k, std in zip(result.d_ks, result.std, strict=True):
        # q.k is a sum of d_k products of variance 1 and kurtosis 9: its kurtosis is 3 + 6/d_k, and the
        # relative standard error of a sample standard deviation is about sqrt((kurtosis - 1) / n) / 2
        error = math.sqrt((2 + 6 / d_k) / n) / 2
        assert abs(std / math.sqrt(d_k) - 1) < 5 * error, (d_k, std)
    assert result.scores.shape == (4, n)
    assert np.all(np.diff(result.quantiles, axis=1) >= 0)  # quantiles in order
    assert result.share_beyond_100[-1] < 1e-3  # +-100 at d_k = 512 is 4.4 standard deviations out: rare
    np.testing.assert_array_equal(score_spread((64,), n=100).scores, score_spread((64,), n=100).scores)  # seeded


def test_score_spread_refuses_bad_arguments():
    with pytest.raises(ValueError):
        score_spread((0,))
    with pytest.raises(ValueError):
        score_spread((4,), n=1)


def test_permutation_compares_the_output_rows_equivariant_only_without_positions_and_mask():
    from core import permutation_experiment

    perm = [4, 0, 6, 2, 7, 1, 3, 5]
    result = permutation_experiment(TOKENS, perm, AttentionConfig())
    permuted = run([TOKENS[p] for p in perm], AttentionConfig()).trace.output
    np.testing.assert_array_equal(result.realigned_output[perm], permuted)  # rows moved back, written out
    assert result.output_diff < 1e-12  # equivariant: attention(P X) = P attention(X)
    for config in (AttentionConfig(causal=True), AttentionConfig(positional="sinusoidal")):
        assert permutation_experiment(TOKENS, perm, config).output_diff > 1e-3
