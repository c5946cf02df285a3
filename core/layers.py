"""The layers around attention in a transformer block: LayerNorm and GELU (with the erf it needs).

PLACEHOLDER erf (math.erf element by element): to be replaced by a vectorised, accurate erf.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element by element, in ``x``'s float dtype."""
    x = np.asarray(x)
    return _erf(x).astype(x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64, copy=False)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, exact (erf) form: ``x * Phi(x) = x/2 * (1 + erf(x / sqrt(2)))``."""
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """``(..., d) -> (..., d)``: normalise each row to mean 0, variance 1, then scale by gamma and shift by beta."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1): the biased variance, as in the papers
    return (x - mean) / np.sqrt(var + eps) * gamma + beta  # (..., d)
