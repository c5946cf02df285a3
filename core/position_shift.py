"""The position-shift experiment: move every position by the same amount and compare the maps.

RoPE rotates q at position m and k at position n so that their dot product sees
only ``n - m``: starting the sentence at position ``s`` instead of 0 leaves every
score unchanged, to rounding. An absolute encoding added to x (sinusoidal,
learned) gives every token a different vector after the shift, so the map moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.pipeline import AttentionConfig, run


@dataclass(frozen=True)
class ShiftResult:
    """Attention on one sentence at positions ``0..T-1`` and at ``shift..shift+T-1``."""

    shift: int
    """How far every position moved."""
    weights: np.ndarray
    """(h, T, T) weights with positions 0..T-1."""
    shifted_weights: np.ndarray
    """(h, T, T) weights with positions shift..shift+T-1."""
    max_abs_diff: float
    """max |weights - shifted_weights|: rounding level (~1e-15) for RoPE and "none", large for absolute tables."""


def shift_experiment(tokens: list[str] | tuple[str, ...], shift: int, config: AttentionConfig) -> ShiftResult:
    """Run ``tokens`` twice, starting at position 0 and at ``shift``, with everything else equal."""
    if shift < 0:
        raise ValueError(f"shift must be a non-negative number of positions, got {shift}")
    weights = run(tokens, config).trace.weights  # (h, T, T)
    shifted = run(tokens, config, start=shift).trace.weights  # (h, T, T)
    return ShiftResult(
        shift=shift,
        weights=weights,
        shifted_weights=shifted,
        max_abs_diff=float(np.max(np.abs(weights - shifted))),
    )
