"""BERT's tokenizer in pure Python: basic tokenizer (clean, split) then WordPiece, with [CLS] and [SEP].

It reproduces Hugging Face ``tokenizers``' ``BertNormalizer`` (clean_text, CJK
splitting, accent stripping, lower case), ``BertPreTokenizer`` and ``WordPiece``
as configured for MiniLM, and ``tests/core/test_pretrained_tokenizer.py`` checks
them equal on >10,000 strings. Character classes come from Python's
``unicodedata``; the few hundred code points whose category or case changed
between Unicode versions (``tokenizers`` uses older category tables) are listed
by that test.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

CLS, SEP, UNK, PAD = "[CLS]", "[SEP]", "[UNK]", "[PAD]"

MAX_CHARS_PER_WORD = 100
"""A longer word becomes one [UNK] without trying to split it (BERT's and ``tokenizers``' limit)."""

WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(chr(c) for c in range(0x2000, 0x200B))
)
"""Unicode's White_Space property (what ``tokenizers`` splits on); not ``str.isspace``, which adds \\x1c-\\x1f."""

CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip
"""CJK ideographs: BERT makes each its own word (Chinese is written without spaces)."""


def is_control(c: str) -> bool:
    """Invisible characters that are dropped: control, format, private use, surrogate (tab/newline are spaces)."""
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


def is_punctuation(c: str) -> bool:
    """Each is its own word: all ASCII non-alphanumeric symbols (``$``, ``+``, ``^`` ...) and Unicode P*."""
    return (c.isascii() and not c.isalnum() and c.isprintable() and c != " ") or unicodedata.category(c)[0] == "P"


def is_cjk(c: str) -> bool:
    o = ord(c)
    return any(low <= o <= high for low, high in CJK_RANGES)


def normalize(text: str) -> str:
    """BertNormalizer: drop controls, whitespace -> " ", space around CJK, strip accents, lower-case."""
    text = "".join(" " if c in WHITESPACE else c for c in text if c not in "\x00\ufffd" and not is_control(c))
    text = "".join(f" {c} " if is_cjk(c) else c for c in text)
    text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")  # é -> e
    return "".join(c.lower() for c in text)  # per character: no final-sigma rule, as in tokenizers


def split_words(text: str) -> list[str]:
    """BertPreTokenizer on normalized text (its only whitespace is " "): split on spaces, punctuation apart."""
    words: list[str] = []
    for chunk in text.split(" "):
        word = ""
        for c in chunk:
            if is_punctuation(c):
                words += [word, c] if word else [c]
                word = ""
            else:
                word += c
        words += [word] if word else []
    return words


@dataclass(frozen=True)
class Encoding:
    """A sentence as the model reads it: ``T`` pieces including [CLS] first and [SEP] last."""

    tokens: tuple[str, ...]
    """(T,) the WordPiece pieces, continuation pieces starting with "##"."""
    ids: tuple[int, ...]
    """(T,) their rows in the vocabulary."""
    word_ids: tuple[int | None, ...]
    """(T,) which word each piece belongs to (0, 1, ...); None for [CLS] and [SEP]."""
    words: tuple[str, ...]
    """The words after normalising and splitting, before WordPiece."""


class WordPieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocabulary file (one piece per line, id = line number)."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    @classmethod
    def from_file(cls, path: str | Path) -> WordPieceTokenizer:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return cls({piece: i for i, piece in enumerate(lines)})

    def pieces(self, word: str) -> list[str]:
        """``"unaffable" -> ["una", "##ffa", "##ble"]``; a word with an unmatchable part is one [UNK]."""
        if len(word) > MAX_CHARS_PER_WORD:
            return [UNK]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):  # the longest piece in the vocabulary first
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    break
            else:
                return [UNK]
            pieces.append(piece)
            start = end
        return pieces

    def encode(self, text: str) -> Encoding:
        """``text -> Encoding``: [CLS], the pieces of every word, [SEP]."""
        words = split_words(normalize(text))
        tokens, word_ids = [CLS], [None]
        for index, word in enumerate(words):
            pieces = self.pieces(word)
            tokens += pieces
            word_ids += [index] * len(pieces)
        tokens.append(SEP)
        word_ids.append(None)
        return Encoding(tuple(tokens), tuple(self.vocab[t] for t in tokens), tuple(word_ids), tuple(words))
