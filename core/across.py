"""One head across many sentences: its patterns, with the rows of every sentence pooled.

A head is named for a pattern on one sentence when more than ``NAMED_SHARE`` of that sentence's rows put more than
``ROW_WEIGHT`` of their weight on the pattern's key (``core.head_summary``). Across a class's sentences the same
per-row bar is applied to every row of every sentence, and the head is named across them when more than
``NAMED_SHARE`` of all those rows show it: one rule, the rows of all sentences counted together. So a long sentence
weighs more than a short one, as each row is one query the head answered.

A head named on one sentence need not be named across them (a random head can look like a previous-token head on a
short sentence by chance); ``PooledPattern.named_on`` says on which sentences it is named on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.head_summary import NAMED_SHARE, PATTERNS, row_evidence


@dataclass(frozen=True)
class OneMap:
    """One sentence's map for one head: ``weights (T, T)``, its mask (True = may attend; None: none) and, for
    WordPiece pieces, the word each piece belongs to (``(T,)``; None otherwise)."""

    weights: np.ndarray
    mask: np.ndarray | None = None
    word_ids: tuple[int | None, ...] | None = None


@dataclass(frozen=True)
class PooledPattern:
    """One pattern of ``PATTERNS`` for one head: its evidence on each sentence, and pooled over all of them."""

    name: str
    showing: tuple[int, ...]
    """Per sentence: the rows that put more than ``ROW_WEIGHT`` of their weight on the pattern's key."""
    measured: tuple[int, ...]
    """Per sentence: the rows the pattern is measured on (row 0 has no previous token; same-word: pieces of split
    words only)."""

    @property
    def rows_showing(self) -> int:
        return sum(self.showing)

    @property
    def rows_measured(self) -> int:
        return sum(self.measured)

    @property
    def sentences(self) -> int:
        """Sentences with at least one measured row."""
        return sum(n > 0 for n in self.measured)

    @property
    def shares(self) -> tuple[float, ...]:
        """Per sentence: the share of its measured rows that show the pattern (NaN: none measured)."""
        return tuple(s / n if n else math.nan for s, n in zip(self.showing, self.measured, strict=True))

    @property
    def named_on(self) -> tuple[int, ...]:
        """The sentences (indices from 0, in the order given) on which the head is named for it on its own: more
        than ``NAMED_SHARE`` of that sentence's rows show it (``core.head_summary.named_shares``' rule)."""
        return tuple(i for i, share in enumerate(self.shares) if share > NAMED_SHARE)

    @property
    def share(self) -> float:
        """``rows_showing / rows_measured``: every row of every sentence counted together; NaN when none is."""
        return self.rows_showing / self.rows_measured if self.rows_measured else math.nan

    @property
    def named(self) -> bool:
        """Named across the sentences: more than ``NAMED_SHARE`` of all measured rows show it (NaN: never)."""
        return self.share > NAMED_SHARE


def pooled_patterns(maps: Sequence[OneMap]) -> tuple[PooledPattern, ...]:
    """Every pattern of ``PATTERNS``, in their order, for one head over the sentences' ``maps``."""
    evidence = [row_evidence(m.weights, m.mask, m.word_ids) for m in maps]  # per sentence: metric -> rows
    return tuple(
        PooledPattern(
            p.name,
            tuple(int(e[p.metric].shows.sum()) for e in evidence),
            tuple(int(e[p.metric].measured.sum()) for e in evidence),
        )
        for p in PATTERNS
    )
