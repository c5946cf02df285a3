"""The variants of today's models in core/attention.py and core/multihead.py, checked from their rules.

Masks (causal, sliding window, prefix-LM, at an absolute query position), ALiBi's slopes and
bias, and grouped-query heads. The references here are the rules written out as plain Python
loops over (i, j), or the per-head loop in tests/core/reference.py: nothing reuses the code
under test. tests/core/test_attention_variants_torch.py checks the same against PyTorch.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from core import (
    Projections,
    alibi_bias,
    alibi_slopes,
    attention_mask,
    causal_mask,
    kv_head_count,
    multi_head_attention,
    repeat_kv,
    scaled_dot_product_attention,
)
from tests.core.reference import loop_attention, loop_softmax_row


def rule(i: int, j: int, *, causal: bool, window: int, prefix: int) -> bool:
    """The mask's rule for one query position i and key position j, as the issue states it."""
    if causal and prefix and i < prefix and j < prefix:
        return True  # the prefix block sees itself both ways
    if causal and j > i:
        return False
    if window and causal:
        return i - window + 1 <= j
    if window:
        return abs(i - j) < window
    return True


MASK_SETTINGS = [
    dict(causal=c, window=w, prefix=p) for c in (False, True) for w in (0, 1, 2, 3, 9) for p in (0, 1, 3, 9)
]


@pytest.mark.parametrize("settings", MASK_SETTINGS, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
@pytest.mark.parametrize(("t_q", "t_k", "first"), [(6, 6, 0), (4, 7, 0), (7, 4, 0), (1, 6, 5), (3, 9, 2)])
def test_attention_mask_follows_the_rule_for_every_position(settings, t_q, t_k, first):
    got = attention_mask(t_q, t_k, first_query=first, **settings)
    want = [[rule(first + r, j, **settings) for j in range(t_k)] for r in range(t_q)]
    assert got.dtype == np.bool_ and got.shape == (t_q, t_k)
    np.testing.assert_array_equal(got, want)


def test_attention_mask_hand_examples():
    w2 = attention_mask(4, causal=True, window=2).astype(int)  # each query: itself and the one before
    np.testing.assert_array_equal(w2, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])
    both = attention_mask(4, window=2).astype(int)  # |i - j| < 2: a band
    np.testing.assert_array_equal(both, [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]])
    prefix = attention_mask(4, causal=True, prefix=2).astype(int)
    np.testing.assert_array_equal(prefix, [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    windowed_prefix = attention_mask(5, causal=True, window=2, prefix=3).astype(int)
    np.testing.assert_array_equal(
        windowed_prefix, [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    )


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 1), (5, 5), (3, 6), (6, 3)])
def test_causal_attention_mask_is_causal_mask_and_prefix_alone_changes_nothing_without_causal(t_q, t_k):
    np.testing.assert_array_equal(attention_mask(t_q, t_k, causal=True), causal_mask(t_q, t_k))
    assert attention_mask(t_q, t_k, prefix=2).all()
    np.testing.assert_array_equal(attention_mask(t_q, t_k, prefix=2, window=2), attention_mask(t_q, t_k, window=2))


def test_a_cache_step_row_is_the_full_masks_row_not_top_left():
    full = attention_mask(8, causal=True, window=3)
    for t in range(8):
        np.testing.assert_array_equal(
            attention_mask(1, t + 1, causal=True, window=3, first_query=t)[0], full[t, : t + 1]
        )
    # top-left alignment would let the last query see only key 0
    assert causal_mask(1, 8)[0].sum() == 1 and attention_mask(1, 8, causal=True, first_query=7)[0].sum() == 8


@pytest.mark.parametrize("name", ["window", "prefix", "first_query"])
def test_negative_mask_settings_are_refused(name):
    with pytest.raises(ValueError, match=name):
        attention_mask(3, causal=True, **{name: -1})


def test_alibi_slopes_are_the_papers():
    # Press et al. (2022): for 8 heads the slopes are 1/2, 1/4, ..., 1/256
    np.testing.assert_array_equal(alibi_slopes(8), [1 / 2**n for n in range(1, 9)])
    np.testing.assert_array_equal(alibi_slopes(4), [1 / 4, 1 / 16, 1 / 64, 1 / 256])
    np.testing.assert_allclose(alibi_slopes(1), [1 / 256], rtol=1e-15)
    with pytest.raises(ValueError, match="head"):
        alibi_slopes(0)


def test_alibi_bias_is_minus_slope_times_distance():
    h, t_q, t_k, first = 4, 3, 6, 2
    bias = alibi_bias(h, t_q, t_k, first_query=first)
    assert bias.shape == (h, t_q, t_k)
    for n in range(h):
        m = 2 ** (-8 * (n + 1) / h)
        for r in range(t_q):
            for j in range(t_k):
                i = first + r
                assert bias[n, r, j] == pytest.approx(-m * abs(i - j), abs=1e-15)


@pytest.mark.parametrize(("causal", "prefix"), [(True, 0), (True, 4), (False, 0)])
def test_alibi_never_rewards_a_key_a_query_sees(causal, prefix):
    """A penalty for every visible key but the query's own: with a prefix-LM's mask a query also sees the later keys
    of its prefix, and -m (i - j) gave those a bonus (+m per position ahead)."""
    t = 6
    seen = attention_mask(t, causal=causal, prefix=prefix)  # (T, T)
    bias = alibi_bias(3, t)  # (h, T, T)
    assert (bias[:, seen] <= 0).all()
    off_diagonal = seen & ~np.eye(t, dtype=bool)
    assert (bias[:, off_diagonal] < 0).all()
    if causal:  # the paper's causal bias on every key the mask lets through
        i, j = np.nonzero(seen & (np.arange(t)[:, None] >= np.arange(t)[None, :]))
        np.testing.assert_array_equal(bias[:, i, j], -alibi_slopes(3)[:, None] * (i - j))


def loop_biased_weights(q, k, bias, allowed, scale):
    """One head: softmax over allowed keys of (q.k * scale + bias), by loops."""
    rows = []
    for i in range(q.shape[0]):
        logits = [
            math.fsum(float(a) * float(b) for a, b in zip(q[i], k[j], strict=True)) * scale + bias[i, j]
            for j in range(k.shape[0])
        ]
        rows.append(loop_softmax_row(logits, [bool(x) for x in allowed[i]]))
    return np.array(rows)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_adds_the_bias_to_the_scaled_scores_and_reports_scores_without_it(causal):
    rng = np.random.default_rng(3)
    h, t, d_k = 3, 6, 4
    q, k, v = (rng.standard_normal((h, t, d_k)) for _ in range(3))
    mask = attention_mask(t, causal=causal, window=4)
    bias = alibi_bias(h, t)
    out, weights, scores = scaled_dot_product_attention(q, k, v, mask, bias=bias, return_scores=True)
    for n in range(h):
        want_scores, _, _ = loop_attention(q[n], k[n], v[n], mask, 1 / math.sqrt(d_k))
        np.testing.assert_allclose(scores[n], want_scores, rtol=0, atol=1e-12)  # before the bias
        want = loop_biased_weights(q[n], k[n], bias[n], mask, 1 / math.sqrt(d_k))
        np.testing.assert_allclose(weights[n], want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(out[n], want @ v[n], rtol=0, atol=1e-12)
    _, plain_w = scaled_dot_product_attention(q, k, v, mask)
    assert not np.allclose(plain_w, weights)  # the bias changed something


def test_repeat_kv_gives_query_head_n_the_kv_head_n_over_group():
    x = np.arange(2 * 3 * 1).reshape(2, 3, 1)[None]  # (1, kv_heads=2, T=3, 1)
    rep = repeat_kv(x, 3)  # (1, 6, 3, 1)
    assert rep.shape == (1, 6, 3, 1)
    for n in range(6):
        np.testing.assert_array_equal(rep[0, n], x[0, n // 3])
    assert repeat_kv(x, 1) is x


def grouped_case(d_model, n_heads, kv_heads, seed=0):
    rng = np.random.default_rng([d_model, n_heads, kv_heads, seed])
    x = rng.standard_normal((5, d_model))
    full = Projections.random(d_model, seed)
    return x, full, full.grouped(n_heads, kv_heads)


@pytest.mark.parametrize(
    ("d_model", "n_heads", "kv_heads"), [(16, 4, 4), (16, 4, 2), (16, 4, 1), (24, 6, 3), (8, 8, 2)]
)
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_heads_equal_multi_head_with_each_groups_kv_columns_copied(d_model, n_heads, kv_heads, causal):
    """A query head in group g attends exactly as in multi-head attention whose K/V head is head g's copy."""
    x, full, grouped = grouped_case(d_model, n_heads, kv_heads)
    d_k, group = d_model // n_heads, n_heads // kv_heads
    mask = attention_mask(5, causal=causal, window=3)
    trace = multi_head_attention(x, grouped, n_heads, mask=mask)
    assert trace.k.shape == trace.v.shape == (kv_heads, 5, d_k)
    assert trace.keys_per_head.shape == (n_heads, 5, d_k)
    assert (trace.kv_heads, trace.group) == (kv_heads, group)
    # build square W_K, W_V whose head n holds the columns of K/V head n // group
    cols = np.concatenate([np.arange(d_k) + (n // group) * d_k for n in range(n_heads)])
    copied = Projections(w_q=full.w_q, w_k=grouped.w_k[:, cols], w_v=grouped.w_v[:, cols], w_o=full.w_o)
    want = multi_head_attention(x, copied, n_heads, mask=mask)
    for name in ("scores", "weights", "context", "output"):
        np.testing.assert_allclose(getattr(trace, name), getattr(want, name), rtol=0, atol=1e-12, err_msg=name)
    for n in range(n_heads):
        assert trace.kv_head_of(n) == n // group
        np.testing.assert_array_equal(trace.keys_per_head[n], trace.k[n // group])
    if kv_heads == n_heads:  # grouping into as many K/V heads as query heads changes nothing
        np.testing.assert_array_equal(trace.weights, multi_head_attention(x, full, n_heads, mask=mask).weights)


def test_grouped_keeps_the_first_kv_heads_columns_and_refuses_what_does_not_divide():
    full = Projections.random(16, 2)
    g = full.grouped(4, 2)
    assert g.w_k.shape == g.w_v.shape == (16, 8) and g.d_kv == 8
    np.testing.assert_array_equal(g.w_k, full.w_k[:, :8])
    np.testing.assert_array_equal(g.w_q, full.w_q)
    with pytest.raises(ValueError, match="divide"):
        full.grouped(4, 3)
    with pytest.raises(ValueError, match="grouped already"):
        g.grouped(4, 1)
    with pytest.raises(ValueError, match="kv_heads"):
        kv_head_count(g, 1)  # one head of d_k = 16: 8 columns are half a K/V head
    assert kv_head_count(g, 4) == 2


def test_projections_refuse_kv_widths_that_are_not_whole_heads():
    d = np.zeros((8, 8))
    with pytest.raises(ValueError, match="d_kv"):
        Projections(w_q=d, w_k=np.zeros((8, 3)), w_v=np.zeros((8, 3)), w_o=d)  # 3 does not divide 8
    with pytest.raises(ValueError, match="d_kv"):
        Projections(w_q=d, w_k=np.zeros((8, 4)), w_v=np.zeros((8, 2)), w_o=d)  # K and V differ
    with pytest.raises(ValueError, match="biases"):
        Projections(w_q=d, w_k=np.zeros((8, 4)), w_v=np.zeros((8, 4)), w_o=d, b_k=np.zeros(8))
    ok = Projections(w_q=d, w_k=np.zeros((8, 4)), w_v=np.zeros((8, 4)), w_o=d, b_k=np.zeros(4))
    assert ok.d_kv == 4


def test_float32_in_float32_out_with_every_variant():
    x, _, grouped = grouped_case(16, 4, 2)
    x32 = x.astype(np.float32)
    proj32 = Projections.random(16, 0, dtype=np.float32).grouped(4, 2)
    mask = attention_mask(5, causal=True, window=2, prefix=2)
    trace = multi_head_attention(x32, proj32, 4, mask=mask, bias=alibi_bias(4, 5))
    for name in ("q", "k", "v", "scores", "weights", "context", "concat", "output"):
        assert getattr(trace, name).dtype == np.float32, name
    want = multi_head_attention(x32.astype(np.float64), grouped, 4, mask=mask, bias=alibi_bias(4, 5))
    np.testing.assert_allclose(trace.output, want.output, rtol=1e-4, atol=1e-5)


def test_a_fully_masked_row_gives_zeros_with_bias_and_groups_and_no_warning():
    rng = np.random.default_rng(1)
    x, kv = rng.standard_normal((7, 16)), rng.standard_normal((4, 16))
    proj = Projections.random(16, 1).grouped(4, 2)
    mask = attention_mask(7, 4, window=2)  # queries 5 and 6 are 2+ away from every key 0..3
    assert not mask[5:].any() and mask[:5].any(axis=1).all()
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        trace = multi_head_attention(x, proj, 4, kv=kv, mask=mask, bias=alibi_bias(4, 7, 4))
    np.testing.assert_array_equal(trace.weights[:, 5:], 0.0)
    np.testing.assert_array_equal(trace.context[:, 5:], 0.0)
    np.testing.assert_allclose(trace.weights[:, :5].sum(axis=-1), 1.0, rtol=0, atol=1e-12)
