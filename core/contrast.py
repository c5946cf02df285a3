"""Minimal pairs: two sentences a word or two apart, their maps aligned token by token, and what changed.

Notation: the first sentence has ``T_a`` tokens, the second ``T_b``; ``n`` pairs of tokens are aligned.

- ``align``: sentences of equal length are paired position by position (the changed word with the word it
  replaces). Otherwise equal tokens are matched in order (Python's ``difflib``, longest matching blocks first), a
  run of tokens replaced by as many is paired in order, and the rest (a word added, or replaced by a different
  number of tokens) has no partner.
- ``row_change``: for each aligned query row, the total variation between its two distributions over keys,
  ``½ Σ |p − q|`` over the aligned keys plus the whole weight either row puts on a key without a partner (that
  weight changed, wherever it went). 0 = the same row, 1 = no weight in common.
- ``difference``: ``second − first`` on the aligned cells, ``(..., n, n)``.
- ``read_reference``: where a word (a pronoun) puts its weight between two nouns in each sentence, and whether a head
  resolves the reference: the noun each sentence needs gets more weight than the other, and the head is specific to
  the word there (``core.head_summary.specificity`` at least ``SPECIFIC``, the rule for any claim "X looks at Y").
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.head_summary import SPECIFIC, specificity


@dataclass(frozen=True)
class Alignment:
    """Which token of the first sentence goes with which of the second."""

    pairs: tuple[tuple[int, int], ...]
    """(position in the first, position in the second), in reading order."""
    first_only: tuple[int, ...]
    """Positions of the first sentence with no partner."""
    second_only: tuple[int, ...]
    """Positions of the second sentence with no partner."""
    by_position: bool
    """Equal lengths: position i with position i."""

    @property
    def first(self) -> np.ndarray:
        """``(n,)`` the first sentence's aligned positions."""
        return np.array([i for i, _ in self.pairs], dtype=np.intp)

    @property
    def second(self) -> np.ndarray:
        """``(n,)`` the second sentence's aligned positions."""
        return np.array([j for _, j in self.pairs], dtype=np.intp)


def align(first: Sequence[str], second: Sequence[str]) -> Alignment:
    """The alignment of two token sequences (see the module's docstring)."""
    first, second = list(first), list(second)
    if len(first) == len(second):
        return Alignment(tuple((i, i) for i in range(len(first))), (), (), True)
    pairs = []
    matcher = difflib.SequenceMatcher(None, first, second, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            pairs += zip(range(i1, i2), range(j1, j2), strict=True)
    paired_first, paired_second = {i for i, _ in pairs}, {j for _, j in pairs}
    first_only = tuple(i for i in range(len(first)) if i not in paired_first)
    second_only = tuple(j for j in range(len(second)) if j not in paired_second)
    return Alignment(tuple(pairs), first_only, second_only, False)


def row_change(first: np.ndarray, second: np.ndarray, alignment: Alignment) -> np.ndarray:
    """``first (..., T_a, T_a)``, ``second (..., T_b, T_b)`` -> ``(..., n)``: the total variation between each
    aligned row's two distributions (keys without a partner count with their whole weight)."""
    a, b = alignment.first, alignment.second  # (n,) each
    rows_a = np.asarray(first, dtype=np.float64)[..., a, :]  # (..., n, T_a)
    rows_b = np.asarray(second, dtype=np.float64)[..., b, :]  # (..., n, T_b)
    paired = np.abs(rows_b[..., b] - rows_a[..., a]).sum(axis=-1)  # (..., n): aligned keys
    alone = rows_a.sum(axis=-1) - rows_a[..., a].sum(axis=-1) + rows_b.sum(axis=-1) - rows_b[..., b].sum(axis=-1)
    return 0.5 * (paired + alone)  # (..., n)


def mean_change(first: np.ndarray, second: np.ndarray, alignment: Alignment) -> np.ndarray:
    """``(...)``: the mean of ``row_change`` over the aligned rows (NaN when no token is aligned)."""
    change = row_change(first, second, alignment)  # (..., n)
    return change.mean(axis=-1) if change.shape[-1] else np.full(change.shape[:-1], np.nan)


def difference(first: np.ndarray, second: np.ndarray, alignment: Alignment) -> np.ndarray:
    """``(..., n, n)``: the second sentence's weight minus the first's, on every aligned (query, key) cell."""
    a, b = alignment.first, alignment.second
    return np.asarray(second)[..., b[:, None], b[None, :]] - np.asarray(first)[..., a[:, None], a[None, :]]


@dataclass(frozen=True)
class Reference:
    """A word that refers to a noun, and the noun it refers to in the first sentence and in the second (the data of
    a built-in pair: "it" is the animal when it is tired, the street when it is wide)."""

    word: str
    first: str
    second: str


@dataclass(frozen=True)
class ReferenceReading:
    """Where ``Reference.word`` puts its weight in each sentence, per head: every array shaped ``(...)`` like the
    weights' leading axes. Positions count from 0."""

    query: tuple[int, int]
    """The word's position in the first sentence and in the second."""
    nouns_first: tuple[int, int]
    """Positions, in the first sentence, of its referent and of the second sentence's referent."""
    nouns_second: tuple[int, int]
    """The same two nouns' positions in the second sentence."""
    first_on_first: np.ndarray
    """First sentence: the word's weight on the first sentence's referent."""
    first_on_second: np.ndarray
    """First sentence: its weight on the second sentence's referent."""
    second_on_first: np.ndarray
    second_on_second: np.ndarray
    specific_first: np.ndarray
    """``specificity`` of the word's row for the first referent, in the first sentence."""
    specific_second: np.ndarray
    """``specificity`` of the word's row for the second referent, in the second sentence."""

    @property
    def shift(self) -> np.ndarray:
        """How much further towards each sentence's own referent the word looks: (first − second referent) in the
        first sentence minus the same in the second. Positive: towards the first referent in the first sentence and
        towards the second in the second; 0: it moved between them by nothing."""
        return (self.first_on_first - self.first_on_second) - (self.second_on_first - self.second_on_second)

    @property
    def resolves(self) -> np.ndarray:
        """Bool: in each sentence the referent it needs gets more of the word's weight than the other noun, and
        the head is specific to the word there (``SPECIFIC``)."""
        return (
            (self.first_on_first > self.first_on_second)
            & (self.second_on_second > self.second_on_first)
            & (self.specific_first >= SPECIFIC)
            & (self.specific_second >= SPECIFIC)
        )


def once(tokens: Sequence[str], word: str) -> int | None:
    """The position of ``word`` in ``tokens`` if it is there exactly once, else None."""
    found = [i for i, t in enumerate(tokens) if t == word]
    return found[0] if len(found) == 1 else None


def read_reference(
    reference: Reference,
    first_tokens: Sequence[str],
    second_tokens: Sequence[str],
    first: np.ndarray,
    second: np.ndarray,
    first_mask: np.ndarray | None = None,
    second_mask: np.ndarray | None = None,
) -> ReferenceReading | None:
    """``reference`` read from ``first (..., T_a, T_a)`` and ``second (..., T_b, T_b)``; None unless the word and
    both nouns are each one token found exactly once in each sentence."""
    words = (reference.word, reference.first, reference.second)
    found = [once(tokens, w) for tokens in (first_tokens, second_tokens) for w in words]
    if None in found:
        return None
    q_a, r1_a, r2_a, q_b, r1_b, r2_b = found
    w_a, w_b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return ReferenceReading(
        query=(q_a, q_b),
        nouns_first=(r1_a, r2_a),
        nouns_second=(r1_b, r2_b),
        first_on_first=w_a[..., q_a, r1_a],
        first_on_second=w_a[..., q_a, r2_a],
        second_on_first=w_b[..., q_b, r1_b],
        second_on_second=w_b[..., q_b, r2_b],
        specific_first=specificity(w_a, q_a, r1_a, first_mask),
        specific_second=specificity(w_b, q_b, r2_b, second_mask),
    )
