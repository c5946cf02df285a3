"""Rotary position embedding (RoPE; Su et al. 2021, RoFormer), applied to each head's q and k.

Instead of adding a position vector to ``x``, RoPE turns every query and key by an
angle proportional to its position: coordinate pair ``(2i, 2i+1)`` of a vector at
position ``p`` rotates by ``p * theta_i``, with ``theta_i = base^(-2i / d_k)``. A
rotation keeps lengths, and the dot product of two rotated vectors sees only the
difference of their positions, ``(R_m q) . (R_n k) = q . R_{n-m} k``: attention
scores depend on relative position alone, which ``core.position_shift`` demonstrates.

Convention: interleaved pairs ``(x_0, x_1), (x_2, x_3), ...``, as in the RoFormer
paper and in ``positions.sinusoidal``'s sin/cos layout; pair ``(a, b)`` at angle
``t`` becomes ``(a cos t - b sin t, a sin t + b cos t)``, i.e. ``(a + ib) e^{it}``.
The "half-split" layout of GPT-NeoX and Hugging Face Llama pairs ``x_i`` with
``x_{i + d_k/2}`` instead; the two differ only by a fixed permutation of the ``d_k``
coordinates, so every property here holds for both.
"""

from __future__ import annotations

import numpy as np

ROPE_BASE = 10000.0
"""The RoFormer base: pair 0 turns 1 radian per position, the last pair about 1/base."""


def rope_frequencies(d_k: int, base: float = ROPE_BASE) -> np.ndarray:
    """Angle per position of each coordinate pair: ``(d_k / 2,)`` float64, ``base^(-2i / d_k)``."""
    if d_k < 2 or d_k % 2:
        raise ValueError(
            f"RoPE rotates pairs of coordinates, so each head's width d_k must be even; got d_k = {d_k}. "
            f"Choose a head count that leaves an even d_k = d_model / h."
        )
    return base ** (-np.arange(0, d_k, 2) / d_k)  # (d_k/2,): theta_i = base^(-2i / d_k)


def apply_rope(x: np.ndarray, positions: np.ndarray, base: float = ROPE_BASE) -> np.ndarray:
    """Rotate ``x (..., T, d_k)`` by ``positions (T,)``: returns ``(..., T, d_k)`` in ``x``'s float dtype.

    ``positions`` may be any real numbers (a shifted sentence starts at ``s``, not 0).
    Angles are computed in float64 and cast once, so float32 stays float32 without
    losing the angle of a large position.
    """
    x = np.asarray(x)  # (..., T, d_k)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)  # (..., T, d_k) float64
    positions = np.asarray(positions, dtype=np.float64)  # (T,)
    if positions.shape != (x.shape[-2],):
        raise ValueError(f"positions must have shape (T,) = ({x.shape[-2]},) for x {x.shape}, got {positions.shape}")
    angles = positions[:, None] * rope_frequencies(x.shape[-1], base)  # (T, 1) * (d_k/2,) -> (T, d_k/2)
    cos = np.cos(angles).astype(x.dtype)  # (T, d_k/2)
    sin = np.sin(angles).astype(x.dtype)  # (T, d_k/2)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d_k/2) each: the two coordinates of every pair
    out = np.empty_like(x)  # (..., T, d_k)
    with np.errstate(under="ignore"):  # a tiny coordinate times a tiny sine rounds to 0: correct, not an error
        out[..., 0::2] = even * cos - odd * sin  # (..., T, d_k/2): a cos t - b sin t
        out[..., 1::2] = even * sin + odd * cos  # (..., T, d_k/2): a sin t + b cos t
    return out  # (..., T, d_k)
