"""tokenize follows the policy documented in core/tokens.py, item by item."""

from __future__ import annotations

import pytest

from core import MAX_TOKENS, tokenize


def test_lower_case():
    assert tokenize("The THE the") == ["the", "the", "the"]
    assert tokenize("École") == ["école"]


def test_nfc_normalisation_merges_composed_and_decomposed():
    composed = "caf\u00e9"  # é as one code point
    decomposed = "cafe\u0301"  # e + combining acute accent
    assert tokenize(composed) == tokenize(decomposed) == ["caf\u00e9"]
    assert tokenize(f"{composed} {decomposed}") == ["caf\u00e9", "caf\u00e9"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, world.", ["hello", ",", "world", "."]),
        ("3.14 and 1,000 apples!", ["3.14", "and", "1,000", "apples", "!"]),
        ("I'm here; don\u2019t go?", ["i'm", "here", ";", "don\u2019t", "go", "?"]),
        ("a-b (c)", ["a", "-", "b", "(", "c", ")"]),
        ("x...y", ["x", ".", ".", ".", "y"]),
        ("route 66", ["route", "66"]),
        ("na\u00efve", ["na\u00efve"]),
    ],
)
def test_words_numbers_and_punctuation_are_tokens(text, expected):
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    "emoji",
    [
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # family: man ZWJ woman ZWJ girl
        "\U0001f44d\U0001f3fd",  # thumbs up + skin tone modifier
        "\U0001f1eb\U0001f1f7",  # flag: two regional indicators
    ],
    ids=["zwj-family", "skin-tone", "flag"],
)
def test_emoji_sequence_is_one_token(emoji):
    assert tokenize(f"we {emoji} it") == ["we", emoji, "it"]


def test_zero_width_joiner_kept_only_inside_an_emoji():
    man = "\U0001f468"
    assert tokenize(f"{man}\u200dword") == [man, "word"]  # trailing joiner: not inside
    assert tokenize(f"word\u200d{man}") == ["word", man]
    assert tokenize("a\u200db") == ["a", "b"]


@pytest.mark.parametrize(
    "separator",
    ["\x00", "\x1b", "\x07", "\u200b", "\u202e", "\u2066", "\ufeff", "\t", "\n", "\u00a0", "\u2028"],
    ids=["NUL", "ESC", "BEL", "ZWSP", "RLO", "LRI", "BOM", "TAB", "LF", "NBSP", "LSEP"],
)
def test_control_and_format_characters_separate_tokens(separator):
    tokens = tokenize(f"left{separator}right")
    assert tokens == ["left", "right"]
    assert all(separator not in t for t in tokens)


def test_right_to_left_kept_in_logical_order():
    hebrew = ["\u05e9\u05dc\u05d5\u05dd", "\u05e2\u05d5\u05dc\u05dd"]  # shalom olam, as typed
    assert tokenize(" ".join(hebrew)) == hebrew
    arabic = "\u0645\u0631\u062d\u0628\u0627"  # marhaban
    assert tokenize(f"{arabic} world") == [arabic, "world"]
    # the first code point typed starts token 0, even inside a right-to-left override
    assert tokenize("\u202eabc def\u202c") == ["abc", "def"]


@pytest.mark.parametrize("text", ["", " ", "   \n\t ", "\u200b\u200b", "\x00\x01"])
def test_empty_or_blank_text_raises_with_a_message(text):
    with pytest.raises(ValueError, match="nothing to analyse"):
        tokenize(text)


def test_exactly_max_tokens_is_accepted():
    assert len(tokenize(" ".join(["w"] * MAX_TOKENS))) == MAX_TOKENS


def test_one_over_max_tokens_raises_with_count_and_limit():
    with pytest.raises(ValueError) as info:
        tokenize(" ".join(["w"] * (MAX_TOKENS + 1)))
    message = str(info.value)
    assert str(MAX_TOKENS + 1) in message
    assert str(MAX_TOKENS) in message


def test_max_tokens_argument():
    assert tokenize("a b c", max_tokens=3) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="limit is 2"):
        tokenize("a b c", max_tokens=2)


def test_punctuation_counts_towards_the_limit():
    assert len(tokenize("a, " * (MAX_TOKENS // 2))) == MAX_TOKENS
    with pytest.raises(ValueError, match=str(MAX_TOKENS + 2)):
        tokenize("a, " * (MAX_TOKENS // 2 + 1))
