"""The pure-Python WordPiece tokenizer against Hugging Face ``tokenizers`` (Rust), on >10,000 strings.

The reference is MiniLM's own tokenizer.json with padding and truncation switched off.
One known difference is pinned rather than hidden: ``tokenizers`` classifies characters
with older Unicode tables (and lower-cases with newer ones) than Python 3.11's
``unicodedata`` (Unicode 14). A sweep over every assigned code point finds the
characters on which the two disagree; they must all be such version skew (marks,
format characters and punctuation added to Unicode after ~2017), a few hundred at
most, and the random corpus is drawn from the others.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from core.pretrained import WordPieceTokenizer
from tests.conftest import require_minilm, skip_or_fail
from tests.core.test_hostile_input import ACCEPTED, FAMILY, MARKUP

SKEW_CATEGORIES = {"Mn", "Mc", "Cf", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "So"}
"""What a change of Unicode version can move a character out of or into (measured: 503 code points)."""

MAX_SKEW = 520

SCRIPTS = {
    "latin": (0x41, 0x24F),
    "ipa": (0x250, 0x2AF),
    "combining": (0x300, 0x36F),
    "greek": (0x370, 0x3FF),
    "cyrillic": (0x400, 0x52F),
    "armenian": (0x531, 0x58A),
    "hebrew": (0x591, 0x5F4),
    "arabic": (0x600, 0x6FF),
    "devanagari": (0x900, 0x97F),
    "bengali": (0x980, 0x9FE),
    "tamil": (0xB82, 0xBFA),
    "thai": (0xE01, 0xE5B),
    "georgian": (0x10A0, 0x10FF),
    "hangul jamo": (0x1100, 0x11FF),
    "ethiopic": (0x1200, 0x137C),
    "latin extended additional": (0x1E00, 0x1EFF),
    "punctuation": (0x2000, 0x206F),
    "symbols": (0x20A0, 0x2BFF),
    "cjk punctuation, kana": (0x3000, 0x30FF),
    "cjk": (0x4E00, 0x9FFF),
    "hangul": (0xAC00, 0xD7A3),
    "fullwidth": (0xFF01, 0xFFEF),
    "emoji": (0x1F300, 0x1FAFF),
    "math alphanumerics": (0x1D400, 0x1D7FF),
}
"""Blocks the random strings draw from, so every script a classroom might paste is covered."""


@pytest.fixture(scope="module")
def tokenizers_pair():
    """``(ours, reference)`` from the same files."""
    directory = require_minilm()
    try:
        from tokenizers import Tokenizer
    except ImportError:
        skip_or_fail("tokenizers is not installed (it comes with transformers): pip install -r requirements-dev.txt")
    reference = Tokenizer.from_file(str(directory / "tokenizer.json"))
    reference.no_padding()
    reference.no_truncation()
    return WordPieceTokenizer.from_file(directory / "vocab.txt"), reference


def _disagreements(ours: WordPieceTokenizer, reference, code_points: list[int]) -> list[int]:
    """The code points c for which "a{c}b" and "{c}" tokenize differently."""
    texts = [f"a{chr(o)}b" for o in code_points] + [chr(o) for o in code_points]
    encodings = reference.encode_batch(texts)
    bad = {t for t, r in zip(texts, encodings, strict=True) if list(ours.encode(t).ids) != r.ids}
    return sorted({ord(t[1]) if len(t) == 3 else ord(t) for t in bad})


@pytest.fixture(scope="module")
def skew(tokenizers_pair) -> set[int]:
    """Every assigned code point (but the CJK and Hangul syllable blocks, handled by range) where the two differ."""
    ours, reference = tokenizers_pair
    code_points = [
        o
        for o in range(0x110000)
        if unicodedata.category(chr(o)) not in ("Cn", "Cs", "Co", "Lo") or o < 0x3000  # Lo: CJK, Hangul, Yi, ...
    ]
    return set(_disagreements(ours, reference, code_points))


def test_disagreements_are_unicode_version_skew_only(skew: set[int]) -> None:
    described = [f"U+{o:04X} {unicodedata.category(chr(o))} {unicodedata.name(chr(o), '?')}" for o in sorted(skew)]
    assert len(skew) <= MAX_SKEW, f"{len(skew)} code points differ, e.g. {described[:20]}"
    assert all(unicodedata.category(chr(o)) in SKEW_CATEGORIES for o in skew), described


def _corpus(ours: WordPieceTokenizer, skew: set[int]) -> list[str]:
    """>10,000 strings: the hostile corpus, fixed cases, then seeded random ones from many scripts."""
    rng = np.random.default_rng(2024)
    vocab_words = np.array([w for w in ours.vocab if w.isalpha() and not w.startswith("##")])
    fixed = [
        *ACCEPTED,
        *MARKUP,
        "",
        " ",
        "\u3000\u00a0\u2028",
        "\x00\x1b\u200b\u202e\ufeff",
        "\u200d" * 5,
        "The bank of the river.",
        "the cat sat on the mat because it was tired",
        "unaffable naïve résumé Ærøskøbing ΟΔΟΣ İstanbul straße ǅemal",
        "a" * 100,
        "a" * 101,
        "x" * 5000,
        "." * 3000,
        "1." * 2000,
        "\u0301" * 300,
        "\U0001f44d" * 500,
        f"{FAMILY} family {FAMILY}{FAMILY}",
        "東京タワーは高い。北京欢迎你！한국어 텍스트",
        "don't won't y'all l'amour rock'n'roll",
        "e-mail co-operate 3.14 1,000,000 $100 50% #tag @user",
        "\ufffd\ufffdreplacement",
        "tab\tnew\nline\rcarriage\x0bvt\x0cff\x85nel\x1cfs",
    ]
    allowed = np.array([o for o in range(0x20, 0x30000) if o not in skew and not 0xD800 <= o <= 0xDFFF])
    strings = list(fixed)
    for low, high in SCRIPTS.values():
        block = np.array([o for o in range(low, high + 1) if o not in skew])
        for _ in range(300):
            n = int(rng.integers(1, 25))
            chars = [chr(int(c)) for c in rng.choice(block, n)]
            for i in rng.choice(n, int(rng.integers(0, 4))):  # spaces and ASCII mixed in
                chars[int(i)] = str(rng.choice([" ", " ", ".", "a", "-"]))
            strings.append("".join(chars))
    for _ in range(2500):  # real words, cased and accented, joined by punctuation
        words = [str(w) for w in rng.choice(vocab_words, int(rng.integers(1, 12)))]
        words = [w.upper() if rng.random() < 0.2 else w.capitalize() if rng.random() < 0.3 else w for w in words]
        text = str(rng.choice([" ", ", ", "-", " ... ", "'", ""])).join(words)
        if rng.random() < 0.3:
            text = unicodedata.normalize(str(rng.choice(["NFC", "NFD", "NFKC", "NFKD"])), text.replace("e", "é"))
        strings.append(text)
    for _ in range(2000):  # any code point at all (outside the skew), with separators
        n = int(rng.integers(1, 40))
        chars = [chr(int(c)) for c in rng.choice(allowed, n)]
        strings.append("".join(c if rng.random() < 0.85 else " " for c in chars))
    for _ in range(500):  # long words around the 100-character limit
        strings.append("".join(rng.choice(list("abcdefghij"), int(rng.integers(90, 110)))))
    return strings


def test_matches_tokenizers_on_10000_strings(tokenizers_pair, skew: set[int]) -> None:
    ours, reference = tokenizers_pair
    corpus = _corpus(ours, skew)
    assert len(corpus) >= 10_000
    encodings = reference.encode_batch(corpus)
    mismatches = []
    for text, expected in zip(corpus, encodings, strict=True):
        got = ours.encode(text)
        if list(got.ids) != expected.ids or list(got.tokens) != expected.tokens:
            mismatches.append((text, got.tokens, expected.tokens))
    assert not mismatches, f"{len(mismatches)} of {len(corpus)} differ, e.g. {mismatches[:3]}"


def test_word_ids_match_tokenizers(tokenizers_pair) -> None:
    ours, reference = tokenizers_pair
    for text in ["unaffable naïve résumé", "The bank of the river.", "don't stop-believing!!"]:
        assert list(ours.encode(text).word_ids) == reference.encode(text).word_ids


def test_encoding_shape() -> None:
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able"]
    ours = WordPieceTokenizer({piece: i for i, piece in enumerate(pieces)})
    e = ours.encode("Unaffable unx")
    assert e.tokens == ("[CLS]", "un", "##aff", "##able", "[UNK]", "[SEP]")
    assert e.ids == (2, 4, 5, 6, 1, 3)
    assert e.word_ids == (None, 0, 0, 0, 1, None)
    assert e.words == ("unaffable", "unx")
