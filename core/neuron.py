"""Why a score is high (BertViz's neuron view): one query, one key, the products that add up to their score.

    score[i, j] = scale * sum over the d_k dimensions of q[i, c] * k[j, c]  (+ ALiBi's bias[i, j], if any)

So a high score is a sum of per-dimension agreements: a dimension where q and k have the same sign adds, one
where they differ takes away. ``score_terms`` lays the sum out term by term from a trace's own q and k (with
RoPE, the rotated ones: the trace's ``scores == q @ k^T * scale`` contract); with shared K/V heads
(grouped-query, multi-query), the key is the one K head the query head reads (``trace.kv_head_of``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.multihead import AttentionTrace


@dataclass(frozen=True)
class ScoreTerms:
    """One query-key score, term by term."""

    q: np.ndarray
    """(d_k,) the query's vector in this head."""
    k: np.ndarray
    """(d_k,) the key's vector in this head."""
    products: np.ndarray
    """(d_k,) q_c * k_c for each dimension c."""
    dot: float
    """Their sum, q · k (summed exactly: ``math.fsum``)."""
    scale: float
    """The factor the trace multiplied q · k by (1/√d_k, or 1 unscaled)."""
    scaled: float
    """scale * dot: the trace's ``scores`` entry."""
    bias: float
    """What the trace added to it (ALiBi's distance penalty; 0 without a bias)."""
    score: float
    """scaled + bias: what the mask and softmax read."""
    kv_head: int
    """The K head (0-based) the query head reads: the head itself, or its group's shared one."""
    weight: float
    """The attention weight the trace gave this key from this query, after softmax over every key."""


def score_terms(trace: AttentionTrace, head: int, query: int, key: int) -> ScoreTerms:
    """Head ``head``'s score of query position ``query`` for key position ``key`` (0-based), term by term."""
    h, t_q, t_k = trace.scores.shape[-3:]
    if trace.scores.ndim != 3:
        raise ValueError("score_terms reads one sequence's trace (h, T_q, T_k), not a batch")
    if not (0 <= head < h and 0 <= query < t_q and 0 <= key < t_k):
        raise ValueError(f"head, query, key must lie in 0..{h - 1}, 0..{t_q - 1}, 0..{t_k - 1}")
    kv_head = trace.kv_head_of(head)  # the K head this query head reads
    q = np.asarray(trace.q[head, query], np.float64)  # (d_k,)
    k = np.asarray(trace.k[kv_head, key], np.float64)  # (d_k,)
    products = q * k  # (d_k,)
    dot = math.fsum(products.tolist())
    scaled = trace.scale * dot
    bias = 0.0 if trace.bias is None else float(np.broadcast_to(trace.bias, trace.scores.shape)[head, query, key])
    weight = float(trace.weights[head, query, key])
    return ScoreTerms(q, k, products, dot, trace.scale, scaled, bias, scaled + bias, kv_head, weight)
