"""core/random_weights.py: the cached weights are exactly the plain draw's, and cannot be changed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import Projections
from core.random_weights import SEED_SALT, cached_weights, draw_weights


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("d_model", "seed"), [(8, 0), (8, 1), (16, 7), (64, 123)])
def test_cached_weights_equal_a_fresh_draw(d_model, seed, dtype):
    fresh = draw_weights(d_model, seed, dtype)
    cached = cached_weights(d_model, seed, np.dtype(dtype))
    assert len(cached) == len(fresh) == 4
    for got, want in zip(cached, fresh, strict=True):
        assert got.dtype == dtype and got.shape == (d_model, d_model)
        np.testing.assert_array_equal(got, want)


def test_the_draw_is_the_documented_generator_and_scale():
    # written out from the docstring, not from the code: the seed, d_model and the salt seed one generator
    rng = np.random.default_rng([3, 8, SEED_SALT])
    want = rng.standard_normal((4, 8, 8)) * (1.0 / math.sqrt(8))  # std 1/sqrt(d_model)
    np.testing.assert_array_equal(np.stack(draw_weights(8, 3)), want)


def test_cached_weights_are_read_only_and_drawn_once():
    first = cached_weights(8, 11, np.dtype(np.float64))
    again = cached_weights(8, 11, np.dtype(np.float64))
    assert all(a.base is b.base is first[0].base for a, b in zip(again, first, strict=True))  # the cache's one draw
    assert first[0].base.shape == (4, 8, 8)  # the four share it
    for w in first:
        with pytest.raises(ValueError, match="read-only"):
            w[0, 0] = 1.0
    assert all(w.flags.writeable for w in draw_weights(8, 11))  # a fresh draw is the caller's own


def test_projections_random_reads_the_cache():
    proj = Projections.random(16, seed=4, dtype=np.float32)
    for got, want in zip((proj.w_q, proj.w_k, proj.w_v, proj.w_o), draw_weights(16, 4, np.float32), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_draw_nobody_holds_is_freed_not_kept():
    """The cache holds draws weakly: once no caller holds one, its memory goes (a server that kept the last eight
    d_model 512 draws kept 64 MB after its class had left); the next ask draws the same numbers again."""
    import gc
    import weakref

    first = cached_weights(64, 99, np.dtype(np.float32))
    buffer = weakref.ref(first[0].base)
    want = [w.copy() for w in first]
    del first
    gc.collect()
    assert buffer() is None
    for got, expected in zip(cached_weights(64, 99, np.dtype(np.float32)), want, strict=True):
        np.testing.assert_array_equal(got, expected)
