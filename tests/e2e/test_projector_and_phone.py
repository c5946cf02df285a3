"""Every view on a 1280 x 720 projector (presenter mode) and a 390 x 844 phone, measured in chromium.

Everything is read from what the browser drew: bounding boxes of the heatmap images and of every piece of
chart text, Plotly's toolbar, and the computed font size of every visible piece of page text. The geometry
helpers live in tests/e2e/dom.py; each view's check is a few lines. One page per view and size.
"""

from __future__ import annotations

import contextlib
import itertools
import math

import pytest

from bench.streamlit_server import wait_idle
from core.training.train import recommended
from dashboard.figures.grid import MASK_NOTE
from dashboard.figures.layout import PRESENTER_MIN_TICK, PRESENTER_MIN_TITLE
from dashboard.page.presenter import PAGE_TEXT_PX
from dashboard.views import VIEWS as ALL_VIEWS
from tests.conftest import require_minilm
from tests.e2e.conftest import watched_page
from tests.e2e.dom import (
    PAGE_TEXT,
    charts,
    cut_text,
    formulas_cut,
    overlap,
    text_overlaps,
    toolbar_overlaps,
    wait_charts_drawn,
)

pytestmark = pytest.mark.e2e

PROJECTOR = (1280, 720)
PHONE = (390, 844)
CHART_TEXT_PX = 14
"""On a projector, the least size of chart text other than ticks and titles (legends, notes, labels in a plot)."""
PHONE_MAP_PX = 250
"""On a phone, the least width of a map. These, the two sizes above, ``PAGE_TEXT_PX`` and the presenter minimums
are what the README promises; tests/test_readme.py reads its numbers from here."""
VIEWS = (
    "tokens",
    "heads",
    "model",
    "shapes",
    "permutation",
    "steps",
    "scaling",
    "positions",
    "summary",
    "cross",
    "kv_cache",
    "flash",
    "class",
    "contrast",
)
PHONE_VIEWS = tuple(v for v in VIEWS if v != "flash")
"""The flash view's block of scores is (T, B_c): a few keys wide by design (test_flash_fits_a_phone)."""
TABLES_ONLY = ("tokens", "shapes")
"""Views that draw tables, no chart."""
MINILM_VIEWS = ("heads", "model", "steps", "summary", "class", "contrast")
TRAIN = "view=train&task=induction"
"""The train view with the recommended induction run, loaded from its file: the maps, curves and replay."""
LESSON_2 = "view=heads&sentence=one+two+three+four+five+six+seven+eight+nine+ten&n_heads=8&d_model=512"
"""Lesson 2's own example: 10 tokens, 8 heads."""


PRESENTER_STYLE = """() => [...document.querySelectorAll('style')]
    .some((s) => s.textContent.includes('stMainBlockContainer'))"""
"""dashboard/page/presenter.py's style sheet is on the page (it can arrive after the script run has ended)."""


@contextlib.contextmanager
def opened(browser, url: str, query: str, size: tuple[int, int], *, presenter: bool, charts: bool = True):
    """A fresh page of ``size`` on ``url/?query`` (presenter mode or not), every chart drawn; closed afterwards.

    ``charts=False``: a view of tables only. A phone context is a touch device, as a phone is; exceptions on
    the page fail the test (``watched_page``).
    """
    with watched_page(browser, size) as page:
        page.goto(f"{url}/?{'presenter=true&' if presenter else ''}{query}")
        wait_idle(page)
        if presenter:
            page.wait_for_function(PRESENTER_STYLE)
        wait_charts_drawn(page, charts=charts)
        yield page


def small_text(drawn: list[dict], kinds: tuple[str, ...], least: float) -> list[tuple[str, float]]:
    """Chart texts of these kinds under ``least`` px."""
    return [(t["text"], t["fs"]) for c in drawn for t in c["texts"] if t["kind"] in kinds and t["fs"] < least]


def assert_projector_readable(page, *, least_chart_text: float = CHART_TEXT_PX) -> list[dict]:
    """The README's promises on a projector: page text >= ``PAGE_TEXT_PX`` (20), ticks >= ``PRESENTER_MIN_TICK``
    (16), titles >= ``PRESENTER_MIN_TITLE`` (22), nothing overprinted.

    Every other piece of chart text (legends, notes, labels in a plot) is at least ``least_chart_text``.
    """
    drawn = charts(page)
    page_text = page.evaluate(PAGE_TEXT)
    assert page_text, "page text found"
    assert not [t for t in page_text if t["fs"] < PAGE_TEXT_PX], f"page text under {PAGE_TEXT_PX} px"
    assert not small_text(drawn, ("xtick", "ytick"), PRESENTER_MIN_TICK), "axis tick labels too small"
    assert not small_text(drawn, ("title",), PRESENTER_MIN_TITLE), "panel titles too small"
    assert not small_text(drawn, ("text", "annotation", "legend"), least_chart_text), "chart text too small"
    assert not text_overlaps(drawn), "text over text"
    assert not drawn or not toolbar_overlaps(page, 0), "Plotly's toolbar over the first chart's text"
    assert not cut_text(page), "a label cut short"  # "Share with the cl…" beside a long heading
    return drawn


def assert_phone_readable(page, *, least_map_px: float = PHONE_MAP_PX) -> list[dict]:
    """On a phone: every chart inside the screen, every map at least ``least_map_px`` wide and alone in its row,
    no text over other text, the toolbar of the first two charts clear of their text, and every formula whole."""
    assert not formulas_cut(page), "a formula runs past the screen's edge"
    drawn = charts(page)
    for c in drawn:
        assert c["box"]["x"] >= 0 and c["box"]["x"] + c["box"]["w"] <= PHONE[0] + 0.5, (c["key"], c["box"])
    maps = [m for c in drawn for m in c["maps"]]
    for m in maps:
        assert m["w"] >= least_map_px, f"a map {m['w']:.0f} px wide"
    for a, b in itertools.combinations(maps, 2):
        assert a["y"] + a["h"] <= b["y"] + 0.5 or b["y"] + b["h"] <= a["y"] + 0.5, "one map per row"
    assert not text_overlaps(drawn), "text over text"
    for i in range(min(2, len(drawn))):
        assert not toolbar_overlaps(page, i), f"Plotly's toolbar over chart {i + 1}'s text"
    assert not cut_text(page), "a label cut short"
    return drawn


def heat_charts(drawn: list[dict], key: str) -> list[dict]:
    """The charts of one grid of maps (keys ``<key>_1``, ``<key>_2``...), in page order."""
    return [c for c in drawn if c["key"].rpartition("_")[0] == key and c["maps"]]


# ---- every view, both sizes --------------------------------------------------------------------------------


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_reads_on_a_projector(browser, server, view):
    with opened(browser, server, f"view={view}", PROJECTOR, presenter=True, charts=view not in TABLES_ONLY) as page:
        assert_projector_readable(page)


@pytest.mark.parametrize("view", PHONE_VIEWS)
def test_every_view_fits_a_phone(browser, server, view):
    with opened(browser, server, f"view={view}", PHONE, presenter=False, charts=view not in TABLES_ONLY) as page:
        assert_phone_readable(page)


def test_flash_fits_a_phone(browser, server):
    """The block of scores keeps square cells, so it is B_c keys wide: every cell at least 30 px, the block
    and the running-state chart one above the other, and everything else as on every other view."""
    with opened(browser, server, "view=flash&block_size=2&block=2", PHONE, presenter=False) as page:
        drawn = assert_phone_readable(page, least_map_px=0)
        [block] = [c for c in drawn if c["key"] == "flash_block_chart"]
        [scores] = block["maps"]
        assert scores["w"] / 2 >= 30, f"cells {scores['w'] / 2:.0f} px wide"
        [state] = [c for c in drawn if c["key"] == "flash_state_chart"]
        assert state["box"]["y"] >= block["box"]["y"] + block["box"]["h"] - 0.5, "stacked, not side by side"
        assert state["box"]["w"] >= 300


@pytest.mark.parametrize("view", MINILM_VIEWS)
def test_minilm_views_read_on_a_projector(browser, server, view):
    require_minilm()
    with opened(browser, server, f"view={view}&weights=minilm", PROJECTOR, presenter=True) as page:
        assert_projector_readable(page)


@pytest.mark.parametrize("view", MINILM_VIEWS)
def test_minilm_views_fit_a_phone(browser, server, view):
    """The model view shows one layer at a time on a phone (``one_layer``): 12 heads of 6 layers in 360 px
    would be 25 px maps."""
    require_minilm()
    one_layer = "&one_layer=true" if view == "model" else ""
    with opened(browser, server, f"view={view}&weights=minilm{one_layer}", PHONE, presenter=False) as page:
        assert_phone_readable(page)


def test_the_train_view_reads_on_a_projector_and_fits_a_phone(browser, server):
    with opened(browser, server, TRAIN, PROJECTOR, presenter=True) as page:
        assert_projector_readable(page)
    with opened(browser, server, TRAIN, PHONE, presenter=False) as page:
        assert_phone_readable(page)


def test_the_minilm_model_overview_has_no_small_or_overprinted_text(browser, server):
    """All 72 heads at once: outer labels only (heads "1".."12", "L1".."L6"), each >= 14 px on a projector."""
    require_minilm()
    with opened(browser, server, "view=model&weights=minilm", PROJECTOR, presenter=True) as page:
        drawn = assert_projector_readable(page)
        [overview] = [c for c in drawn if c["key"] == "model_chart"]
        assert len(overview["maps"]) == 72
        assert {t["text"] for t in overview["texts"] if t["kind"] == "title"} >= {"12", "L6"}
    with opened(browser, server, "view=model&weights=minilm", PHONE, presenter=False) as page:
        drawn = charts(page)
        [overview] = [c for c in drawn if c["key"] == "model_chart"]
        assert min(m["w"] for m in overview["maps"]) > 0
        assert not text_overlaps(drawn), "text over text"


# ---- the first screen of a projector -----------------------------------------------------------------------


def assert_key_labels_apart(chart: dict, n: int) -> None:
    """All ``n`` tokens labelled on the map's key axis, the labels' centres a font size apart across the text."""
    keys = [t for t in chart["texts"] if t["kind"] == "xtick"]
    assert len(keys) == n, f"{len(keys)} of {n} key labels"
    across = math.sin(math.radians(60))
    for a, b in itertools.pairwise(sorted(keys, key=lambda t: t["x"] + t["w"])):
        pitch = (b["x"] + b["w"]) - (a["x"] + a["w"])  # the labels' right ends sit at their tick marks
        assert pitch * across >= 0.86 * max(a["fs"], b["fs"]), (a["text"], b["text"])


def first_screen(page, key: str, n_maps: int, on_screen: int | None = None) -> list[dict]:
    """The maps of grid ``key``: all ``n_maps`` drawn, the first ``on_screen`` (default: all) and their labels
    inside the 1280 x 720 screen."""
    maps = heat_charts(charts(page), key)
    assert len(maps) == n_maps
    for i, c in enumerate(maps[:on_screen]):
        [m] = c["maps"]
        lowest = max(t["y"] + t["h"] for t in c["texts"])
        assert m["y"] >= 0 and lowest <= PROJECTOR[1], f"map {i + 1} and its labels on the first screen"
        assert m["x"] >= 0 and m["x"] + m["w"] <= PROJECTOR[0]
    return maps


def test_lesson_2_fits_every_head_and_every_key_label_on_the_first_screen(browser, server):
    with opened(browser, server, LESSON_2, PROJECTOR, presenter=True) as page:
        maps = first_screen(page, "heads_chart", 8)
        bottom_row = [c for c in maps if c["maps"][0]["y"] == max(m["maps"][0]["y"] for m in maps)]
        assert len(bottom_row) == 4, "two rows of four"
        for c in bottom_row:  # the upper row shares the keys: the labels under the lower row name them
            assert_key_labels_apart(c, 10)
        for c in maps:
            assert len([t for t in c["texts"] if t["kind"] == "ytick"]) == 10, "every query labelled"
            assert c["maps"][0]["w"] >= 160, "cells of at least 16 px"
        assert_projector_readable(page)


def test_the_default_heads_fit_the_first_screen_in_one_row(browser, server):
    with opened(browser, server, "view=heads", PROJECTOR, presenter=True) as page:
        maps = first_screen(page, "heads_chart", 4)
        assert len({round(c["maps"][0]["y"]) for c in maps}) == 1, "one row"
        for c in maps:
            assert_key_labels_apart(c, 8)
        for i in range(len(maps)):
            assert not toolbar_overlaps(page, i), f"Plotly's toolbar over map {i + 1}'s title"


def test_the_minilm_example_buttons_leave_the_maps_on_the_first_screen(browser, server):
    """12 heads are three rows of four: the first row starts right under the view's line and its switch."""
    require_minilm()
    with opened(browser, server, "view=heads&weights=minilm", PROJECTOR, presenter=True) as page:
        maps = first_screen(page, "heads_chart", 12, on_screen=4)
        assert max(c["box"]["y"] for c in maps[:4]) < PROJECTOR[1] / 3, "nothing above the maps but the view's line"


def test_trained_induction_says_once_what_the_hatching_means(browser, server):
    """The recommended induction model's 24 x 24 causal maps (one per head of layer 1): the note is one line (it was
    over every map), beside the colour bar under the maps, and the maps and their labels fill the first screen (a
    line above them pushed the last key labels 3 px off it; measured before anything scrolls the page)."""
    heads = recommended("induction").model.n_heads
    query = "view=heads&weights=trained&task=induction"
    with opened(browser, server, query, PROJECTOR, presenter=True) as page:
        maps = first_screen(page, "heads_chart", heads)
        note = page.get_by_text(MASK_NOTE, exact=True)
        assert note.count() == 1
        assert note.bounding_box()["y"] >= max(c["box"]["y"] + c["box"]["h"] for c in maps), "under the maps"
        drawn = assert_projector_readable(page)
        assert not [t for c in drawn for t in c["texts"] if t["text"].startswith("hatched grey")], "a note in a chart"


def test_every_view_is_one_row_of_the_view_bar_on_a_projector(browser, server):
    """Two rows of view buttons push every view's maps below the fold the layout plans for (lesson 2's lower row of
    maps ended 2 px below the screen with 15 views at Streamlit's padding)."""
    with opened(browser, server, "view=heads", PROJECTOR, presenter=True) as page:
        boxes = page.evaluate(
            "() => [...document.querySelectorAll('.st-key-view button')].filter((b) => b.innerText)"
            ".map((b) => { const r = b.getBoundingClientRect(); return [r.y, r.x + r.width]; })"
        )
        assert len(boxes) == len(ALL_VIEWS)
        assert len({round(y) for y, _ in boxes}) == 1, "one row"
        assert max(right for _, right in boxes) <= PROJECTOR[0]


def test_the_class_view_s_twelve_maps_and_their_verdict_are_on_the_first_screen(browser, server):
    """12 sentences are three rows of four small multiples (tokens in the hover), the pooled verdict beside them."""
    with opened(browser, server, "view=class", PROJECTOR, presenter=True) as page:
        maps = first_screen(page, "class_chart", 12)
        assert len({round(c["maps"][0]["y"]) for c in maps}) == 3, "three rows"
        assert len({round(c["maps"][0]["x"]) for c in maps}) == 4, "four to a row"
        verdict = page.get_by_text("across 12 sentences").bounding_box()
        assert verdict["y"] + verdict["height"] <= PROJECTOR[1]
        assert verdict["x"] + verdict["width"] <= min(c["maps"][0]["x"] for c in maps), "beside the maps"


def test_the_class_view_on_a_phone_is_one_map_per_row_under_its_verdict(browser, server):
    with opened(browser, server, "view=class", PHONE, presenter=False) as page:
        maps = heat_charts(assert_phone_readable(page), "class_chart")
        assert len(maps) == 12
        verdict = page.get_by_text("across 12 sentences").bounding_box()
        assert verdict["y"] < maps[0]["box"]["y"], "the verdict first"


def test_the_contrast_view_s_three_maps_sit_side_by_side_on_the_first_screen(browser, server):
    with opened(browser, server, "view=contrast", PROJECTOR, presenter=True) as page:
        maps = sorted((c["maps"][0] for c in first_screen(page, "contrast_chart", 3)), key=lambda m: m["x"])
        tops = [m["y"] for m in maps]  # the difference is planned apart (its own labels): its top may round 1 px off
        assert max(tops) - min(tops) <= 2, "one row"
        for a, b in itertools.pairwise(maps):
            assert a["x"] + a["w"] <= b["x"], "side by side, not overlapping"


def test_the_three_permutation_maps_sit_side_by_side_on_the_first_screen(browser, server):
    with opened(browser, server, "view=permutation", PROJECTOR, presenter=True) as page:
        maps = sorted((c["maps"][0] for c in first_screen(page, "permutation_chart", 3)), key=lambda m: m["x"])
        assert len({round(m["y"]) for m in maps}) == 1, "one row"
        for a, b in itertools.pairwise(maps):
            assert a["x"] + a["w"] <= b["x"], "side by side, not overlapping"


def test_the_heads_on_a_phone_are_one_readable_map_per_row(browser, server):
    with opened(browser, server, "view=heads", PHONE, presenter=False) as page:
        maps = heat_charts(assert_phone_readable(page), "heads_chart")
        assert len(maps) == 4
        for c in maps:
            assert_key_labels_apart(c, 8)
            assert len([t for t in c["texts"] if t["kind"] == "ytick"]) == 8


@pytest.mark.parametrize("query", ["n_heads=16", "d_model=512&n_heads=1", ""], ids=["d_k=4", "d_k=512", "d_k=16"])
def test_presenter_scaling_labels_do_not_overlap(browser, server, query):
    with opened(browser, server, f"view=scaling&{query}", PROJECTOR, presenter=True) as page:
        drawn = [c for c in charts(page) if c["key"].startswith("scaling_chart_")]
        limits = [t for c in drawn for t in c["texts"] if t["text"] in ("one-hot", "uniform")]
        yours = [t for c in drawn for t in c["texts"] if t["text"].startswith("your d_k")]
        assert len(limits) == 4 and len(yours) == 2
        assert not [(a["text"], b["text"]) for a in yours for b in limits if overlap(a, b)]
        assert not small_text(drawn, ("xtick", "ytick"), PRESENTER_MIN_TICK), "axis tick labels too small"


# ---- extremes: one token, 62 tokens, 16 heads; a tiny trained model's overview -----------------------------------

LONG = "+".join(("the cat sat on the mat and then the dog ran to the park where birds sang " * 5).split()[:62])
"""62 tokens, near the 64 the views take."""
EXTREMES = {
    "flash-1-token": "view=flash&sentence=hello",
    "flash-62-tokens": f"view=flash&sentence={LONG}",
    "kv_cache-1-token": "view=kv_cache&sentence=hello",
    "kv_cache-62-tokens": f"view=kv_cache&sentence={LONG}",
    "kv_cache-16-heads": "view=kv_cache&n_heads=16",
    "model-trained-induction": "view=model&weights=trained&task=induction",
}


@pytest.mark.parametrize("case", EXTREMES)
def test_the_extremes_read_on_a_projector(browser, server, case):
    with opened(browser, server, EXTREMES[case], PROJECTOR, presenter=True) as page:
        assert_projector_readable(page)


@pytest.mark.parametrize("case", EXTREMES)
def test_the_extremes_fit_a_phone(browser, server, case):
    """As on every view, except that a flash block keeps square cells (B_c keys wide: ``test_flash_fits_a_phone``)
    and one token's map is one cell (at most ``CELL_PX`` wide): neither is held to the 250 px of a map."""
    query = EXTREMES[case]
    narrow = case.startswith("flash") or "sentence=hello" in query
    with opened(browser, server, query, PHONE, presenter=False) as page:
        assert_phone_readable(page, least_map_px=0 if narrow else PHONE_MAP_PX)


def test_sixteen_kv_heads_draw_one_kv_head_s_cache_on_a_phone(browser, server):
    """16 maps and 32 cache charts were a 19,000 px page on a phone: now the 16 maps and one K/V head's K and V."""
    with opened(browser, server, "view=kv_cache&n_heads=16", PHONE, presenter=False) as page:
        drawn = charts(page)
        assert len(heat_charts(drawn, "cache_rows_chart")) == 16
        assert len([c for c in drawn if c["key"].startswith("cache_chart_")]) == 2
        assert page.locator(".st-key-cache_head").count() == 1
