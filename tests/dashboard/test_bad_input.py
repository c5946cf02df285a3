"""Whatever is typed as the sentence: a clear message or a drawing, never a traceback or rendered markup."""

from __future__ import annotations

import pytest

from core import MAX_TOKENS, tokenize
from tests.dashboard.conftest import escaped, figures, heatmaps, make_app, no_exception

VIEWS = ("heads", "tokens", "shapes", "permutation")

REFUSED = [
    # (sentence, element that explains, words it must contain)
    ("", "info", "Type a sentence"),
    ("   \t  ", "info", "Type a sentence"),
    ("\x00\x1b", "error", "nothing to analyse"),
    (" ".join(["w"] * (MAX_TOKENS + 1)), "error", f"limit is {MAX_TOKENS}"),
    ("x" * 100_000, "error", "characters"),
]

DRAWN = {
    "emoji with joiners": "family 👨\u200d👩\u200d👧 here",
    "nfc and nfd": "caf\u00e9 cafe\u0301",
    "hebrew and arabic": "שלום עולם مرحبا بالعالم",
    "bidi override and zero-width space": "abc\u202edef\u200bghi",
    "html": "<b>x</b> <img src=x onerror=alert(1)>",
    "markdown link": "[x](javascript:alert(1))",
    "streamlit colour directive": ":red[hi]",
    "latex href": "$\\href{javascript:alert(1)}{x}$",
    "exactly the limit": " ".join(f"w{i}" for i in range(MAX_TOKENS)),
    "one token": "hello",
}


@pytest.mark.parametrize(("sentence", "kind", "words"), REFUSED, ids=["empty", "blank", "control", "65", "100k"])
def test_refused_sentences_get_a_message_in_every_view(sentence, kind, words):
    for view in VIEWS:
        pages = [make_app(sentence=sentence, view=view).run()]  # from a link (url_state keeps any text as typed)
        if not sentence:
            pages.append(_typed_empty(view))
        for at in pages:
            no_exception(at)
            messages = [m.value for m in getattr(at, kind)]
            assert any(words in m for m in messages), (view, messages)
            assert not at.get("plotly_chart")


def _typed_empty(view: str):
    """The other way to an empty sentence: the user clears the box."""
    at = make_app(view=view).run()
    at.text_input(key="sentence").input("").run()
    return at


@pytest.mark.parametrize("sentence", DRAWN.values(), ids=DRAWN.keys())
def test_unusual_sentences_are_drawn_with_every_token_literal(sentence):
    tokens = tokenize(sentence)
    at = make_app(sentence=sentence).run()
    no_exception(at)
    assert not at.error
    [fig] = figures(at)
    maps = [t for t in heatmaps(fig) if t.get("name") != "masked"]
    assert len(maps) == 4
    for trace in maps:
        assert len(trace["x"]) == len(tokens)
        for i, (label, token) in enumerate(zip(trace["x"], tokens, strict=True)):
            assert label == f"{i}·{escaped(token)}"
    _no_user_text_in_markdown(at, [sentence])


@pytest.mark.parametrize("view", ["tokens", "shapes", "permutation"])
def test_markup_is_never_rendered_in_other_views(view):
    sentence = DRAWN["html"] + " " + DRAWN["markdown link"] + " " + DRAWN["streamlit colour directive"]
    at = make_app(sentence=sentence, view=view).run()
    no_exception(at)
    _no_user_text_in_markdown(at, [sentence])
    if view == "tokens":
        assert list(at.dataframe[0].value["token"]) == tokenize(sentence)  # shown literally, as data


def test_retyped_order_with_markup_is_plain_text():
    at = make_app(view="permutation", sentence="a <b> c", perm_mode="retype").run()
    at.text_input(key="perm_text").input("c <b> a").run()
    no_exception(at)
    assert at.success
    _no_user_text_in_markdown(at, ["c <b> a", "a <b> c"])


MARKUP = ["<b>", "<img", "onerror", "javascript", ":red[", "\\href", "alert"]
"""Fragments of the hostile sentences that the dashboard's own text never contains."""


def _no_user_text_in_markdown(at, typed: list[str]) -> None:
    """No Markdown-rendering element (text, captions, alerts, latex) carries the typed text or its markup."""
    markup = [*MARKUP, *(t for t in typed if len(t) > 3)]
    rendered = [
        *(m.value for m in at.markdown),
        *(c.value for c in at.caption),
        *(e.value for kind in ("error", "warning", "info", "success") for e in getattr(at, kind)),
        *(latex.value for latex in at.get("latex")),
    ]
    for text in rendered:
        for token in markup:
            assert token not in text, (token, text)
