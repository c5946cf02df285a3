"""The error function, which NumPy does not have (and scipy is not a dependency).

GELU needs it (``core.layers.gelu``); this module is the speed part, kept apart from the lesson:

- float64 (and any non-float32 input, computed in float64): the rational
  approximations of Sun's fdlibm ``s_erf.c`` (as in FreeBSD's msun), on four
  ranges of ``|x|``. Tested against ``math.erf`` within 2 ulp over the whole line.
- float32, when ``FAST`` is on (the default, what the app runs): ``erf(x) = tanh(x P(x^2))``,
  with P of degree 6 fitted to ``atanh(erf(x)) / x`` (``python -m bench.erf_fit`` shows how, and
  re-derives the coefficients). tanh does the saturating: no clipping, and +-inf give +-1. Largest
  error 1.4e-7 next to ``math.erf`` (tested within 2e-7), 2-3 float32 ulp near 1; it steps back by
  an ulp in a few places (10 among the 1e8 float32 values in [0.001, 5]), so unlike the float64
  path it is not exactly monotonic. ``FAST = False`` sends float32 through the float64 path and
  back, the plain version; the two are tested equal within 2e-7.

Why the fast path is kept (``python -m bench.numerics``, one BLAS thread as the app runs): it is
13-20x faster than the float64 path and its two casts on a training batch's GELU input (64, 24, 256)
and on MiniLM's (128, 1536); one training step with LayerNorm and MLP takes 2.0-2.4x as long
without it, and ``bench.pretrained`` shows what it does to the MiniLM forward. It still matches
``transformers`` within 1e-5.

Both are tested against ``math.erf`` in ``tests/core/test_numerics_erf.py``.
"""

from __future__ import annotations

import numpy as np

# The float64 coefficients below are fdlibm's (s_erf.c), whose notice reads:
#   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
#   Developed at SunSoft, a Sun Microsystems, Inc. business.
#   Permission to use, copy, modify, and distribute this software is freely granted,
#   provided that this notice is preserved.
# fdlibm s_erf.c, |x| < 0.84375: erf(x) = x + x * R(x^2) / S(x^2)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)  # fmt: skip
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)  # fmt: skip
# 0.84375 <= |x| < 1.25: erf(x) = ERX + P(s) / Q(s), s = |x| - 1 (ERX = erf(1) rounded to float32)
_ERX = 8.45062911510467529297e-01
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)  # fmt: skip
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)  # fmt: skip
# 1.25 <= |x| < 1/0.35: erf(x) = 1 - exp(-x^2 - 0.5625 + R(s) / S(s)) / x, s = 1 / x^2
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e01,
       -6.23753324503260060396e01, -1.62396669462573470355e02, -1.84605092906711035994e02,
       -8.12874355063065934246e01, -9.81432934416914548592e00)  # fmt: skip
_SA = (1.0, 1.96512716674392571292e01, 1.37657754143519042600e02, 4.34565877475229228821e02,
       6.45387271733267880336e02, 4.29008140027567833386e02, 1.08635005541779435134e02,
       6.57024977031928170135e00, -6.04244152148580987438e-02)  # fmt: skip
# 1/0.35 <= |x| < 6: the same form with other coefficients; from 6 on, erf(x) rounds to 1 in float64
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e01,
       -1.60636384855821916062e02, -6.37566443368389627722e02, -1.02509513161107724954e03,
       -4.83519191608651397019e02)  # fmt: skip
_SB = (1.0, 3.03380607434824582924e01, 3.25792512996573918826e02, 1.53672958608443695994e03,
       3.19985821950859553908e03, 2.55305040643316442583e03, 4.74528541206955367215e02,
       -2.24409524465858183362e01)  # fmt: skip

# float32: erf(x) = tanh(x * P(x^2)), P's coefficients lowest power first (from python -m bench.erf_fit)
FAST = True
"""float32 input: the fitted ``tanh(x P(x^2))`` (True) or the float64 fdlibm erf and two casts (False)."""

_ERF_TANH32 = (1.1283797054981699e+00, 1.0276548116037316e-01, -1.8438294415872532e-04, -6.2572028050581114e-04,
               8.9712875232807586e-05, -5.9857410610966692e-06, 1.5896328314125559e-07)  # fmt: skip


def _poly(coefficients: tuple[float, ...], z: np.ndarray) -> np.ndarray:
    """``c0 + c1 z + c2 z^2 + ...`` by Horner's rule, in ``z``'s dtype."""
    result = coefficients[-1] * z + coefficients[-2]  # (...): the two highest terms, in a new array
    for c in coefficients[-3::-1]:
        result *= z
        result += c
    return result


def _erf_float64(x: np.ndarray) -> np.ndarray:
    """fdlibm's erf for a float64 array: each range of ``|x|`` gets its own rational approximation."""
    a = np.abs(x)  # (...): erf is odd, so work on |x| and put the sign back at the end
    out = np.ones_like(a)  # (...): |x| >= 6 (and inf) stays 1
    with np.errstate(under="ignore", over="ignore"):  # x^2 of a subnormal, exp(-35): correct roundings
        small = a < 0.84375
        s = a[small]
        out[small] = s + s * (_poly(_PP, s * s) / _poly(_QQ, s * s))
        near_one = (a >= 0.84375) & (a < 1.25)
        s = a[near_one] - 1.0
        out[near_one] = _ERX + _poly(_PA, s) / _poly(_QA, s)
        for low, high, r, q in ((1.25, 1 / 0.35, _RA, _SA), (1 / 0.35, 6.0, _RB, _SB)):
            tail = (a >= low) & (a < high)
            s = a[tail]
            z = 1.0 / (s * s)
            out[tail] = 1.0 - np.exp(-s * s - 0.5625 + _poly(r, z) / _poly(q, z)) / s
    out[np.isnan(a)] = np.nan
    return np.copysign(out, x)  # (...): erf(-x) = -erf(x), and erf(-0.0) = -0.0


def _erf_float32(x: np.ndarray, p: tuple[float, ...] = _ERF_TANH32) -> np.ndarray:
    """The float32 approximation ``tanh(x P(x^2))`` (``p``: P's coefficients; bench.erf_fit tries others)."""
    with np.errstate(over="ignore"):  # |x| past ~1e5: x P(x^2) overflows to +-inf, and tanh(+-inf) = +-1 is right
        y = _poly(p, x * x)  # (...) float32: P(x^2)
        y *= x  # (...): odd, like erf
    return np.tanh(y, out=y)  # (...) in [-1, 1]


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element by element, in ``x``'s float dtype (integers: float64).

    float32 uses the float32 approximation tanh(x P(x^2)) while ``FAST`` is on (within 2e-7 of
    ``math.erf``), every other dtype the float64 fdlibm one (within 2 ulp); see the module docstring.
    """
    x = np.asarray(x)
    if x.ndim == 0:  # a scalar: the in-place steps below need an array, so go through a 1-element one
        return erf(x.reshape(1))[0]
    if x.dtype == np.float32 and FAST:
        return _erf_float32(x)
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.dtype(np.float64)
    return _erf_float64(x.astype(np.float64)).astype(dtype, copy=False)
