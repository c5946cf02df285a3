"""Sums over a batch of short rows: along each row, and down each column.

    row_sum(a)     == a.sum(axis=-1, keepdims=True)         (..., n) -> (..., 1)
    row_mean(a)    == a.mean(axis=-1, keepdims=True)        (..., n) -> (..., 1)
    column_sum(a)  == a.reshape(-1, n).sum(axis=0)          (..., n) -> (n,)

Why not NumPy's own: its general reduction pays about 25 ns per row on top of the
additions, and a training batch is 1,536 rows of only 32 or 64 numbers (B = 64
sequences of T = 24), so that overhead is most of the time: ``a.sum(axis=-1)`` takes
42 us on a (64, 24, 64) float32 array, ``a.reshape(-1, 64).sum(axis=0)`` 30 us.
``np.einsum`` walks the rows in one tight loop: 10 us and 18 us. It adds in another
order (left to right, where ``sum`` adds in pairs), so results agree up to rounding:
tested in ``tests/core/test_numerics_row_sums.py``; ``bench.train`` shows what it does to a
training step.
"""

from __future__ import annotations

import numpy as np


def row_sum(a: np.ndarray) -> np.ndarray:
    """``(..., n) -> (..., 1)``: each row's sum, as ``a.sum(axis=-1, keepdims=True)``."""
    return np.einsum("...i->...", a)[..., None]  # (..., 1)


def row_mean(a: np.ndarray) -> np.ndarray:
    """``(..., n) -> (..., 1)``: each row's mean, as ``a.mean(axis=-1, keepdims=True)``."""
    return row_sum(a) / a.shape[-1]  # (..., 1)


def column_sum(a: np.ndarray) -> np.ndarray:
    """``(..., n) -> (n,)``: each column's sum over every row, as ``a.reshape(-1, n).sum(axis=0)``."""
    return np.einsum("ri->i", a.reshape(-1, a.shape[-1]))  # (rows, n) -> (n,)
