"""Knock each of MiniLM's heads out in turn (zero ablation) and measure what changes, in a student's words.

MiniLM has no task and no held-out set, so there is no accuracy to lose. Two measures instead:

- how much each later layer's maps move (``core.ablation.map_change``: the share of a row's weight that moves,
  0 to 1, averaged over rows and heads); the knocked-out layer's own maps do not move (only its output does);
- the cosine of the sentence embedding with its ablated self (1: the head did not matter for the embedding).

An all-heads table is ``n_layers * n_heads`` ablated forwards (72 for MiniLM); ``on_progress`` hears each one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.ablation import cosine, layer_changes
from core.attention import causal_mask
from core.pretrained.bert import BertOutput, BertWeights, bert_forward, encoder_block, mean_pool


@dataclass(frozen=True)
class HeadEffects:
    """Every head knocked out in turn on one sentence."""

    change: np.ndarray
    """(L, h, L): ``change[l, h, m]`` how much layer m's maps move with head h of layer l zeroed (0-based);
    NaN for ``m <= l`` (attention before the knocked-out head reads nothing it wrote)."""
    cosine: np.ndarray
    """(L, h): cosine of the sentence embedding with the ablated one."""


def effect(original: BertOutput, ablated: BertOutput, layer: int) -> tuple[np.ndarray, float]:
    """``(L,)`` later layers' map change (NaN up to ``layer``, 0-based) and the embedding's cosine."""
    change = layer_changes([t.weights for t in original.traces], [t.weights for t in ablated.traces])  # (L,)
    change[: layer + 1] = np.nan  # the knocked-out layer and those before it cannot change
    return change, cosine(original.embedding, ablated.embedding)


def forward_from(weights: BertWeights, original: BertOutput, layer: int, head: int, causal: bool) -> BertOutput:
    """``bert_forward`` with head ``head`` of layer ``layer`` zeroed, started at that layer: the layers before it
    are the original's (nothing changed there), so the table costs half the forwards. Equal to
    ``bert_forward(..., knockout=Knockout(layer, head))`` (tests/core/test_ablation.py)."""
    c = weights.config
    x = original.hidden_states[layer]  # (T, d_model): what enters the knocked-out layer, as before
    key_mask = causal_mask(x.shape[-2]) if causal else None  # (T, T) or None, as bert_forward builds it
    traces, hidden = list(original.traces[:layer]), list(original.hidden_states[: layer + 1])
    for i in range(layer, c.n_layers):
        x, trace = encoder_block(
            weights.layers[i], x, c.n_heads, key_mask, c.layer_norm_eps, head if i == layer else None
        )
        traces.append(trace)
        hidden.append(x)
    return BertOutput(tuple(traces), tuple(hidden), mean_pool(x, original.real), original.real)


def head_effects(
    weights: BertWeights,
    ids: np.ndarray,
    *,
    causal: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> HeadEffects:
    """Zero each head of the model in turn on ``ids (T,)``; ``on_progress(done, total)`` after each forward."""
    original = bert_forward(weights, ids, causal=causal)
    n_layers, n_heads = weights.config.n_layers, weights.config.n_heads
    change = np.full((n_layers, n_heads, n_layers), np.nan)  # (L, h, L)
    cos = np.ones((n_layers, n_heads))  # (L, h)
    for layer in range(n_layers):
        for head in range(n_heads):
            ablated = forward_from(weights, original, layer, head, causal)
            change[layer, head], cos[layer, head] = effect(original, ablated, layer)
            if on_progress is not None:
                on_progress(layer * n_heads + head + 1, n_layers * n_heads)
    return HeadEffects(change, cos)
