"""Everything a classroom can type or paste into a link, driven through the real page (AppTest).

For every hostile sentence, in every view: no exception; every token reaches the
Plotly figures literally but HTML-escaped (plotly.js reads ``<b>``, ``<a>``...);
and what the student typed reaches no element that renders Markdown or HTML.
That last check is generic: the sentence carries a canary word, and every string
field of every element on the page is searched for it; only the places meant to
hold user text as plain data may contain it (the text box itself, st.text/st.code,
dataframe cells, and the escaped figure JSON).

For every bad link: no exception, the page falls back to the default settings
(the same figure as the default page) and a note says what was ignored.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import Message
from streamlit.testing.v1 import AppTest

from core import MAX_TOKENS, tokenize
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception, open_all

CANARY = "zqxcanary"
"""A word no page text contains: wherever it shows up, the user's text went."""
FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # woman ZWJ woman ZWJ girl ZWJ boy
MARKUP = {
    "bold": "<b>x</b>",
    "img": "<img src=x onerror=alert(1)>",
    "md-link": "[x](javascript:alert(1))",
    "st-color": ":red[hi]",
    "latex-href": "$\\href{javascript:alert(1)}{x}$",
}
HOSTILE = {
    "one-token": CANARY,
    "max-tokens": " ".join([CANARY, *(f"w{i}" for i in range(MAX_TOKENS - 1))]),
    "emoji-zwj": f"{CANARY} {FAMILY} family",
    "nfd": f"{CANARY} cafe\u0301 au lait",
    "hebrew": f"{CANARY} שלום עולם",
    "arabic": f"{CANARY} مرحبا بالعالم",
    "rlo": f"{CANARY} left \u202eright",
    "zwsp": f"{CANARY} zero\u200bwidth",
    "nul": f"{CANARY} nul\x00byte",
    "esc": f"{CANARY} esc\x1b[31mred",
    **{name: f"{CANARY} {text}" for name, text in MARKUP.items()},
}
VIEWS = ("heads", "tokens", "shapes", "permutation")

# Where user text may appear as plain data, never interpreted: (element type, field).
PLAIN_DATA = {
    ("text_input", "value"),
    ("text_input", "default"),
    ("text_area", "value"),
    ("text_area", "default"),
    ("text", "body"),
    ("code", "code_text"),
    ("plotly_chart", "spec"),  # checked on its own below: every label must be escaped
}
PLOTLY_MARKUP = re.compile(r"</?extra>|<br>")
"""The only HTML the app itself writes into figure strings (hover templates)."""


def _strings(msg: Message, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string field of a protobuf message, recursively: (dotted field path, value)."""
    for field, value in msg.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            here = f"{path}.{field.name}" if path else field.name
            if isinstance(v, Message):
                yield from _strings(v, here)
            elif isinstance(v, str):
                yield here, v


def _nodes(node) -> Iterator:
    """Every element and block of an AppTest tree."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def user_text_leaks(at: AppTest, needle: str) -> list[str]:
    """Element fields, outside PLAIN_DATA, whose text contains ``needle``."""
    leaks = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if not isinstance(proto, Message):
            continue
        kind = proto.DESCRIPTOR.name
        for path, text in _strings(proto):
            top = path.split(".")[0]
            kind_name = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
            if needle in text and (kind_name, top) not in PLAIN_DATA:
                leaks.append(f"{kind}.{path} = {text[:80]!r}")
    return leaks


def figure_strings(fig: dict) -> Iterator[str]:
    """Every string in a figure's JSON (data and layout)."""
    stack = [fig]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str):
            yield v


def labels(tokens: list[str]) -> list[str]:
    """What every axis category must be: position, a middle dot, the HTML-escaped token."""
    return [f"{i}·{html.escape(t, quote=True)}" for i, t in enumerate(tokens)]


def check_figure_escapes_tokens(
    fig: dict, tokens: list[str], *, coordinates: bool = False, in_order: bool = False
) -> None:
    """Tokens are HTML-escaped in every figure string, and every axis label is "position·escaped token".

    ``coordinates=True``: a matrix of vectors (X, Q, K, V in the steps view) has columns "0".."d-1",
    so a bare number is also allowed on the x axis (never on the token axis). ``in_order=True``: no panel
    is reordered, so label "i·t" must hold exactly ``tokens[i]``.
    """
    for s in figure_strings(fig):
        bare = PLOTLY_MARKUP.sub("", s)
        assert "<" not in bare and ">" not in bare, f"unescaped markup in a figure string: {s[:120]!r}"
        assert not re.search(r"&(?![a-zA-Z]+;|#\d+;|#x[0-9a-fA-F]+;)", bare), f"bare & in {s[:120]!r}"
    for trace in heatmaps(fig):
        for axis in ("x", "y"):
            for label in trace[axis]:  # a reordered panel has its own order, so any position's token will do
                if coordinates and label.isdigit():
                    assert axis == "x", f"a coordinate label on the token axis: {label!r}"
                    continue
                pos, _, escaped = label.partition("·")
                assert escaped == html.escape(html.unescape(escaped), quote=True), f"not escaped: {label!r}"
                assert int(pos) < len(tokens) and html.unescape(escaped) in tokens, label
                assert not in_order or html.unescape(escaped) == tokens[int(pos)], label
    axes = [axis for key, axis in fig["layout"].items() if key.startswith(("xaxis", "yaxis"))]
    ticks = [t for axis in axes for t in axis.get("ticktext", []) if not (coordinates and t.isdigit())]
    for tick in ticks:  # long tokens are cut to a prefix with an ellipsis; escaping comes after the cut
        shown = html.unescape(tick).partition("·")[2]
        assert shown in tokens or (shown.endswith("…") and any(t.startswith(shown[:-1]) for t in tokens)), tick


def open_view(view: str, sentence: str) -> AppTest:
    """The view of ``sentence``, with every expander open: the code's call and the downloads are scanned too."""
    return open_all(make_app(view=view, sentence=sentence).run())


# ---------------------------------------------------------------- hostile sentences


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("sentence", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_sentence_renders_safely(view: str, sentence: str) -> None:
    at = open_view(view, sentence)
    no_exception(at)
    tokens = tokenize(sentence)
    assert CANARY in tokens
    assert not at.error, [e.value for e in at.error]
    assert not user_text_leaks(at, CANARY)
    for raw in MARKUP.values():
        assert not user_text_leaks(at, raw), raw
    for i, fig in enumerate(figures(at)):  # permutation's second figure, the output rows, has coordinate columns
        check_figure_escapes_tokens(fig, tokens, coordinates=view == "permutation" and i == 1)
    if view == "heads":
        [fig] = figures(at)
        assert [tuple(trace["x"]) for trace in heatmaps(fig)] == [tuple(labels(tokens))] * len(heatmaps(fig))
        assert [tuple(trace["y"]) for trace in heatmaps(fig)] == [tuple(labels(tokens))] * len(heatmaps(fig))
        for trace in heatmaps(fig):
            assert array(trace["z"]).shape == (len(tokens), len(tokens))
            assert "%{x}" in trace["hovertemplate"] and "%{y}" in trace["hovertemplate"]  # hover names both tokens
    if view == "tokens":
        [table] = at.dataframe
        assert list(table.value["token"]) == tokens  # the raw token, drawn as plain text by the grid


def test_typing_each_hostile_sentence_into_the_box() -> None:
    """The same sentences typed one after another in one session, as a student would."""
    at = make_app().run()
    for name, sentence in HOSTILE.items():
        at.text_input(key="sentence").set_value(sentence).run()
        no_exception(at)
        assert not user_text_leaks(at, CANARY), name
        [fig] = figures(at)
        check_figure_escapes_tokens(fig, tokenize(sentence))


def test_nfc_and_nfd_draw_the_same_figure() -> None:
    nfc = figures(open_view("heads", "caf\u00e9 au lait"))
    nfd = figures(open_view("heads", "cafe\u0301 au lait"))
    assert nfc == nfd and nfc


def test_typed_reordering_of_hostile_text_is_escaped_too() -> None:
    """The permutation view's own text box: a reordering of markup, and a non-rearrangement."""
    sentence = f"{CANARY} <b>x</b>"
    tokens = tokenize(sentence)
    at = make_app(view="permutation", sentence=sentence, perm_mode="retype", perm_text=" ".join(reversed(tokens)))
    at.run()
    no_exception(at)
    assert not user_text_leaks(at, CANARY)
    maps, outputs = figures(at)
    check_figure_escapes_tokens(maps, tokens)
    check_figure_escapes_tokens(outputs, tokens, coordinates=True)  # the output rows: one vector per token
    at.text_input(key="perm_text").set_value(f"{CANARY} <img src=x onerror=alert(1)>").run()
    no_exception(at)
    assert at.warning, "a text that is not a rearrangement must say so"
    assert not user_text_leaks(at, "onerror")


# ---------------------------------------------------------------- refused sentences


@pytest.mark.parametrize(
    ("sentence", "message"),
    [
        ("", "type a sentence"),
        ("   \t ", "type a sentence"),
        ("\u200b\u202e\x00", "nothing to analyse"),
        ("a" * 100_000, "100,000 characters"),
        (" ".join(["w"] * (MAX_TOKENS + 1)), f"{MAX_TOKENS + 1} tokens"),
    ],
    ids=["empty", "whitespace", "invisible", "100k-chars", "one-over"],
)
@pytest.mark.parametrize("view", VIEWS)
def test_refused_sentence_gets_a_clear_message_and_no_figure(view: str, sentence: str, message: str) -> None:
    at = open_view(view, sentence)
    no_exception(at)
    shown = [e.value for e in (*at.error, *at.info, *at.warning)]
    assert any(message in m.lower() or message in m for m in shown), shown
    assert not figures(at)


# ---------------------------------------------------------------- bad links

BAD_LINKS = {
    "n_heads=0": ({"n_heads": "0"}, "head"),
    "n_heads=3,d_model=64": ({"n_heads": "3", "d_model": "64"}, "head"),
    "n_heads=huge": ({"n_heads": "9" * 30}, "head"),
    "n_heads=NaN": ({"n_heads": "NaN"}, "head"),
    "d_model=-1": ({"d_model": "-1"}, "d_model"),
    "d_model=7": ({"d_model": "7"}, "d_model"),
    "d_model=1e309": ({"d_model": "1e309"}, "d_model"),
    "d_model=NaN": ({"d_model": "NaN"}, "d_model"),
    "seed=abc": ({"seed": "abc"}, "seed"),
    "seed=-5": ({"seed": "-5"}, "seed"),
    "seed=huge": ({"seed": "1" + "0" * 40}, "seed"),
    "seed=NaN": ({"seed": "NaN"}, "seed"),
    "seed=inf": ({"seed": "inf"}, "seed"),  # Streamlit's number_input raised OverflowError on it
    "seed=-Infinity": ({"seed": "-Infinity"}, "seed"),
    "seed=1e999": ({"seed": "1e999"}, "seed"),
    "perm_seed=inf": ({"view": "permutation", "perm_mode": "shuffle", "perm_seed": "inf"}, None),
    "causal=maybe": ({"causal": "maybe"}, "causal"),
    "positional=markup": ({"positional": "<img src=x onerror=alert(1)>"}, "positional"),
    "view=nope": ({"view": "nope"}, "view"),
    # Unknown keys are ignored; the note counts them and never quotes them.
    "unknown-key": ({"foo": "bar"}, "does not use"),
    "unknown-markup-key": ({"<b>k</b>": "[x](javascript:alert(1))"}, "does not use"),
}


@pytest.fixture(scope="module")
def default_heads() -> dict:
    """The heads figure of the page opened with no link parameters."""
    at = make_app().run()
    no_exception(at)
    [fig] = figures(at)
    return fig


@pytest.mark.parametrize(("query", "word"), BAD_LINKS.values(), ids=BAD_LINKS.keys())
def test_bad_link_falls_back_to_defaults_with_a_note(query: dict, word: str | None, default_heads: dict) -> None:
    at = make_app(**query).run()
    no_exception(at)
    notes = [w.value for w in at.warning]
    if word is not None:
        assert any(word in n for n in notes), f"no note about {word!r} in {notes}"
        [fig] = figures(at)
        assert fig == default_heads, "a bad link must show the default settings"
    elif query.get("view") == "permutation":
        assert len(figures(at)) == 2  # the reordering's maps and output rows, drawn with the default shuffle seed
    else:
        assert not notes and figures(at) == [default_heads]
    for raw in (*query.values(), *query.keys()):
        if set(raw) & set("<>[]$:"):  # markup-like link text is never quoted on the page
            assert not user_text_leaks(at, raw), raw


def test_a_good_link_gets_no_note() -> None:
    """The notes are not noise: a valid link restores its settings silently."""
    at = make_app(d_model="16", n_heads="8", causal="true", seed="7", view="heads").run()
    no_exception(at)
    assert not at.warning, [w.value for w in at.warning]
    [fig] = figures(at)
    weights = [t for t in heatmaps(fig) if t.get("coloraxis")]  # masked cells have a grey trace of their own
    assert len(weights) == 8
    z = np.nan_to_num(array(weights[0]["z"]))
    assert not np.triu(z, k=1).any() and np.all(np.diag(z) > 0)  # causal: nothing above the diagonal


# ---------------------------------------------------------------- the source itself

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"


def _calls(tree: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield ast.unparse(node.func), node


REVIEWED_COMPONENT = ("classroom/teacher_key.py", 'st.components.v2.component("attention_lab_teacher_key", js=JS)')
"""The one component the app may register: its JavaScript is the module's own constant, commented line by line
(localStorage for the teacher key, history.replaceState for the claim token; issue 18). No HTML, no CSS."""


def html_sinks(where: str, source: str) -> list[str]:
    """Every raw-HTML or component call in ``source`` (the file ``where``, relative to dashboard/), as problems.

    Allowed: presenter.py's st.html of its own constant style sheet, and ``REVIEWED_COMPONENT`` once in its module.
    Any other component is refused however it is reached: ``st.components``, an imported ``components`` module or
    its functions, Streamlit's private ``_bidi_component``.
    """
    problems = []
    tree = ast.parse(source)
    if "unsafe_allow_html" in source:
        problems.append(f"{where}: unsafe_allow_html")
    for node in ast.walk(tree):
        module = node.module if isinstance(node, ast.ImportFrom) else None
        names = [a.name for a in node.names] if isinstance(node, ast.Import | ast.ImportFrom) else []
        if any("components" in n for n in [module or "", *names]):
            problems.append(f"{where}:{node.lineno} imports {module or ', '.join(names)}")
    reviewed = 0
    for name, call in _calls(tree):
        if name == "st.html" and where == "page/presenter.py":
            if ast.unparse(call.args) != "PRESENTER_CSS" or call.keywords:
                problems.append(f"{where}:{call.lineno} {ast.unparse(call)}")
            continue
        if (where, ast.unparse(call)) == (REVIEWED_COMPONENT[0], ast.unparse(ast.parse(REVIEWED_COMPONENT[1]))):
            reviewed += 1
            continue
        if name in {"st.write", "st.html", "st.write_stream"} or "_bidi_component" in name:
            problems.append(f"{where}:{call.lineno} {name}")
        if name.startswith(("components.", "st.components")) or ".components." in name:
            problems.append(f"{where}:{call.lineno} {name}")
    if reviewed > 1:
        problems.append(f"{where}: the reviewed component registered {reviewed} times")
    return problems


@pytest.mark.parametrize("path", sorted(DASHBOARD.rglob("*.py")), ids=lambda p: str(p.relative_to(DASHBOARD)))
def test_no_html_sink_in_the_dashboard_source(path: Path) -> None:
    """No raw-HTML API at all, no st.write (which picks Markdown for a string), no component but the reviewed one."""
    assert html_sinks(str(path.relative_to(DASHBOARD)), path.read_text(encoding="utf-8")) == []


def test_the_reviewed_component_is_registered_once_with_its_own_javascript() -> None:
    where, call = REVIEWED_COMPONENT
    source = (DASHBOARD / where).read_text(encoding="utf-8")
    assert source.count(call) == 1
    js = ast.literal_eval(
        next(
            n.value
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "JS"
        )
    )
    assert "localStorage" in js and "history.replaceState" in js
    for banned in ("innerHTML", "eval(", "fetch(", "pushState", "document.write", "import("):
        assert banned not in js, banned  # it draws nothing, loads nothing, never adds a history entry


@pytest.mark.parametrize(
    "where, line",
    [
        ("classroom/teacher_key.py", 'st.components.v2.component("another", js=JS)'),
        ("classroom/teacher_key.py", 'st.components.v2.component("attention_lab_teacher_key", js=JS, html=H)'),
        ("classroom/room_page.py", 'st.components.v2.component("attention_lab_teacher_key", js=JS)'),
        ("views/heads.py", 'st.components.v1.html("<b>x</b>")'),
        ("views/heads.py", 'components.html("<b>x</b>")'),
        ("views/heads.py", 'st._bidi_component("x")'),
        ("views/heads.py", "import streamlit.components.v1 as c"),
        ("views/heads.py", "from streamlit.components.v2 import component"),
        ("views/heads.py", 'st.html("<b>x</b>")'),
    ],
)
def test_the_scan_refuses_every_other_component(where: str, line: str) -> None:
    """The allowance is one call in one file: the scan above fails on anything else (it is not a no-op)."""
    assert html_sinks(where, line + "\n")


def test_the_scan_refuses_the_reviewed_component_twice() -> None:
    call = REVIEWED_COMPONENT[1]
    assert html_sinks(REVIEWED_COMPONENT[0], f"a = {call}\nb = {call}\n")


def test_cache_data_is_bounded_everywhere() -> None:
    """Every st.cache_data in dashboard/ has max_entries: a public app's caches must not grow without end."""
    found = 0
    for path in DASHBOARD.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for dec in getattr(node, "decorator_list", []):
                name = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
                if name.endswith(("cache_data", "cache_resource")):
                    found += 1
                    kwargs = {k.arg for k in dec.keywords} if isinstance(dec, ast.Call) else set()
                    assert "max_entries" in kwargs, f"{path.name}:{node.lineno} {name} has no max_entries"
    assert found, "no cached function found: the scan is looking in the wrong place"


def test_figure_json_is_parsed_from_the_chart_proto() -> None:
    """Guard for the helpers above: a figure with a raw '<b>' label fails the escape check."""
    bad = {"data": [{"type": "heatmap", "x": ["0·<b>"], "y": ["0·<b>"]}], "layout": {"xaxis": {"ticktext": []}}}
    with pytest.raises(AssertionError):
        check_figure_escapes_tokens(json.loads(json.dumps(bad)), ["<b>"])


def test_leak_scan_finds_user_text_in_markdown() -> None:
    """Guard for ``user_text_leaks``: text in a Markdown element, a caption or a widget label is found."""
    at = AppTest.from_string(
        f"""
import streamlit as st
st.text_input("box", value="{CANARY}")
st.markdown("{CANARY}")
st.caption("{CANARY}")
st.toggle("{CANARY}")
"""
    ).run()
    leaks = user_text_leaks(at, CANARY)
    assert len(leaks) == 3, leaks  # markdown, caption, toggle label; not the text box's own value
