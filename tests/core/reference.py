"""A slow, obviously-correct float64 reference for attention, written from the math.

Nothing here imports core/: every score is a Python loop over one query and one key,
every softmax a loop over one row, and every head an explicit slice of the weight
columns. It is O(h * T_q * T_k * d_k) Python operations, so keep inputs small.
"""

from __future__ import annotations

import math

import numpy as np


def loop_softmax_row(logits: list[float], allowed: list[bool]) -> list[float]:
    """softmax over the allowed entries of one row; disallowed get 0, an empty row gets all 0."""
    kept = [s for s, ok in zip(logits, allowed, strict=True) if ok]
    if not kept:
        return [0.0] * len(logits)
    top = max(kept)
    e = [math.exp(s - top) if ok else 0.0 for s, ok in zip(logits, allowed, strict=True)]
    total = math.fsum(e)
    return [x / total for x in e]


def loop_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One head, no batch: q (T_q, d_k), k (T_k, d_k), v (T_k, d_v), allowed (T_q, T_k) bool.

    Returns (scores, weights, output): (T_q, T_k), (T_q, T_k), (T_q, d_v).
    """
    t_q, t_k, d_v = q.shape[0], k.shape[0], v.shape[1]
    scores = np.zeros((t_q, t_k))
    weights = np.zeros((t_q, t_k))
    out = np.zeros((t_q, d_v))
    for i in range(t_q):
        row = [math.fsum(float(a) * float(b) for a, b in zip(q[i], k[j], strict=True)) * scale for j in range(t_k)]
        w = loop_softmax_row(row, [bool(allowed[i, j]) for j in range(t_k)])
        scores[i] = row
        weights[i] = w
        for c in range(d_v):
            out[i, c] = math.fsum(w[j] * float(v[j, c]) for j in range(t_k))
    return scores, weights, out


def loop_multi_head(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    n_heads: int,
    *,
    kv: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    scale: float | None = None,
) -> dict[str, np.ndarray]:
    """Multi-head attention head by head: x (..., T_q, d), kv (..., T_k, d) -> every intermediate.

    Head ``h`` uses columns ``h*d_k:(h+1)*d_k`` of W_Q, W_K, W_V, and its context fills the
    same columns of the concatenation. ``mask`` (True = may attend) broadcasts to
    ``(..., h, T_q, T_k)``. Returns q, k, v, scores, weights, context, concat, output with
    the shapes of the trace in core/multihead.py.
    """
    x = np.asarray(x, dtype=np.float64)
    kv = x if kv is None else np.asarray(kv, dtype=np.float64)
    w_q, w_k, w_v, w_o = (np.asarray(w, dtype=np.float64) for w in (w_q, w_k, w_v, w_o))
    *batch, t_q, d_model = x.shape
    t_k = kv.shape[-2]
    d_k = d_model // n_heads
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    full = (*batch, n_heads, t_q, t_k)
    allowed = np.ones(full, dtype=bool) if mask is None else np.broadcast_to(mask, full)

    out = {
        "q": np.zeros((*batch, n_heads, t_q, d_k)),
        "k": np.zeros((*batch, n_heads, t_k, d_k)),
        "v": np.zeros((*batch, n_heads, t_k, d_k)),
        "scores": np.zeros(full),
        "weights": np.zeros(full),
        "context": np.zeros((*batch, n_heads, t_q, d_k)),
        "concat": np.zeros((*batch, t_q, d_model)),
        "output": np.zeros((*batch, t_q, d_model)),
    }
    for b in np.ndindex(*batch):
        for h in range(n_heads):
            cols = slice(h * d_k, (h + 1) * d_k)
            q = x[b] @ w_q[:, cols]  # (T_q, d_model) @ (d_model, d_k)
            k = kv[b] @ w_k[:, cols]
            v = kv[b] @ w_v[:, cols]
            scores, weights, context = loop_attention(q, k, v, allowed[(*b, h)], scale)
            for name, value in (("q", q), ("k", k), ("v", v), ("scores", scores), ("weights", weights)):
                out[name][(*b, h)] = value
            out["context"][(*b, h)] = context
            out["concat"][b][:, cols] = context
        out["output"][b] = out["concat"][b] @ w_o
    return out
