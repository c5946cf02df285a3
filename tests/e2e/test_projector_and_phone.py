"""The heads view on a 1280 x 720 projector (presenter mode) and a 390 x 844 phone, measured in chromium.

Everything is read from what the browser drew: bounding boxes of the heatmap images, tick labels and
titles, Plotly's toolbar, and the computed font size of every visible piece of page text.
"""

from __future__ import annotations

import contextlib
import itertools
import math

import pytest

from bench.streamlit_server import wait_idle
from dashboard.settings import DEFAULTS
from tests.e2e.conftest import WATCH_EXCEPTIONS

pytestmark = pytest.mark.e2e

HEADS = DEFAULTS.config.n_heads
TOKENS = 8  # "The bank of the river gave a loan"

# Per chart of the heads grid (container .st-key-heads_chart): its map's box, its tick labels, its title.
MAPS = """() => [...document.querySelectorAll('.st-key-heads_chart .js-plotly-plot')]
  .filter((p) => p.querySelector('g.hm image') && p.querySelector('.xtick'))
  .map((p) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; };
    const ticks = (sel) => [...p.querySelectorAll(sel)].map((t) => ({text: t.textContent,
        fs: parseFloat(getComputedStyle(t).fontSize), ...box(t),
        cx: t.getBoundingClientRect().x + t.getBoundingClientRect().width / 2,
        cy: t.getBoundingClientRect().y + t.getBoundingClientRect().height / 2}));
    const title = p.querySelector('.annotation-text');
    const marks = [...p.querySelectorAll('path.xtick')].map((m) => box(m)).map((b) => b.x + b.w / 2);
    return {map: box(p.querySelector('g.hm image')), chart: box(p), x: ticks('.xtick text'), y: ticks('.ytick text'),
            marks: marks,
            title: {...box(title), fs: parseFloat(getComputedStyle(title).fontSize)}};
  })"""

# Font size of every visible text node outside the charts. Left out: Plotly's SVG (measured above),
# Material icon ligatures (a glyph, not words) and Streamlit's "Skip to main content" (shown only on focus).
PAGE_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.querySelector('.stApp'), NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode()); ) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest('svg, .js-plotly-plot, [data-testid=stIconMaterial], '
        + '[data-testid=stSkipToContent]')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.bottom < 0 || r.top > innerHeight || r.right < 0 || r.left > innerWidth)
      continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    out.push({text: n.textContent.trim().slice(0, 40), fs: parseFloat(getComputedStyle(el).fontSize)});
  }
  return out;
}"""


def open_page(browser, url: str, query: str, width: int, height: int, mobile: bool = False):
    context = browser.new_context(
        viewport={"width": width, "height": height}, is_mobile=mobile, has_touch=mobile, device_scale_factor=1
    )
    context.set_default_timeout(60_000)
    context.add_init_script(WATCH_EXCEPTIONS)
    page = context.new_page()
    page.goto(f"{url}/?{query}")
    wait_idle(page)
    page.wait_for_function(f"() => ({MAPS})().length === {HEADS}", polling="raf")
    page.wait_for_timeout(500)  # plotly.js finishes its layout after the image is in place
    return context, page


def overlap(a: dict, b: dict) -> bool:
    apart_x = a["x"] >= b["x"] + b["w"] or b["x"] >= a["x"] + a["w"]
    apart_y = a["y"] >= b["y"] + b["h"] or b["y"] >= a["y"] + a["h"]
    return not (apart_x or apart_y)


def assert_labels_apart(chart: dict) -> None:
    """Every token labelled on both axes of this map, and no two labels colliding.

    y labels are horizontal: their centres are at least one font size apart. x labels are rotated 60° and
    hang from their tick marks: the distance between neighbours across the text direction (tick pitch x
    sin 60°) is at least 0.86 of the font size, a capital's height plus a descender in Source Sans
    (0.66 + 0.2 em), so their glyphs never touch.
    """
    assert len(chart["x"]) == len(chart["y"]) == TOKENS, "every token labelled"
    for a, b in zip(chart["y"], chart["y"][1:], strict=False):
        assert b["cy"] - a["cy"] >= a["fs"], (a["text"], b["text"])
    across = math.sin(math.radians(60))
    font = max(t["fs"] for t in chart["x"])
    assert len(chart["marks"]) == TOKENS
    for a, b in zip(chart["marks"], chart["marks"][1:], strict=False):  # each label hangs from its tick mark
        assert (b - a) * across >= 0.86 * font, (a, b)


def assert_toolbar_clear_of_title(page, index: int, chart: dict) -> None:
    """Hover the chart so Plotly shows its toolbar; it must not cover the chart's title."""
    page.locator(".st-key-heads_chart .js-plotly-plot").nth(index).hover()
    bar = page.locator(".st-key-heads_chart .js-plotly-plot").nth(index).locator(".modebar")
    bar.wait_for(state="visible")
    box = bar.bounding_box()
    assert not overlap({"x": box["x"], "y": box["y"], "w": box["width"], "h": box["height"]}, chart["title"])


def test_presenter_mode_fits_every_head_on_a_1280_by_720_projector(browser, server):
    context, page = open_page(browser, server, "presenter=true", 1280, 720)
    try:
        charts = page.evaluate(MAPS)
        assert len(charts) == HEADS
        for i, c in enumerate(charts):
            lowest = max(t["y"] + t["h"] for t in c["x"])
            assert c["map"]["y"] >= 0 and lowest <= 720, f"head {i + 1} and its key labels on the first screen"
            assert c["map"]["x"] >= 0 and c["map"]["x"] + c["map"]["w"] <= 1280
            assert c["map"]["w"] >= 160, "cells of at least 20 px"
            assert_labels_apart(c)
            assert min(t["fs"] for t in c["x"] + c["y"]) >= 16, "axis tick labels >= 16 px"
            assert c["title"]["fs"] >= 22, "panel titles >= 22 px"
            assert_toolbar_clear_of_title(page, i, c)
        assert len({round(c["map"]["y"]) for c in charts}) == 1, "one row"
        text = page.evaluate(PAGE_TEXT)
        assert text, "page text found"
        small = [t for t in text if t["fs"] < 20]
        assert not small, f"page text under 20 px: {small[:5]}"
        assert not page.evaluate("() => window.__alExceptions")
    finally:
        context.close()


def test_a_phone_gets_one_readable_map_per_row(browser, server):
    context, page = open_page(browser, server, "", 390, 844, mobile=True)
    try:
        charts = page.evaluate(MAPS)
        assert len(charts) == HEADS
        tops = [c["map"]["y"] for c in charts]
        assert tops == sorted(tops) and len(set(map(round, tops))) == HEADS, "one map per row"
        for i, c in enumerate(charts):
            assert c["map"]["w"] >= 250, f"head {i + 1} is {c['map']['w']:.0f} px wide"
            assert c["map"]["x"] >= 0 and c["map"]["x"] + c["map"]["w"] <= 390
            assert_labels_apart(c)
        for i in range(2):  # the toolbar of the first maps (it is the same for every map)
            page.locator(".st-key-heads_chart .js-plotly-plot").nth(i).scroll_into_view_if_needed()
            assert_toolbar_clear_of_title(page, i, page.evaluate(MAPS)[i])
        assert not page.evaluate("() => window.__alExceptions")
    finally:
        context.close()


# The permutation view's one chart: the boxes of its three heatmaps, and the bottom of its lowest tick label.
PERMUTATION_MAPS = """() => {
  const p = document.querySelector('.st-key-permutation_chart .js-plotly-plot');
  if (!p) return null;
  const boxes = [...p.querySelectorAll('g.hm image')].map((e) => e.getBoundingClientRect())
    .map((r) => ({x: r.x, y: r.y, w: r.width, h: r.height}));
  const lowest = Math.max(...[...p.querySelectorAll('.xtick text')].map((t) => t.getBoundingClientRect().bottom));
  return {boxes, lowest};
}"""


@contextlib.contextmanager
def projector(browser, url: str, query: str):
    """A fresh 1280 x 720 page on ``url/?presenter=true&query``, its script run finished; closed afterwards."""
    context = browser.new_context(viewport={"width": 1280, "height": 720}, device_scale_factor=1)
    context.set_default_timeout(60_000)
    context.add_init_script(WATCH_EXCEPTIONS)
    try:
        page = context.new_page()
        page.goto(f"{url}/?presenter=true&{query}")
        wait_idle(page)
        yield page
        assert not page.evaluate("() => window.__alExceptions")
    finally:
        context.close()


def test_presenter_mode_puts_the_three_permutation_maps_side_by_side_on_the_first_screen(browser, server):
    with projector(browser, server, "view=permutation") as page:
        page.wait_for_function(f"() => {{ const m = ({PERMUTATION_MAPS})(); return m && m.boxes.length === 3; }}")
        page.wait_for_timeout(500)
        drawn = page.evaluate(PERMUTATION_MAPS)
        boxes = sorted(drawn["boxes"], key=lambda b: b["x"])
        assert len({round(b["y"]) for b in boxes}) == 1, "one row"
        for a, b in itertools.pairwise(boxes):
            assert a["x"] + a["w"] <= b["x"], "side by side, not overlapping"
        assert all(b["y"] >= 0 and b["x"] + b["w"] <= 1280 for b in boxes)
        assert drawn["lowest"] <= 720, "the maps and their key labels on the first screen"


# The scaling figure's text in paper pixels: the limit labels ("one-hot", "uniform") and the "your d_k" labels.
SCALING_LABELS = """() => {
  const p = document.querySelector('.st-key-scaling_chart .js-plotly-plot');
  if (!p) return null;
  const box = (e) => { const r = e.getBoundingClientRect(); return {text: e.textContent, x: r.x, y: r.y,
                                                                     w: r.width, h: r.height}; };
  const limits = [...p.querySelectorAll('.annotation-text')].map(box)
    .filter((b) => b.text === 'one-hot' || b.text === 'uniform');
  const yours = [...p.querySelectorAll('.textpoint text')].map(box).filter((b) => b.text.startsWith('your d_k'));
  const ticks = [...p.querySelectorAll('.xtick text, .ytick text')]
    .map((t) => parseFloat(getComputedStyle(t).fontSize));
  return {limits, yours, ticks};
}"""


@pytest.mark.parametrize("query", ["n_heads=16", "d_model=512&n_heads=1", ""], ids=["d_k=4", "d_k=512", "d_k=16"])
def test_presenter_scaling_labels_do_not_overlap(browser, server, query):
    with projector(browser, server, f"view=scaling&{query}") as page:
        page.wait_for_function(f"() => {{ const l = ({SCALING_LABELS})(); return l && l.yours.length === 2; }}")
        page.wait_for_timeout(500)
        drawn = page.evaluate(SCALING_LABELS)
        assert len(drawn["limits"]) == 4
        for mine in drawn["yours"]:
            for limit in drawn["limits"]:
                assert not overlap(mine, limit), (mine, limit)
        assert min(drawn["ticks"]) >= 16, "axis tick labels >= 16 px"
