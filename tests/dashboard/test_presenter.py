"""Presenter mode: larger type and cells and fewer columns in the figures, the same numbers, kept in the link."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dashboard.figures import heads_figure, model_figure
from dashboard.figures.layout import (
    MODEBAR_CLEAR_PX,
    PRESENTER_MAX_COLS,
    PRESENTER_MIN_TICK,
    PRESENTER_MIN_TITLE,
    PRESENTER_SCALE,
)
from dashboard.page.common import plain_cell
from dashboard.views import VIEWS
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception


def weights(h: int, t: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    w = rng.random((h, t, t))
    return w / w.sum(axis=-1, keepdims=True)  # (h, T, T) rows sum to 1


def axes(fig: dict, kind: str) -> list[dict]:
    return [v for k, v in fig["layout"].items() if k.startswith(kind)]


def columns(fig: dict) -> int:
    """Number of panel columns: distinct x domains."""
    return len({tuple(a["domain"]) for a in axes(fig, "xaxis")})


def panel_px(fig: dict) -> float:
    """Height in pixels of the first panel: its y domain times the plot height."""
    lo, hi = fig["layout"]["yaxis"]["domain"]
    return (hi - lo) * fig["layout"]["height"]


def fonts(fig: dict) -> dict[str, float]:
    layout = fig["layout"]
    return {
        "ticks": layout["xaxis"]["tickfont"]["size"],
        "title": layout["annotations"][0]["font"]["size"],
        "colorbar": layout["coloraxis"]["colorbar"]["tickfont"]["size"],
        "hover": layout["hoverlabel"]["font"]["size"],
    }


def both(h: int, t: int, allowed=None) -> tuple[dict, dict]:
    w = weights(h, t)
    tokens = [f"w{i}" for i in range(t)]
    normal = json.loads(heads_figure(w, tokens, allowed).to_json())
    big = json.loads(heads_figure(w, tokens, allowed, presenter=True).to_json())
    return normal, big


@pytest.mark.parametrize(("h", "t"), [(1, 1), (4, 8), (16, 64), (2, 30)])
def test_presenter_fonts_are_scaled_up(h, t):
    normal, big = both(h, t)
    small, large = fonts(normal), fonts(big)
    floor = {"ticks": PRESENTER_MIN_TICK, "title": PRESENTER_MIN_TITLE}  # the README's promises on a projector
    for name in small:
        assert large[name] == pytest.approx(max(small[name] * PRESENTER_SCALE, floor.get(name, 0)), abs=0.5), name


@pytest.mark.parametrize(("h", "t", "cols"), [(1, 8, 1), (2, 8, 2), (4, 8, 2), (8, 8, 3), (16, 64, 3)])
def test_presenter_has_fewer_larger_panels(h, t, cols):
    normal, big = both(h, t)
    assert columns(big) == cols <= min(columns(normal), PRESENTER_MAX_COLS)
    assert panel_px(big) > panel_px(normal)
    assert big["layout"]["height"] > normal["layout"]["height"]


def test_presenter_draws_the_same_numbers_and_mask():
    allowed = np.tril(np.ones((6, 6), dtype=bool))
    normal, big = both(4, 6, allowed)
    assert [t["name"] for t in normal["data"]] == [t["name"] for t in big["data"]]
    for a, b in zip(normal["data"], big["data"], strict=True):
        np.testing.assert_array_equal(array(a["z"]), array(b["z"]))
        assert a["x"] == b["x"] and a["y"] == b["y"]
    assert big["layout"]["annotations"][-1]["font"]["size"] > normal["layout"]["annotations"][-1]["font"]["size"]


def test_panels_stay_square_and_inside_the_figure_in_presenter_mode():
    _, big = both(16, 64)
    for axis in axes(big, "xaxis") + axes(big, "yaxis"):
        lo, hi = axis["domain"]
        assert 0 <= lo < hi <= 1
    assert all(a.get("scaleanchor") for a in axes(big, "yaxis"))


@pytest.mark.parametrize("view", ["heads", "cross", "permutation"])
def test_a_presenter_link_turns_it_on_and_enlarges_the_views_figures(view):
    normal = make_app(view=view).run()
    big = make_app(view=view, presenter="true").run()
    no_exception(big)
    assert big.toggle(key="presenter").value is True and normal.toggle(key="presenter").value is False
    fig_small, fig_big = figures(normal)[0], figures(big)[0]  # the view's maps come first
    assert fonts(fig_big)["ticks"] > fonts(fig_small)["ticks"]
    # Not larger panels: a laptop map is planned >= 260 px tall for a phone, where maps stack; a presenter map as
    # wide as four (heads, cross) or three (permutation) to a 1280 px row allow, and its rows end above 720 px.
    # tests/e2e/test_projector_and_phone.py measures them in chromium.
    assert fonts(fig_big)["title"] >= 22 and fonts(fig_big)["ticks"] >= 16
    small_maps = [array(t["z"]) for t in heatmaps(fig_small)]
    big_maps = [array(t["z"]) for t in heatmaps(fig_big)]
    assert len(small_maps) == len(big_maps)
    for a, b in zip(small_maps, big_maps, strict=True):
        np.testing.assert_array_equal(a, b)  # the same numbers, drawn larger


def test_presenter_shows_the_views_line_as_a_heading():
    at = make_app().run()
    assert not at.main.subheader  # the page's own; the sidebar has headings of its own (Room)
    at.toggle(key="presenter").set_value(True).run()
    no_exception(at)
    assert [s.value for s in at.main.subheader] == ["One attention map per head: who looks at whom."]
    assert fonts(figures(at)[0])["ticks"] > 11


EXTREMES = {
    "1-token-previous": dict(sentence="hello", weights="previous", positional="learned", n_heads="1"),
    "64-tokens-16-heads-causal-identity": dict(
        sentence=" ".join(f"w{i % 40}" for i in range(64)),  # repeats: identity has twins to find
        d_model="512",
        n_heads="16",
        causal="true",
        weights="identity",
    ),
}


@pytest.mark.parametrize("query", EXTREMES.values(), ids=EXTREMES.keys())
def test_every_view_renders_in_presenter_mode_at_the_extremes(query):
    at = make_app(presenter="true", **query).run()
    no_exception(at)
    for slug in VIEWS:
        at.button_group(key="view").set_value(slug).run()
        no_exception(at)
        assert not at.error, (slug, [e.value for e in at.error])


CHART_TEXT_PX = 14
"""The least chart text on a projector other than ticks and titles (tests/e2e/test_projector_and_phone.py)."""


@pytest.mark.parametrize("view", ["scaling", "summary", "steps", "flash"])
def test_axis_titles_are_sized_for_the_projector_not_left_to_the_theme(view):
    """An axis title without its own font size is drawn at Streamlit's theme size (12 px) even in presenter mode:
    the scaling view's "raw score q·k" and the summary's "mean over query rows" were."""
    at = make_app(view=view, presenter="true").run()
    no_exception(at)
    titled = [
        (name, axis)
        for fig in figures(at)
        for name, axis in fig["layout"].items()
        if name.startswith(("xaxis", "yaxis")) and axis.get("title", {}).get("text")
    ]
    assert titled, "the view draws a chart with an axis title"
    small = [
        (name, axis["title"]["text"])
        for name, axis in titled
        if axis["title"].get("font", {}).get("size", 0) < CHART_TEXT_PX
    ]
    assert not small, small


@pytest.mark.parametrize(
    "view", ["shapes", "cross", "permutation", "positions", "scaling", "summary", "kv_cache", "flash"]
)
def test_a_projector_gets_the_tables_as_page_text_with_the_same_cells(view):
    """st.dataframe draws on a canvas at 13 px whatever presenter mode's style sheet says; on a projector each
    table of the page's own words and numbers is an st.table (page text, 20 px there:
    tests/e2e/test_projector_and_phone.py measures it), its cells escaped Markdown reading as the laptop's grid."""
    laptop, projector = make_app(view=view).run(), make_app(view=view, presenter="true").run()
    no_exception(laptop)
    no_exception(projector)
    assert laptop.dataframe and not laptop.table
    assert len(projector.table) == len(laptop.dataframe) and not projector.dataframe
    unescape = lambda text: re.sub(r"\\(.)", r"\1", text)  # noqa: E731  (CommonMark's backslash escapes)
    for grid, table in zip((d.value for d in laptop.dataframe), (t.value for t in projector.table), strict=True):
        assert [unescape(c) for c in table.columns] == list(grid.columns)
        for shown, value in zip(table.map(unescape).values.ravel(), grid.values.ravel(), strict=True):
            if isinstance(value, float):  # drawn to 3 decimals
                assert float(shown) == pytest.approx(value, abs=5e-4), (shown, value)
            else:
                assert shown == str(value)


def test_plain_cell_escapes_every_mark_markdown_or_streamlit_reads():
    text = "W_Q *x* [a](b) :red[x] $y$ # <b> `c` ~s~ a|b 1. +"
    escaped = plain_cell(text)
    assert re.sub(r"\\(.)", r"\1", escaped) == text
    assert not re.search(r"(?<!\\)[_*\[\]()$#<>`~|:.+]", escaped), escaped  # no mark left bare


@pytest.mark.parametrize("presenter", [False, True])
def test_the_model_overview_is_one_column_per_head_and_one_row_per_layer_on_a_projector_too(presenter):
    """MiniLM's 6 x 12 overview in presenter mode was 24 rows of 3 maps, "L2" beside the fifth row and the head
    numbers over the first four: the cap of 3 panels to a row applied to the overview's own 12 columns."""
    n_layers, h, t = 6, 12, 10
    w = np.random.default_rng(0).dirichlet(np.ones(t), size=(n_layers, h, t))  # (L, h, T, T)
    layout = json.loads(model_figure(w, [f"w{i}" for i in range(t)], presenter=presenter).to_json())["layout"]
    axis = [
        (layout[f"xaxis{k + 1 if k else ''}"]["domain"], layout[f"yaxis{k + 1 if k else ''}"]["domain"])
        for k in range(n_layers * h)
    ]
    columns = sorted({round(x[0], 6) for x, _ in axis})
    rows = sorted({round(y[0], 6) for _, y in axis}, reverse=True)
    assert len(columns) == h and len(rows) == n_layers
    for k, (x, y) in enumerate(axis):
        layer, head = divmod(k, h)
        assert (round(x[0], 6), round(y[0], 6)) == (columns[head], rows[layer])
    titles = {a["text"]: a for a in layout["annotations"] if a.get("name") == "title"}
    for head in range(h):  # each head's number over its own column, above the first layer's row
        x, y = axis[head]
        assert x[0] <= titles[str(head + 1)]["x"] <= x[1] and titles[str(head + 1)]["y"] >= y[1]
    for layer in range(n_layers):
        _, y = axis[layer * h]
        assert y[0] <= titles[f"L{layer + 1}"]["y"] <= y[1]
    assert layout["margin"]["t"] >= MODEBAR_CLEAR_PX, "the last head's number clear of Plotly's toolbar"
