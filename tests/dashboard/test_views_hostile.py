"""Hostile and refused sentences in the issue-4 views (steps, scaling, positions, summary), through AppTest.

The same sentences and leak scan as test_hostile_app.py. One difference in the
label check: a matrix of vectors (X, Q, K, V) has coordinate columns "0".."d-1",
so an axis label is either "position·escaped token" or a bare coordinate number.
"""

from __future__ import annotations

import html
import re

import pytest

from core import MAX_TOKENS, tokenize
from tests.dashboard.conftest import figures, heatmaps, make_app, no_exception
from tests.dashboard.test_hostile_app import CANARY, HOSTILE, MARKUP, PLOTLY_MARKUP, figure_strings, user_text_leaks

VIEWS = ("steps", "scaling", "positions", "summary")


def check_escaped(fig: dict, tokens: list[str]) -> None:
    """No unescaped markup in any figure string; every axis label a token label or a coordinate."""
    for s in figure_strings(fig):
        bare = PLOTLY_MARKUP.sub("", s)
        assert "<" not in bare and ">" not in bare, f"unescaped markup in a figure string: {s[:120]!r}"
        assert not re.search(r"&(?![a-zA-Z]+;|#\d+;|#x[0-9a-fA-F]+;)", bare), f"bare & in {s[:120]!r}"
    for trace in heatmaps(fig):
        for axis in ("x", "y"):
            for label in trace[axis]:
                if label.isdigit():
                    assert axis == "x", f"a coordinate label on the token axis: {label!r}"
                    continue
                pos, _, escaped = label.partition("·")
                assert escaped == html.escape(html.unescape(escaped), quote=True), f"not escaped: {label!r}"
                assert html.unescape(escaped) == tokens[int(pos)], label


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
        check_escaped(fig, tokens)


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
    # the scaling experiment does not depend on the sentence: its curves stay; nothing else is drawn
    assert len(figures(at)) == (1 if view == "scaling" else 0)
