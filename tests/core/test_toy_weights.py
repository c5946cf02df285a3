"""Hand-built weights: each promises a pattern, and these tests hold them to it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    WEIGHT_KINDS,
    AttentionConfig,
    Projections,
    clock_positions,
    head_counts,
    head_summary,
    identity_projections,
    make_projections,
    multi_head_attention,
    previous_token_projections,
    run,
)
from core.toy_weights import CLOCK_PERIODS, CLOCK_RADIUS, CLOCK_SHARPNESS

VOCAB = ["the", "cat", "dog", "sat", "on", "mat", "a", "é", "😀", ".", "ran", "and", "it", "was", "red"]
SENTENCE = ["the", "cat", "sat", "on", "the", "mat", "and", "the", "dog", "sat", "on", "the", "cat", "."]


def test_weight_kinds_and_random_is_the_old_default():
    assert WEIGHT_KINDS == ("random", "identity", "previous")
    assert AttentionConfig().weights == "random"
    got, old = make_projections("random", 32, 4, seed=7), Projections.random(32, 7)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        np.testing.assert_array_equal(getattr(got, name), getattr(old, name))
    with pytest.raises(ValueError, match="unknown weights"):
        make_projections("trained", 32, 4)
    with pytest.raises(ValueError, match="weights must be one of"):
        AttentionConfig(weights="learned")
    for learned in ("trained", "minilm"):  # other model sources (core.sources), not a config of random weights
        with pytest.raises(ValueError, match=r"weights must be one of \('random', 'identity', 'previous'\)"):
            AttentionConfig(weights=learned, d_model=384, n_heads=12, positional="learned")


# --- identity: look-alikes attend to each other -------------------------------------------------------


def test_identity_projections_are_identity_matrices():
    p = identity_projections(6)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        np.testing.assert_array_equal(getattr(p, name), np.eye(6))


def test_identity_scores_are_dot_products_of_the_inputs_per_head():
    result = run(SENTENCE, AttentionConfig(d_model=32, n_heads=4, weights="identity", positional="sinusoidal"))
    x = result.x + result.positions  # (T, 32)
    for h in range(4):
        cols = x[:, h * 8 : (h + 1) * 8]  # the head's 8 columns
        np.testing.assert_allclose(result.trace.scores[h], cols @ cols.T / math.sqrt(8), rtol=1e-13, atol=1e-13)
    # W_V = W_O = I: each output row is the weighted mix of the inputs, head by head
    mix = np.concatenate([result.trace.weights[h] @ x[:, h * 8 : (h + 1) * 8] for h in range(4)], axis=1)
    np.testing.assert_allclose(result.trace.output, mix, rtol=1e-13, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=40),
    n_heads=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**32 - 1),
)
def test_identity_every_query_peaks_on_a_copy_of_itself(tokens, n_heads, seed):
    # d_k = 64 or 32: x_i . x_j / |x_i|^2 has sd ~1/sqrt(d_k) for j another word, so a copy (ratio 1) wins
    w = run(tokens, AttentionConfig(d_model=64, n_heads=n_heads, weights="identity", seed=seed)).trace.weights
    words = np.array(tokens, dtype=object)
    same = words[:, None] == words[None, :]  # (T, T) look-alikes, including the token itself
    for h in range(n_heads):
        assert np.all(same[np.arange(len(tokens)), w[h].argmax(axis=1)])
        # every copy of a word gets the same weight: identical vectors, identical scores up to BLAS blocking
        for i in range(len(tokens)):
            np.testing.assert_allclose(w[h, i, same[i]], w[h, i, same[i]][0], rtol=1e-13, atol=0)


def test_identity_puts_most_weight_on_look_alikes_in_a_wide_head():
    # d_k = 64: a copy scores |x|^2 / 8 ~ 8, another word ~N(0, 1); with 14 tokens the copies take most weight
    w = run(SENTENCE, AttentionConfig(d_model=64, n_heads=1, weights="identity")).trace.weights[0]
    words = np.array(SENTENCE, dtype=object)
    on_look_alikes = (w * (words[:, None] == words[None, :])).sum(axis=1)  # (T,)
    assert np.all(on_look_alikes > 0.5)


# --- previous: the hand-built previous-token head -------------------------------------------------------


def test_clock_table_layout():
    table = clock_positions(70, 8)
    assert table.shape == (70, 8)
    np.testing.assert_array_equal(table[:, 4:], 0.0)
    for hand in (0, 1):  # each hand is a (cos, sin) pair of length CLOCK_RADIUS
        np.testing.assert_allclose(np.hypot(table[:, 2 * hand], table[:, 2 * hand + 1]), CLOCK_RADIUS, rtol=1e-15)
    np.testing.assert_allclose(table[1, 0:2], CLOCK_RADIUS * np.array([np.cos(2 * np.pi / 72), np.sin(2 * np.pi / 72)]))
    np.testing.assert_array_equal(clock_positions(5, 8, start=9), clock_positions(14, 8)[9:])
    with pytest.raises(ValueError, match="d_model >= 4"):
        clock_positions(3, 2)


@pytest.mark.parametrize(("d_model", "n_heads"), [(4, 1), (16, 4), (64, 16), (96, 3)])
def test_previous_head_scores_on_clean_positions(d_model, n_heads):
    """With x = the clock table alone, every head's scaled score is SHARPNESS * (cos + cos) of one step back."""
    t = 64
    tr = multi_head_attention(clock_positions(t, d_model), previous_token_projections(d_model, n_heads), n_heads)
    n = np.arange(t)[:, None] - 1 - np.arange(t)[None, :]  # (T, T): how far key j is from i - 1
    expected = CLOCK_SHARPNESS * sum(np.cos(n * 2 * np.pi / period) for period in CLOCK_PERIODS)
    for h in range(n_heads):
        np.testing.assert_allclose(tr.scores[h], expected, rtol=1e-12, atol=1e-10)
    # clean margin: key i-1 beats every other key by more than log(63) + 6 nats
    off = np.where(n == 0, -np.inf, expected)
    assert np.min(2 * CLOCK_SHARPNESS - off.max(axis=1)) > math.log(63) + 6


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    t=st.integers(2, 64),
    d_model=st.sampled_from([4, 8, 16, 64, 128, 512]),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_previous_head_puts_most_weight_on_the_previous_token(data, t, d_model, causal, seed):
    n_heads = data.draw(st.sampled_from(head_counts(d_model, "learned", "previous")))
    tokens = data.draw(st.lists(st.sampled_from(VOCAB), min_size=t, max_size=t))
    config = AttentionConfig(
        d_model=d_model, n_heads=n_heads, causal=causal, positional="learned", weights="previous", seed=seed
    )
    w = run(tokens, config).trace.weights  # (h, T, T)
    on_previous = w[:, np.arange(1, t), np.arange(t - 1)]  # (h, T-1): w[h, i, i-1]
    assert np.all(on_previous > 0.5), f"min weight on i-1: {on_previous.min():.3f}"


def test_previous_head_in_the_head_summary_and_its_output_copies_the_previous_token():
    tokens = SENTENCE * 2  # 28 tokens
    result = run(tokens, AttentionConfig(positional="learned", weights="previous", n_heads=16))
    s = head_summary(result.trace.weights, result.trace.mask)
    assert np.all(s.previous_weight > 0.95) and np.all(s.self_weight < 0.1)
    np.testing.assert_array_equal(result.positions, clock_positions(len(tokens), 64))
    x = result.x + result.positions
    # W_V = W_O = I: row i of the output is close to input row i-1
    err = np.abs(result.trace.output[1:] - x[:-1]).max(axis=1) / np.abs(x[:-1]).max(axis=1)
    assert np.all(err < 0.1)


def test_previous_head_without_its_clock_has_no_pattern():
    w = run(SENTENCE, AttentionConfig(weights="previous", positional="none")).trace.weights
    assert head_summary(w).previous_weight.max() < 0.3  # near uniform: 1/14 ~ 0.07 per key


def test_previous_head_needs_four_columns_per_head():
    assert head_counts(16, "learned", "previous") == [1, 2, 4]  # d_k = 16, 8, 4
    assert head_counts(12, "rope", "previous") == [1, 2, 3]  # d_k = 12, 6, 4: even and at least 4
    with pytest.raises(ValueError, match="d_k >= 4"):
        AttentionConfig(d_model=16, n_heads=8, weights="previous")
    with pytest.raises(ValueError, match=r"it needs d_k >= 4\. Valid head counts for d_model = 16: 1, 2, 4"):
        previous_token_projections(16, 8)
