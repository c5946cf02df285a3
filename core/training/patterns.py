"""Name the pattern each trained head learned, from its attention weights.

Four numbers per head, each a mean weight over query rows of a batch:

- ``answer``: on the key holding the answer (``Batch.source``), over scored rows.
  That is the previous token for shift, the mirrored position for reverse, the
  next-larger digit for sort, and the token after the earlier twin for induction.
- ``previous``: on the key one position back (rows 1..T-1).
- ``previous_at_source``: the same, over the rows that hold some scored query's
  answer. In induction those are the keys layer 2 reads, the only rows whose
  previous token matters; elsewhere (the filler) a layer-1 head may do anything.
- ``duplicate``: on earlier keys holding the query's own token, over rows that have one
  (a duplicate-token head; it reads the twin itself, not the token after it).

Positions, not symbols, decide "answer" and "previous", as on the heatmap axes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.head_summary import head_summary
from core.training.model import ModelConfig, forward
from core.training.tasks import Batch


@dataclass(frozen=True)
class HeadPatterns:
    """Per-head means, each ``(n_layers, h)``."""

    answer: np.ndarray
    """Mean weight on the key that holds the answer (scored rows)."""
    previous: np.ndarray
    """Mean weight on the previous position."""
    previous_at_source: np.ndarray
    """Mean weight on the previous position, over rows that are some scored query's answer key."""
    duplicate: np.ndarray
    """Mean weight on earlier copies of the query's own token (rows that have one; NaN if none do)."""


def answer_weight(weights: np.ndarray, batch: Batch) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean weight on ``batch.source`` over scored rows."""
    src = np.where(batch.scored, batch.source, 0)  # (B, T)
    picked = np.take_along_axis(weights, src[:, None, :, None], axis=-1)[..., 0]  # (B, h, T)
    return picked.transpose(1, 0, 2)[:, batch.scored].mean(axis=-1)  # (h,)


def previous_weight(weights: np.ndarray) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean of ``w[t, t-1]`` over rows 1..T-1 (core's head_summary metric)."""
    return head_summary(weights).previous_weight.mean(axis=0)  # (B, h) -> (h,): every sequence has T-1 such rows


def previous_at_source(weights: np.ndarray, batch: Batch) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean of ``w[j, j-1]`` over answer keys ``j >= 1``."""
    b, _, t, _ = weights.shape
    rows = np.zeros((b, t), dtype=bool)  # (B, T): positions some scored query reads its answer from
    rows[np.nonzero(batch.scored)[0], batch.source[batch.scored]] = True
    rows[:, 0] = False  # position 0 has no previous token
    prev = np.zeros(weights.shape[:-1], dtype=weights.dtype)  # (B, h, T): w[j, j-1]
    prev[..., 1:] = weights[..., np.arange(1, t), np.arange(t - 1)]
    return prev.transpose(1, 0, 2)[:, rows].mean(axis=-1)  # (h,)


def duplicate_weight(weights: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """``weights (B, h, T, T)``, ``tokens (B, T)`` -> ``(h,)``: weight on earlier same-token keys."""
    t = tokens.shape[-1]
    same = (tokens[:, :, None] == tokens[:, None, :]) & np.tril(np.ones((t, t), dtype=bool), -1)  # (B, T, T)
    rows = same.any(axis=-1)  # (B, T): queries with an earlier twin
    if not rows.any():
        return np.full(weights.shape[1], np.nan)
    on_twins = (weights * same[:, None]).sum(axis=-1)  # (B, h, T)
    return on_twins.transpose(1, 0, 2)[:, rows].mean(axis=-1)  # (h,)


def head_patterns(params: dict[str, np.ndarray], config: ModelConfig, batch: Batch) -> HeadPatterns:
    """Measure every head of the model on ``batch`` (a few hundred sequences is plenty)."""
    cache = forward(params, config, batch.inputs)
    per_layer = [layer.trace.weights for layer in cache.layers]  # each (B, h, T, T)
    return HeadPatterns(
        answer=np.array([answer_weight(w, batch) for w in per_layer]),
        previous=np.array([previous_weight(w) for w in per_layer]),
        previous_at_source=np.array([previous_at_source(w, batch) for w in per_layer]),
        duplicate=np.array([duplicate_weight(w, batch.inputs) for w in per_layer]),
    )


def named_pattern(task: str, patterns: HeadPatterns) -> dict[str, float]:
    """The task's textbook circuit as ``{description: best head's mean weight}``.

    shift / reverse / sort: the best head of the last layer on the answer key.
    induction (2 layers): layer 1's best previous-token head (on the keys layer 2 reads) and layer 2's best
    induction head; with one layer only the latter is listed (it cannot form).
    """
    if task == "induction" and patterns.answer.shape[0] == 2:
        return {
            "layer 1 previous-token head": float(patterns.previous_at_source[0].max()),
            "layer 2 induction head": float(patterns.answer[1].max()),
        }
    label = {
        "shift": "previous-token head",
        "reverse": "anti-diagonal head",
        "sort": "next-larger-digit head",
        "induction": "induction head",
    }[task]
    return {label: float(patterns.answer[-1].max())}
