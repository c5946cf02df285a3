"""From typed text to token strings, and from token strings to embedding rows.

Tokenizer policy (the dashboard shows exactly these tokens):

- Unicode is normalised to NFC, so "é" typed as one code point or as "e" plus a
  combining accent is the same token.
- Text is lower-cased, so "The" and "the" are one word with one embedding: a
  repeated word is then told apart only by its position, which is the point of
  the permutation demo.
- Words (letters, marks, digits, inner apostrophes), numbers (``3.14``, ``1,000``)
  and each punctuation mark or symbol become tokens. An emoji is one token even
  when it is several code points joined by zero-width joiners (one grapheme
  cluster).
- Control characters (NUL, ESC, ...) and invisible format characters (zero-width
  space, the bidirectional overrides and isolates such as U+202E, the byte-order
  mark) separate tokens like a space and never appear in one. The zero-width
  joiner is kept only inside an emoji.
- Right-to-left scripts (Hebrew, Arabic) are kept in logical order: position 0
  is the first character typed, whatever direction it is drawn in.
- ``fitting_prefix`` finds the longest beginning of a refused text that fits, cut between tokens (the page's
  one-click "keep the first tokens").
- At most ``MAX_TOKENS`` tokens; more raises ``ValueError`` with a message meant
  for the user. Empty or whitespace-only text also raises ``ValueError``, and so
  does text over ``MAX_CHARS`` characters, refused before any other work so a
  pasted essay costs one length check, not a pass over every character.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable

import numpy as np
import regex

MAX_TOKENS = 64
"""Largest sentence the dashboard draws: 64 x 64 cells per head stay readable."""

MAX_CHARS = 1_000
"""Longest text accepted: room for MAX_TOKENS long words, and a bound on the work and the label sizes."""

_ZWJ = "\u200d"
_TOKEN = regex.compile(
    r"""
    \p{N}+(?:[.,]\p{N}+)+                              # a number with a decimal or thousands mark
    | [\p{L}\p{M}\p{N}]+(?:['\u2019][\p{L}\p{M}\p{N}]+)*  # a word, inner apostrophes allowed
    | \X                                                # anything else: one grapheme (punctuation, emoji)
    """,
    regex.VERBOSE,
)


def _clean(text: str) -> str:
    """NFC, lower case, and every control, format (but ZWJ) or lone surrogate character made a space."""
    text = unicodedata.normalize("NFC", text).lower()
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Cs") and c != _ZWJ else c for c in text)


def tokenize(text: str, *, max_tokens: int = MAX_TOKENS, max_chars: int = MAX_CHARS) -> list[str]:
    """Split ``text`` into tokens following the module's policy.

    Raises ``ValueError`` with a user-facing message when the text is longer than
    ``max_chars``, or there is no token or more than ``max_tokens``.
    """
    if len(text) > max_chars:
        raise ValueError(
            f"The text has {len(text):,} characters; the limit is {max_chars:,} "
            f"(at most {max_tokens} tokens are drawn). Shorten the sentence."
        )
    tokens = _split(text)
    if not tokens:
        raise ValueError("There is nothing to analyse: type a sentence with at least one word.")
    if len(tokens) > max_tokens:
        raise ValueError(
            f"The text has {len(tokens)} tokens; the limit is {max_tokens} so that every "
            f"heatmap stays readable. Shorten the sentence."
        )
    return tokens


def _split(text: str) -> list[str]:
    """The module's policy with no limit: every token of ``text`` (an empty list when there is none)."""
    tokens = []
    for match in _TOKEN.finditer(_clean(text)):
        token = match.group()
        if not any(unicodedata.category(c) not in ("Zs", "Zl", "Zp", "Cc", "Cf") and not c.isspace() for c in token):
            continue  # whitespace, or a zero-width joiner left on its own
        token = token.strip()  # a mark after a space forms one grapheme with it (" " + U+0301): not a token part
        token = token.strip(_ZWJ)  # a grapheme may end in a joiner ("👨" + ZWJ): not inside, so not kept
        if token[0] != _ZWJ and regex.fullmatch(r"[\p{L}\p{M}\p{N}'\u2019.,\u200d]+", token):
            token = token.replace(_ZWJ, "")  # a joiner glued to a word is not part of it
        tokens.append(token)
    return tokens


def count_tokens(text: str) -> int:
    """How many tokens ``tokenize`` makes of ``text``, with no limit (0 when there is none)."""
    return len(_split(text))


MAX_WALK = 32
"""Grapheme ends ``fitting_prefix`` checks back from a candidate cut when it cannot read the token ends directly."""


def _last_fitting(n: int, fits: Callable[[int], bool]) -> int:
    """The largest ``i`` in ``-1..n-1`` with ``fits(i)`` (``fits`` true up to some ``i``, then false; -1: none)."""
    lo, hi = -1, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fitting_prefix(
    text: str,
    count: Callable[[str], int] = count_tokens,
    *,
    max_tokens: int = MAX_TOKENS,
    max_chars: int = MAX_CHARS,
) -> str | None:
    """The longest beginning of ``text`` that ``count`` (tokens as the weights count them: ``count_tokens``, or a
    model's pieces) puts at ``max_tokens`` or fewer, within ``max_chars``, cut between two tokens (never inside a
    word, a number or an emoji); trailing spaces dropped. ``text`` itself when it fits; None when not even its
    first token does.

    A cut just before a space is always between tokens: a binary search over those finds the last that fits (a
    longer prefix has as many tokens or more). Then, up to the next space, the same search over the ends of the
    tokens there (a comma glued to a word, emoji in a row). Those ends are read off the cleaned text when cleaning
    kept every position; otherwise each grapheme end is checked (the prefix's tokens must be the first tokens of
    the whole text), at most ``MAX_WALK`` of them back from a candidate, so a pasted 1,000-letter word costs a few
    passes, not thousands.
    """
    if len(text) <= max_chars and count(text) <= max_tokens:
        return text
    top = min(len(text), max_chars)
    cuts = [p for p in range(1, top + 1) if p == len(text) or text[p].isspace()]  # (n,) before a space
    best = _last_fitting(len(cuts), lambda i: count(text[: cuts[i]]) <= max_tokens)
    low = cuts[best] if best >= 0 else 0  # fits (0: the empty prefix)
    high = cuts[best + 1] if best + 1 < len(cuts) else top  # the next space, or the end in reach
    whole = _split(text[low : max_chars + 1])  # from the cut at low, one character past the limit

    def between_tokens(end: int) -> bool:  # text[:low] ends before a space: its tokens are the same either way
        head = _split(text[low : low + end])
        return head == whole[: len(head)]

    segment = text[low:high]
    cleaned = _clean(segment)
    # NFC and lower case keep every position only when neither changes any length: equal lengths alone are not
    # enough ("e\u0301" shrinks by one where "İ" grows by one, shifting every end between them)
    if unicodedata.is_normalized("NFC", segment) and all(len(c.lower()) == 1 for c in segment):
        ends = [m.end() for m in _TOKEN.finditer(cleaned)]  # (n,) after each token, from low
        i = _last_fitting(len(ends), lambda i: count(text[: low + ends[i]]) <= max_tokens)
        if i < 0 or between_tokens(ends[i]):
            return text[: low + ends[i] if i >= 0 else low].rstrip() or None
    ends = [m.end() for m in regex.finditer(r"\X", segment)]  # (n,) after each grapheme, from low

    def snap(i: int) -> int:
        """The last cut between tokens at most ``MAX_WALK`` graphemes back from grapheme ``i``'s end (else low)."""
        for end in reversed(ends[max(0, i + 1 - MAX_WALK) : i + 1]):
            if between_tokens(end):
                return low + end
        return low

    cut = snap(_last_fitting(len(ends), lambda i: count(text[: snap(i)]) <= max_tokens))
    return text[:cut].rstrip() or None


def _token_seed(token: str) -> int:
    """A 128-bit integer fixed by the token's UTF-8 bytes (never Python's salted ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=16).digest(), "little")


def embed(tokens: list[str], d_model: int, seed: int = 0, dtype: np.dtype | type = np.float64) -> np.ndarray:
    """Embedding rows ``(T, d_model)`` with independent standard-normal entries.

    A token's row depends only on ``(token string, d_model, seed)``: the same word
    gets the same vector in any position, any sentence and any process.
    """
    rows = {
        t: np.random.default_rng([int(seed), d_model, _token_seed(t)]).standard_normal(d_model) for t in set(tokens)
    }
    out = np.empty((len(tokens), d_model), dtype=dtype)
    for i, t in enumerate(tokens):
        out[i] = rows[t]
    return out
