"""Cross-attention through the pipeline: shapes, equivalence with multi_head_attention(kv=...),
positions per side, the top-left causal mask over T_q x T_k, and self-attention as the special case."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    AttentionConfig,
    Projections,
    apply_rope,
    embed,
    multi_head_attention,
    positional_encoding,
    run,
)

TARGET = ["le", "chat", "dort", "sur", "le", "tapis"]
SOURCE = ["the", "cat", "sleeps", "on", "the", "mat", "today", "."]
LONG_Q, LONG_K = SOURCE + TARGET, TARGET + SOURCE  # 14 tokens each, for any (T_q, T_k) below
WORDS = st.sampled_from(["a", "b", "cat", "the", "é", "😀", "."])


@pytest.mark.parametrize(("t_q", "t_k"), [(6, 8), (8, 6), (1, 5), (5, 1), (1, 1)])
def test_shapes_follow_both_lengths(t_q, t_k):
    config = AttentionConfig(d_model=32, n_heads=4)
    result = run(LONG_Q[:t_q], config, source=LONG_K[:t_k])
    tr = result.trace
    assert tr.q.shape == (4, t_q, 8)
    assert tr.k.shape == tr.v.shape == (4, t_k, 8)
    assert tr.scores.shape == tr.weights.shape == (4, t_q, t_k)
    assert tr.context.shape == (4, t_q, 8)
    assert tr.concat.shape == tr.output.shape == (t_q, 32)
    assert result.x.shape == result.positions.shape == (t_q, 32)
    assert result.source_x.shape == result.source_positions.shape == (t_k, 32)
    assert result.key_tokens == tuple(LONG_K[:t_k]) == result.source_tokens
    np.testing.assert_allclose(tr.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "learned"])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_multi_head_attention_with_kv(positional, causal):
    config = AttentionConfig(d_model=16, n_heads=2, causal=causal, positional=positional, seed=9)
    result = run(TARGET, config, source=SOURCE)
    t_q, t_k = len(TARGET), len(SOURCE)
    # each side gets its own positions 0..T-1, built here from the public pieces
    x = embed(TARGET, 16, 9) + positional_encoding(positional, t_q, 16, 9)
    kv = embed(SOURCE, 16, 9) + positional_encoding(positional, t_k, 16, 9)
    mask = np.tri(t_q, t_k, dtype=bool) if causal else None
    expected = multi_head_attention(x, Projections.random(16, 9), 2, kv=kv, mask=mask)
    for name in ("q", "k", "v", "scores", "weights", "context", "output"):
        np.testing.assert_array_equal(getattr(result.trace, name), getattr(expected, name), err_msg=name)
    np.testing.assert_array_equal(result.source_positions, positional_encoding(positional, t_k, 16, 9))


def test_rope_turns_each_side_by_its_own_positions():
    config = AttentionConfig(d_model=16, n_heads=2, positional="rope")
    tr = run(TARGET, config, source=SOURCE, start=3).trace
    np.testing.assert_array_equal(tr.q, apply_rope(tr.q_unrotated, np.arange(3, 3 + len(TARGET))))
    np.testing.assert_array_equal(tr.k, apply_rope(tr.k_unrotated, np.arange(3, 3 + len(SOURCE))))


@pytest.mark.parametrize(("t_q", "t_k"), [(6, 8), (8, 6), (3, 3)])
def test_causal_is_top_left_aligned_over_queries_and_keys(t_q, t_k):
    tr = run(LONG_Q[:t_q], AttentionConfig(causal=True), source=LONG_K[:t_k]).trace
    assert tr.mask.shape == (t_q, t_k)
    for i in range(t_q):
        for j in range(t_k):
            assert tr.mask[i, j] == (j <= i)  # query i sees source positions 0..i
            if j > i:
                assert np.all(tr.weights[:, i, j] == 0.0)
    np.testing.assert_allclose(tr.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-14)  # no row is ever empty


@settings(max_examples=30, deadline=None)
@given(
    tokens=st.lists(WORDS, min_size=1, max_size=12),
    positional=st.sampled_from(["none", "sinusoidal", "learned", "rope"]),
    weights=st.sampled_from(["random", "identity"]),
    causal=st.booleans(),
    scaled=st.booleans(),
)
def test_source_equal_to_the_sentence_is_self_attention(tokens, positional, weights, causal, scaled):
    config = AttentionConfig(
        d_model=16, n_heads=4, positional=positional, weights=weights, causal=causal, scaled=scaled
    )
    own = run(tokens, config)
    cross = run(tokens, config, source=list(tokens))
    for name in ("q", "k", "v", "scores", "weights", "output"):
        np.testing.assert_array_equal(getattr(cross.trace, name), getattr(own.trace, name), err_msg=name)
    assert own.source_tokens is None and own.key_tokens == tuple(tokens)


def test_empty_source_is_refused():
    with pytest.raises(ValueError, match="source"):
        run(TARGET, AttentionConfig(), source=[])


def test_default_run_is_unchanged():
    """The plain self-attention data path, spelled out: embed + table, random projections, self-attention."""
    config = AttentionConfig(positional="sinusoidal", causal=True, seed=4)
    result = run(TARGET, config)
    x = embed(TARGET, 64, 4) + positional_encoding("sinusoidal", len(TARGET), 64, 4)
    expected = multi_head_attention(x, Projections.random(64, 4), 4, mask=np.tri(len(TARGET), dtype=bool))
    np.testing.assert_array_equal(result.trace.weights, expected.weights)
    np.testing.assert_array_equal(result.trace.output, expected.output)
    assert result.start == 0 and result.source_x is None and result.trace.q_unrotated is None
