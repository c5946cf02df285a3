"""Knock a head out: replace its output by zeros, or by its mean, and see what the model does without it.

A head's output is its context ``Z_h = weights_h @ V_h`` ``(..., T, d_k)``, which fills columns
``h*d_k .. (h+1)*d_k - 1`` of concat before ``W_O`` (``core.multihead.head_contributions``). Knocking head h
out replaces only that slice, then recomputes concat and ``W_O`` as the layer did: every other head, and
the head's own attention weights, stay as they were. Later layers then read the changed stream.

    zero ablation:  Z_h <- 0                         the head says nothing
    mean ablation:  Z_h <- mean over a data set       the head says what it says on average, whatever the input

(Zero ablation is what transformers' old ``head_mask`` did; mean ablation is TransformerLens' default for
"what does this head add beyond its average", since a zeroed head can push later layers off their usual inputs.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.multihead import AttentionTrace, Projections, linear, merge_heads

MODES = ("zero", "mean")
"""How a knocked-out head's output is replaced: by zeros, or by its mean over a data set."""


@dataclass(frozen=True)
class Knockout:
    """Which head to knock out (0-based indices into the model's layers and heads) and what replaces it."""

    layer: int
    """0-based layer index."""
    head: int
    """0-based head index within the layer."""
    replacement: np.ndarray | None = None
    """``(T, d_k)`` the head's context in its place (its mean over a data set); None: zeros."""

    @property
    def mode(self) -> str:
        return "zero" if self.replacement is None else "mean"


def knock_out(trace: AttentionTrace, proj: Projections, head: int, replacement: np.ndarray | None = None):
    """``trace`` with head ``head``'s context replaced (zeros, or ``replacement (T, d_k)``), concat and output redone.

    The returned trace keeps the head's attention weights (what it looked at) but not what it passed on.
    """
    context = np.array(trace.context, copy=True)  # (..., h, T, d_k)
    context[..., head, :, :] = 0 if replacement is None else replacement  # (..., T, d_k): the head's slice
    concat = merge_heads(context)  # (..., h, T, d_k) -> (..., T, d_model)
    output = linear(concat, proj.w_o, proj.b_o)  # (..., T, d_model) @ (d_model, d_model) -> (..., T, d_model)
    return replace(trace, context=context, concat=concat, output=output)


def apply_knockout(
    knockout: Knockout | tuple[Knockout, ...] | None, layer: int, trace: AttentionTrace, proj: Projections
):
    """What a forward pass calls after layer ``layer``'s attention: the trace with every head of ``knockout`` (one,
    or several together) in this layer knocked out; unchanged when none is."""
    knockouts = () if knockout is None else (knockout,) if isinstance(knockout, Knockout) else knockout
    for k in knockouts:
        if k.layer == layer:
            trace = knock_out(trace, proj, k.head, k.replacement)  # each replaces its own slice of the context
    return trace


def map_change(original: np.ndarray, ablated: np.ndarray) -> np.ndarray:
    """``(..., h, T, T)`` twice -> ``(h,)``: per head, the mean over query rows of the total variation distance
    ``0.5 * sum_k |w - w'|`` between a row before and after (0: the row did not move, 1: all weight moved)."""
    tv = 0.5 * np.abs(np.asarray(original, np.float64) - np.asarray(ablated, np.float64)).sum(axis=-1)  # (..., h, T)
    tv = np.moveaxis(tv, -2, 0)  # (h, ..., T)
    return tv.reshape(tv.shape[0], -1).mean(axis=-1)  # (h,)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors ``(d,)`` (1: same direction)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-300))


def layer_changes(original: list[np.ndarray], ablated: list[np.ndarray]) -> np.ndarray:
    """Each layer's maps ``(..., h, T, T)`` before and after -> ``(L,)``: the mean of ``map_change`` over its heads."""
    return np.array([map_change(a, b).mean() for a, b in zip(original, ablated, strict=True)])  # (L,)
