"""GELU and LayerNorm against independent references (math.erf, plain loops with math.fsum).

The erf they use is tested in test_numerics_erf.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.layers import gelu, layer_norm


def test_gelu_takes_a_float32_scalar() -> None:
    """A float32 scalar once failed in one of erf's in-place steps."""
    assert float(gelu(np.float32(1.0))) == pytest.approx(0.5 * (1 + math.erf(1 / math.sqrt(2))), abs=2e-7)


@pytest.mark.parametrize(("dtype", "atol"), [(np.float64, 1e-15), (np.float32, 1e-6)])
def test_gelu_is_x_times_the_normal_cdf(dtype, atol) -> None:
    x = np.linspace(-10, 10, 2001).astype(dtype)
    expected = np.array([v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    got = gelu(x)
    assert got.dtype == dtype
    error = np.abs(got - expected) / np.maximum(1, np.abs(expected))  # absolute below 1, relative above
    assert error.max() <= atol, f"gelu({x[np.argmax(error)]}) off by {error.max():.2e}"


def test_gelu_is_not_the_tanh_approximation() -> None:
    """The tanh form differs by up to ~5e-4 near x = +-2: the model was trained with the erf form."""
    x = np.linspace(-4, 4, 801)
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert np.abs(gelu(x) - tanh_form).max() > 1e-4


def test_layer_norm_against_a_loop_reference() -> None:
    rng = np.random.default_rng(2)
    x, gamma, beta = rng.standard_normal((3, 5, 7)) * 4 + 3, rng.standard_normal(7), rng.standard_normal(7)
    got = layer_norm(x, gamma, beta, eps=1e-12)
    for index in np.ndindex(x.shape[:-1]):
        row = list(x[index])
        mean = math.fsum(row) / len(row)
        var = math.fsum((v - mean) ** 2 for v in row) / len(row)
        expected = [(v - mean) / math.sqrt(var + 1e-12) * g + b for v, g, b in zip(row, gamma, beta, strict=True)]
        np.testing.assert_allclose(got[index], expected, rtol=1e-13, atol=1e-13)
