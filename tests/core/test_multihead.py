"""Contract of core/multihead.py: the trace against a per-head float64 loop, heads, dtypes, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import (
    AttentionConfig,
    Projections,
    causal_mask,
    check_heads,
    head_counts,
    merge_heads,
    multi_head_attention,
    run,
    scaled_dot_product_attention,
    split_heads,
    tokenize,
)
from tests.core.reference import loop_multi_head

FIELDS = ("q", "k", "v", "scores", "weights", "context", "concat", "output")


def random_projections(d_model: int, seed: int) -> Projections:
    """Weights drawn here, not by Projections.random, so the reference shares nothing with core."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    return Projections(w_q=w[0], w_k=w[1], w_v=w[2], w_o=w[3])


def assert_trace_matches_loop(trace, proj, x, n_heads, **kwargs):
    ref = loop_multi_head(x, proj.w_q, proj.w_k, proj.w_v, proj.w_o, n_heads, **kwargs)
    for name in FIELDS:
        got = getattr(trace, name)
        assert got.shape == ref[name].shape, name
        np.testing.assert_allclose(got, ref[name], rtol=0, atol=1e-12, err_msg=name)


CASES = {
    # name: (x shape, kv shape or None, n_heads, mask maker (T_q, T_k) -> mask or None, scale)
    "self": ((5, 12), None, 3, None, None),
    "self-one-head": ((4, 8), None, 1, None, None),
    "self-head-per-column": ((3, 6), None, 6, None, None),
    "batch": ((2, 3, 5, 8), None, 2, None, None),
    "causal": ((6, 12), None, 4, causal_mask, None),
    "batch-causal": ((3, 6, 8), None, 4, causal_mask, None),
    "cross": ((4, 8), (6, 8), 2, None, None),
    "cross-causal-wide": ((3, 8), (6, 8), 4, causal_mask, None),
    "cross-causal-tall": ((6, 8), (3, 8), 2, causal_mask, None),
    "batch-cross": ((2, 4, 8), (2, 7, 8), 4, None, None),
    "scale-unscaled": ((5, 8), None, 2, None, 1.0),
    "scale-float": ((5, 8), None, 2, causal_mask, 0.3),
    "scale-numpy": ((2, 5, 8), (2, 3, 8), 4, None, np.float64(0.7)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_trace_matches_per_head_loop(case):
    x_shape, kv_shape, n_heads, make_mask, scale = case
    rng = np.random.default_rng(list(x_shape))  # any data will do
    x = rng.standard_normal(x_shape)
    kv = None if kv_shape is None else rng.standard_normal(kv_shape)
    t_q, t_k = x_shape[-2], (x_shape if kv_shape is None else kv_shape)[-2]
    mask = None if make_mask is None else make_mask(t_q, t_k)
    proj = random_projections(x_shape[-1], seed=len(x_shape) + n_heads)
    trace = multi_head_attention(x, proj, n_heads, kv=kv, mask=mask, scale=scale)
    assert_trace_matches_loop(trace, proj, x, n_heads, kv=kv, mask=mask, scale=scale)
    d_k = x_shape[-1] // n_heads
    assert trace.scale == pytest.approx(1 / math.sqrt(d_k) if scale is None else float(scale), rel=1e-15)
    assert trace.n_heads == n_heads
    if mask is None:
        assert trace.mask is None
    else:
        np.testing.assert_array_equal(trace.mask, mask)


def test_per_head_mask_and_fully_masked_row():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 8))
    mask = rng.random((2, 1, 5, 5)) < 0.5  # (B, 1, T, T): broadcast over heads
    mask[0, 0, 2] = False  # a query that may attend nothing
    proj = random_projections(8, 4)
    trace = multi_head_attention(x, proj, 4, mask=mask)
    assert_trace_matches_loop(trace, proj, x, 4, mask=mask)
    np.testing.assert_array_equal(trace.weights[0, :, 2], 0.0)
    np.testing.assert_array_equal(trace.context[0, :, 2], 0.0)
    assert np.all(trace.weights[np.broadcast_to(~mask, trace.weights.shape)] == 0.0)


def test_scores_are_before_masking():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 8))
    proj = random_projections(8, 6)
    masked = multi_head_attention(x, proj, 2, mask=causal_mask(4))
    unmasked = multi_head_attention(x, proj, 2)
    np.testing.assert_array_equal(masked.scores, unmasked.scores)
    assert np.all(np.isfinite(masked.scores))


# --- split_heads / merge_heads --------------------------------------------------------


def test_split_heads_hand_example():
    x = np.arange(12.0).reshape(2, 6)  # (T=2, d_model=6)
    heads = split_heads(x, 3)  # (h=3, T=2, d_k=2)
    assert heads.shape == (3, 2, 2)
    for h in range(3):
        np.testing.assert_array_equal(heads[h], x[:, 2 * h : 2 * h + 2])
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_split_merge_round_trip_with_batch():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 12))
    for h in head_counts(12):
        heads = split_heads(x, h)
        assert heads.shape == (2, 3, h, 5, 12 // h)
        np.testing.assert_array_equal(merge_heads(heads), x)


# --- head counts ----------------------------------------------------------------------


def test_head_counts():
    assert head_counts(1) == [1]
    assert head_counts(12) == [1, 2, 3, 4, 6, 12]
    assert head_counts(64) == [1, 2, 4, 8, 16, 32, 64]
    assert head_counts(7) == [1, 7]


def test_check_heads_returns_d_k():
    assert check_heads(64, 4) == 16
    assert check_heads(12, 12) == 1


@pytest.mark.parametrize(
    ("d_model", "n_heads", "valid"),
    [(12, 5, "1, 2, 3, 4, 6, 12"), (64, 3, "1, 2, 4, 8, 16, 32, 64")],
)
def test_heads_not_dividing_d_model_error_names_numbers_and_valid_counts(d_model, n_heads, valid):
    x = np.zeros((3, d_model))
    with pytest.raises(ValueError) as info:
        multi_head_attention(x, Projections.random(d_model), n_heads)
    message = str(info.value)
    assert str(n_heads) in message
    assert str(d_model) in message
    assert valid in message


@pytest.mark.parametrize("n_heads", [0, -2])
def test_non_positive_head_count_rejected(n_heads):
    with pytest.raises(ValueError, match="1, 2, 4, 8"):
        check_heads(8, n_heads)


def test_width_mismatch_rejected():
    with pytest.raises(ValueError, match="d_model"):
        multi_head_attention(np.zeros((3, 8)), Projections.random(16), 2)


def test_non_bool_mask_rejected():
    x = np.zeros((3, 8))
    with pytest.raises((TypeError, ValueError), match="bool"):
        multi_head_attention(x, Projections.random(8), 2, mask=np.tri(3))  # float 0/1, not bool


# --- dtypes ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [None, 0.5, np.float64(0.5), np.float32(0.25)])
@pytest.mark.parametrize("cross", [False, True])
def test_float32_in_every_field_float32_out(scale, cross):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    kv = rng.standard_normal((2, 3, 16)).astype(np.float32) if cross else None
    proj = Projections.random(16, seed=1)  # float64 weights: must not promote the float32 input
    trace = multi_head_attention(x, proj, 4, kv=kv, mask=causal_mask(5, 3 if cross else 5), scale=scale)
    for name in FIELDS:
        assert getattr(trace, name).dtype == np.float32, name
    # and the float32 numbers are the float64 numbers to float32 rounding
    ref = multi_head_attention(
        x.astype(np.float64),
        proj,
        4,
        kv=None if kv is None else kv.astype(np.float64),
        mask=causal_mask(5, 3 if cross else 5),
        scale=scale,
    )
    np.testing.assert_allclose(trace.weights, ref.weights, rtol=0, atol=1e-5)
    np.testing.assert_allclose(trace.output, ref.output, rtol=0, atol=1e-5)


def test_float64_stays_float64_with_float32_weights():
    x = np.random.default_rng(2).standard_normal((4, 8))
    proj = Projections.random(8, seed=0, dtype=np.float32)
    trace = multi_head_attention(x, proj, 2)
    for name in FIELDS:
        assert getattr(trace, name).dtype == np.float64, name


# --- Projections ----------------------------------------------------------------------


def test_projections_reject_non_square_or_mismatched():
    square = np.zeros((4, 4))
    with pytest.raises(ValueError, match="square"):
        Projections(w_q=np.zeros((4, 3)), w_k=square, w_v=square, w_o=square)
    with pytest.raises(ValueError, match="square"):
        Projections(w_q=square, w_k=square, w_v=square, w_o=np.zeros((5, 5)))


def test_projections_random_shape_dtype_determinism():
    a = Projections.random(8, seed=3)
    b = Projections.random(8, seed=3)
    c = Projections.random(8, seed=4)
    assert a.d_model == 8
    for name in ("w_q", "w_k", "w_v", "w_o"):
        assert getattr(a, name).shape == (8, 8)
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))
    assert not np.array_equal(a.w_q, a.w_k)  # four different matrices
    assert Projections.random(8, seed=3, dtype=np.float32).w_q.dtype == np.float32


def test_projections_random_is_read_only_so_its_cache_cannot_be_corrupted():
    a = Projections.random(8, seed=5)
    with pytest.raises(ValueError, match="read-only"):
        a.w_q[0, 0] = 1.0
    # a fresh generator gives the same numbers as the (cached) call
    rng = np.random.default_rng([5, 8, 0x5157])
    np.testing.assert_array_equal(a.w_v, rng.standard_normal((4, 8, 8))[2] * (1.0 / math.sqrt(8)))


def test_projections_random_entry_scale():
    # LeCun normal: entries N(0, 1/d_model). 4 * 512^2 ~ 1e6 samples pin the std to ~0.1 %.
    w = Projections.random(512, seed=0)
    stacked = np.stack([w.w_q, w.w_k, w.w_v, w.w_o])
    assert abs(stacked.std() * math.sqrt(512) - 1) < 0.01
    assert abs(stacked.mean()) < 0.01 / math.sqrt(512)


DEFAULT_SENTENCE = "The bank of the river gave a loan"


@pytest.mark.parametrize("d_model", [16, 64, 512])
def test_default_scores_are_neither_one_hot_nor_uniform(d_model):
    """The documented choice: std 1/sqrt(d_model) makes each scaled score ~N(0, 1).

    Embedding entries are N(0, 1), so a column of X @ W_Q sums d_model terms of variance
    1/d_model: variance ~1, likewise K; q.k over d_k columns has variance d_k, and the
    1/sqrt(d_k) scale brings it back to ~1 whatever d_model and h are. With one
    seed the sample std fluctuates (for d_model = 16 each score is a sum of only 4
    products, and one seed shares one W), so we average over 8 seeds and accept [0.7, 1.4].
    A std-1/d_model init would give std ~1/d_model (near uniform) and a std-1 init std
    ~d_model (one-hot): both far outside.

    Scores of std ~1 over T = 8 keys give a top weight around e^1.4 / (8 e^0.5) ~ 0.3:
    clearly above uniform 1/8 = 0.125 and clearly below one-hot. We ask for more than
    1.5/T and less than 0.7 on every seed.
    """
    tokens = tokenize(DEFAULT_SENTENCE)
    t = len(tokens)
    stds = []
    for seed in range(8):
        trace = run(tokens, AttentionConfig(d_model=d_model, n_heads=4, seed=seed)).trace
        stds.append(trace.scores.std())
        top = trace.weights.max(axis=-1).mean()
        assert 1.5 / t < top < 0.7, (seed, top)
    assert 0.7 < np.mean(stds) < 1.4, stds


def test_integer_input_is_computed_in_float64():
    x = np.arange(2 * 3 * 8).reshape(2, 3, 8) % 5  # int64 tokens-as-numbers
    proj = Projections.random(8, seed=1)
    got = multi_head_attention(x, proj, 2)
    want = multi_head_attention(x.astype(np.float64), proj, 2)
    assert got.output.dtype == np.float64
    np.testing.assert_array_equal(got.weights, want.weights)
    np.testing.assert_array_equal(got.output, want.output)


def test_biases_are_added_after_each_projection():
    """x @ W + b for Q, K, V and the output, checked head by head against single-head attention."""
    rng = np.random.default_rng(7)
    d_model, n_heads, d_k = 12, 3, 4
    w = rng.standard_normal((4, d_model, d_model)) / math.sqrt(d_model)
    b = rng.standard_normal((4, d_model))
    proj = Projections(*w, b_q=b[0], b_k=b[1], b_v=b[2], b_o=b[3])
    x = rng.standard_normal((5, d_model))
    trace = multi_head_attention(x, proj, n_heads, mask=causal_mask(5))
    q, k, v = (x @ w[i] + b[i] for i in range(3))  # (T, d_model) each
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        out, weights = scaled_dot_product_attention(q[:, cols], k[:, cols], v[:, cols], causal_mask(5))
        np.testing.assert_allclose(trace.weights[h], weights, rtol=0, atol=1e-13)
        heads.append(out)
    np.testing.assert_allclose(trace.output, np.hstack(heads) @ w[3] + b[3], rtol=0, atol=1e-12)
    no_bias = multi_head_attention(x, Projections(*w), n_heads, mask=causal_mask(5))
    assert np.abs(no_bias.output - trace.output).max() > 0.1  # the biases really changed something


@pytest.mark.parametrize("name", ["b_q", "b_k", "b_v", "b_o"])
def test_bias_of_the_wrong_shape_is_refused(name):
    w = np.eye(4)
    with pytest.raises(ValueError, match="biases must have shape"):
        Projections(w, w, w, w, **{name: np.zeros(3)})
