"""Speed tricks, kept apart from the lesson: each module is named for its trick and tested equal to the plain form.

    erf.py           NumPy has no erf: fdlibm's for float64, a fitted tanh(x P(x^2)) for float32
    row_sums.py      row_sum, row_mean, column_sum: einsum for many short rows, equal to ``.sum``
    matmul.py        a linear layer's backward products: ``dy @ w.T``, and ``x^T dy`` a pair of sequences at a time

The lesson files (``core/layers.py``, ``core/training/``) call these by the plain name of what
they compute; ``tests/core/test_numerics_*.py`` hold each one to its plain form.
"""
