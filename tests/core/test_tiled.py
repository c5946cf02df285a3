"""core/tiled.py: the online softmax gives plain softmax attention, for every block size, and its states."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from core import alibi_bias, attention_mask, causal_mask, scaled_dot_product_attention
from core.tiled import MEMORY_LENGTHS, score_memory, tiled_attention, tiles
from tests.core.reference import loop_attention


def masks(t_q: int, t_k: int, rng) -> dict[str, np.ndarray | None]:
    random = rng.random((t_q, t_k)) < 0.5
    random[t_q // 2] = False  # one fully masked row
    return {
        "none": None,
        "causal": causal_mask(t_q, t_k),
        "window-prefix": attention_mask(t_q, t_k, causal=True, window=2, prefix=2),
        "random-with-empty-row": random,
    }


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 1), (5, 5), (9, 9), (4, 7), (7, 3)])
def test_every_block_size_gives_softmax_attention(t_q, t_k):
    rng = np.random.default_rng([t_q, t_k])
    q = rng.standard_normal((2, t_q, 4)) * 3  # (h, T_q, d_k): large scores, so the running max moves
    k = rng.standard_normal((2, t_k, 4)) * 3
    v = rng.standard_normal((2, t_k, 5))
    for name, mask in masks(t_q, t_k, rng).items():
        plain, _ = scaled_dot_product_attention(q, k, v, mask)
        allowed = np.ones((t_q, t_k), bool) if mask is None else mask
        loops = [loop_attention(q[n], k[n], v[n], allowed, 0.5)[2] for n in range(2)]  # independent reference
        np.testing.assert_allclose(plain, loops, rtol=0, atol=1e-12)
        for block in range(1, t_k + 2):  # every B_c from 1 to T, and one wider than T
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")
                got = tiled_attention(q, k, v, mask, block=block)
            np.testing.assert_allclose(got, plain, rtol=0, atol=1e-12, err_msg=f"{name}, B_c = {block}")
            if mask is not None:
                np.testing.assert_array_equal(got[:, ~mask.any(axis=1)], 0.0)  # fully masked rows: zeros


def test_each_tiles_running_state_is_the_softmax_of_the_keys_seen_so_far():
    rng = np.random.default_rng(4)
    t, block = 7, 3
    q, k, v = rng.standard_normal((t, 4)) * 3, rng.standard_normal((t, 4)) * 3, rng.standard_normal((t, 2))
    mask = causal_mask(t)
    scores = np.where(mask, q @ k.T / 2, -np.inf)  # (T, T): every score at once, for the check only
    steps = list(tiles(q, k, v, mask, block=block))
    assert [(s.start, s.stop) for s in steps] == [(0, 3), (3, 6), (6, 7)]
    assert np.all(steps[0].m_old == -np.inf) and np.all(steps[0].l_old == 0)
    for before, after in itertools.pairwise(steps):
        np.testing.assert_array_equal(after.m_old, before.m_new)
        np.testing.assert_array_equal(after.l_old, before.l_new)
    for s in steps:
        seen = scores[:, : s.stop]  # (T, stop): the keys of every block so far
        assert s.scores.shape == (t, s.stop - s.start)
        np.testing.assert_array_equal(s.scores, scores[:, s.start : s.stop])
        np.testing.assert_array_equal(s.m_new, seen.max(axis=1))
        with np.errstate(under="ignore"):
            np.testing.assert_allclose(s.l_new, np.exp(seen - s.m_new[:, None]).sum(axis=1), rtol=1e-13)
        np.testing.assert_allclose(s.correction, np.exp(s.m_old - s.m_new), rtol=1e-13)  # causal: key 0 in block 0
        partial, _ = scaled_dot_product_attention(q, k[: s.stop], v[: s.stop], mask[:, : s.stop])
        np.testing.assert_allclose(s.output(), partial, rtol=0, atol=1e-12)  # acc / l: attention over keys so far
    # a block with a new maximum shrinks what came before: some correction below 1
    assert any(np.any(s.correction < 1) for s in steps[1:])


def test_alibi_bias_tiles_like_the_plain_call():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((4, 6, 4)) for _ in range(3))  # (h, T, d_k)
    mask, bias = attention_mask(6, causal=True, window=3), alibi_bias(4, 6)
    plain, _ = scaled_dot_product_attention(q, k, v, mask, bias=bias)
    for block in range(1, 7):
        np.testing.assert_allclose(tiled_attention(q, k, v, mask, block=block, bias=bias), plain, rtol=0, atol=1e-12)


def test_float32_stays_float32_and_block_size_must_be_positive():
    q = np.ones((3, 2), dtype=np.float32)
    assert tiled_attention(q, q, q, block=2).dtype == np.float32
    with pytest.raises(ValueError, match="B_c"):
        tiled_attention(q, q, q, block=0)


def test_score_memory_is_t_by_t_against_t_by_block():
    m = score_memory(4096, 128)  # float32
    assert (m.full_bytes, m.tile_bytes) == (64 * 2**20, 2 * 2**20)  # 64 MiB against 2 MiB
    long = score_memory(131072, 128)
    assert (long.full_bytes, long.tile_bytes) == (64 * 2**30, 64 * 2**20)  # 64 GiB against 64 MiB
    assert score_memory(10, 64).tile_bytes == score_memory(10, 10).full_bytes  # a block wider than T is all of T
    assert MEMORY_LENGTHS == (4096, 128 * 1024)
    assert score_memory(8, 8, bytes_per_value=8).full_bytes == 512  # 8 x 8 float64 scores


def test_flashattentions_block_of_queries_and_keys_does_not_grow_with_t():
    """FlashAttention tiles the queries too: 128 x 64 float32 scores are 32 KiB at 4k and at 128k tokens alike."""
    assert {score_memory(t, 3).flash_bytes for t in MEMORY_LENGTHS} == {128 * 64 * 4}
    assert score_memory(8, 3).flash_bytes == 8 * 8 * 4  # a block larger than the sentence is the sentence
