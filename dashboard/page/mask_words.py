"""The mask, ALiBi's bias and the K/V groups of a trace, in words read from the trace's own arrays.

The page never says "causal" because a setting is on: ``mask_rule`` finds the rule (causal, window, prefix) that
builds exactly the trace's mask with ``core.attention.attention_mask``, ``bias_rule`` reads the slopes out of
the bias, and ``group_words`` the groups out of K's shape. Pure: no Streamlit, testable on any trace.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from core import AttentionTrace
from core.attention import attention_mask


class MaskRule(NamedTuple):
    """The ``attention_mask`` arguments that rebuild a mask: ``attention_mask(T_q, T_k, **rule._asdict())``."""

    causal: bool
    window: int
    prefix: int


def mask_rule(mask: np.ndarray | None) -> MaskRule | None:
    """The simplest rule whose ``attention_mask`` equals ``mask (T_q, T_k)``; None for no mask or no such rule.

    A window as wide as the sentence cuts nothing and a prefix of one token is causal already: the rule found
    says what the mask does (window 0, prefix 0), not what was asked.
    """
    if mask is None:
        return None
    t_q, t_k = mask.shape
    seen = mask.sum(axis=-1)  # (T_q,): keys each query sees
    windows = sorted({0, *seen.tolist(), *((seen + 1) // 2).tolist()})  # causal rows see w keys, others 2w - 1
    for causal in (False, True):
        first = int(seen[0])  # with causal, query 0 sees exactly the prefix block (or key 0 alone)
        prefix = first if causal and first > 1 else 0
        for window in windows:
            if np.array_equal(attention_mask(t_q, t_k, causal=causal, window=window, prefix=prefix), mask):
                return MaskRule(causal, int(window), prefix)
    return None


def plain_causal(mask: np.ndarray | None) -> bool:
    """True when ``mask`` is the causal mask alone: no window, no prefix."""
    return mask_rule(mask) == MaskRule(True, 0, 0)


def rule_words(mask: np.ndarray | None) -> str:
    """The mask's rule in one sentence, read from the mask itself."""
    if mask is None:
        return "No mask: every query sees every key."
    rule = mask_rule(mask)
    if rule is None:
        return f"A mask that lets {int(mask.sum())} of the {mask.size} query-key pairs through (True = may attend)."
    causal, w, p = rule
    if w == 1 and not p:
        return "A window of 1: each query sees only its own key, with or without the causal mask."
    if not causal:
        if w == 0:
            return "The mask lets every query see every key."
        return (
            f"A sliding window of {w} without the causal mask: query i sees the keys j with |i − j| < {w}, both ways."
        )
    rest = f"keys i−{w - 1}..i (causal, a window of {w})" if w > 1 else ("key i only" if w == 1 else "keys 0..i")
    if p:
        return f"A prefix of {p}: the first {p} tokens see each other both ways; every later query i sees {rest}."
    if w:
        return f"Causal with a sliding window of {w}: query i sees {rest}."
    return "Causal: query i sees keys 0..i, itself and the tokens before it."


def moved(pairs: np.ndarray, perm) -> bool:
    """True when reordering the words by ``perm`` changes ``pairs (..., T, T)``, a table over pairs of positions (a
    mask, a bias): the reordered sentence's pair at positions (p, q) holds the words from (perm[p], perm[q])."""
    p = np.asarray(perm, dtype=int)
    return not np.array_equal(pairs[..., p, :][..., :, p], pairs)


def sees_order(pairs: np.ndarray) -> bool:
    """True when some reordering of the words changes ``pairs (..., T, T)`` (a mask, a bias): the swap of positions 0
    and 1 or the cycle 0 → 1 → … → T−1 changes it (the two generate every reordering). A mask that lets every
    query see every key, or each only itself, sees no order."""
    t = pairs.shape[-1]
    if t < 2:
        return False
    swap, cycle = [1, 0, *range(2, t)], [*range(1, t), 0]
    return moved(pairs, swap) or moved(pairs, cycle)


def bias_slopes(bias: np.ndarray) -> np.ndarray:
    """``(h,)`` ALiBi's slope per head, read from ``bias (h, T_q, T_k)``: key 1 is one step from query 0, so its bias
    is ``-m``. Needs T_k >= 2."""
    return -bias[:, 0, 1]  # (h,)


def bias_words(bias: np.ndarray | None) -> str:
    """ALiBi's bias in one sentence, its slopes read from the bias; empty when there is none."""
    if bias is None:
        return ""
    if bias.shape[-1] < 2:
        return "ALiBi's bias is 0 at distance 0: with one key there is nothing to penalise."
    slopes = bias_slopes(bias)
    listed = ", ".join(f"1/{1 / m:.4g}" for m in slopes)
    one = len(slopes) == 1
    heads = f"slope m = {listed}" if one else f"slopes m = {listed} for heads 1..{len(slopes)}"
    return (
        f"ALiBi adds −m·|i − j| to {'the' if one else 'each'} head's scaled scores, with {heads}: the farther the key, "
        "the lower its score (under the causal mask every key a query sees is at or before it: −m·(i − j)). It "
        "replaces position embeddings."
    )


def group_words(trace: AttentionTrace) -> str:
    """Which query heads share each K/V head, read from the shapes of Q and K."""
    h, kv, g = trace.n_heads, trace.kv_heads, trace.group
    if kv == h:
        return f"Multi-head attention: each of the {h} heads has its own K and V."
    if kv == 1:
        return f"Multi-query attention: all {h} query heads read one K and one V."
    groups = "; ".join(f"heads {i * g + 1}–{(i + 1) * g} read K/V head {i + 1}" for i in range(kv))
    return f"Grouped-query attention: {h} query heads share {kv} K/V heads, {g} per group ({groups})."


def head_title(trace: AttentionTrace, head: int) -> str:
    """A map's title: ``head 3`` and, when heads share K/V, ``head 3 · K/V 2`` (``head`` 0-based)."""
    title = f"head {head + 1}"
    return title if trace.group == 1 else f"{title} · K/V {trace.kv_head_of(head) + 1}"
