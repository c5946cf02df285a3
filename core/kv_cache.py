"""Generation one token at a time with a KV cache, equal to full causal attention.

A decoder that generates token t needs only token t's query, but every earlier token's
key and value. So it keeps K and V in a cache and, at each step, computes q_t, k_t and
v_t for the newest token alone, appends k_t and v_t, and attends over the cache:

    step t:   q_t (h, 1, d_k)   k_t, v_t (kv_heads, 1, d_k)
              cache K, V (kv_heads, t, d_k) -> (kv_heads, t + 1, d_k)
              weights (h, 1, t + 1): row t of the full causal map

The mask of one step is aligned by absolute position (query t sees keys 0..t, and only
the last w of them with a window), not top-left as ``causal_mask(1, t + 1)`` would be
(which lets the query see key 0 alone). Stacked, the steps' rows are exactly the full
causal map: ``tests/core/test_kv_cache.py`` checks it to 1e-12 in float64.

Notation: ``T`` tokens, ``h`` query heads, ``kv_heads`` K/V heads, ``d_k`` one head's width,
``t`` the 0-based position of the newest token (the cache holds t + 1 rows after step t).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.attention import alibi_bias, attention_mask, repeat_kv, scaled_dot_product_attention
from core.heads import check_heads
from core.multihead import Projections, as_float, kv_head_count, linear, merge_heads, split_heads
from core.rope import apply_rope


@dataclass(frozen=True)
class CacheStep:
    """What step t of decoding computed: one query row over the cache of t + 1 keys."""

    t: int  # the newest token's position (0-based)
    q: np.ndarray  # (h, 1, d_k): the newest token's queries (after RoPE, if on)
    k_cache: np.ndarray  # (kv_heads, t + 1, d_k): every key so far, the newest last
    v_cache: np.ndarray  # (kv_heads, t + 1, d_k)
    mask: np.ndarray  # (1, t + 1) bool: which cached keys query t may see
    weights: np.ndarray  # (h, 1, t + 1): row t of each head's causal map
    output: np.ndarray  # (1, d_model): row t of the layer's output


def decode(
    x: np.ndarray,
    proj: Projections,
    n_heads: int,
    *,
    window: int = 0,
    alibi: bool = False,
    rope: bool = False,
    scale: float | None = None,
) -> list[CacheStep]:
    """Self-attention of ``x (T, d_model)`` computed token by token with a KV cache: one ``CacheStep`` per token.

    ``window`` (0 = off) is a sliding window, ``alibi`` adds ALiBi's causal bias, ``rope``
    rotates q_t and k_t by position t: the same settings as the full call
    ``multi_head_attention(x, proj, n_heads, mask=attention_mask(T, causal=True, window=window), ...)``.
    The cache grows by ``np.concatenate`` so each step reads like the lesson; a real
    cache is allocated once for the longest context (and, with a window, as a ring of w rows).
    """
    d_k = check_heads(proj.d_model, n_heads)
    kv_heads = kv_head_count(proj, n_heads)
    group = n_heads // kv_heads  # query heads per K/V head
    x = as_float(x)  # (T, d_model): float dtypes kept, ints computed in float64
    k_cache = np.zeros((kv_heads, 0, d_k), dtype=x.dtype)  # (kv_heads, 0, d_k): empty before the first token
    v_cache = np.zeros((kv_heads, 0, d_k), dtype=x.dtype)
    steps = []
    for t in range(x.shape[0]):
        x_t = x[t : t + 1]  # (1, d_model): the newest token only
        q_t = split_heads(linear(x_t, proj.w_q, proj.b_q), n_heads)  # (1, d_model) -> (h, 1, d_k)
        k_t = split_heads(linear(x_t, proj.w_k, proj.b_k), kv_heads)  # (1, d_kv) -> (kv_heads, 1, d_k)
        v_t = split_heads(linear(x_t, proj.w_v, proj.b_v), kv_heads)  # (1, d_kv) -> (kv_heads, 1, d_k)
        if rope:  # rotate by the absolute position t: the cached keys keep the rotation they were made with
            q_t, k_t = apply_rope(q_t, np.array([t])), apply_rope(k_t, np.array([t]))  # (h | kv_heads, 1, d_k)
        k_cache = np.concatenate([k_cache, k_t], axis=-2)  # (kv_heads, t, d_k) -> (kv_heads, t + 1, d_k)
        v_cache = np.concatenate([v_cache, v_t], axis=-2)  # (kv_heads, t, d_k) -> (kv_heads, t + 1, d_k)
        mask = attention_mask(1, t + 1, causal=True, window=window, first_query=t)  # (1, t + 1): by position
        bias = alibi_bias(n_heads, 1, t + 1, first_query=t) if alibi else None  # (h, 1, t + 1)
        context, weights = scaled_dot_product_attention(  # (h, 1, d_k), (h, 1, t + 1)
            q_t, repeat_kv(k_cache, group), repeat_kv(v_cache, group), mask, scale=scale, bias=bias
        )
        output = linear(merge_heads(context), proj.w_o, proj.b_o)  # (h, 1, d_k) -> (1, d_model) -> (1, d_model)
        steps.append(CacheStep(t, q_t, k_cache, v_cache, mask, weights, output))
    return steps


def stacked_weights(steps: list[CacheStep]) -> np.ndarray:
    """The steps' weight rows stacked into ``(h, T, T)``, each row padded with zeros for the keys not yet cached."""
    t = len(steps)
    rows = [np.pad(s.weights, ((0, 0), (0, 0), (0, t - s.t - 1))) for s in steps]  # T of (h, 1, T)
    return np.concatenate(rows, axis=-2)  # (h, T, T)


# --- How much memory a cache takes --------------------------------------------------------------


@dataclass(frozen=True)
class CacheShape:
    """What decides a model's KV-cache size: per layer, K and V of ``kv_heads`` heads of width ``d_k`` per token."""

    name: str
    n_layers: int
    n_heads: int  # query heads (what the cache would hold per layer without grouping)
    kv_heads: int  # K/V heads actually cached
    d_k: int
    window: int = 0  # sliding window (0 = none): only the last ``window`` tokens' K and V are kept


MODEL_SHAPES = (
    CacheShape("GPT-2 small", n_layers=12, n_heads=12, kv_heads=12, d_k=64),
    CacheShape("Llama 3 8B", n_layers=32, n_heads=32, kv_heads=8, d_k=128),
    CacheShape("Llama 3 70B", n_layers=80, n_heads=64, kv_heads=8, d_k=128),
    CacheShape("Mistral 7B", n_layers=32, n_heads=32, kv_heads=8, d_k=128, window=4096),
)
"""Shapes from the models' published configs (GPT-2: n_layer, n_head, n_embd / n_head; Llama 3 and
Mistral: num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim; Mistral 7B v0.1's
sliding_window)."""

FP16_BYTES = 2
"""Bytes per cached number in fp16 (or bf16), how these models are usually served."""

CONTEXTS = (4096, 32768)
"""The context lengths of the memory table: a common default, and a long context."""


def cache_bytes_per_token(shape: CacheShape, bytes_per_value: int = FP16_BYTES) -> int:
    """Bytes one more token adds to the cache: K and V (2) x layers x kv_heads x d_k x bytes."""
    return 2 * shape.n_layers * shape.kv_heads * shape.d_k * bytes_per_value


def cache_bytes(shape: CacheShape, context: int, bytes_per_value: int = FP16_BYTES) -> int:
    """Bytes of the whole cache at ``context`` tokens; a window keeps only its last ``window`` tokens.

    So a window saves nothing until the context is longer than the window itself.
    """
    kept = min(context, shape.window) if shape.window else context  # tokens whose K and V are kept
    return cache_bytes_per_token(shape, bytes_per_value) * kept


def multi_head_cache_bytes(shape: CacheShape, context: int, bytes_per_value: int = FP16_BYTES) -> int:
    """What the same model's cache would take with one K/V head per query head (no grouping), same window."""
    ungrouped = CacheShape(shape.name, shape.n_layers, shape.n_heads, shape.n_heads, shape.d_k, shape.window)
    return cache_bytes(ungrouped, context, bytes_per_value)
