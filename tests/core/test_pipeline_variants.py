"""core.pipeline.run with today's variants equals core.attention's functions composed by hand.

The settings reach ``multi_head_attention`` only through ``AttentionConfig``: this checks that each one arrives
(W_K, W_V grouped to kv_heads heads, the window and prefix in the mask, ALiBi's bias) by recomputing the run
from the lesson's pieces: project, split, repeat, scores + bias, mask, softmax, weights @ V, merge, W_O.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from core import AttentionConfig, Projections, alibi_bias, attention_mask, repeat_kv, run, tokenize
from core.attention import softmax

TOKENS = tokenize("the bank of the river gave a loan")  # 8 tokens
COMBINATIONS = list(itertools.product((4, 2, 1), (False, True), (0, 3), (0, 2), (False, True)))


def by_hand(config: AttentionConfig) -> tuple[np.ndarray, np.ndarray]:
    """(h, T, T) weights and (T, d_model) output from the pieces, without multi_head_attention."""
    first = run(TOKENS, AttentionConfig(d_model=config.d_model, n_heads=config.n_heads, seed=config.seed))
    x = first.x + first.positions  # (T, d): positional="none" adds zeros
    t, h, d_k = len(TOKENS), config.n_heads, config.d_k
    kv = config.kv_head_count
    p = Projections.random(config.d_model, config.seed)
    w_k, w_v = p.w_k[:, : kv * d_k], p.w_v[:, : kv * d_k]  # (d, kv * d_k): the first kv heads' columns
    q = (x @ p.w_q).reshape(t, h, d_k).transpose(1, 0, 2)  # (h, T, d_k)
    k = repeat_kv((x @ w_k).reshape(t, kv, d_k).transpose(1, 0, 2), h // kv)  # (kv, T, d_k) -> (h, T, d_k)
    v = repeat_kv((x @ w_v).reshape(t, kv, d_k).transpose(1, 0, 2), h // kv)  # (h, T, d_k)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)  # (h, T, T)
    if config.alibi:
        scores = scores + alibi_bias(h, t)  # (h, T, T)
    allowed = attention_mask(t, causal=config.causal, window=config.window, prefix=config.prefix)  # (T, T)
    weights = softmax(np.where(allowed, scores, -np.inf))  # (h, T, T)
    concat = (weights @ v).transpose(1, 0, 2).reshape(t, config.d_model)  # (T, d)
    return weights, concat @ p.w_o


@pytest.mark.parametrize(("kv_heads", "causal", "window", "prefix", "alibi"), COMBINATIONS)
def test_run_with_the_variants_is_the_pieces_composed_by_hand(kv_heads, causal, window, prefix, alibi):
    config = AttentionConfig(
        d_model=16, n_heads=4, seed=5, causal=causal, kv_heads=kv_heads, window=window, prefix=prefix, alibi=alibi
    )
    got = run(TOKENS, config).trace
    weights, output = by_hand(config)
    assert got.kv_heads == kv_heads and got.k.shape == (kv_heads, len(TOKENS), 4)
    np.testing.assert_allclose(got.weights, weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.output, output, rtol=0, atol=1e-12)
    assert (got.bias is not None) == alibi
    assert (got.mask is None) == (not causal and not window)  # a prefix alone masks nothing


def test_prefix_without_causal_changes_nothing():
    plain, prefixed = (run(TOKENS, AttentionConfig(d_model=16, n_heads=4, prefix=p)).trace for p in (0, 3))
    assert prefixed.mask is None
    np.testing.assert_array_equal(plain.weights, prefixed.weights)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (dict(kv_heads=3), "kv_heads must divide n_heads = 4"),
        (dict(kv_heads=0), "kv_heads must divide"),
        (dict(window=-1), "window must be 0"),
        (dict(prefix=-2), "prefix must be 0"),
        (dict(kv_heads=2, weights="previous"), "no grouped form"),
    ],
)
def test_config_refuses_impossible_variants_with_a_clear_message(fields, match):
    with pytest.raises(ValueError, match=match):
        AttentionConfig(d_model=16, n_heads=4, **fields)
