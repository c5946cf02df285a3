"""Four synthetic tasks, each solved by one attention pattern a class can name.

Every task draws its sequences from a seeded ``numpy.random.Generator`` and returns
a ``Batch``: the input tokens, the token each position must predict, which
positions are scored, and where the answer sits (the key a perfect head would read).

- shift: predict the previous token. Pattern: a previous-token head.
- reverse: the input read backwards. Bidirectional: position ``t`` outputs
  ``x[T-1-t]`` (an anti-diagonal); causal: ``x SEP reversed(x)``, next-token style.
- sort: ``x SEP sorted(x)`` for distinct digits, next-token style, causal. Pattern:
  each position looks up the next-larger digit in ``x``.
- induction: ``filler + block + filler + block + filler``, the repeat anywhere, next-token
  style, causal, 2 layers. In the second copy each token is followed by what followed
  it in the first: layer 1 puts
  the previous token into each position (previous-token head), layer 2 finds the
  earlier occurrence of the current token and copies what came after it (induction head).

Notation: ``B`` sequences, ``T`` positions (the model's input length).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TASK_NAMES = ("shift", "reverse", "sort", "induction")

DIGITS = tuple("0123456789")
SEP = "|"
LETTERS = tuple("abcdefghijklmnopqrst")


@dataclass(frozen=True)
class Batch:
    """``B`` sequences of one task, every array ``(B, T)``."""

    inputs: np.ndarray
    """(B, T) int64 token ids fed to the model."""
    targets: np.ndarray
    """(B, T) int64 the token each position must predict (0 where not scored)."""
    scored: np.ndarray
    """(B, T) bool: positions that count in the loss and the accuracy."""
    source: np.ndarray
    """(B, T) int64: the key position holding each scored answer (-1 where not scored)."""


@dataclass(frozen=True)
class Task:
    """What a task is about, its symbols and how long its sequences may be."""

    name: str
    symbols: tuple[str, ...]
    """Token id -> text: the vocabulary, in id order."""
    default_length: int
    """The task's size knob (see ``length_help``) at the recommended settings."""
    length_range: tuple[int, int]
    """Smallest and largest allowed length."""
    length_help: str
    """What ``length`` counts for this task."""
    needs_causal: bool
    """Next-token tasks put the answer in the input one step later: bidirectional attention would just read it."""
    pattern: str
    """The pattern a trained head shows, in words."""

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def sequence_length(self, length: int, causal: bool) -> int:
        """Positions ``T`` the model sees for this ``length``."""
        if self.name == "reverse" and causal:
            return 2 * length  # x SEP reversed(x), last token dropped
        if self.name == "sort":
            return 2 * length  # x SEP sorted(x), last token dropped
        return length

    def check(self, length: int, causal: bool) -> None:
        """Raise ``ValueError`` if this task cannot run at ``length`` with this mask."""
        low, high = self.length_range
        if not low <= length <= high:
            raise ValueError(f"the {self.name} task takes length {low}..{high} ({self.length_help}), got {length}")
        if self.needs_causal and not causal:
            raise ValueError(
                f"the {self.name} task needs causal attention: it predicts the next token, and without the mask "
                f"every position could read its answer one step ahead"
            )

    def sample(self, rng: np.random.Generator, n: int, length: int, causal: bool) -> Batch:
        """``n`` fresh sequences drawn from ``rng``."""
        self.check(length, causal)
        return _SAMPLERS[self.name](rng, n, length, causal)

    def fixed_example(self, length: int, causal: bool) -> Batch:
        """The one sequence the snapshots are drawn on: the same for every seed (``B = 1``)."""
        rng = np.random.default_rng([0xF1ED, TASK_NAMES.index(self.name), length, int(causal)])
        return self.sample(rng, 1, length, causal)

    def held_out(self, length: int, causal: bool, n: int) -> Batch:
        """A fixed held-out set, drawn from its own stream, the same for every seed."""
        rng = np.random.default_rng([0x4E1D, TASK_NAMES.index(self.name), length, int(causal)])
        return self.sample(rng, n, length, causal)

    def decode(self, tokens: np.ndarray) -> list[str]:
        """Token ids -> their symbols."""
        return [self.symbols[int(t)] for t in np.asarray(tokens).ravel()]

    def encode(self, text: str) -> np.ndarray:
        """Symbols (one character each, spaces ignored) -> token ids ``(T,)``; ``ValueError`` names the valid ones."""
        chars = [c for c in text if not c.isspace()]
        unknown = sorted({c for c in chars if c not in self.symbols})
        if unknown:
            raise ValueError(
                f"{', '.join(map(repr, unknown))} not in the {self.name} task's symbols: {''.join(self.symbols)}"
            )
        return np.array([self.symbols.index(c) for c in chars], dtype=np.int64)


def _shift(rng: np.random.Generator, n: int, length: int, causal: bool) -> Batch:
    """Random digits; position t predicts the token at t - 1 (position 0 is not scored)."""
    x = rng.integers(0, 10, size=(n, length))  # (B, T)
    targets = np.zeros_like(x)
    targets[:, 1:] = x[:, :-1]  # (B, T): the previous token
    scored = np.zeros(x.shape, dtype=bool)
    scored[:, 1:] = True
    source = np.where(scored, np.arange(length) - 1, -1)  # (B, T): key t - 1
    return Batch(x, targets, scored, source)


def _next_token(seq: np.ndarray, scored_from: np.ndarray, scored_to: np.ndarray, source: np.ndarray) -> Batch:
    """Next-token form of full sequences ``seq (B, T+1)``: inputs ``seq[:, :-1]``, targets ``seq[:, 1:]``.

    Positions ``scored_from..scored_to`` (per row, inclusive) are scored; ``source (B, T)`` is kept there.
    """
    inputs, targets = seq[:, :-1], seq[:, 1:]  # (B, T) each
    pos = np.arange(inputs.shape[1])  # (T,)
    scored = (pos >= scored_from[:, None]) & (pos <= scored_to[:, None])  # (B, T)
    return Batch(np.ascontiguousarray(inputs), np.where(scored, targets, 0), scored, np.where(scored, source, -1))


def _reverse(rng: np.random.Generator, n: int, length: int, causal: bool) -> Batch:
    """Bidirectional: t predicts x[T-1-t]. Causal: ``x SEP reversed(x)``, the reversed half scored."""
    sep = len(DIGITS)
    x = rng.integers(0, 10, size=(n, length))  # (B, L) with B = n sequences, L = length
    if not causal:
        pos = np.arange(length)
        return Batch(
            x, x[:, ::-1].copy(), np.ones(x.shape, dtype=bool), np.broadcast_to(length - 1 - pos, x.shape).copy()
        )
    seq = np.concatenate([x, np.full((n, 1), sep), x[:, ::-1]], axis=1)  # (B, 2L + 1)
    pos = np.arange(2 * length)  # (T,) with T = 2L
    source = np.broadcast_to(2 * length - 1 - pos, (n, 2 * length))  # position p (>= L) answers x[2L - 1 - p]
    edge = np.full(n, length)
    return _next_token(seq, edge, edge + length - 1, source)


def _sort(rng: np.random.Generator, n: int, length: int, causal: bool) -> Batch:
    """``x SEP sorted(x)`` with ``length`` distinct digits; the sorted half is scored."""
    sep = len(DIGITS)
    x = np.argsort(rng.random((n, 10)), axis=1)[:, :length]  # (B, L): distinct digits in random order
    order = np.argsort(x, axis=1, kind="stable")  # (B, L): where in x the k-th smallest digit sits
    ys = np.take_along_axis(x, order, axis=1)  # (B, L): sorted(x)
    seq = np.concatenate([x, np.full((n, 1), sep), ys], axis=1)  # (B, 2L + 1)
    source = np.zeros((n, 2 * length), dtype=np.int64)
    source[:, length:] = order  # position L + k predicts the k-th smallest, which sits at order[k] in x
    edge = np.full(n, length)
    return _next_token(seq, edge, edge + length - 1, source)


INDUCTION_BLOCK = (4, 8)
"""Block lengths (inclusive): a period that varies, so no fixed offset solves the task."""


def _induction(rng: np.random.Generator, n: int, length: int, causal: bool) -> Batch:
    """``filler + block + filler + block + filler`` over 20 letters; the second copy (but its last token) is scored.

    The second copy starts anywhere (uniformly), the first anywhere before it, and filler
    fills the rest (before, between, after; each may be empty), so the repeat sits
    anywhere in the sequence and the gap between the copies varies: where
    the second copy is says nothing about the answer, only the earlier twin does. The
    block's letters are distinct and the fillers use none of them, so the only earlier
    occurrence of a second-copy token is its twin in the first copy.
    """
    total = length + 1  # full sequence; the model sees its first `length` tokens
    vocab = len(LETTERS)
    block_len = rng.integers(INDUCTION_BLOCK[0], INDUCTION_BLOCK[1] + 1, size=n)  # (B,)
    second = rng.integers(block_len, total - block_len + 1)  # (B,): where the second copy starts, uniform
    first = rng.integers(0, second - block_len + 1)  # (B,): where the first copy starts, uniform before it
    perm = np.argsort(rng.random((n, vocab)), axis=1)  # (B, V): a random order of the letters per row
    filler_pick = rng.integers(0, vocab, size=(n, total))  # (B, T+1): indexes into the letters left after the block
    seq = np.empty((n, total), dtype=np.int64)
    for b in range(n):  # rows differ in block length and placement; n is at most a few thousand
        ell, one, two = int(block_len[b]), int(first[b]), int(second[b])
        block, rest = perm[b, :ell], perm[b, ell:]
        seq[b] = rest[filler_pick[b] % len(rest)]  # filler everywhere, then the two copies over it
        seq[b, one : one + ell] = block
        seq[b, two : two + ell] = block
    pos = np.arange(length)  # (T,)
    source = pos - (second - first)[:, None] + 1  # (B, T): position p copies the token after its twin
    return _next_token(seq, second, second + block_len - 2, source)


_SAMPLERS = {"shift": _shift, "reverse": _reverse, "sort": _sort, "induction": _induction}

TASKS = {
    "shift": Task(
        name="shift",
        symbols=DIGITS,
        default_length=12,
        length_range=(2, 32),
        length_help="the number of digits",
        needs_causal=False,
        pattern="a previous-token head",
    ),
    "reverse": Task(
        name="reverse",
        symbols=(*DIGITS, SEP),
        default_length=8,
        length_range=(2, 16),
        length_help="the number of digits to reverse",
        needs_causal=False,
        pattern="an anti-diagonal: position t reads the digit at T-1-t",
    ),
    "sort": Task(
        name="sort",
        symbols=(*DIGITS, SEP),
        default_length=6,
        length_range=(2, 10),
        length_help="the number of distinct digits to sort",
        needs_causal=True,
        pattern="each position reads the next-larger digit of the input",
    ),
    "induction": Task(
        name="induction",
        symbols=LETTERS,
        default_length=24,
        length_range=(2 * INDUCTION_BLOCK[1] + 2, 32),
        length_help="the sequence length",
        needs_causal=True,
        pattern="layer 1: a previous-token head; layer 2: an induction head (reads what followed the earlier twin)",
    ),
}


def get_task(name: str) -> Task:
    """The task called ``name``; ``ValueError`` names the valid ones."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    return TASKS[name]
