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
- ``next_weight``: on the key one position ahead (``w[i, i+1]``), rows ``i < T_k - 1``.
- ``same_word_weight``: on the other pieces of the query's own word, rows whose
  word has two or more pieces (needs ``word_ids``; NaN without them).

``PATTERNS`` names a head from per-row evidence: a row shows a pattern when more
than ``ROW_WEIGHT`` of its weight goes to the pattern's key, and a head is named
when more than ``NAMED_SHARE`` of its rows do (``HeadSummary.shares``; each
threshold with its reason). ``named_shares`` states the share with the name.

A token-to-token claim ("X looks at Y") is made only where the head is specific
to X: ``specificity`` compares X's weight on Y with the other rows' mean weight on
Y, and ``SPECIFIC`` is the bar.

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
    next_weight: np.ndarray | None = None
    """Mean weight on the key one position after the query (rows ..T_k-2 only)."""
    same_word_weight: np.ndarray | None = None
    """Mean weight on the other pieces of the query's word (rows of multi-piece words); NaN without word ids."""
    shares: dict[str, np.ndarray] | None = None
    """Per metric name above (``"previous_weight"``, ...): the share of its rows that put more than
    ``ROW_WEIGHT`` of their weight on that key, shaped like the means. None: not measured (nothing is named)."""


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


def head_summary(weights: np.ndarray, mask: np.ndarray | None = None, word_ids=None) -> HeadSummary:
    """Summarise ``weights (..., T_q, T_k)``; ``mask`` (bool, True = may attend) says which keys were allowed.

    ``word_ids`` (optional, ``(T_k,)`` or ``(..., T_k)``; self-attention, so ``T_q == T_k``)
    says which word each token belongs to (equal ids = pieces of one word; None or a
    negative id for tokens of no word, such as [CLS] and [SEP]); it is what
    ``same_word_weight`` needs.

    Pass the mask the weights were computed with (``trace.mask``): a weight that
    underflowed to 0 is still an allowed key, so the mask cannot be read back
    from the weights.
    """
    w = np.asarray(weights, dtype=np.float64)
    n_allowed = _allowed(w, mask).sum(axis=-1)  # (..., T_q)
    valid = n_allowed > 0  # (..., T_q): rows that are distributions

    entropy = row_entropy(w)  # (..., T_q)
    spread = n_allowed >= 2
    row_normalized = entropy / np.log(np.where(spread, n_allowed, 2))  # (..., T_q); rows < 2 keys dropped below

    per_row = _row_values(w, valid, word_ids)  # metric -> (value of each row (..., T_q), rows measured)
    return HeadSummary(
        entropy=_mean(entropy, valid),
        normalized_entropy=_mean(row_normalized, valid & spread),
        **{metric: _mean(values, include) for metric, (values, include) in per_row.items()},
        shares={metric: _mean(e.shows, e.measured) for metric, e in _evidence(per_row).items()},
    )


def _same_word_rows(w: np.ndarray, valid: np.ndarray, word_ids) -> tuple[np.ndarray, np.ndarray]:
    """Each row's weight on the other pieces of its word ``(..., h, T_q)``, and the rows of multi-piece words.

    Without ``word_ids`` no row is included, so the mean and the share are NaN.
    """
    if word_ids is None:
        return np.zeros(valid.shape), np.zeros(valid.shape, dtype=bool)
    ids = np.array([-1 if i is None else i for i in np.ravel(word_ids)]).reshape(np.shape(word_ids))  # (..., T)
    ids = np.broadcast_to(ids, w.shape[:-3] + ids.shape[-1:])  # (..., T): the batch prefix, no head axis
    same = (ids[..., :, None] == ids[..., None, :]) & (ids[..., :, None] >= 0)  # (..., T, T)
    same &= ~np.eye(ids.shape[-1], dtype=bool)  # the query itself is "self", not "same word"
    if w.ndim > 2:  # weights (..., h, T, T): every head shares the words
        same = np.expand_dims(same, -3)  # (..., 1, T, T)
    on_word = np.where(same, w, 0.0).sum(axis=-1)  # (..., h, T_q)
    has_sibling = np.broadcast_to(same.any(axis=-1), valid.shape)  # (..., h, T_q)
    return on_word, valid & has_sibling


def _row_values(w: np.ndarray, valid: np.ndarray, word_ids) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric: each row's weight on the pattern's key ``(..., T_q)``, and the rows it is measured on."""
    t_q, t_k = w.shape[-2:]
    rows = np.arange(t_q)
    n_diag = min(t_q, t_k)
    diagonal = np.zeros(w.shape[:-1])  # (..., T_q): w[i, i] where key i exists
    diagonal[..., :n_diag] = w[..., np.arange(n_diag), np.arange(n_diag)]
    previous = np.zeros(w.shape[:-1])  # (..., T_q): w[i, i-1] where 1 <= i <= T_k
    n_prev = min(t_q, t_k + 1)
    previous[..., 1:n_prev] = w[..., np.arange(1, n_prev), np.arange(n_prev - 1)]
    following = np.zeros(w.shape[:-1])  # (..., T_q): w[i, i+1] where i + 1 < T_k
    n_next = min(t_q, t_k - 1)
    following[..., :n_next] = w[..., np.arange(n_next), np.arange(1, n_next + 1)]
    return {  # metric -> (value of each row (..., T_q), the rows it is measured on)
        "self_weight": (diagonal, valid & (rows < t_k)),
        "previous_weight": (previous, valid & (rows >= 1) & (rows <= t_k)),
        "first_weight": (w[..., 0], valid),
        "next_weight": (following, valid & (rows < t_k - 1)),
        "same_word_weight": _same_word_rows(w, valid, word_ids),
    }


def _allowed(w: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """``mask`` (True = may attend; None: every key) broadcast to ``w (..., T_q, T_k)``."""
    return np.ones(w.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), w.shape)


def row_evidence(weights: np.ndarray, mask: np.ndarray | None = None, word_ids=None) -> dict[str, RowEvidence]:
    """Per metric of ``PATTERNS`` (``"previous_weight"``, ...): which rows of ``weights (..., T_q, T_k)`` show the
    pattern (more than ``ROW_WEIGHT`` of their weight on its key) and which rows it is measured on; the evidence
    ``HeadSummary.shares`` averages, kept row by row so that rows of several sentences can be pooled."""
    w = np.asarray(weights, dtype=np.float64)
    return _evidence(_row_values(w, _allowed(w, mask).any(axis=-1), word_ids))


def _evidence(per_row: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, RowEvidence]:
    """The per-row bar: a measured row shows a pattern when more than ``ROW_WEIGHT`` of its weight is on its key."""
    return {metric: RowEvidence((values > ROW_WEIGHT) & rows, rows) for metric, (values, rows) in per_row.items()}


@dataclass(frozen=True)
class RowEvidence:
    """One pattern's evidence, row by row: ``shows`` and ``measured`` are bool ``(..., T_q)``."""

    shows: np.ndarray
    """The row puts more than ``ROW_WEIGHT`` of its weight on the pattern's key (False where not measured)."""
    measured: np.ndarray
    """The row counts for this pattern (row 0 has no previous token, a one-piece word no other piece...)."""


ROW_WEIGHT = 0.5
"""A row shows a pattern when more than this share of its weight goes to the pattern's key: that key then
outweighs all the others together (a row spread evenly over T keys gives ~1/T, under 0.15 from T = 7 on)."""

NAMED_SHARE = 0.5
"""A head is named for a pattern when more than this share of its rows show it (``HeadSummary.shares``).

A majority of rows, the same "more than half" as within a row: the name then says what most of the head's
queries do, and the share stated with it says how many (``pattern_label``). A mean over rows cannot say
that: a few one-hot rows lift it over 0.5 while most rows look elsewhere. On the CHOOSE sentences of
tests/core/test_pretrained_heads.py, MiniLM's layer 1 head 3 (previous piece) and layer 3 head 8 ([CLS])
show their pattern in every row and layer 2 head 9 (next piece) in 60-75% of them; no other head passes the
bar for previous or next in more than one sentence. Checked on the CHECK sentences there. On its HELD_OUT
sentences, layer 2 head 9's share is 42-67%: the page's verdict on a sentence may name it next-token, but the
app's fixed claims (examples, tours, README) name it for its determiner rows, which hold on every one."""


@dataclass(frozen=True)
class Pattern:
    """A named kind of head: a row has it when ``> ROW_WEIGHT`` of its weight goes to the pattern's key (the
    row value behind ``summary.<metric>``); a head has it when ``> NAMED_SHARE`` of its rows do."""

    name: str
    metric: str
    reason: str

    @property
    def threshold(self) -> float:
        """The per-row bar, the same for every pattern (``ROW_WEIGHT``)."""
        return ROW_WEIGHT


PATTERNS = (
    Pattern(
        "previous-token",
        "previous_weight",
        "More than half of a query's weight on the one key just before it: the key then outweighs all "
        "others together (a head spreading evenly over T keys gives ~1/T, under 0.15 from T = 7 on).",
    ),
    Pattern(
        "next-token",
        "next_weight",
        "More than half on the key just after the query, as for previous-token; an encoder may look ahead.",
    ),
    Pattern(
        "first-token sink",
        "first_weight",
        "More than half on key 0 ([CLS] in BERT): a head with nothing to find parks its weight there (a no-op, "
        "Clark et al. 2019). Below half, key 0 is one key among several and the head is still doing something.",
    ),
    Pattern(
        "self",
        "self_weight",
        "More than half on the query's own position: the head mostly copies the token to itself.",
    ),
    Pattern(
        "same-word",
        "same_word_weight",
        "More than half of a word piece's weight on the other pieces of its word (un ##aff ##able): the head "
        "reassembles words that WordPiece split. Rows of one-piece words are left out, so chance is far lower.",
    ),
)
"""One metric per named pattern, one per-row bar (ROW_WEIGHT) and one share of rows (NAMED_SHARE) for all:
"more than half" means the pattern takes the majority of a row's attention, and the head is named when most
of its rows do so. Two patterns can both pass only where they share keys (row 1's previous token is key 0,
a sink head's [CLS] row is its own "self")."""


def named_shares(summary: HeadSummary) -> list[tuple[tuple[str, float], ...]]:
    """``(pattern, share of rows)`` for the patterns each head meets, largest share first; one tuple per head
    over the flattened ``(..., h)`` axes. A NaN share (a one-token sentence, no word ids) or a summary without
    shares matches nothing."""
    n = np.size(summary.entropy)
    shares = summary.shares or {}
    per_pattern = [(p.name, np.ravel(shares[p.metric])) for p in PATTERNS if p.metric in shares]
    named = []
    for head in range(n):
        met = [(float(v[head]), name) for name, v in per_pattern if v[head] > NAMED_SHARE]  # NaN: never
        named.append(tuple((name, share) for share, name in sorted(met, reverse=True)))
    return named


def name_patterns(summary: HeadSummary) -> list[tuple[str, ...]]:
    """The patterns each head meets, largest share of rows first (``named_shares`` without the shares)."""
    return [tuple(name for name, _ in head) for head in named_shares(summary)]


def pattern_label(name: str, share: float) -> str:
    """A name stated with its evidence, e.g. ``"previous-token (100% of rows)"``."""
    return f"{name} ({share:.0%} of rows)"


SPECIFIC = 0.3
"""A claim "X looks at Y" needs ``specificity >= SPECIFIC``: X gives Y at least 0.3 more of its weight than the
other rows give Y on average. Then Y gets that weight because X is the query, not because Y is a column every
row reads: on "the cat sat on the mat because it was tired", MiniLM's layer 6 head 12 gives "cat" 0.68 from
"it" and 0.63 on average from the other rows (+0.05: a column every row reads), layer 4 head 2 gives it 0.49
from "it" and 0.11 from the rest (+0.38). A difference, not a
ratio, so that a weight too small to show (0.05 against 0.01) is never specific. Chosen on the sentences of
tests/core/test_pretrained_heads.py's CHOOSE set, checked on its CHECK set."""


def specificity(weights: np.ndarray, query: int, key: int, mask: np.ndarray | None = None) -> np.ndarray:
    """``weights (..., T_q, T_k)`` -> ``(...)``: ``w[query, key]`` minus the mean of ``w[r, key]`` over the other rows.

    Rows whose keys are all masked (``mask``, True = may attend) are left out of the mean; so are rows that may
    not attend to ``key`` (a causal row before it gives it 0 by force, not by choice).
    """
    w = np.asarray(weights, dtype=np.float64)
    t_q = w.shape[-2]
    others = _allowed(w, mask)[..., key] & (np.arange(t_q) != query)  # (..., T_q): rows that could have chosen key
    return w[..., query, key] - _mean(w[..., key], others)  # (...)
