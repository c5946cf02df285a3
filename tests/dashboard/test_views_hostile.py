"""Hostile and refused sentences in the steps, scaling, positions, summary, kv_cache and flash views (AppTest).

The same sentences, leak scan and label check as test_hostile_app.py; the label check
also allows the coordinate columns "0".."d-1" of the steps view's vector matrices.
"""

from __future__ import annotations

import pytest

from core import MAX_TOKENS, tokenize
from tests.dashboard.conftest import figures, make_app, no_exception
from tests.dashboard.test_hostile_app import CANARY, HOSTILE, MARKUP, check_figure_escapes_tokens, user_text_leaks

VIEWS = ("steps", "scaling", "positions", "summary", "kv_cache", "flash")


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("sentence", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_sentence_renders_safely(view: str, sentence: str) -> None:
    at = make_app(view=view, sentence=sentence).run()
    no_exception(at)
    tokens = tokenize(sentence)
    assert not at.error, [e.value for e in at.error]
    assert not user_text_leaks(at, CANARY)
    for raw in MARKUP.values():
        assert not user_text_leaks(at, raw), raw
    figs = figures(at)
    assert figs, "every view draws something for a valid sentence"
    for fig in figs:
        check_figure_escapes_tokens(fig, tokens, coordinates=True, in_order=True)


@pytest.mark.parametrize(
    ("sentence", "message"),
    [("", "type a sentence"), (" ".join(["w"] * (MAX_TOKENS + 1)), f"{MAX_TOKENS + 1} tokens")],
    ids=["empty", "one-over"],
)
@pytest.mark.parametrize("view", VIEWS)
def test_refused_sentence_gets_a_message_and_no_sentence_figure(view: str, sentence: str, message: str) -> None:
    at = make_app(view=view, sentence=sentence).run()
    no_exception(at)
    shown = [e.value for e in (*at.error, *at.info, *at.warning)]
    assert any(message in m.lower() or message in m for m in shown), shown
    # the scaling experiments do not depend on the sentence: their curves and spreads stay; nothing else is drawn
    assert len(figures(at)) == (2 if view == "scaling" else 0)
