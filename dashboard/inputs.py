"""Settings to core inputs, or a clear message on the page instead of a traceback.

Messages shown here are the dashboard's own text or ``core``'s ``ValueError``
text, which names only numbers (token counts, limits), never what the user typed.
"""

from __future__ import annotations

import streamlit as st

from core import Run
from dashboard import compute
from dashboard.settings import Settings

EMPTY_SENTENCE = "Type a sentence in the sidebar to see its attention maps."


def tokens_or_message(sentence: str, empty: str = EMPTY_SENTENCE) -> tuple[str, ...] | None:
    """The tokens of ``sentence``, or None after showing why there are none (``empty`` when it is blank)."""
    if not sentence.strip():
        st.info(empty)
        return None
    try:
        return compute.tokens_of(sentence)
    except ValueError as err:
        st.error(str(err))
        return None


def choose_head(n_heads: int, *, key: str, bind: str | None, help: str, container=st) -> int:
    """A "Head" selector, 1 to ``n_heads``; returns the 0-based head.

    ``key`` and ``bind`` go to the widget as they are. Callers write both out
    (``bind="query-params"``), so the check that every URL-bound key is listed in
    ``url_notes.LINK_KEYS`` finds them at the call.
    """
    head = container.segmented_control(
        "Head", list(range(1, n_heads + 1)), default=1, required=True, key=key, bind=bind, help=help
    )
    return int(head) - 1


def run_or_message(settings: Settings) -> Run | None:
    """The attention run for ``settings``, or None after showing a message."""
    tokens = tokens_or_message(settings.sentence)
    if tokens is None:
        return None
    try:
        return compute.attention_run(tokens, settings.config)
    except ValueError as err:
        st.error(str(err))
        return None
