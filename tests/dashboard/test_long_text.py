"""Long text: the refused sentence's one click keeps the longest beginning the weights can draw, cut between tokens."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core import MAX_CHARS, MAX_TOKENS, tokenize
from core.tokens import _split, count_tokens, fitting_prefix
from tests.conftest import require_minilm
from tests.dashboard.conftest import keyed_figures, make_app, no_exception

PARAGRAPH = (
    "Attention lets every token look at every other token in the sentence, weigh them, and mix their values into a "
    "new vector. " * 13
)[:1489]
EMOJI = "👨‍👩‍👧👍🏽🇫🇷❤️" * 150  # no spaces: families joined by ZWJ, a skin tone, a flag, a variation selector
RTL = "שלום עולם, זהו משפט בעברית שנכתב מימין לשמאל. مرحبا بالعالم، هذه جملة عربية. " * 6  # under 1,000 characters
PIECES = (  # 48 words but 134 WordPiece pieces: MiniLM refuses what the word tokenizer accepts
    "Unbelievably, the transformer's tokenization of antidisestablishmentarianism and photosynthesis bewildered "
    "neuroscientists. "
) * 4


def _cuts_between_tokens(text: str, prefix: str) -> bool:
    """``prefix`` begins ``text`` and its tokens are the first tokens of ``text`` (no word, number or emoji cut)."""
    head = _split(prefix)
    return text.startswith(prefix) and head == _split(text[: MAX_CHARS + 1])[: len(head)]


def test_the_paragraph_and_its_parts():
    assert len(PARAGRAPH) == 1489 and len(EMOJI) > MAX_CHARS
    assert len(RTL) <= MAX_CHARS and count_tokens(RTL) > MAX_TOKENS  # refused for its tokens, not its length
    assert len(PIECES) <= MAX_CHARS and count_tokens(PIECES) <= MAX_TOKENS


@pytest.mark.parametrize("text", [PARAGRAPH, EMOJI, RTL], ids=["paragraph", "emoji", "rtl"])
def test_the_prefix_is_the_longest_that_fits(text):
    prefix = fitting_prefix(text)
    assert len(prefix) <= MAX_CHARS and len(tokenize(prefix)) == MAX_TOKENS  # every one of these has 64 to give
    assert _cuts_between_tokens(text, prefix)
    assert fitting_prefix(prefix) == prefix  # it fits as it is


ALPHABET = st.sampled_from(
    ["ab", "word", " ", "  ", ",", ".", "3.14", "é", "e\u0301", "👨‍👩‍👧", "👍🏽", "🇫🇷", "שלום", "\u200d", "İ", "ß"]
)


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(ALPHABET, min_size=1, max_size=40), max_tokens=st.integers(1, 8), max_chars=st.integers(1, 40))
@example(parts=["e\u0301", "\u200d", "İ"], max_tokens=1, max_chars=4)  # NFC -1 and lower case +1: same length
def test_no_longer_cut_between_tokens_fits(parts, max_tokens, max_chars):
    """Against every cut the brute force finds: the prefix fits, is cut between tokens, and no longer such cut fits."""
    text = "".join(parts)
    prefix = fitting_prefix(text, max_tokens=max_tokens, max_chars=max_chars)
    whole = _split(text[: max_chars + 1])

    def fits_between(p: int) -> bool:
        head = _split(text[:p])
        return head == whole[: len(head)] and len(head) <= max_tokens and p <= max_chars

    if len(text) <= max_chars and count_tokens(text) <= max_tokens:
        assert prefix == text
        return
    best = max((p for p in range(0, min(len(text), max_chars) + 1) if fits_between(p)), default=0)
    if not text[:best].strip():
        assert prefix is None
        return
    assert prefix == text[:best].rstrip()


# -- on the page ------------------------------------------------------------------------------------------------------
def _keep(at, text: str):
    at.text_input(key="sentence").set_value(text).run()
    no_exception(at)
    assert at.error  # refused, with the reason
    button = at.button(key="sentence_keep")
    assert button.help and "cut between two tokens" in button.help
    label = button.label
    button.click().run()
    no_exception(at)
    return at, label


@pytest.mark.parametrize("text", [PARAGRAPH, EMOJI, RTL], ids=["paragraph", "emoji", "rtl"])
def test_one_click_puts_the_prefix_in_the_sentence_box(text):
    at, label = _keep(make_app().run(), text)
    kept = at.text_input(key="sentence").value
    assert kept == fitting_prefix(text) and _cuts_between_tokens(text, kept)
    assert len(tokenize(kept)) <= MAX_TOKENS and len(kept) <= MAX_CHARS
    assert label == f"Keep the first {len(tokenize(kept))} tokens"
    assert not at.error and "heads_chart" in keyed_figures(at)  # the maps are drawn
    assert not any(b.key == "sentence_keep" for b in at.button)  # it fits now: no offer


def test_a_sentence_that_fits_gets_no_offer():
    at = make_app().run()
    no_exception(at)
    assert not any(b.key == "sentence_keep" for b in at.button)


def test_minilm_counts_word_pieces():
    require_minilm()
    from core.pretrained import load_minilm

    model = load_minilm()
    at, label = _keep(make_app(weights="minilm").run(), PIECES)
    kept = at.text_input(key="sentence").value
    pieces = len(model.encode(kept).ids)  # [CLS] and [SEP] included, as the page's cap counts them
    assert label == f"Keep the first {pieces} tokens"
    assert pieces <= MAX_TOKENS and _cuts_between_tokens(PIECES, kept)
    rest = PIECES[len(kept) :].split()
    assert len(model.encode(f"{kept} {rest[0]}").ids) > MAX_TOKENS  # the next word would not fit
    assert count_tokens(kept) < MAX_TOKENS  # the words alone would have kept more: pieces decided
    assert not at.error


def test_weights_that_read_no_sentence_offer_nothing():
    at = make_app(weights="trained", sentence=PARAGRAPH).run()  # the trained model reads its task's example
    no_exception(at)
    assert not any(b.key == "sentence_keep" for b in at.button)


def test_one_word_longer_than_the_limit_has_no_beginning_to_keep():
    assert fitting_prefix("a" * 1500) is None  # no cut between tokens fits: the page only says why
    at = make_app(sentence="a" * 1500).run()
    no_exception(at)
    assert at.error and not any(b.key == "sentence_keep" for b in at.button)


def test_a_beginning_found_while_minilm_failed_is_found_again_after_try_again(monkeypatch):
    """While MiniLM cannot load its count is the words', and the beginning found then was cached for the process:
    after "Try again" loaded it, PIECES (48 words, 134 pieces) was still "fits as it is", so the page refused the
    sentence and offered no beginning to keep."""
    require_minilm()
    from core.pretrained import WeightsNotFound
    from dashboard.compute import computations

    def offline(_directory, **_):
        raise WeightsNotFound("offline")

    computations.minilm_or_error.clear()
    with monkeypatch.context() as patched:
        patched.setattr(computations, "load_minilm", offline)
        at = make_app(weights="minilm", sentence=PIECES).run()
        no_exception(at)
        assert isinstance(computations.minilm(), str)
        assert not any(b.key == "sentence_keep" for b in at.button)  # by its words it fits
    computations.minilm_or_error.clear()  # what "Try again" does
    at, label = _keep(at.run(), PIECES)
    kept = at.text_input(key="sentence").value
    assert label == f"Keep the first {len(computations.minilm().encode(kept).ids)} tokens" and kept != PIECES
    assert not at.error
