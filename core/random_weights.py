"""The random projections' weights, cached: a speed trick kept apart from the lesson in ``multihead.py``.

    draw_weights(d_model, seed, dtype)    the plain draw: four (d_model, d_model) Gaussian matrices
    cached_weights(d_model, seed, dtype)  the same arrays, drawn once per settings and read-only

Why a cache: the dashboard asks for the same weights on every rerun, and drawing them is
most of a small run's time (d_model 512: four 512 x 512 Gaussian matrices, ~1 M numbers).
The cached arrays are read-only, so a cached copy can never be changed under another
caller. ``tests/core/test_random_weights.py`` checks that the cache gives exactly the
plain draw's numbers.
"""

from __future__ import annotations

import functools
import math

import numpy as np

SEED_SALT = 0x5157
"""0x5157, "QW": mixed into the seed so the weights' stream is apart from the embeddings' (same seed)."""


def draw_weights(d_model: int, seed: int, dtype: np.dtype | type = np.float64) -> tuple[np.ndarray, ...]:
    """``w_q, w_k, w_v, w_o``, each ``(d_model, d_model)`` with entries N(0, 1/d_model), drawn afresh."""
    rng = np.random.default_rng([seed, d_model, SEED_SALT])
    w = rng.standard_normal((4, d_model, d_model)) * (1.0 / math.sqrt(d_model))  # (4, d, d): LeCun normal
    return tuple(w.astype(dtype, copy=False))  # four (d_model, d_model) views


@functools.lru_cache(maxsize=8)
def cached_weights(d_model: int, seed: int, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """``draw_weights``'s four matrices, drawn once per settings and read-only.

    8 entries: at most 64 MB at d_model 512, float64.
    """
    weights = draw_weights(d_model, seed, dtype)  # four (d_model, d_model)
    for w in weights:
        w.flags.writeable = False
    return weights
