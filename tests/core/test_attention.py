"""Contract of core/attention.py: softmax, causal_mask, attention_scores, masked_softmax, SDPA."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from core import (
    attention_scores,
    causal_mask,
    masked_softmax,
    scaled_dot_product_attention,
    softmax,
)
from tests.core.reference import loop_attention

# --- softmax -------------------------------------------------------------------------


def test_softmax_hand_values():
    # exp(log n) = n, so the weights are 1, 2, 3 over their sum 6.
    got = softmax(np.array([0.0, math.log(2), math.log(3)]))
    np.testing.assert_allclose(got, [1 / 6, 2 / 6, 3 / 6], rtol=0, atol=1e-15)


def test_softmax_axis():
    x = np.array([[0.0, 0.0], [0.0, math.log(3)]])  # (2, 2)
    along_0 = softmax(x, axis=0)
    np.testing.assert_allclose(along_0, [[0.5, 0.25], [0.5, 0.75]], rtol=0, atol=1e-15)
    along_last = softmax(x)
    np.testing.assert_allclose(along_last, [[0.5, 0.5], [0.25, 0.75]], rtol=0, atol=1e-15)


def test_softmax_does_not_modify_input():
    x = np.array([1.0, 2.0, -np.inf])
    before = x.copy()
    softmax(x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_all_minus_inf_gives_zeros_without_warning(dtype):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]], dtype=dtype)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = softmax(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(got[1], [0.5, 0.0, 0.5])


def test_softmax_extreme_logits_no_warning():
    # exp(-2e4) underflows to 0: that is the right answer, not an error.
    x = np.array([1e4, -1e4, 0.0, 1e4])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = softmax(x)
    np.testing.assert_array_equal(got, [0.5, 0.0, 0.0, 0.5])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softmax_keeps_float_dtype(dtype):
    assert softmax(np.zeros((2, 3), dtype=dtype)).dtype == dtype


# --- causal_mask ---------------------------------------------------------------------


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 1), (4, 4), (3, 5), (5, 3), (1, 4), (4, 1)])
def test_causal_mask_is_top_left_tril(t_q, t_k):
    m = causal_mask(t_q, t_k)
    assert m.dtype == np.bool_
    assert m.shape == (t_q, t_k)
    for i in range(t_q):
        for j in range(t_k):
            assert m[i, j] == (j <= i), (i, j)


def test_causal_mask_default_is_square():
    m = causal_mask(4)
    assert m.shape == (4, 4)
    expected = np.array(
        [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [1, 1, 1, 0],
            [1, 1, 1, 1],
        ],
        dtype=bool,
    )
    np.testing.assert_array_equal(m, expected)


# --- attention_scores and masked_softmax ---------------------------------------------


def test_attention_scores_default_and_explicit_scale():
    q = np.array([[1.0, 2.0, 3.0, 4.0]])  # (1, 4)
    k = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])  # (2, 4)
    # q.k = 1 and 10; the default scale is 1/sqrt(4) = 0.5.
    np.testing.assert_array_equal(attention_scores(q, k), [[0.5, 5.0]])
    np.testing.assert_array_equal(attention_scores(q, k, 1.0), [[1.0, 10.0]])
    np.testing.assert_array_equal(attention_scores(q, k, np.float64(0.1)), [[0.1, 1.0]])


def test_masked_softmax_masked_entries_exactly_zero_and_empty_row_zero():
    scores = np.array([[3.0, 1.0, 2.0], [5.0, 5.0, 5.0], [0.0, 1.0, 2.0]])
    mask = np.array([[True, False, True], [False, False, False], [True, True, True]])
    w = masked_softmax(scores, mask)
    assert w[0, 1] == 0.0
    np.testing.assert_allclose(w[0], [math.e / (math.e + 1), 0.0, 1 / (math.e + 1)], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(w[1], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(w[2].sum(), 1.0, rtol=0, atol=1e-15)


def test_masked_softmax_broadcasts_mask():
    scores = np.zeros((2, 3, 4))
    key_mask = np.array([True, True, False, False])  # (4,) broadcast to every query of every batch
    w = masked_softmax(scores, key_mask)
    np.testing.assert_array_equal(w, np.broadcast_to([0.5, 0.5, 0.0, 0.0], (2, 3, 4)))


@pytest.mark.parametrize(
    "bad_mask",
    [np.ones((2, 2)), np.ones((2, 2), dtype=np.int64), np.array([[1, 0], [1, 1]], dtype=np.uint8)],
    ids=["float", "int64", "uint8"],
)
def test_masked_softmax_rejects_non_bool_mask(bad_mask):
    with pytest.raises((TypeError, ValueError), match="bool"):
        masked_softmax(np.zeros((2, 2)), bad_mask)


def test_sdpa_rejects_non_bool_mask():
    q = np.zeros((2, 3))
    with pytest.raises((TypeError, ValueError), match="bool"):
        scaled_dot_product_attention(q, q, q, mask=np.array([[1, 0], [1, 1]]))


# --- scaled_dot_product_attention ----------------------------------------------------


def test_sdpa_hand_example():
    q = np.array([[1.0, 0.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([[1.0, 2.0], [3.0, 4.0]])
    out, w = scaled_dot_product_attention(q, k, v, scale=1.0)
    a, b = math.e / (math.e + 1), 1 / (math.e + 1)  # scores 1 and 0
    np.testing.assert_allclose(w, [[a, b]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(out, [[a * 1 + b * 3, a * 2 + b * 4]], rtol=0, atol=1e-15)


@pytest.mark.parametrize("scale", [None, 1.0, 0.3, np.float64(0.5)])
@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_matches_loop_reference_with_batch_dims(scale, masked):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 3, 4, 5))  # (B1, B2, T_q, d_k)
    k = rng.standard_normal((2, 3, 6, 5))  # (B1, B2, T_k, d_k)
    v = rng.standard_normal((2, 3, 6, 2))  # (B1, B2, T_k, d_v)
    mask = rng.random((3, 4, 6)) < 0.6 if masked else None  # broadcasts over B1
    if masked:
        mask[1, 2] = False  # one fully masked query row
    out, w = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    assert out.shape == (2, 3, 4, 2)
    assert w.shape == (2, 3, 4, 6)
    s = 1 / math.sqrt(5) if scale is None else float(scale)
    for b in np.ndindex(2, 3):
        allowed = np.ones((4, 6), dtype=bool) if mask is None else mask[b[1]]
        _, ref_w, ref_out = loop_attention(q[b], k[b], v[b], allowed, s)
        np.testing.assert_allclose(w[b], ref_w, rtol=0, atol=1e-12)
        np.testing.assert_allclose(out[b], ref_out, rtol=0, atol=1e-12)
    if masked:
        np.testing.assert_array_equal(w[:, 1, 2], 0.0)
        np.testing.assert_array_equal(out[:, 1, 2], 0.0)


def test_sdpa_fully_masked_rows_zero_no_warning():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = np.zeros((3, 5), dtype=bool)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        out, w = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_array_equal(w, 0.0)
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("scale", [None, 0.5, np.float64(0.5), np.float32(0.5), 2])
def test_sdpa_keeps_float32(scale):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((2, 5, 4)).astype(np.float32)
    v = rng.standard_normal((2, 5, 6)).astype(np.float32)
    out, w = scaled_dot_product_attention(q, k, v, causal_mask(3, 5), scale=scale)
    assert out.dtype == np.float32
    assert w.dtype == np.float32
    assert attention_scores(q, k, scale).dtype == np.float32


def test_sdpa_shape_errors():
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="T_k"):
        scaled_dot_product_attention(np.zeros((2, 3)), np.zeros((4, 3)), np.zeros((5, 3)))


# --- the scaling claim ---------------------------------------------------------------


def test_scaling_keeps_large_d_k_from_collapsing_to_one_hot():
    """With d_k = 512 and unit-variance q, k, unscaled softmax is nearly one-hot; scaled is not.

    Given q, the scores q.k_j over keys are i.i.d. N(0, |q|^2) with |q|^2 ~ d_k = 512.
    Unscaled, they spread by sqrt(512) ~ 22.6: among T_k = 16 keys, the gap between the
    top two is typically ~0.5 standard deviations ~ 11 nats, so the top weight is
    ~1 - e^-11. It drops below 0.9 only when the top gap is under ~ln(9 * 15) ~ 4.9 nats
    (~0.2 standard deviations), roughly one row in six, and even then it stays well above
    1/2: the mean top weight is ~0.95 and the median is ~1 - 1e-4. Scaled by 1/sqrt(512),
    the scores are N(0, 1): the largest of 16 sits ~1.8 above the mean, so the top weight
    is about e^1.8 / (16 e^0.5) ~ 0.22. The thresholds 0.9 / 0.99 / 0.5 leave margins of
    several standard errors over 8 * 64 = 512 query rows.
    """
    rng = np.random.default_rng(2017)
    d_k, t_q, t_k = 512, 64, 16
    q = rng.standard_normal((8, t_q, d_k))
    k = rng.standard_normal((8, t_k, d_k))
    v = rng.standard_normal((8, t_k, 4))
    _, unscaled = scaled_dot_product_attention(q, k, v, scale=1.0)
    _, scaled = scaled_dot_product_attention(q, k, v)
    top_unscaled = unscaled.max(axis=-1)  # (8, T_q)
    top_scaled = scaled.max(axis=-1)
    assert top_unscaled.mean() > 0.9
    assert np.median(top_unscaled) > 0.99
    assert top_scaled.mean() < 0.5
    assert top_scaled.max() < 0.9
