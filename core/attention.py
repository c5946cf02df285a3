"""Scaled dot-product attention: softmax, the masks, ALiBi's bias, and one attention call.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + bias, masked) V

Notation: ``T_q`` queries, ``T_k`` keys, ``d_k`` the query/key width, ``d_v`` the
value width, ``h`` heads, and ``...`` any number of leading batch (or head) dimensions.

Mask polarity: a boolean mask where True means "may attend", as in PyTorch's
``scaled_dot_product_attention`` and ``jax.nn.dot_product_attention``.

The variants today's models run are small functions beside the formula, never a
second copy of it: ``attention_mask`` (causal, sliding window, prefix-LM, at any
absolute query position, as a KV cache needs), ``alibi_bias`` (BLOOM's and MPT's
distance penalty, added to the scaled scores) and ``repeat_kv`` (grouped-query
heads: one K/V head serves a group of query heads).
"""

from __future__ import annotations

import math

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``: ``exp(x - max) / sum(exp(x - max))``.

    Subtracting each slice's max changes nothing mathematically (it cancels in the
    division) but keeps ``exp`` from overflowing. A slice that is entirely ``-inf``
    (every key masked) gives zeros, never NaN. Keeps ``x``'s float dtype.
    """
    x_max = np.max(x, axis=axis, keepdims=True)  # (..., 1, ...): the largest entry of each slice
    x_max = np.where(np.isfinite(x_max), x_max, 0)  # an all -inf slice: shift by 0, not by -inf (no inf - inf)
    with np.errstate(under="ignore"):  # exp(-1e4) rounding to 0 is the right answer, not an error
        e = np.exp(x - x_max)  # (..., n, ...): every entry now in [0, 1]
        total = np.sum(e, axis=axis, keepdims=True)  # (..., 1, ...)
        return e / np.where(total > 0, total, 1)  # an all-masked slice: 0 / 1 = 0 instead of 0 / 0


def causal_mask(t_q: int, t_k: int | None = None) -> np.ndarray:
    """Bool mask ``(t_q, t_k)``: True where query ``i`` may attend to key ``j``, i.e. ``j <= i``.

    Top-left aligned (``np.tril``), like PyTorch's ``is_causal=True``, also when
    ``t_q != t_k``.
    """
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool))  # (T_q, T_k): ones on and below the diagonal


def attention_mask(
    t_q: int,
    t_k: int | None = None,
    *,
    causal: bool = False,
    window: int = 0,
    prefix: int = 0,
    first_query: int = 0,
) -> np.ndarray:
    """Bool mask ``(T_q, T_k)``, True where query ``i`` may attend to key ``j``, by their positions.

    Query row r sits at position ``i = first_query + r``, key column j at position ``j``:
    ``first_query=0`` is the top-left alignment of ``causal_mask``; a KV cache's step t
    asks for one row at ``first_query=t``, so it sees keys ``j <= t``, not only key 0.

    - ``causal``: ``j <= i``.
    - ``window`` w > 0 (0 = off), a sliding window: with ``causal``, ``i - w < j <= i``
      (keys i-w+1 .. i); without it, ``|i - j| < w``.
    - ``prefix`` p > 0 (0 = off), a prefix-LM: with ``causal``, the first p positions see
      each other both ways and the window does not apply inside that block; the rest stay
      causal (and windowed). Without ``causal`` every key is visible already, so ``prefix``
      changes nothing.
    """
    t_k = t_q if t_k is None else t_k
    for name, value in (("window", window), ("prefix", prefix), ("first_query", first_query)):
        if value < 0:
            raise ValueError(f"{name} must be 0 or more, got {value}")
    i = np.arange(first_query, first_query + t_q)[:, None]  # (T_q, 1): each query's position
    j = np.arange(t_k)[None, :]  # (1, T_k): each key's position
    allowed = j <= i if causal else np.ones((t_q, t_k), dtype=bool)  # (T_q, T_k)
    if window:
        allowed = allowed & ((i - j < window) if causal else (np.abs(i - j) < window))  # (T_q, T_k): near keys only
    if causal and prefix:
        allowed = allowed | ((i < prefix) & (j < prefix))  # (T_q, T_k): the prefix block, both ways
    return allowed


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi's slope per head, ``(h,)``: ``m_h = 2^(-8 h / H)`` for heads h = 1..H (Press et al., 2022)."""
    if n_heads < 1:
        raise ValueError(f"ALiBi needs at least one head, got {n_heads}")
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)  # (h,): 1/2^(8/H), ..., 1/256


def alibi_bias(n_heads: int, t_q: int, t_k: int | None = None, *, first_query: int = 0) -> np.ndarray:
    """ALiBi's bias ``(h, T_q, T_k)``, added to the scaled scores: a penalty growing with distance,
    ``-m_h |i - j|``. Under a causal mask every key a query sees is ``j <= i``, so this is the paper's
    ``-m_h (i - j)``; a prefix-LM's query also sees the later keys of its prefix, and pays for their distance
    too. Positions as in ``attention_mask``. ALiBi replaces position embeddings: it is meant with none added
    to the input.
    """
    t_k = t_q if t_k is None else t_k
    i = np.arange(first_query, first_query + t_q)[:, None]  # (T_q, 1)
    j = np.arange(t_k)[None, :]  # (1, T_k)
    distance = np.abs(i - j)  # (T_q, T_k): how far back (or ahead) key j is
    return -alibi_slopes(n_heads)[:, None, None] * distance  # (h, 1, 1) * (T_q, T_k) -> (h, T_q, T_k)


def repeat_kv(x: np.ndarray, group: int) -> np.ndarray:
    """Grouped-query heads: ``(..., kv_heads, T, d_k) -> (..., kv_heads * group, T, d_k)``.

    Each K or V head is repeated for the ``group`` query heads that share it: query head
    ``n`` reads K/V head ``n // group`` (as PyTorch's ``enable_gqa=True``). ``group=1`` is
    multi-head attention (returned as it is); ``kv_heads=1`` is multi-query attention.
    """
    return x if group == 1 else np.repeat(x, group, axis=-3)  # (..., h, T, d_k)


def attention_scores(q: np.ndarray, k: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Scaled scores ``Q K^T / sqrt(d_k)``: ``(..., T_q, d_k), (..., T_k, d_k) -> (..., T_q, T_k)``.

    ``scale=None`` means ``1/sqrt(d_k)``; a number multiplies the scores instead (1.0 = unscaled).
    """
    d_k = q.shape[-1]
    if scale is None:
        scale = 1 / math.sqrt(d_k)
    k_t = np.swapaxes(k, -1, -2)  # (..., T_k, d_k) -> (..., d_k, T_k): K^T
    with np.errstate(under="ignore"):  # a tiny q.k rounding to 0 is correct, not an error
        return q @ k_t * float(scale)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Attention weights from scores: ``(..., T_q, T_k) -> (..., T_q, T_k)``, each row summing to 1.

    ``mask`` is bool, broadcastable to ``scores``, True = may attend. A masked key's
    score becomes -inf, so its weight is exactly 0; a query row whose keys are all
    masked gets all-zero weights.
    """
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be a bool array (True = may attend), got dtype {mask.dtype}")
        scores = np.where(mask, scores, -np.inf)  # (..., T_q, T_k): masked keys can never win
    return softmax(scores, axis=-1)  # (..., T_q, T_k): softmax over the keys of each query


def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    scale: float | None = None,
    bias: np.ndarray | None = None,
    return_scores: bool = False,
) -> tuple[np.ndarray, ...]:
    """``softmax(Q K^T / sqrt(d_k) + bias, masked) V``, returning ``(output, weights)``.

    Shapes: q ``(..., T_q, d_k)``, k ``(..., T_k, d_k)``, v ``(..., T_k, d_v)``,
    mask bool broadcastable to ``(..., T_q, T_k)`` -> output ``(..., T_q, d_v)``,
    weights ``(..., T_q, T_k)``. A fully masked query row gets zero weights and a
    zero output. ``bias`` (e.g. ``alibi_bias``), broadcastable to ``(..., T_q, T_k)``,
    is added to the scaled scores before masking; None adds nothing.
    ``return_scores=True`` also returns the scaled scores ``Q K^T * scale`` (before
    the bias and the mask), as a trace records them: ``(output, weights, scores)``.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dimension d_k, got {q.shape} and {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys T_k, got {k.shape} and {v.shape}")
    scores = attention_scores(q, k, scale)  # (..., T_q, T_k): how well each query matches each key
    biased = scores if bias is None else scores + bias.astype(scores.dtype, copy=False)  # (..., T_q, T_k)
    weights = masked_softmax(biased, mask)  # (..., T_q, T_k): each row a probability distribution
    with np.errstate(under="ignore"):  # a weight of 1e-300 times a value may round to 0: correct
        output = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v): a weighted mix of values
    return (output, weights, scores) if return_scores else (output, weights)
