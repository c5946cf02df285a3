"""RoPE: known rotations, a complex-number reference, norm preservation, relative-position invariance,
its place in multi-head attention and the pipeline, and the shift experiment."""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import (
    AttentionConfig,
    Projections,
    apply_rope,
    head_counts,
    multi_head_attention,
    permutation_experiment,
    positional_encoding,
    rope_frequencies,
    run,
    shift_experiment,
)

SETTINGS = settings(max_examples=60, deadline=None)
SENTENCE = ["the", "cat", "sat", "on", "the", "mat", "because", "the", "cat", "was", "tired"]


def complex_rope(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """Reference from the RoFormer paper's complex form: pair (a, b) -> (a + ib) * exp(i p theta_j)."""
    d_k = x.shape[-1]
    theta = np.array([base ** (-2 * j / d_k) for j in range(d_k // 2)])
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(positions, theta))
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def half_split_rope(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """The GPT-NeoX / Hugging Face Llama layout: x_j pairs with x_{j + d/2} ("rotate_half")."""
    d_k = x.shape[-1]
    theta = base ** (-np.arange(0, d_k, 2) / d_k)
    angles = np.concatenate([np.outer(positions, theta)] * 2, axis=-1)  # (T, d_k)
    rotated_half = np.concatenate([-x[..., d_k // 2 :], x[..., : d_k // 2]], axis=-1)
    return x * np.cos(angles) + rotated_half * np.sin(angles)


@st.composite
def rope_inputs(draw, max_position: int = 1000):
    """x (..., T, d_k) float64 with entries in [-10, 10], d_k even, and integer positions (T,)."""
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    t, d_k = draw(st.integers(1, 6)), 2 * draw(st.integers(1, 8))
    x = draw(hnp.arrays(np.float64, (*batch, t, d_k), elements=st.floats(-10, 10)))
    positions = draw(hnp.arrays(np.int64, (t,), elements=st.integers(0, max_position)))
    return x, positions


def test_known_rotation_of_two_pairs():
    # d_k = 4: theta = (1, 10000^(-1/2)) = (1, 0.01); position 1 turns pair 0 by 1 rad and pair 1 by 0.01 rad.
    x = np.array([[1.0, 0.0, 0.0, 1.0]])
    got = apply_rope(x, np.array([1]))
    expected = [math.cos(1), math.sin(1), -math.sin(0.01), math.cos(0.01)]
    np.testing.assert_allclose(got[0], expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rope_frequencies(4), [1.0, 0.01], rtol=1e-15)


def test_position_zero_is_the_identity():
    x = np.random.default_rng(0).standard_normal((3, 5, 8))
    np.testing.assert_array_equal(apply_rope(x, np.zeros(5)), x)


@SETTINGS
@given(rope_inputs())
def test_matches_complex_reference(inputs):
    x, positions = inputs
    # angles up to 1000 rad carry ~1e-13 absolute rounding; entries are at most 10 * sqrt(2)
    np.testing.assert_allclose(apply_rope(x, positions), complex_rope(x, positions), rtol=0, atol=1e-11)


@SETTINGS
@given(rope_inputs())
def test_half_split_layout_is_a_coordinate_permutation(inputs):
    x, positions = inputs
    d_k = x.shape[-1]
    # interleaved coordinate 2j <-> half-split j, 2j+1 <-> j + d/2
    perm = np.empty(d_k, dtype=int)
    perm[0::2], perm[1::2] = np.arange(d_k // 2), np.arange(d_k // 2, d_k)
    np.testing.assert_allclose(
        apply_rope(x[..., perm], positions), half_split_rope(x, positions)[..., perm], rtol=0, atol=1e-11
    )


@SETTINGS
@given(rope_inputs())
def test_preserves_every_vector_norm(inputs):
    x, positions = inputs
    before = np.linalg.norm(x, axis=-1)
    after = np.linalg.norm(apply_rope(x, positions), axis=-1)
    np.testing.assert_allclose(after, before, rtol=1e-13, atol=1e-13)


@st.composite
def query_key_pairs(draw):
    """q (T_q, d_k), k (T_k, d_k) in [-10, 10], their integer positions in [0, 500], and a shift in [0, 500]."""
    t_q, t_k, d_k = draw(st.integers(1, 5)), draw(st.integers(1, 5)), 2 * draw(st.integers(1, 8))
    q = draw(hnp.arrays(np.float64, (t_q, d_k), elements=st.floats(-10, 10)))
    k = draw(hnp.arrays(np.float64, (t_k, d_k), elements=st.floats(-10, 10)))
    q_pos = draw(hnp.arrays(np.int64, (t_q,), elements=st.integers(0, 500)))
    k_pos = draw(hnp.arrays(np.int64, (t_k,), elements=st.integers(0, 500)))
    return q, k, q_pos, k_pos, draw(st.integers(0, 500))


@SETTINGS
@given(query_key_pairs())
@example((np.full((1, 2), 3.0), np.full((1, 2), 5e-324), np.array([0]), np.array([7]), 3))  # subnormal products
def test_scores_depend_only_on_relative_position(inputs):
    q, k, q_pos, k_pos, shift = inputs
    scores = apply_rope(q, q_pos) @ apply_rope(k, k_pos).T  # (T_q, T_k)
    shifted = apply_rope(q, q_pos + shift) @ apply_rope(k, k_pos + shift).T
    # (R_m q) . (R_n k) = q . R_{n-m} k: turn key j alone by n - m, for each query i
    relative = np.array(
        [[q[i] @ complex_rope(k[j], np.array(k_pos[j] - q_pos[i])) for j in range(len(k))] for i in range(len(q))]
    )
    # angles up to ~1000 rad carry ~1e-13 relative rounding, times |q| |k| <= d_k max|q| max|k|
    # (max-abs, not np.linalg.norm, whose squares underflow for entries like 1e-228), plus d_k * tiny for
    # products that underflow into the subnormals, where rounding is absolute (k = 5e-324 found by hypothesis)
    bound = q.shape[-1] * (1e-11 * np.outer(np.abs(q).max(axis=-1), np.abs(k).max(axis=-1)) + np.finfo(np.float64).tiny)
    assert np.all(np.abs(shifted - scores) <= bound)
    assert np.all(np.abs(relative - scores) <= bound)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keeps_the_float_dtype_and_angles_of_large_positions(dtype):
    x = np.random.default_rng(1).standard_normal((2, 4, 6)).astype(dtype)
    positions = np.array([0, 1, 10_000, 123_456])
    got = apply_rope(x, positions)
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12  # angles are float64 before the cast: no float32 angle error
    np.testing.assert_allclose(got, complex_rope(x.astype(np.float64), positions), rtol=0, atol=tol)


def test_integer_input_becomes_float64():
    assert apply_rope(np.ones((2, 4), dtype=np.int64), np.arange(2)).dtype == np.float64


@pytest.mark.parametrize("d_k", [1, 3, 7])
def test_odd_width_is_refused(d_k):
    with pytest.raises(ValueError, match="even"):
        apply_rope(np.ones((2, d_k)), np.arange(2))


def test_positions_must_match_the_token_axis():
    with pytest.raises(ValueError, match="positions must have shape"):
        apply_rope(np.ones((3, 4)), np.arange(4))


# --- RoPE inside multi-head attention -------------------------------------------------------------


def test_multi_head_rotates_each_head_and_keeps_unrotated_copies():
    rng = np.random.default_rng(2)
    x, kv = rng.standard_normal((5, 16)), rng.standard_normal((3, 16))
    proj = Projections.random(16, seed=3)
    q_pos, k_pos = np.arange(5) + 2, np.arange(3) + 7
    plain = multi_head_attention(x, proj, 4, kv=kv)
    roped = multi_head_attention(x, proj, 4, kv=kv, q_positions=q_pos, k_positions=k_pos)
    assert plain.q_unrotated is None and plain.k_unrotated is None
    np.testing.assert_array_equal(roped.q_unrotated, plain.q)
    np.testing.assert_array_equal(roped.k_unrotated, plain.k)
    np.testing.assert_allclose(roped.q, complex_rope(plain.q, q_pos), rtol=0, atol=1e-12)
    np.testing.assert_allclose(roped.k, complex_rope(plain.k, k_pos), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(roped.v, plain.v)  # values are never rotated
    np.testing.assert_allclose(roped.scores, roped.q @ np.swapaxes(roped.k, -1, -2) * roped.scale, rtol=1e-13)


def test_multi_head_needs_both_position_arrays():
    x = np.ones((2, 8))
    with pytest.raises(ValueError, match="both"):
        multi_head_attention(x, Projections.random(8), 2, q_positions=np.arange(2))


def test_pipeline_rope_adds_nothing_to_x_and_breaks_permutation_symmetry():
    config = AttentionConfig(positional="rope")
    result = run(SENTENCE, config)
    np.testing.assert_array_equal(result.positions, 0.0)
    t = len(SENTENCE)
    np.testing.assert_allclose(result.trace.q, complex_rope(result.trace.q_unrotated, np.arange(t)), atol=1e-12)
    # order is visible to RoPE: reversing the sentence changes the realigned map
    assert permutation_experiment(SENTENCE, list(range(t))[::-1], config).max_abs_diff > 1e-2


def test_rope_needs_an_even_head_width():
    assert head_counts(12, "rope") == [1, 2, 3, 6]  # d_k = 12, 6, 4, 2
    with pytest.raises(ValueError, match="even d_k"):
        AttentionConfig(d_model=12, n_heads=4, positional="rope")


# --- the shift experiment ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
def test_positional_table_rows_follow_the_start(kind):
    shifted = positional_encoding(kind, 4, 8, seed=5, start=3)
    np.testing.assert_array_equal(shifted, positional_encoding(kind, 7, 8, seed=5)[3:])
    if kind == "sinusoidal":  # from the formula, at positions 3..6
        p, i = np.arange(3, 7)[:, None], np.arange(0, 8, 2)
        np.testing.assert_allclose(shifted[:, 0::2], np.sin(p / 10000 ** (i / 8)), rtol=0, atol=1e-15)
        np.testing.assert_allclose(shifted[:, 1::2], np.cos(p / 10000 ** (i / 8)), rtol=0, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(
    tokens=st.lists(st.sampled_from(["a", "b", "cat", "the", "é", "😀"]), min_size=1, max_size=20),
    shift=st.integers(0, 1000),
    n_heads=st.sampled_from([1, 2, 4, 8]),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_rope_map_is_unchanged_by_a_shift(tokens, shift, n_heads, causal, seed):
    config = AttentionConfig(d_model=32, n_heads=n_heads, causal=causal, positional="rope", seed=seed)
    result = shift_experiment(tokens, shift, config)
    assert result.weights.shape == result.shifted_weights.shape == (n_heads, len(tokens), len(tokens))
    assert result.max_abs_diff < 1e-12  # rounding only: angles up to ~1000 rad, weights in [0, 1]


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
@pytest.mark.parametrize("shift", [1, 7, 100])
def test_absolute_encodings_move_with_the_shift(kind, shift):
    result = shift_experiment(SENTENCE, shift, AttentionConfig(positional=kind))
    assert result.max_abs_diff > 1e-2
    np.testing.assert_array_equal(result.weights, run(SENTENCE, AttentionConfig(positional=kind)).trace.weights)


def test_no_positions_are_trivially_shift_invariant():
    assert shift_experiment(SENTENCE, 50, AttentionConfig()).max_abs_diff == 0.0


def test_negative_shift_is_refused():
    with pytest.raises(ValueError, match="shift"):
        shift_experiment(SENTENCE, -1, AttentionConfig(positional="rope"))


def test_no_floating_point_warning_for_tiny_or_huge_entries():
    x = np.array([[1e-300, 1e-300, 1e300, -1e300]])
    with np.errstate(all="raise"):
        got = apply_rope(x, np.array([math.pi / 2 * 1e6]))  # cos and sin ~ 1e-11 .. 1
    assert np.all(np.isfinite(got))
