"""Everything a classroom can type, driven through ``tokenize`` and ``run``.

A public app gets pasted essays, emoji, right-to-left text, invisible characters
and markup. The engine must answer each with tokens it can draw or a
``ValueError`` whose message is meant for the student, never another exception,
never NaN, and never heavy work on text it is going to refuse.
"""

from __future__ import annotations

import time
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import MAX_TOKENS, AttentionConfig, head_counts, run, tokenize

ZWJ = "\u200d"
FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # woman ZWJ woman ZWJ girl ZWJ boy

MARKUP = [
    "<b>x</b>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    ":red[hi]",
    "$\\href{javascript:alert(1)}{x}$",
]

ACCEPTED = [
    "hello",
    f"{FAMILY} family",
    "caf\u00e9 au lait",
    "cafe\u0301 au lait",
    "שלום עולם",
    "مرحبا بالعالم",
    "left \u202eright",
    "zero\u200bwidth",
    "nul\x00byte",
    "esc\x1b[31mred",
    *MARKUP,
]

CONFIGS = [
    AttentionConfig(d_model=64, n_heads=4),
    AttentionConfig(d_model=8, n_heads=8, causal=True, positional="sinusoidal", seed=3),
    AttentionConfig(d_model=512, n_heads=16, causal=True, positional="learned", seed=2**31),
]


def _invisible(c: str) -> bool:
    """Characters the policy turns into separators: whitespace, controls, format characters, surrogates."""
    return c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zs", "Zl", "Zp")


def _visible_text(text: str) -> str:
    """The text as the policy reads it (NFC, lower case) with every separator removed."""
    return "".join(c for c in unicodedata.normalize("NFC", text).lower() if not _invisible(c))


def _check_tokens(text: str, tokens: list[str]) -> None:
    """Tokens are non-empty, hold no separator, and together spell the visible text exactly."""
    assert 1 <= len(tokens) <= MAX_TOKENS
    for token in tokens:
        assert token, f"empty token from {text!r}"
        assert not token.startswith(ZWJ) and not token.endswith(ZWJ), token
        assert not any(_invisible(c) and c != ZWJ for c in token), f"separator inside token {token!r}"
    # nothing lost, nothing invented, order kept (ZWJ may only survive inside an emoji)
    assert "".join(tokens).replace(ZWJ, "") == _visible_text(text)


def _check_run(tokens: list[str], config: AttentionConfig) -> None:
    """One attention pass: finite weights of shape (h, T, T), each row a distribution."""
    w = run(tokens, config).trace.weights  # (h, T, T)
    t = len(tokens)
    assert w.shape == (config.n_heads, t, t)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    if config.causal:
        assert not np.any(np.triu(w, k=1)), "a query attended to a later key under the causal mask"


# ---------------------------------------------------------------- refused input


@pytest.mark.parametrize("text", ["", " ", "   \t\n  ", "\u3000\u00a0\u2028", "\x00\x1b\u200b\u202e\ufeff", ZWJ * 5])
def test_empty_or_invisible_text_is_refused_with_a_message(text: str) -> None:
    with pytest.raises(ValueError, match="nothing to analyse"):
        tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        "a " * 50_000,  # 50,000 words
        "a" * 100_000,  # one 100,000-letter word
        "." * 100_000,  # 100,000 punctuation tokens, the slowest shape for the tokenizer
        "1." * 50_000,  # one long "number"
        "\u0301" * 100_000,  # one mark, repeated
        "\U0001f44d" * 100_000,  # 100,000 emoji
    ],
    ids=["words", "one-word", "dots", "number", "marks", "emoji"],
)
def test_100k_characters_are_refused_quickly(text: str) -> None:
    """A pasted essay is refused before any per-character work: one length check."""
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        tokenize(text)
    elapsed = time.perf_counter() - start
    message = str(err.value)
    assert "100,000 characters" in message and "limit" in message, message
    assert elapsed < 0.05, f"refusing 100,000 characters took {elapsed:.3f} s"


def test_exactly_max_tokens_is_accepted_and_runs() -> None:
    words = [f"w{i}" for i in range(MAX_TOKENS)]
    tokens = tokenize(" ".join(words))
    assert tokens == words
    for config in CONFIGS:
        _check_run(tokens, config)


def test_one_token_over_the_limit_is_refused_with_the_count_and_limit() -> None:
    with pytest.raises(ValueError) as err:
        tokenize(" ".join(f"w{i}" for i in range(MAX_TOKENS + 1)))
    message = str(err.value)
    assert f"{MAX_TOKENS + 1} tokens" in message and f"limit is {MAX_TOKENS}" in message, message


def test_one_token_attends_to_itself_with_weight_one() -> None:
    tokens = tokenize("hello")
    assert tokens == ["hello"]
    for config in CONFIGS:
        w = run(tokens, config).trace.weights  # (h, 1, 1)
        assert w.shape == (config.n_heads, 1, 1)
        assert np.all(w == 1.0)


# ---------------------------------------------------------------- accepted input


@pytest.mark.parametrize("text", ACCEPTED)
def test_hostile_text_gives_clean_tokens_and_finite_weights(text: str) -> None:
    tokens = tokenize(text)
    _check_tokens(text, tokens)
    for config in CONFIGS:
        _check_run(tokens, config)


def test_emoji_joined_by_zwj_is_one_token() -> None:
    assert tokenize(f"{FAMILY} family") == [FAMILY, "family"]
    assert tokenize(f"{FAMILY}{FAMILY}") == [FAMILY, FAMILY]


def test_nfc_and_nfd_give_the_same_tokens_and_the_same_weights() -> None:
    nfc, nfd = "caf\u00e9 au lait", "cafe\u0301 au lait"
    assert nfc != nfd
    assert tokenize(nfc) == tokenize(nfd) == ["caf\u00e9", "au", "lait"]
    config = AttentionConfig(positional="learned", seed=5)
    a = run(tokenize(nfc), config).trace.weights
    b = run(tokenize(nfd), config).trace.weights
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("text", ["שלום עולם יפה", "مرحبا بالعالم الجميل"])
def test_right_to_left_text_stays_in_logical_order(text: str) -> None:
    """Position 0 is the first word typed, whichever way the script is drawn."""
    assert tokenize(text) == text.split()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc\u202edef", ["abc", "def"]),  # right-to-left override
        ("abc\u200bdef", ["abc", "def"]),  # zero-width space
        ("abc\x00def", ["abc", "def"]),  # NUL
        ("abc\x1bdef", ["abc", "def"]),  # ESC
        ("\x1b[31mred\x1b[0m", ["[", "31mred", "[", "0m"]),  # an ANSI colour code is just text
        ("abc\u2066def\u2069", ["abc", "def"]),  # left-to-right isolate, pop isolate
    ],
)
def test_invisible_and_control_characters_separate_tokens(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<b>x</b>", ["<", "b", ">", "x", "<", "/", "b", ">"]),
        ("[x](javascript:alert(1))", ["[", "x", "]", "(", "javascript", ":", "alert", "(", "1", ")", ")"]),
        (":red[hi]", [":", "red", "[", "hi", "]"]),
    ],
)
def test_markup_is_split_into_plain_tokens(text: str, expected: list[str]) -> None:
    """Markup characters are ordinary punctuation tokens; the dashboard escapes them when drawing."""
    assert tokenize(text) == expected


@pytest.mark.parametrize("text", [" \u0301", "a \u0301b", "\x00\u0301", "\u200b\u0301x"])
def test_a_mark_after_a_separator_does_not_pull_the_separator_into_a_token(text: str) -> None:
    """A combining mark after a space forms one grapheme with it; the space still is no part of a token."""
    tokens = tokenize(text)
    _check_tokens(text, tokens)
    assert "\u0301" in tokens


def test_lone_surrogates_are_separators_not_tokens_that_crash_embed() -> None:
    """A lone surrogate cannot be encoded as UTF-8; it must never reach ``embed``."""
    tokens = tokenize("abc\ud800def")
    assert tokens == ["abc", "def"]
    _check_run(tokens, CONFIGS[0])


# ---------------------------------------------------------------- any text at all

ANY_CHAR = st.characters(exclude_categories=())  # every code point, surrogates and unassigned included
PIECES = st.sampled_from([" ", ZWJ, "\u0301", "'", ".", ",", "1", "a", "<", "\u202e", FAMILY])  # the tricky joints


def _texts(max_pieces: int) -> st.SearchStrategy[str]:
    """Any code points mixed with the pieces the tokenizer treats specially."""
    return st.lists(st.one_of(ANY_CHAR, PIECES), max_size=max_pieces).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts(300))
def test_tokenize_raises_only_value_error_with_a_message(text: str) -> None:
    try:
        tokens = tokenize(text)
    except ValueError as err:
        assert str(err).strip()
        assert type(err) is ValueError, f"{type(err).__name__} is not a user-facing ValueError"
        return
    _check_tokens(text, tokens)


@st.composite
def _configs(draw: st.DrawFn) -> AttentionConfig:
    d_model = draw(st.sampled_from([8, 12, 16, 64, 96]))
    return AttentionConfig(
        d_model=d_model,
        n_heads=draw(st.sampled_from(head_counts(d_model))),
        causal=draw(st.booleans()),
        positional=draw(st.sampled_from(["none", "sinusoidal", "learned"])),
        seed=draw(st.integers(0, 2**63)),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts(200), _configs())
def test_run_on_any_accepted_text_is_finite(text: str, config: AttentionConfig) -> None:
    try:
        tokens = tokenize(text)
    except ValueError:
        return
    _check_run(tokens, config)
