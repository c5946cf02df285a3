"""The two products of a linear layer's backward pass, in the shapes NumPy's BLAS runs fastest.

    matmul_transposed(dy, w)   == dy @ w.T                               (..., T, n), (m, n) -> (..., T, m)
    row_product_sum(a, b)      == a.reshape(-1, m).T @ b.reshape(-1, n)   (..., T, m), (..., T, n) -> (m, n)

For ``y = x @ W`` they are ``dx = dy W^T`` and ``dW = x^T dy`` summed over every row of the batch.

- ``matmul_transposed`` copies ``w.T`` row-major first: NumPy multiplies a batch of
  sequences by a row-major matrix about twice as fast as by a transposed view (bench.train).
- ``row_product_sum``: the one product on the right is as fast on one thread, but
  OpenBLAS splits its long inner dimension (``B*T`` rows) across threads, and on a busy
  2-core machine the threads wait for each other: 0.04 ms became 0.4-6 ms per call
  (induction trained 8x slower). So the sum is made of one small ``a_i^T b_i`` per pair
  of sequences (per sequence when there is an odd number of them), then summed over the
  pairs. Four sequences per product stall the same way (0.6 ms became 258 ms with both
  cores busy); pairs measured no slower than single sequences under that load, and write
  half as many partial sums: 0.55 against 0.63 ms for a (64, 24, 64) by (64, 24, 256)
  gradient on one thread (the MLP's at d_model 64).

Both equal their plain form up to rounding: tested in ``tests/core/test_numerics_matmul.py``;
``bench.train`` shows what they do to a training step.
"""

from __future__ import annotations

import numpy as np


def matmul_transposed(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(..., T, n), (m, n) -> (..., T, m)``: ``a @ w.T``, with ``w.T`` copied row-major first."""
    w_t = np.ascontiguousarray(w.T)  # (n, m)
    return a @ w_t  # (..., T, n) @ (n, m) -> (..., T, m)


def row_product_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(..., T, m), (..., T, n) -> (m, n)``: ``a^T b`` over every row, ``a.reshape(-1, m).T @ b.reshape(-1, n)``."""
    t, m, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a, b = a.reshape(-1, t, m), b.reshape(-1, t, n)  # (S, T, m), (S, T, n): S sequences
    if a.shape[0] % 2 == 0:
        a, b = a.reshape(-1, 2 * t, m), b.reshape(-1, 2 * t, n)  # (S/2, 2T, m), (S/2, 2T, n): pairs
    per_group = np.swapaxes(a, -1, -2) @ b  # (G, m, rows) @ (G, rows, n) -> (G, m, n)
    return per_group.sum(axis=0)  # (m, n)
