"""Hypothesis properties of softmax, scaled dot-product attention and multi-head attention."""

from __future__ import annotations

import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Projections, masked_softmax, multi_head_attention, scaled_dot_product_attention, softmax

SETTINGS = settings(max_examples=80, deadline=None)

dims = st.integers(1, 6)
batch_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)
float_dtypes = st.sampled_from([np.float32, np.float64])


def floats(bound: float, dtype=np.float64):
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=np.dtype(dtype).itemsize * 8)


@st.composite
def attention_inputs(draw, bound: float = 10.0):
    """q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v), mask (..., T_q, T_k) bool, float64."""
    batch, t_q, t_k, d_k, d_v = draw(batch_shapes), draw(dims), draw(dims), draw(dims), draw(dims)
    q = draw(hnp.arrays(np.float64, (*batch, t_q, d_k), elements=floats(bound)))
    k = draw(hnp.arrays(np.float64, (*batch, t_k, d_k), elements=floats(bound)))
    v = draw(hnp.arrays(np.float64, (*batch, t_k, d_v), elements=floats(bound)))
    mask = draw(hnp.arrays(np.bool_, (*batch, t_q, t_k)))
    return q, k, v, mask


@SETTINGS
@given(attention_inputs())
def test_weights_are_distributions_over_allowed_keys(inputs):
    q, k, v, mask = inputs
    _, w = scaled_dot_product_attention(q, k, v, mask)
    assert np.all((w >= 0) & (w <= 1))
    sums = w.sum(axis=-1)
    any_allowed = mask.any(axis=-1)
    # a sum of T_k <= 6 float64 numbers in [0, 1] is exact to a few ulps of 1
    np.testing.assert_allclose(sums[any_allowed], 1.0, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(sums[~any_allowed], 0.0)


@SETTINGS
@given(attention_inputs())
def test_masked_entries_are_exactly_zero(inputs):
    q, k, v, mask = inputs
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(w[~mask] == 0.0)
    assert np.all(out[~mask.any(axis=-1)] == 0.0)  # a query with no key outputs zeros


@st.composite
def logits_with_shift(draw):
    """x (rows, n) in [-100, 100] with some -inf entries, and one constant c per row in [-100, 100]."""
    rows, n = draw(dims), draw(dims)
    x = draw(hnp.arrays(np.float64, (rows, n), elements=floats(100.0)))
    masked = draw(hnp.arrays(np.bool_, (rows, n)))
    x[masked] = -np.inf
    c = draw(hnp.arrays(np.float64, (rows, 1), elements=floats(100.0)))
    return x, c


@SETTINGS
@given(logits_with_shift())
def test_softmax_invariant_to_adding_a_constant_per_row(inputs):
    x, c = inputs
    # |x + c| <= 200: the addition rounds by at most ulp(200) / 2 ~ 1.4e-14 per entry, which
    # moves each weight by a relative ~3e-14 at most; 1e-12 absolute is far above that.
    np.testing.assert_allclose(softmax(x + c), softmax(x), rtol=0, atol=1e-12)


@st.composite
def extreme_scores(draw):
    """Logits in [-1e4, 1e4] of either float dtype, a mask that may empty whole rows."""
    dtype = draw(float_dtypes)
    shape = (*draw(batch_shapes), draw(dims), draw(dims))
    scores = draw(hnp.arrays(dtype, shape, elements=floats(1e4, dtype)))
    mask = draw(hnp.arrays(np.bool_, shape))
    empty_row = draw(st.integers(0, shape[-2] - 1))
    mask[..., empty_row, :] = False
    return scores, mask, empty_row


@SETTINGS
@given(extreme_scores())
def test_no_floating_point_warning_for_logits_up_to_1e4(inputs):
    scores, mask, empty_row = inputs
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        w = masked_softmax(scores, mask)
        plain = softmax(scores)
        minus_inf = softmax(np.where(mask, scores, -np.inf).astype(scores.dtype))
    for a in (w, plain, minus_inf):
        assert a.dtype == scores.dtype
        assert np.all(np.isfinite(a))
    np.testing.assert_array_equal(w[..., empty_row, :], 0.0)
    np.testing.assert_array_equal(minus_inf[..., empty_row, :], 0.0)
    np.testing.assert_array_equal(w, minus_inf)


@SETTINGS
@given(attention_inputs(bound=100.0), st.sampled_from([1.0, 0.5, None]))
def test_attention_no_floating_point_warning_for_scores_up_to_1e4(inputs, scale):
    q, k, v, mask = inputs
    d_k = q.shape[-1]
    # |q.k| <= d_k * 100 * 100; divide by d_k so every score stays within 1e4.
    q = q / d_k
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        out, w = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    assert np.all(np.isfinite(out))
    assert np.all(np.isfinite(w))


@st.composite
def multi_head_inputs(draw):
    """x (..., T_q, d_model), kv or None, Projections, n_heads, mask or None, scale; float64."""
    n_heads, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    d_model = n_heads * d_k
    batch, t_q = draw(batch_shapes), draw(dims)
    cross = draw(st.booleans())
    t_k = draw(dims) if cross else t_q
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*batch, t_q, d_model))
    kv = rng.standard_normal((*batch, t_k, d_model)) if cross else None
    proj = Projections(*(rng.standard_normal((4, d_model, d_model)) / np.sqrt(d_model)))
    mask = draw(st.none() | hnp.arrays(np.bool_, (t_q, t_k)))
    scale = draw(st.none() | st.floats(0.1, 2.0))
    return x, kv, proj, n_heads, mask, scale


@SETTINGS
@given(multi_head_inputs())
def test_each_head_is_single_head_attention_on_its_slice(inputs):
    x, kv, proj, n_heads, mask, scale = inputs
    trace = multi_head_attention(x, proj, n_heads, kv=kv, mask=mask, scale=scale)
    src = x if kv is None else kv
    d_k = x.shape[-1] // n_heads
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        out, w = scaled_dot_product_attention(
            x @ proj.w_q[:, cols], src @ proj.w_k[:, cols], src @ proj.w_v[:, cols], mask, scale=scale
        )
        # inputs are O(1) and T, d_model <= 16: float64 rounding stays far below 1e-12
        np.testing.assert_allclose(trace.weights[..., h, :, :], w, rtol=0, atol=1e-12)
        np.testing.assert_allclose(trace.context[..., h, :, :], out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(trace.concat[..., cols], out, rtol=0, atol=1e-12)


@SETTINGS
@given(multi_head_inputs())
def test_output_is_sum_of_heads_projected_by_their_rows_of_w_o(inputs):
    x, kv, proj, n_heads, mask, scale = inputs
    trace = multi_head_attention(x, proj, n_heads, kv=kv, mask=mask, scale=scale)
    d_k = x.shape[-1] // n_heads
    per_head = [trace.context[..., h, :, :] @ proj.w_o[h * d_k : (h + 1) * d_k, :] for h in range(n_heads)]
    np.testing.assert_allclose(trace.output, np.sum(per_head, axis=0), rtol=0, atol=1e-12)


@SETTINGS
@given(multi_head_inputs(), st.sampled_from([1.0, 10.0, 40.0]), float_dtypes)
def test_multi_head_no_floating_point_warning_for_saturated_scores(inputs, amplitude, dtype):
    # Scores grow as amplitude^2: at 40 they spread by ~1600, up to ~1e4, so most weights
    # underflow to exactly 0 and rows are one-hot; none of that may warn or give NaN.
    x, kv, proj, n_heads, mask, scale = inputs
    x = (amplitude * x).astype(dtype)
    kv = None if kv is None else (amplitude * kv).astype(dtype)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        trace = multi_head_attention(x, proj, n_heads, kv=kv, mask=mask, scale=scale)
    assert trace.output.dtype == dtype
    assert np.all(np.isfinite(trace.weights))
    assert np.all(np.isfinite(trace.output))
    if mask is not None:
        assert np.all(trace.weights[..., ~mask] == 0.0)
