"""Sums and means along the last axis, for the short rows LayerNorm and its backward pass reduce.

    row_sum(a)  == a.sum(axis=-1, keepdims=True)     (..., n) -> (..., 1)
    row_mean(a) == a.mean(axis=-1, keepdims=True)

Why not ``a.sum(axis=-1)``: NumPy's general reduction pays about 25 ns per row on
top of the additions, and a training batch is 1,536 rows of only 32 or 64 numbers
(B = 64 sequences of T = 24), so that overhead is most of the time: 42 us for a
(64, 24, 64) float32 array. ``np.einsum("...i->...", a)`` adds each row up in one
tight loop: 10 us. It adds in a different order (one row left to right, where
``sum`` adds in pairs), so results agree up to rounding: tested in
``tests/core/test_row_sums.py``; ``bench.train`` shows what it does to a training step.
"""

from __future__ import annotations

import numpy as np


def row_sum(a: np.ndarray) -> np.ndarray:
    """``(..., n) -> (..., 1)``: each row's sum, as ``a.sum(axis=-1, keepdims=True)``."""
    return np.einsum("...i->...", a)[..., None]  # (..., 1)


def row_mean(a: np.ndarray) -> np.ndarray:
    """``(..., n) -> (..., 1)``: each row's mean, as ``a.mean(axis=-1, keepdims=True)``."""
    return row_sum(a) / a.shape[-1]  # (..., 1)
