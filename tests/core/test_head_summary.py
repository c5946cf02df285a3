"""head_summary on hand-built weight matrices with known answers, and against a row-by-row loop."""

from __future__ import annotations

import math
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import AttentionConfig, causal_mask, head_summary, masked_softmax, run

FIELDS = ("entropy", "normalized_entropy", "self_weight", "previous_weight", "first_weight")


def summary_row(s, i=0):
    """The five numbers of head ``i`` as a tuple, for compact comparisons."""
    return tuple(float(getattr(s, f)[i]) for f in FIELDS)


def test_identity_matrix_looks_at_itself():
    t = 5
    s = head_summary(np.eye(t)[None])
    assert summary_row(s) == (0.0, 0.0, 1.0, 0.0, 1 / t)  # only row 0's self is the first token


def test_previous_token_matrix():
    t = 6
    w = np.eye(t, k=-1)  # row i puts everything on i-1 ...
    w[0, 0] = 1.0  # ... and row 0, with no previous token, on itself
    s = head_summary(w[None], causal_mask(t))
    assert s.previous_weight[0] == 1.0
    assert s.self_weight[0] == pytest.approx(1 / t)  # row 0 only
    assert s.first_weight[0] == pytest.approx(2 / t)  # rows 0 and 1
    assert s.entropy[0] == 0.0 and s.normalized_entropy[0] == 0.0


def test_uniform_rows_over_all_keys():
    t = 7
    s = head_summary(np.full((1, t, t), 1 / t))
    assert s.entropy[0] == pytest.approx(math.log(t), rel=1e-14)
    assert s.normalized_entropy[0] == pytest.approx(1.0, rel=1e-14)
    for got in (s.self_weight[0], s.previous_weight[0], s.first_weight[0]):
        assert got == pytest.approx(1 / t, rel=1e-14)


def test_uniform_rows_under_the_causal_mask():
    t = 6
    mask = causal_mask(t)
    w = mask / mask.sum(axis=1, keepdims=True)  # row i uniform over keys 0..i
    s = head_summary(w[None], mask)
    n = np.arange(1, t + 1)  # allowed keys per row
    assert s.entropy[0] == pytest.approx(np.mean(np.log(n)), rel=1e-14)
    assert s.normalized_entropy[0] == pytest.approx(1.0, rel=1e-14)  # row 0 (one key) is left out
    assert s.self_weight[0] == pytest.approx(np.mean(1 / n), rel=1e-14)
    assert s.previous_weight[0] == pytest.approx(np.mean(1 / n[1:]), rel=1e-14)
    assert s.first_weight[0] == pytest.approx(np.mean(1 / n), rel=1e-14)


def test_attention_sink_and_several_heads_at_once():
    t = 4
    sink = np.zeros((t, t))
    sink[:, 0] = 1.0
    heads = np.stack([np.eye(t), sink, np.full((t, t), 1 / t)])  # (3, T, T)
    s = head_summary(heads)
    np.testing.assert_allclose(s.first_weight, [1 / t, 1.0, 1 / t])
    np.testing.assert_allclose(s.self_weight, [1.0, 1 / t, 1 / t])
    np.testing.assert_allclose(s.entropy, [0.0, 0.0, math.log(t)], atol=1e-15)
    batched = head_summary(np.stack([heads, heads[::-1]]))  # (2, 3, T, T) -> fields (2, 3)
    np.testing.assert_allclose(batched.first_weight, [[1 / t, 1.0, 1 / t], [1 / t, 1.0, 1 / t]])
    np.testing.assert_allclose(batched.self_weight[1], [1 / t, 1 / t, 1.0])


def test_one_token_sentence():
    s = head_summary(np.ones((2, 1, 1)), causal_mask(1))
    np.testing.assert_array_equal(s.entropy, 0.0)
    np.testing.assert_array_equal(s.self_weight, 1.0)
    np.testing.assert_array_equal(s.first_weight, 1.0)
    assert np.all(np.isnan(s.previous_weight)) and np.all(np.isnan(s.normalized_entropy))  # nothing to average


def test_fully_masked_rows_are_left_out():
    mask = np.array([[True, True], [False, False]])
    w = np.array([[[0.5, 0.5], [0.0, 0.0]]])  # row 1 has no allowed key: all-zero weights
    s = head_summary(w, mask)
    assert summary_row(s) == pytest.approx((math.log(2), 1.0, 0.5, math.nan, 0.5), nan_ok=True)


def test_an_underflowed_weight_still_counts_as_an_allowed_key():
    w = np.array([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])  # one-hot rows, three allowed keys each
    s = head_summary(w)  # no mask: all three are allowed, so normalized entropy is 0 / log 3 = 0
    assert s.normalized_entropy[0] == 0.0 and s.entropy[0] == 0.0


def test_cross_attention_rectangle():
    # T_q = 3 queries, T_k = 2 keys: self is defined for rows 0, 1; previous for rows 1, 2
    w = np.array([[[0.25, 0.75], [0.5, 0.5], [0.9, 0.1]]])
    s = head_summary(w)
    assert s.self_weight[0] == pytest.approx((0.25 + 0.5) / 2)
    assert s.previous_weight[0] == pytest.approx((0.5 + 0.1) / 2)
    assert s.first_weight[0] == pytest.approx((0.25 + 0.5 + 0.9) / 3)


def loop_summary(w: np.ndarray, mask: np.ndarray) -> list[tuple[float, ...]]:
    """Row by row in plain Python: the module's definitions, written out independently."""
    out = []
    for head, allowed in zip(w, mask, strict=True):
        t_q, t_k = head.shape
        rows = [i for i in range(t_q) if allowed[i].any()]
        ent = {i: -math.fsum(p * math.log(p) for p in head[i] if p > 0) for i in rows}
        spread = [i for i in rows if allowed[i].sum() >= 2]
        diag = [i for i in rows if i < t_k]
        prev = [i for i in rows if 1 <= i <= t_k]

        def mean(xs):
            return math.fsum(xs) / len(xs) if xs else math.nan

        out.append(
            (
                mean([ent[i] for i in rows]),
                mean([ent[i] / math.log(allowed[i].sum()) for i in spread]),
                mean([head[i, i] for i in diag]),
                mean([head[i, i - 1] for i in prev]),
                mean([head[i, 0] for i in rows]),
            )
        )
    return out


@st.composite
def masked_weights(draw):
    h, t_q, t_k = draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    scores = draw(hnp.arrays(np.float64, (h, t_q, t_k), elements=st.floats(-30, 30)))
    mask = draw(hnp.arrays(np.bool_, (h, t_q, t_k)))
    return masked_softmax(scores, mask), mask


@settings(max_examples=80, deadline=None)
@given(masked_weights())
def test_matches_row_by_row_loop(inputs):
    w, mask = inputs
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        s = head_summary(w, mask)
    expected = loop_summary(w, mask)
    for i, row in enumerate(expected):
        assert summary_row(s, i) == pytest.approx(row, rel=1e-12, abs=1e-14, nan_ok=True)
    finite = s.normalized_entropy[~np.isnan(s.normalized_entropy)]
    assert np.all((finite >= -1e-15) & (finite <= 1 + 1e-12))


def test_on_a_pipeline_trace_with_its_mask():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    tr = run(tokens, AttentionConfig(causal=True, n_heads=8)).trace
    s = head_summary(tr.weights, tr.mask)
    assert s.entropy.shape == (8,)
    np.testing.assert_allclose(s.first_weight, tr.weights[:, :, 0].mean(axis=1), rtol=1e-14)


def test_same_word_weight_for_one_map_a_stack_of_heads_and_a_batch():
    """Tokens 1-2 are one word, 3 another, 0 and 4 no word: row 1 puts 0.6 on 2, row 2 puts 0.3 on 1 -> mean 0.45."""
    w = np.full((5, 5), 0.2)
    w[1] = [0.1, 0.1, 0.6, 0.1, 0.1]
    w[2] = [0.2, 0.3, 0.1, 0.2, 0.2]
    word_ids = [None, 0, 0, 1, None]
    one = head_summary(w, word_ids=word_ids).same_word_weight  # (T, T): no head axis
    heads = head_summary(np.stack([w, w]), word_ids=word_ids).same_word_weight  # (h, T, T)
    batch = head_summary(np.stack([w, w])[None], word_ids=[word_ids]).same_word_weight  # (B, h, T, T), ids (B, T)
    assert one == pytest.approx(0.45)
    np.testing.assert_allclose(heads, [0.45, 0.45])
    np.testing.assert_allclose(batch, [[0.45, 0.45]])
