"""The random projections' weights, cached: a speed trick kept apart from the lesson in ``multihead.py``.

    draw_weights(d_model, seed, dtype)    the plain draw: four (d_model, d_model) Gaussian matrices
    cached_weights(d_model, seed, dtype)  the same arrays, read-only, drawn once while anything holds them

Why a cache: the dashboard asks for the same weights on every rerun, and drawing them is
most of a small run's time (d_model 512: four 512 x 512 Gaussian matrices, ~1 M numbers).
The cached arrays are read-only, so a cached copy can never be changed under another
caller. The cache holds them weakly: every run of the same width and seed shares one
draw for as long as any of them is alive (the dashboard's caches bound how many are), and
a draw nobody holds any more is freed, not kept for later (8 MB each at d_model 512).
``tests/core/test_random_weights.py`` checks that the cache gives exactly the plain
draw's numbers.
"""

from __future__ import annotations

import math
import threading
import weakref

import numpy as np

SEED_SALT = 0x5157
"""0x5157, "QW": mixed into the seed so the weights' stream is apart from the embeddings' (same seed)."""


def draw_weights(d_model: int, seed: int, dtype: np.dtype | type = np.float64) -> tuple[np.ndarray, ...]:
    """``w_q, w_k, w_v, w_o``, each ``(d_model, d_model)`` with entries N(0, 1/d_model), drawn afresh."""
    rng = np.random.default_rng([seed, d_model, SEED_SALT])
    w = rng.standard_normal((4, d_model, d_model)) * (1.0 / math.sqrt(d_model))  # (4, d, d): LeCun normal
    return tuple(w.astype(dtype, copy=False))  # four (d_model, d_model) views


_drawn: weakref.WeakValueDictionary[tuple[int, int, np.dtype], np.ndarray] = weakref.WeakValueDictionary()
"""(d_model, seed, dtype) -> the (4, d_model, d_model) array of a draw some caller still holds."""
_lock = threading.Lock()


def cached_weights(d_model: int, seed: int, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """``draw_weights``'s four matrices, read-only: views of one draw, shared while anything holds them."""
    key = (d_model, seed, np.dtype(dtype))
    with _lock:
        drawn = _drawn.get(key)
    if drawn is None:
        drawn = draw_weights(d_model, seed, dtype)[0].base  # (4, d_model, d_model): the array the four are views of
        drawn.flags.writeable = False
        with _lock:
            drawn = _drawn.setdefault(key, drawn)  # another caller's draw of the same settings, if it came first
    return tuple(drawn)  # four (d_model, d_model) read-only views
