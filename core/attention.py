"""Scaled dot-product attention: softmax, the causal mask, and one attention call.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Notation: ``T_q`` queries, ``T_k`` keys, ``d_k`` the query/key width, ``d_v`` the
value width, and ``...`` any number of leading batch (or head) dimensions.

Mask polarity: a boolean mask where True means "may attend", as in PyTorch's
``scaled_dot_product_attention`` and ``jax.nn.dot_product_attention``.
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
) -> tuple[np.ndarray, np.ndarray]:
    """``softmax(Q K^T / sqrt(d_k), masked) V``, returning ``(output, weights)``.

    Shapes: q ``(..., T_q, d_k)``, k ``(..., T_k, d_k)``, v ``(..., T_k, d_v)``,
    mask bool broadcastable to ``(..., T_q, T_k)`` -> output ``(..., T_q, d_v)``,
    weights ``(..., T_q, T_k)``. A fully masked query row gets zero weights and a
    zero output.
    """
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dimension d_k, got {q.shape} and {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys T_k, got {k.shape} and {v.shape}")
    scores = attention_scores(q, k, scale)  # (..., T_q, T_k): how well each query matches each key
    weights = masked_softmax(scores, mask)  # (..., T_q, T_k): each row a probability distribution
    with np.errstate(under="ignore"):  # a weight of 1e-300 times a value may round to 0: correct
        output = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v): a weighted mix of values
    return output, weights
