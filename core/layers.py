"""The layers around attention in a transformer block: LayerNorm and GELU.

GELU's erf comes from ``core.numerics.erf``: NumPy has none.
"""

from __future__ import annotations

import math

import numpy as np

from core.numerics.erf import erf


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """``Phi(x) = (1 + erf(x / sqrt(2))) / 2``, the standard normal CDF, element by element."""
    return (1 + erf(x / math.sqrt(2))) / 2  # (...) -> (...)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, exact (erf) form: ``x * Phi(x) = x/2 * (1 + erf(x / sqrt(2)))``."""
    return x * normal_cdf(x)  # (...) -> (...)


def normalise(x: np.ndarray, eps: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """``(..., d) -> (xhat (..., d), rstd (..., 1))``: each row moved to mean 0 and scaled to variance 1.

    ``rstd = 1 / sqrt(var + eps)`` is returned too: LayerNorm's backward pass needs it again.
    """
    mean = x.mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    centred = x - mean  # (..., d)
    var = (centred**2).mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1): the biased variance, as in the papers
    rstd = 1 / np.sqrt(var + eps)  # (..., 1)
    return centred * rstd, rstd  # (..., d), (..., 1)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """``(..., d) -> (..., d)``: normalise each row to mean 0, variance 1, then scale by gamma and shift by beta."""
    xhat, _ = normalise(x, eps)  # (..., d)
    return xhat * gamma + beta  # (..., d)
