"""core/pipeline.py: the settings object, one run of the data path, and the permutation experiment."""

from __future__ import annotations

import numpy as np
import pytest

from core import (
    AttentionConfig,
    Projections,
    causal_mask,
    embed,
    permutation_experiment,
    positional_encoding,
    realign,
    run,
    tokenize,
)
from tests.core.reference import loop_multi_head

TOKENS = tokenize("The bank of the river gave a loan")  # 8 tokens, "the" twice
REVERSED = list(range(len(TOKENS)))[::-1]
SHUFFLE = [3, 7, 0, 5, 1, 6, 2, 4]

# --- AttentionConfig ------------------------------------------------------------------


def test_config_defaults_and_d_k():
    config = AttentionConfig()
    assert config.d_k == config.d_model // config.n_heads
    assert AttentionConfig(d_model=48, n_heads=6).d_k == 8


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_model": 0}, "d_model"),
        ({"d_model": 12, "n_heads": 5}, "1, 2, 3, 4, 6, 12"),
        ({"positional": "rotary"}, "positional"),
        ({"seed": -1}, "seed"),
    ],
)
def test_config_rejects_invalid_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionConfig(**kwargs)


# --- run ------------------------------------------------------------------------------


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "learned"])
@pytest.mark.parametrize("causal", [False, True])
def test_run_is_the_documented_data_path(positional, causal):
    config = AttentionConfig(d_model=16, n_heads=4, causal=causal, positional=positional, seed=5)
    result = run(TOKENS, config)
    t = len(TOKENS)
    assert result.tokens == tuple(TOKENS)
    np.testing.assert_array_equal(result.x, embed(TOKENS, 16, seed=5))
    np.testing.assert_array_equal(result.positions, positional_encoding(positional, t, 16, seed=5))
    proj = Projections.random(16, seed=5)
    mask = causal_mask(t) if causal else None
    ref = loop_multi_head(result.x + result.positions, proj.w_q, proj.w_k, proj.w_v, proj.w_o, 4, mask=mask)
    for name in ("weights", "output"):
        np.testing.assert_allclose(getattr(result.trace, name), ref[name], rtol=0, atol=1e-12, err_msg=name)
    assert result.trace.weights.shape == (4, t, t)


def test_run_is_deterministic_and_seeded():
    a = run(TOKENS, AttentionConfig(seed=1)).trace.weights
    b = run(TOKENS, AttentionConfig(seed=1)).trace.weights
    c = run(TOKENS, AttentionConfig(seed=2)).trace.weights
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_repeated_word_without_positions_has_identical_rows():
    # "the" at 0 and 3 has the same embedding, so with no position and no mask its query
    # row is the same; the rows are still two rows of the T x T map.
    w = run(TOKENS, AttentionConfig()).trace.weights
    assert w.shape[-2:] == (8, 8)
    np.testing.assert_array_equal(w[:, 0], w[:, 3])
    with_pe = run(TOKENS, AttentionConfig(positional="sinusoidal")).trace.weights
    assert np.max(np.abs(with_pe[:, 0] - with_pe[:, 3])) > 1e-3


# --- realign --------------------------------------------------------------------------


def test_realign_hand_built():
    original = np.arange(9.0).reshape(3, 3)  # original[i, j] = 3 i + j
    permutation = [2, 0, 1]  # the reordered sentence is tokens[2], tokens[0], tokens[1]
    # an order-blind map of the reordered sentence: permuted[i, j] = original[p[i], p[j]]
    permuted = np.array(
        [
            [8.0, 6.0, 7.0],
            [2.0, 0.0, 1.0],
            [5.0, 3.0, 4.0],
        ]
    )
    np.testing.assert_array_equal(realign(permuted, np.array(permutation)), original)
    heads = np.stack([permuted, 10 * permuted])  # (h=2, T, T): a leading axis is carried along
    np.testing.assert_array_equal(realign(heads, np.array(permutation)), np.stack([original, 10 * original]))


def test_realign_identity_permutation_is_identity():
    x = np.random.default_rng(0).random((2, 4, 4))
    np.testing.assert_array_equal(realign(x, np.arange(4)), x)


# --- the permutation experiment -------------------------------------------------------


@pytest.mark.parametrize("permutation", [REVERSED, SHUFFLE])
@pytest.mark.parametrize("n_heads", [1, 4])
def test_no_positions_no_mask_is_permutation_equivariant(permutation, n_heads):
    result = permutation_experiment(TOKENS, permutation, AttentionConfig(d_model=32, n_heads=n_heads))
    assert result.max_abs_diff <= 1e-12
    np.testing.assert_allclose(result.realigned, result.weights, rtol=0, atol=1e-12)
    # not trivially so: the permuted run's own map differs from the original one
    assert np.max(np.abs(result.permuted_weights - result.weights)) > 1e-3


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_positional_encoding_breaks_the_symmetry(positional):
    # A unit-size position vector moves each score by O(1), so weights move by O(0.1).
    result = permutation_experiment(TOKENS, SHUFFLE, AttentionConfig(positional=positional))
    assert result.max_abs_diff > 1e-3


def test_causal_mask_breaks_the_symmetry():
    # Reversed, the last token sees one key instead of eight: its weights change completely.
    result = permutation_experiment(TOKENS, REVERSED, AttentionConfig(causal=True))
    assert result.max_abs_diff > 1e-3


def test_result_fields_are_consistent():
    config = AttentionConfig(d_model=16, n_heads=2, positional="learned", seed=4)
    result = permutation_experiment(TOKENS, SHUFFLE, config)
    np.testing.assert_array_equal(result.permutation, SHUFFLE)
    np.testing.assert_array_equal(result.weights, run(TOKENS, config).trace.weights)
    reordered = [TOKENS[p] for p in SHUFFLE]
    np.testing.assert_array_equal(result.permuted_weights, run(reordered, config).trace.weights)
    np.testing.assert_array_equal(result.realigned, realign(result.permuted_weights, np.array(SHUFFLE)))
    assert result.max_abs_diff == np.max(np.abs(result.weights - result.realigned))
    assert result.weights.shape == result.realigned.shape == (2, 8, 8)


@pytest.mark.parametrize("bad", [[0, 1, 2], [0, 0, 1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7, 8]])
def test_invalid_permutation_rejected(bad):
    with pytest.raises(ValueError, match="permutation"):
        permutation_experiment(TOKENS, bad, AttentionConfig())
