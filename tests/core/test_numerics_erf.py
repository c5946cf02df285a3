"""core.numerics.erf against math.erf: float64 within 2 ulp, float32 within 2e-7, special values, odd, dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import core.numerics.erf as erf_module
from core.numerics.erf import erf

SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e-20, 2.0**-28, 0.84375, 1.25, 1 / 0.35,
           6.0, 5.9999999, 27.0, 1e300, math.inf, -math.inf]  # fmt: skip
"""Zero, subnormals, the boundaries between fdlibm's ranges, and both infinities."""


def _points(rng: np.random.Generator) -> np.ndarray:
    """~400,000 float64 points: the bulk where GELU lives, the tails, and every decade down to the subnormals."""
    decades = 10.0 ** rng.uniform(-323, 3, 100_000) * rng.choice([-1.0, 1.0], 100_000)
    return np.concatenate([SPECIAL, rng.standard_normal(150_000) * 3, rng.uniform(-7, 7, 150_000), decades])


def _math_erf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x.ravel()]).reshape(x.shape)


def test_erf_float64_within_2_ulp_of_math_erf() -> None:
    x = _points(np.random.default_rng(0))
    expected = _math_erf(x)
    got = erf(x)
    assert got.dtype == np.float64
    ulps = np.abs(got - expected) / np.spacing(np.abs(expected))  # spacing(0) is the smallest subnormal
    worst = int(np.argmax(ulps))
    assert ulps.max() <= 2, f"erf({x[worst]!r}) = {got[worst]!r}, math.erf: {expected[worst]!r} ({ulps.max()} ulp)"


def test_erf_float32_within_2e_7_of_math_erf() -> None:
    x = _points(np.random.default_rng(1))
    x = x[np.abs(x) < 3e38].astype(np.float32)  # tiny ones flush to 0 or become float32 subnormals
    x = np.concatenate([x, np.float32([1e-45, -1e-45, 1.17e-38, 3.4e38, -3.4e38])])
    got = erf(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _math_erf(x.astype(np.float64)), rtol=0, atol=2e-7)
    assert np.all(np.abs(got) <= 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_special_values(dtype) -> None:
    x = np.array([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=dtype)
    got = erf(x)
    assert got[0] == 0 and not np.signbit(got[0])
    assert got[1] == 0 and np.signbit(got[1])  # erf(-0) = -0, like math.erf
    assert got[2] == 1 and got[3] == -1
    assert np.isnan(got[4])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_is_odd_and_float64_is_monotonic(dtype) -> None:
    """float32's tanh(x P(x^2)) is odd by construction but wobbles by an ulp (its rounding), so only
    float64 is held to monotonicity."""
    x = np.linspace(0, 7, 100_001, dtype=dtype)
    y = erf(x)
    assert np.array_equal(erf(-x), -y)
    if dtype == np.float64:
        assert np.all(np.diff(y) >= 0)


def test_erf_keeps_shape_and_dtype_and_takes_integers_and_scalars() -> None:
    assert erf(np.zeros((2, 3, 4), np.float32)).shape == (2, 3, 4)
    assert erf(np.array([1, 2])).dtype == np.float64
    assert erf(np.float16(0.5)).dtype == np.float16
    assert float(erf(1.0)) == pytest.approx(math.erf(1.0), rel=1e-16)
    assert erf(np.float32(0.5)).dtype == np.float32  # a float32 scalar once failed in an in-place step
    assert float(erf(np.float32(0.5))) == pytest.approx(math.erf(0.5), abs=2e-7)


def test_fast_flag_off_gives_the_plain_float64_path_and_on_agrees_with_it(monkeypatch) -> None:
    """``FAST`` picks float32's path: off, the float64 fdlibm erf through two casts (the plain version);
    on, tanh(x P(x^2)), equal to it within 2e-7 (float32's rounding at 1 is 6e-8)."""
    x = _points(np.random.default_rng(2))
    x = x[np.abs(x) < 3e38].astype(np.float32)
    plain = erf(x.astype(np.float64)).astype(np.float32)  # the float64 path, from a float64 input
    monkeypatch.setattr(erf_module, "FAST", False)
    off = erf(x)
    monkeypatch.setattr(erf_module, "FAST", True)
    on = erf(x)
    assert off.dtype == on.dtype == np.float32
    np.testing.assert_array_equal(off, plain)
    assert not np.array_equal(on, off)  # the flag does switch paths
    np.testing.assert_allclose(on, off, rtol=0, atol=2e-7)
