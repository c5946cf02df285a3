"""FlashAttention's tiled, online softmax: the same attention, one block of keys at a time.

Plain attention builds the whole (T_q, T_k) score matrix, then takes each row's softmax.
FlashAttention (Dao et al., 2022) never does: it cuts the keys into blocks of B_c and,
for each query row, keeps three running numbers as the blocks go by:

    m    (T_q,)       the largest score seen so far
    l    (T_q,)       the sum of exp(score - m) so far
    acc  (T_q, d_v)   the sum of exp(score - m) * value so far

When a block brings a larger max, everything summed so far was measured against the old
one, so l and acc are multiplied by the correction ``exp(m_old - m_new)``. After the last
block, ``acc / l`` is softmax attention's output, exactly (to rounding), while the largest
array alive is one block of scores, (T_q, B_c), never (T_q, T_k). Every query row is in every
block here; FlashAttention also cuts the queries into blocks of B_r rows, so its kernel holds one
(B_r, B_c) block of scores at a time (``FLASH_BLOCK``), whatever T is.

``tests/core/test_tiled.py`` checks the output against ``scaled_dot_product_attention`` to
1e-12 in float64 for every B_c from 1 to T, with masked and fully masked rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from core.attention import attention_scores


@dataclass(frozen=True)
class Tile:
    """One block of keys, ``start .. stop - 1``, and each query row's running state before and after it."""

    start: int
    stop: int
    scores: np.ndarray  # (..., T_q, B_c): this block's scaled, masked scores
    m_old: np.ndarray  # (..., T_q): running max before the block (-inf before the first)
    m_new: np.ndarray  # (..., T_q): running max after it
    l_old: np.ndarray  # (..., T_q): running sum before the block
    l_new: np.ndarray  # (..., T_q): running sum after it
    correction: np.ndarray  # (..., T_q): exp(m_old - m_new), what rescales l and acc
    acc: np.ndarray  # (..., T_q, d_v): running weighted sum of values after the block

    def output(self) -> np.ndarray:
        """``acc / l``: the attention output so far, ``(..., T_q, d_v)`` (zeros where no key was seen)."""
        return self.acc / np.where(self.l_new > 0, self.l_new, 1)[..., None]


def tiles(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    block: int,
    scale: float | None = None,
    bias: np.ndarray | None = None,
) -> Iterator[Tile]:
    """Online-softmax attention, block by block: yields one ``Tile`` per block of ``block`` keys.

    Shapes as ``scaled_dot_product_attention``: q ``(..., T_q, d_k)``, k ``(..., T_k, d_k)``,
    v ``(..., T_k, d_v)``, mask bool ``(T_q, T_k)`` or broadcastable, True = may attend,
    ``bias`` (ALiBi's) broadcastable to ``(..., T_q, T_k)``, added to the scaled scores.
    The last tile's ``output()`` is the attention output.
    """
    if block < 1:
        raise ValueError(f"the block size B_c must be at least 1, got {block}")
    t_q, t_k = q.shape[-2], k.shape[-2]
    full = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), t_q)  # (..., T_q)
    m = np.full(full, -np.inf, dtype=q.dtype)  # (..., T_q): running max, none seen yet
    l = np.zeros(full, dtype=q.dtype)  # (..., T_q): running sum of exp(s - m)  # noqa: E741 (the paper's l)
    acc = np.zeros((*full, v.shape[-1]), dtype=q.dtype)  # (..., T_q, d_v): running sum of exp(s - m) v
    for start in range(0, t_k, block):
        stop = min(start + block, t_k)
        s = attention_scores(q, k[..., start:stop, :], scale)  # (..., T_q, B_c): this block's scores only
        if bias is not None:
            s = s + bias[..., start:stop].astype(s.dtype, copy=False)  # (..., T_q, B_c): ALiBi's distance penalty
        if mask is not None:
            s = np.where(np.asarray(mask)[..., start:stop], s, -np.inf)  # (..., T_q, B_c): masked keys can never win
        m_new = np.maximum(m, s.max(axis=-1))  # (..., T_q): the max over every key so far
        shift = np.where(np.isfinite(m_new), m_new, 0)  # (..., T_q): a row with no key yet shifts by 0, not -inf
        with np.errstate(under="ignore"):
            correction = np.exp(m - shift)  # (..., T_q): exp(m_old - m_new), rescales what was summed so far
            p = np.exp(s - shift[..., None])  # (..., T_q, B_c): this block's unnormalised weights
            l_new = correction * l + p.sum(axis=-1)  # (..., T_q)
            acc = correction[..., None] * acc + p @ v[..., start:stop, :]  # (..., T_q, d_v)
        yield Tile(start, stop, s, m, m_new, l, l_new, correction, acc)
        m, l = m_new, l_new  # noqa: E741


def tiled_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    block: int,
    scale: float | None = None,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """The output of ``tiles``, ``(..., T_q, d_v)``: ``scaled_dot_product_attention``'s, one tile alive at a time."""
    last = None
    for last in tiles(q, k, v, mask, block=block, scale=scale, bias=bias):  # noqa: B007 (only the last tile is kept)
        pass
    if last is None:
        raise ValueError("tiled attention needs at least one key")
    return last.output()


FLASH_HEAD_DIM = 128
"""The head dimension ``FLASH_BLOCK`` is FlashAttention-2's block for (Llama 3's and Mistral's d_k)."""
FLASH_BLOCK = (128, 64)
"""(B_r, B_c): the queries x keys whose scores FlashAttention-2's forward kernel computes at once, for head dimension
``FLASH_HEAD_DIM`` = 128 on an A100 or H100 (Dao-AILab/flash-attention,
``csrc/flash_attn/src/flash_fwd_launch_template.h``: ``Flash_fwd_kernel_traits<128, 128, 64, ...>``, kBlockM x
kBlockN; 128 x 128 at head dimension 64). The FlashAttention paper sizes them from the on-chip memory M:
B_c = ceil(M / 4d), B_r = min(B_c, d)."""


@dataclass(frozen=True)
class ScoreMemory:
    """The largest score array alive for T queries and keys: plain attention's, one tile's of keys (all T query rows,
    as ``tiles``), and one FlashAttention block's (B_r query rows too), in bytes."""

    t: int
    block: int
    full_bytes: int  # (T, T): every score at once
    tile_bytes: int  # (T, B_c): one block of keys' scores, every query row
    flash_bytes: int  # (B_r, B_c) of FLASH_BLOCK: one block of queries x one block of keys


def score_memory(t: int, block: int, bytes_per_value: int = 4) -> ScoreMemory:
    """``(T, T)`` against ``(T, B_c)`` and FlashAttention's ``(B_r, B_c)`` scores for one head, in bytes (float32: 4
    bytes each)."""
    b = min(block, t)  # a block cannot be wider than the keys
    rows, cols = (min(n, t) for n in FLASH_BLOCK)  # nor than the queries
    return ScoreMemory(t, b, t * t * bytes_per_value, t * b * bytes_per_value, rows * cols * bytes_per_value)


MEMORY_LENGTHS = (4096, 131072)
"""Context lengths for the memory comparison beside the current T: 4k and 128k tokens."""
