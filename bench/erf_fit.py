"""Where the float32 erf's coefficients come from: ``erf(x) = tanh(x P(x^2))``, P of degree 6.

    python -m bench.erf_fit        # prints the coefficients and their largest error (~10 s)

``g(x) = atanh(erf(x)) / x`` is smooth and even, so it is fitted by a polynomial in
``x^2`` on [0, 3.7] (beyond 3.7, erf rounds to 1 in float32 well before the fit could
matter: tanh saturates). An error ``dg`` in g moves erf by ``(1 - erf^2) x dg``, so
the least-squares fit is weighted by that, then reweighted ``FIT_ROUNDS`` times
towards the points with the largest error (Lawson's iteration for a minimax fit).
The fitted coefficients and the ones stored in ``core.numerics.erf`` are both checked as
``core.numerics.erf`` computes them (float32 Horner, float32 tanh) against ``math.erf`` of
the same float32 inputs on [-9, 9].
"""

from __future__ import annotations

import math

import numpy as np

DEGREE = 6
"""P's degree in x^2; 5 is not enough (the fit turns down past 3.7 and erf(x) goes to -1)."""
FIT_END, FIT_POINTS, FIT_ROUNDS = 3.7, 6000, 60


def fit() -> tuple[float, ...]:
    """P's coefficients, lowest power first, as Python floats (NumPy float64 scalars would lift float32 to float64)."""
    x = np.linspace(1e-4, FIT_END, FIT_POINTS)
    erf = np.array([math.erf(v) for v in x])
    target = np.arctanh(erf) / x  # g(x)
    powers = np.vander(x * x, DEGREE + 1, increasing=True)  # (points, DEGREE + 1): 1, x^2, x^4, ...
    weights = np.ones_like(x)
    for _ in range(FIT_ROUNDS):
        w = weights * (1 - erf**2) * x
        coefficients, *_ = np.linalg.lstsq(powers * w[:, None], target * w, rcond=None)
        error = np.abs(np.tanh(x * (powers @ coefficients)) - erf)
        weights *= np.sqrt(error / error.max())
        weights /= weights.max()
    return tuple(float(c) for c in coefficients)


def main() -> int:
    from core.numerics.erf import _ERF_TANH32, _erf_float32

    x = np.linspace(-9, 9, 1_000_001).astype(np.float32)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])  # of the float32 inputs themselves
    for label, coefficients in (("fitted now", fit()), ("in core.numerics", _ERF_TANH32)):
        worst = np.abs(_erf_float32(x, coefficients).astype(np.float64) - expected).max()
        terms = ", ".join(f"{c:.16e}" for c in coefficients)
        print(f"{label:<17} largest error {worst:.2e}; P, lowest power first: {terms}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
