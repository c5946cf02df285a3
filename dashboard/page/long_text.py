"""A sentence too long for the weights: one click keeps its beginning.

The page refuses a sentence over ``MAX_CHARS`` characters or ``MAX_TOKENS`` tokens (``core.tokenize``'s message,
or MiniLM's piece cap). ``offer_prefix(settings)`` then draws one button, after the view and its message, that
puts into the sentence box the longest beginning of the text the settings' weights can draw, cut between two
tokens (``core.tokens.fitting_prefix``) as those weights count them (``dashboard.compute.source.token_count``: words for
random and hand-built weights, WordPiece pieces with [CLS] and [SEP] for MiniLM).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from core import MAX_CHARS, MAX_TOKENS
from core.tokens import fitting_prefix
from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB
from dashboard.compute.source import token_count
from dashboard.state.session import set_values
from dashboard.state.settings import Settings

KEEP = "sentence_keep"
"""The button's key (not in the URL: a click, not a setting)."""


@bounded_cache.cache(max_bytes=1 * MB)
def _prefix(text: str, count: Callable[[str], int]) -> str | None:
    """``fitting_prefix`` of ``text`` as ``count`` (one weights kind's counter) counts, once per process: every run
    of every page asks, and st.cache_data hashing the sentence was ~3% of a following student's redraw."""
    return fitting_prefix(text, count, max_tokens=MAX_TOKENS, max_chars=MAX_CHARS)


def _keep(prefix: str) -> None:
    set_values(sentence=prefix)  # in the callback: before the sentence box is drawn again


def offer_prefix(settings: Settings) -> None:
    """Nothing while the sentence fits; otherwise the button that keeps the beginning that does."""
    text = settings.sentence
    if not text.strip():
        return
    count = token_count(settings)
    if count is None:  # these weights read no sentence
        return
    prefix = _prefix(text, count)
    if prefix is None or prefix == text:  # it fits, or not even one token does (the view says why)
        return
    n = count(prefix)
    st.button(
        f"Keep the first {n} tokens",
        key=KEEP,
        on_click=_keep,
        args=(prefix,),
        icon=":material/content_cut:",
        help=f"The sentence is too long for {settings.kind.label}. This puts its beginning in the sentence box: "
        f"{len(prefix):,} of its {len(text):,} characters, cut between two tokens, {n} tokens as these weights "
        f"count them (at most {MAX_TOKENS} tokens and {MAX_CHARS:,} characters).",
    )
