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

Each has a per-row twin in ``HeadPatterns.shares``: the share of those rows that put
more than ``core.head_summary.ROW_WEIGHT`` of their weight on that key. A head is
named for a pattern from that share (more than ``NAMED_SHARE`` of its rows, the
summary's rule), and the name is stated with it (``named_heads``).

Positions, not symbols, decide "answer" and "previous", as on the heatmap axes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.head_summary import NAMED_SHARE, ROW_WEIGHT, head_summary
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
    shares: dict[str, np.ndarray]
    """Per field above (``"answer"``, ...): the share of its rows with more than ROW_WEIGHT on that key,
    ``(n_layers, h)`` each."""


def _rows_mean(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values (B, h, T)`` over the rows ``rows (B, T)`` -> ``(h,)`` mean; NaN where no row is included."""
    if not rows.any():
        return np.full(values.shape[1], np.nan)
    return values.transpose(1, 0, 2)[:, rows].mean(axis=-1)  # (h,)


def answer_rows(weights: np.ndarray, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """``weights (B, h, T, T)`` -> each row's weight on ``batch.source`` ``(B, h, T)`` and the rows: scored ones."""
    src = np.where(batch.scored, batch.source, 0)  # (B, T)
    return np.take_along_axis(weights, src[:, None, :, None], axis=-1)[..., 0], batch.scored  # (B, h, T)


def previous_at_source_rows(weights: np.ndarray, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """``weights (B, h, T, T)`` -> ``w[j, j-1]`` ``(B, h, T)`` and the rows: answer keys ``j >= 1``."""
    rows = np.zeros(batch.scored.shape, dtype=bool)  # (B, T): positions some scored query reads its answer from
    rows[np.nonzero(batch.scored)[0], batch.source[batch.scored]] = True
    rows[:, 0] = False  # position 0 has no previous token
    return on_previous(weights), rows


def previous_rows(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights (B, h, T, T)`` -> ``w[t, t-1]`` ``(B, h, T)`` and the rows: 1..T-1 of every sequence."""
    rows = np.ones((weights.shape[0], weights.shape[-1]), dtype=bool)  # (B, T)
    rows[:, 0] = False  # position 0 has no previous token
    return on_previous(weights), rows


def on_previous(weights: np.ndarray) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``w[t, t-1]`` ``(B, h, T)``, 0 at row 0."""
    t = weights.shape[-1]
    prev = np.zeros(weights.shape[:-1], dtype=weights.dtype)  # (B, h, T)
    prev[..., 1:] = weights[..., np.arange(1, t), np.arange(t - 1)]
    return prev


def duplicate_rows(weights: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights (B, h, T, T)``, ``tokens (B, T)`` -> weight on earlier same-token keys ``(B, h, T)``, and the
    rows: queries with an earlier twin."""
    t = tokens.shape[-1]
    same = (tokens[:, :, None] == tokens[:, None, :]) & np.tril(np.ones((t, t), dtype=bool), -1)  # (B, T, T)
    return (weights * same[:, None]).sum(axis=-1), same.any(axis=-1)  # (B, h, T), (B, T)


def answer_weight(weights: np.ndarray, batch: Batch) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean weight on ``batch.source`` over scored rows."""
    return _rows_mean(*answer_rows(weights, batch))


def previous_weight(weights: np.ndarray) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean of ``w[t, t-1]`` over rows 1..T-1 (core's head_summary metric)."""
    return head_summary(weights).previous_weight.mean(axis=0)  # (B, h) -> (h,): every sequence has T-1 such rows


def previous_at_source(weights: np.ndarray, batch: Batch) -> np.ndarray:
    """``weights (B, h, T, T)`` -> ``(h,)``: mean of ``w[j, j-1]`` over answer keys ``j >= 1``."""
    return _rows_mean(*previous_at_source_rows(weights, batch))


def duplicate_weight(weights: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """``weights (B, h, T, T)``, ``tokens (B, T)`` -> ``(h,)``: weight on earlier same-token keys."""
    return _rows_mean(*duplicate_rows(weights, tokens))


def head_patterns(params: dict[str, np.ndarray], config: ModelConfig, batch: Batch) -> HeadPatterns:
    """Measure every head of the model on ``batch`` (a few hundred sequences is plenty)."""
    cache = forward(params, config, batch.inputs)
    per_layer = [layer.trace.weights for layer in cache.layers]  # each (B, h, T, T)
    measures = {
        "answer": lambda w: answer_rows(w, batch),
        "previous": previous_rows,
        "previous_at_source": lambda w: previous_at_source_rows(w, batch),
        "duplicate": lambda w: duplicate_rows(w, batch.inputs),
    }
    means, shares = {}, {}
    for name, rows_of in measures.items():
        measured = [rows_of(w) for w in per_layer]  # per layer: (B, h, T) values and (B, T) rows
        means[name] = np.array([_rows_mean(values, rows) for values, rows in measured])  # (n_layers, h)
        shares[name] = np.array([_rows_mean(values > ROW_WEIGHT, rows) for values, rows in measured])
    return HeadPatterns(**means, shares=shares)


@dataclass(frozen=True)
class CircuitHead:
    """One head of a task's textbook circuit, with the evidence for its name."""

    description: str
    """E.g. "layer 2 induction head"."""
    layer: int
    """0-based."""
    head: int
    """0-based: the head of ``layer`` with the largest share of rows on the pattern's key."""
    weight: float
    """Its mean weight on that key."""
    share: float
    """The share of its rows that put more than ROW_WEIGHT on that key."""
    floor: float = 0.0
    """The least mean weight for the role to count as formed (INDUCTION_FLOOR for the induction head)."""

    @property
    def named(self) -> bool:
        """Most of its rows show the pattern (core.head_summary's NAMED_SHARE)."""
        return self.share > NAMED_SHARE

    @property
    def formed(self) -> bool:
        """Named, and its mean weight at least ``floor``."""
        return self.named and self.weight >= self.floor


INDUCTION_FLOOR = 0.8
"""The induction head's least mean weight on the token after the earlier twin for the circuit to count as
formed: the bar the seed survey is held to (issue 19). The other roles are held to being named."""


LABELS = {
    "shift": "previous-token head",
    "reverse": "anti-diagonal head",
    "sort": "next-larger-digit head",
    "induction": "induction head",
}
"""What the head that reads a task's answer key is called."""


def circuit_heads(task: str, patterns: HeadPatterns) -> list[CircuitHead]:
    """The task's textbook circuit, one ``CircuitHead`` per role.

    shift / reverse / sort: the last layer's head on the answer key. induction (2 layers): layer 1's
    previous-token head (on the keys layer 2 reads) and layer 2's induction head; with one layer only the
    latter is listed (it cannot form). Of each layer, the head with the largest share of rows on the key.
    """
    if task == "induction" and patterns.answer.shape[0] == 2:
        roles = [
            ("layer 1 previous-token head", "previous_at_source", 0, 0.0),
            ("layer 2 induction head", "answer", 1, INDUCTION_FLOOR),
        ]
    else:
        roles = [(LABELS[task], "answer", patterns.answer.shape[0] - 1, 0.0)]
    heads = []
    for description, field, layer, floor in roles:
        share, weight = patterns.shares[field][layer], getattr(patterns, field)[layer]  # (h,) each
        best = int(np.lexsort((weight, share))[-1])  # the largest share; the larger mean breaks a tie
        heads.append(CircuitHead(description, layer, best, float(weight[best]), float(share[best]), floor))
    return heads


def head_roles(task: str, patterns: HeadPatterns, layer: int, head: int) -> tuple[CircuitHead, ...]:
    """Every role head ``head`` of ``layer`` (0-based) is named for, by the per-row rule of ``CircuitHead.named``:
    the task's answer head (``LABELS``), layer 1's previous-token head of the induction circuit (on the keys
    layer 2 reads), and a duplicate-token head. The one rule that names a head, here as in ``circuit_heads``."""
    roles = [(LABELS[task], "answer")]
    if task == "induction" and patterns.answer.shape[0] == 2 and layer == 0:
        roles.append(("previous-token head", "previous_at_source"))
    roles.append(("duplicate-token head", "duplicate"))
    heads = (
        CircuitHead(
            name, layer, head, float(getattr(patterns, field)[layer, head]), float(patterns.shares[field][layer, head])
        )
        for name, field in roles
    )
    return tuple(h for h in heads if h.named)


def named_pattern(task: str, patterns: HeadPatterns) -> dict[str, float]:
    """The task's textbook circuit as ``{description: mean weight of its head}`` (``circuit_heads``)."""
    return {h.description: h.weight for h in circuit_heads(task, patterns)}
