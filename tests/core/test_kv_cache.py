"""core/kv_cache.py: decoding token by token gives exactly the full causal map, and the cache's size."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from core import Projections, alibi_bias, attention_mask, causal_mask, multi_head_attention
from core.kv_cache import (
    CONTEXTS,
    MODEL_SHAPES,
    CacheShape,
    cache_bytes,
    cache_bytes_per_token,
    decode,
    multi_head_cache_bytes,
    stacked_weights,
)

COMBINATIONS = list(itertools.product((4, 2, 1), (0, 1, 3), (False, True), (False, True)))


@pytest.mark.parametrize(("kv_heads", "window", "alibi", "rope"), COMBINATIONS)
def test_cache_rows_stacked_are_the_full_causal_map(kv_heads, window, alibi, rope):
    t, d_model, h = 7, 16, 4
    x = np.random.default_rng([kv_heads, window]).standard_normal((t, d_model))  # float64
    proj = Projections.random(d_model, 3).grouped(h, kv_heads)
    steps = decode(x, proj, h, window=window, alibi=alibi, rope=rope)
    full = multi_head_attention(
        x,
        proj,
        h,
        mask=attention_mask(t, causal=True, window=window),
        bias=alibi_bias(h, t) if alibi else None,
        q_positions=np.arange(t) if rope else None,
        k_positions=np.arange(t) if rope else None,
    )
    np.testing.assert_allclose(stacked_weights(steps), full.weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.concatenate([s.output for s in steps]), full.output, rtol=0, atol=1e-12)
    last = steps[-1]  # the cache holds every token's keys and values exactly as the full call computed them
    np.testing.assert_allclose(last.k_cache, full.k, rtol=0, atol=1e-12)
    np.testing.assert_allclose(last.v_cache, full.v, rtol=0, atol=1e-12)


def test_each_step_grows_the_cache_by_one_row_and_masks_by_absolute_position():
    t, h, kv_heads, d_k = 6, 4, 2, 4
    proj = Projections.random(h * d_k, 0).grouped(h, kv_heads)
    x = np.random.default_rng(0).standard_normal((t, h * d_k))
    steps = decode(x, proj, h, window=3)
    for step in steps:
        assert step.k_cache.shape == step.v_cache.shape == (kv_heads, step.t + 1, d_k)
        assert step.q.shape == (h, 1, d_k) and step.weights.shape == (h, 1, step.t + 1)
        np.testing.assert_array_equal(step.mask[0], [step.t - 3 < j for j in range(step.t + 1)])  # last 3 keys
        np.testing.assert_array_equal(step.weights[..., ~step.mask[0]], 0.0)
        np.testing.assert_allclose(step.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    # without a window, the last step's query sees every key: top-left alignment would show key 0 only
    assert decode(x, proj, h)[-1].mask.all() and causal_mask(1, t).sum() == 1


def test_decode_keeps_float32():
    proj = Projections.random(8, 0, dtype=np.float32).grouped(2, 1)
    steps = decode(np.ones((3, 8), dtype=np.float32), proj, 2, alibi=True)
    assert all(s.weights.dtype == s.output.dtype == s.k_cache.dtype == np.float32 for s in steps)


# --- bytes: hand-computed from the published configs, 2 bytes per number ----------------------


def shape(name: str) -> CacheShape:
    return next(s for s in MODEL_SHAPES if s.name == name)


@pytest.mark.parametrize(
    ("name", "per_token", "at_4k", "at_32k"),
    [
        # GPT-2 small: K and V x 12 layers x 12 heads x 64 x 2 bytes = 36 KiB per token
        ("GPT-2 small", 36 * 1024, 144 * 2**20, 1152 * 2**20),
        # Llama 3 8B: 2 x 32 x 8 x 128 x 2 = 128 KiB per token: 0.5 GiB at 4k, 4 GiB at 32k
        ("Llama 3 8B", 128 * 1024, 2**29, 2**32),
        # Llama 3 70B: 2 x 80 x 8 x 128 x 2 = 320 KiB per token: 1.25 GiB at 4k, 10 GiB at 32k
        ("Llama 3 70B", 320 * 1024, 1280 * 2**20, 10 * 2**30),
        # Mistral 7B: Llama 3 8B's shape, but a 4,096 window: 32k costs what 4k costs
        ("Mistral 7B", 128 * 1024, 2**29, 2**29),
    ],
)
def test_cache_bytes_of_real_models(name, per_token, at_4k, at_32k):
    s = shape(name)
    assert cache_bytes_per_token(s) == per_token
    assert [cache_bytes(s, c) for c in CONTEXTS] == [at_4k, at_32k]


def test_grouping_saves_the_ratio_of_heads_and_the_window_saves_only_past_its_size():
    llama = shape("Llama 3 70B")
    assert multi_head_cache_bytes(llama, 4096) == 8 * cache_bytes(llama, 4096)  # 64 heads instead of 8
    gpt2 = shape("GPT-2 small")
    assert multi_head_cache_bytes(gpt2, 4096) == cache_bytes(gpt2, 4096)  # nothing grouped
    mine = CacheShape("your settings", n_layers=1, n_heads=4, kv_heads=2, d_k=16, window=8)
    assert cache_bytes_per_token(mine, bytes_per_value=8) == 2 * 1 * 2 * 16 * 8
    assert [cache_bytes(mine, c, bytes_per_value=8) for c in (5, 8, 9, 100)] == [5 * 512, 8 * 512, 8 * 512, 8 * 512]
