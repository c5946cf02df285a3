"""core.numerics.row_sums spells ``a.sum(axis=-1, keepdims=True)`` and ``a.mean(...)`` faster: same values,
up to rounding."""

import numpy as np
import pytest

from core.numerics.row_sums import column_sum, row_mean, row_sum

SHAPES = [(7,), (1, 1), (3, 5), (64, 24, 32), (64, 2, 24, 24), (2, 3, 4, 384)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_row_and_column_sums_equal_numpys_own_up_to_rounding(shape, dtype):
    a = (np.random.default_rng(len(shape)).standard_normal(shape) * 10 + 3).astype(dtype)
    # each sum is rounded at most n times, by at most eps times the largest partial sum
    eps = np.finfo(dtype).eps
    bound = shape[-1] * eps * np.abs(a).sum(axis=-1, keepdims=True)
    mean = a.mean(axis=-1, keepdims=True)
    mean_bound = bound / shape[-1] + eps * np.abs(mean)  # the sum's bound over n, plus the division's rounding
    checks = ((row_sum(a), a.sum(axis=-1, keepdims=True), bound), (row_mean(a), mean, mean_bound))
    for got, want, limit in checks:
        assert got.shape == want.shape == (*shape[:-1], 1)
        assert got.dtype == dtype
        assert np.all(np.abs(got - want) <= limit)
    rows = a.reshape(-1, shape[-1])
    column_bound = rows.shape[0] * np.finfo(dtype).eps * np.abs(rows).sum(axis=0)
    got, want = column_sum(a), rows.sum(axis=0)
    assert got.shape == want.shape == (shape[-1],)
    assert got.dtype == dtype
    assert np.all(np.abs(got - want) <= column_bound)


def test_row_sum_is_exact_on_small_integers():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)  # sums of small integers are exact in float32
    np.testing.assert_array_equal(row_sum(a), [[[6], [22], [38]], [[54], [70], [86]]])
    np.testing.assert_array_equal(row_mean(a), [[[1.5], [5.5], [9.5]], [[13.5], [17.5], [21.5]]])
    np.testing.assert_array_equal(column_sum(a), [60, 66, 72, 78])  # 0+4+...+20 = 60, then 6 more per column
