"""core.numerics.matmul: a linear layer's backward products, equal to their plain form up to rounding."""

from __future__ import annotations

import numpy as np
import pytest

from core.numerics.matmul import matmul_transposed, row_product_sum

T = 7


@pytest.mark.parametrize("sequences", [1, 2, 3, 4, 64])
def test_weight_gradient_sums_every_row_whether_sequences_pair_up_or_not(sequences):
    """``row_product_sum`` multiplies pairs of sequences when their number is even, single ones when odd:
    both are a^T b."""
    rng = np.random.default_rng(sequences)
    a, b = rng.standard_normal((sequences, T, 5)), rng.standard_normal((sequences, T, 3))  # (S, T, m), (S, T, n)
    expected = a.reshape(-1, 5).T @ b.reshape(-1, 3)  # (m, N) @ (N, n): the formula, in one product
    np.testing.assert_allclose(row_product_sum(a, b), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(row_product_sum(a[None], b[None]), expected, rtol=0, atol=1e-12)  # (1, S, T, m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(T, 3), (4, T, 3), (2, 4, T, 3)], ids=str)
def test_matmul_transposed_is_a_times_w_transposed(shape, dtype):
    rng = np.random.default_rng(len(shape))
    a, w = rng.standard_normal(shape).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)  # (..., T, n), (m, n)
    got = matmul_transposed(a, w)
    want = np.einsum("...tn,mn->...tm", a.astype(np.float64), w.astype(np.float64))  # float64, from the definition
    assert got.shape == (*shape[:-1], 5)
    assert got.dtype == dtype
    # each entry is a sum of n = 3 products, each step rounded by at most eps times the sum of |products|
    bound = (
        3
        * np.finfo(dtype).eps
        * np.einsum("...tn,mn->...tm", np.abs(a.astype(np.float64)), np.abs(w.astype(np.float64)))
    )
    assert np.all(np.abs(got - want) <= bound)
