"""One line per head, so a teacher can say "head 3 looks at the previous token".

For weights ``(..., h, T_q, T_k)``, every number is a mean over query rows:

- ``entropy``: of each row, in nats (0 = all weight on one key, log(n) = uniform
  over n keys). ``normalized_entropy`` divides each row's entropy by the log of
  its number of allowed keys, so 1 means uniform whatever the mask; rows with a
  single allowed key say nothing (their entropy is 0 by force) and are left out.
- ``self_weight``: on the key at the query's own position (the diagonal,
  ``w[i, i]``), rows ``i < T_k``.
- ``previous_weight``: on the key one position back (``w[i, i-1]``). Row 0 has no
  previous token and is left out.
- ``first_weight``: on key 0 (column 0), every row; for row 0 that is itself.

Positions, not token strings, decide "self" and "previous", like the heatmap axes;
in cross-attention they mean the source key at the same or the preceding position.
Rows whose keys are all masked have no distribution and are left out of every
mean. A mean over no row (e.g. ``previous_weight`` for a one-token sentence) is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HeadSummary:
    """Per-head means, each shaped like the weights' leading axes ``(..., h)``."""

    entropy: np.ndarray
    """Mean row entropy in nats."""
    normalized_entropy: np.ndarray
    """Mean of entropy / log(allowed keys) over rows with two or more allowed keys: 0 one-hot, 1 uniform."""
    self_weight: np.ndarray
    """Mean weight on the key at the query's own position."""
    previous_weight: np.ndarray
    """Mean weight on the key one position before the query (rows 1.. only)."""
    first_weight: np.ndarray
    """Mean weight on the first key."""


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy in nats of each row: ``(..., T_q, T_k) -> (..., T_q)``; ``0 log 0 = 0``, no warning."""
    w = np.asarray(weights)
    with np.errstate(under="ignore"):  # a weight of 1e-300 times its log rounds to 0: correct
        plogp = w * np.log(np.where(w > 0, w, 1.0))  # (..., T_q, T_k)
    return -plogp.sum(axis=-1)  # (..., T_q)


def _mean(values: np.ndarray, include: np.ndarray) -> np.ndarray:
    """Mean of ``values (..., n)`` over the last axis where ``include``; NaN where nothing is included."""
    count = include.sum(axis=-1)  # (...)
    total = np.where(include, values, 0.0).sum(axis=-1)  # (...)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def head_summary(weights: np.ndarray, mask: np.ndarray | None = None) -> HeadSummary:
    """Summarise ``weights (..., T_q, T_k)``; ``mask`` (bool, True = may attend) says which keys were allowed.

    Pass the mask the weights were computed with (``trace.mask``): a weight that
    underflowed to 0 is still an allowed key, so the mask cannot be read back
    from the weights.
    """
    w = np.asarray(weights, dtype=np.float64)
    t_q, t_k = w.shape[-2:]
    allowed = np.ones(w.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), w.shape)
    n_allowed = allowed.sum(axis=-1)  # (..., T_q)
    valid = n_allowed > 0  # (..., T_q): rows that are distributions

    entropy = row_entropy(w)  # (..., T_q)
    spread = n_allowed >= 2
    row_normalized = entropy / np.log(np.where(spread, n_allowed, 2))  # (..., T_q); rows < 2 keys dropped below

    rows = np.arange(t_q)
    n_diag = min(t_q, t_k)
    diagonal = np.zeros(w.shape[:-1])  # (..., T_q): w[i, i] where key i exists
    diagonal[..., :n_diag] = w[..., np.arange(n_diag), np.arange(n_diag)]
    previous = np.zeros(w.shape[:-1])  # (..., T_q): w[i, i-1] where 1 <= i <= T_k
    n_prev = min(t_q, t_k + 1)
    previous[..., 1:n_prev] = w[..., np.arange(1, n_prev), np.arange(n_prev - 1)]

    return HeadSummary(
        entropy=_mean(entropy, valid),
        normalized_entropy=_mean(row_normalized, valid & spread),
        self_weight=_mean(diagonal, valid & (rows < t_k)),
        previous_weight=_mean(previous, valid & (rows >= 1) & (rows <= t_k)),
        first_weight=_mean(w[..., 0], valid),
    )
