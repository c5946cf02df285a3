"""Cross-attention, toy weights, downloads and presenter mode in a real browser, one interaction each.

What AppTest cannot see: bound widgets writing their value into the browser's URL
(Streamlit does that in the frontend), a button callback's value reaching the URL,
the files a click actually downloads, Plotly's own PNG button, and the font size
plotly.js draws. Every test also fails on any stException or page error (conftest.py).
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.streamlit_server import HEADS_CHART, wait_heatmaps, wait_idle
from core import run, tokenize
from dashboard.page.downloads import DOWNLOADS_LABEL
from dashboard.state.settings import DEFAULTS
from dashboard.views.cross import DEFAULT_SOURCE
from tests.e2e.conftest import watched_page
from tests.e2e.dom import (
    choose_segment,
    chosen_segment,
    flip_toggle,
    heads_z,
    input_value,
    open_expander,
    toggle_on,
    type_text,
    widget,
)

pytestmark = pytest.mark.e2e

CROSS_CHART = ".st-key-cross_chart .js-plotly-plot"


def open_app(page, url: str, query: str = "") -> None:
    page.goto(f"{url}/?{query}" if query else url)
    wait_idle(page)


def wait_grids(page, chart: str, shape: tuple[int, int], n: int, timeout: float = 60) -> list[np.ndarray]:
    """Wait until ``chart`` shows ``n`` drawn weight maps of ``shape``; return them."""
    page.wait_for_function(
        """([chart, n, rows, cols]) => {
            const maps = [...document.querySelectorAll(chart + ' g.hm')]
                .filter((g) => g.querySelector('image') && g.__data__ && g.__data__[0].trace.coloraxis)
                .map((g) => g.__data__[0].z);
            return maps.length === n && maps.every((z) => z.length === rows && z[0].length === cols);
        }""",
        arg=[chart, n, *shape],
        polling="raf",
        timeout=timeout * 1000,
    )
    return heads_z(page, chart)


def test_cross_view_draws_t_q_by_t_k_maps_and_follows_a_new_source(page, server):
    open_app(page, server, "view=cross")
    queries = tokenize(DEFAULTS.sentence)
    grids = wait_grids(page, CROSS_CHART, (len(queries), len(tokenize(DEFAULT_SOURCE))), DEFAULTS.config.n_heads)
    for g in grids:
        np.testing.assert_allclose(g.sum(axis=1), 1.0, atol=1e-5)

    type_text(page, "source", "un deux trois")
    grids = wait_grids(page, CROSS_CHART, (len(queries), 3), DEFAULTS.config.n_heads)
    assert "source=un+deux+trois" in page.url or "source=un%20deux%20trois" in page.url
    expected = run(queries, DEFAULTS.config, source=["un", "deux", "trois"]).trace.weights
    for g, w in zip(grids, expected, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)  # float32 on the wire

    flip_toggle(page, "causal")
    grids = wait_grids(page, CROSS_CHART, (len(queries), 3), DEFAULTS.config.n_heads)
    future = np.triu(np.ones((len(queries), 3), dtype=bool), k=1)  # top-left aligned tril
    assert all(np.array_equal(np.isnan(g), future) for g in grids)
    assert page.get_by_text("A translation decoder normally uses no mask here").is_visible()


def test_toy_weights_choice_changes_the_pattern_and_the_fix_sets_learned_positions(page, server):
    open_app(page, server)
    wait_heatmaps(page, DEFAULTS.config.n_heads)
    t = len(tokenize(DEFAULTS.sentence))

    choose_segment(page, "weights", "identity")
    assert "weights=identity" in page.url
    for g in heads_z(page):
        assert set(np.argsort(g[0])[-2:]) == {0, 3}  # "the" at 0 looks at itself and its twin at 3

    choose_segment(page, "weights", "previous")
    fix = widget(page, "use_learned").get_by_role("button")
    fix.wait_for(state="visible")
    wait_idle(page, fix.click)
    assert chosen_segment(page, "positional") == "learned"
    page.wait_for_function("() => location.search.includes('positional=learned')")
    assert widget(page, "use_learned").count() == 0
    wait_heatmaps(page, DEFAULTS.config.n_heads)
    for g in heads_z(page):
        assert (g[np.arange(1, t), np.arange(t - 1)] > 0.5).all()  # the sub-diagonal: query i on key i - 1


def test_downloads_give_the_numbers_on_the_page_and_the_png_button_stays(page, server, tmp_path: Path):
    open_app(page, server, "sentence=a+%3D+b+a&n_heads=2&causal=true")
    wait_heatmaps(page, 2)
    tokens = tokenize("a = b a")
    config = replace(DEFAULTS.config, n_heads=2, causal=True)
    expected = run(tokens, config).trace.weights  # (2, 4, 4) float64
    assert widget(page, "heads_csv").count() == 0  # drawn only once their expander is open
    open_expander(page, DOWNLOADS_LABEL)

    with page.expect_download() as csv_download:
        widget(page, "heads_csv").get_by_role("button").click()
    assert csv_download.value.suggested_filename == "heads_d64_h2_causal_seed18_weights.csv"
    data = Path(csv_download.value.path()).read_bytes()
    back = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig", dtype={"query_token": str, "key_token": str})
    head, q, k = back["head"].to_numpy() - 1, back["query_position"].to_numpy(), back["key_position"].to_numpy()
    np.testing.assert_array_equal(back["weight"].to_numpy(), expected[head, q, k])  # bit for bit
    assert "'=" in set(back["query_token"]) and "=" not in set(back["query_token"])  # formula start quoted

    with page.expect_download() as npz_download:
        widget(page, "heads_npz").get_by_role("button").click()
    assert npz_download.value.suggested_filename == "heads_d64_h2_causal_seed18_trace.npz"
    with np.load(npz_download.value.path(), allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["weights"], expected)
        assert list(npz["tokens"]) == tokens and npz["mask"].shape == (4, 4)

    first_map = page.locator(HEADS_CHART).first  # the heads view draws one chart per head
    first_map.hover()
    png = first_map.locator(".modebar-btn[data-title='Download plot as a PNG' i]")
    with page.expect_download() as png_download:
        png.click()
    png_name = png_download.value.suggested_filename  # the settings the other files name, and which chart
    assert png_name.startswith("heads_d64_h2_causal_seed18_") and png_name.endswith("_1.png"), png_name
    assert Path(png_download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


TICK_FONT_PX = "(chart) => parseFloat(getComputedStyle(document.querySelector(chart + ' .ytick text')).fontSize)"


def _tick_font_px(page, chart: str = HEADS_CHART) -> float:
    """The font size plotly.js drew the first y tick label with, in CSS pixels."""
    return page.evaluate(TICK_FONT_PX, chart)


def test_presenter_mode_draws_larger_type_and_is_kept_in_the_link(page, server, browser):
    open_app(page, server)
    wait_heatmaps(page, DEFAULTS.config.n_heads)
    normal = _tick_font_px(page)

    flip_toggle(page, "presenter")
    assert toggle_on(page, "presenter")
    page.wait_for_function("() => location.search.includes('presenter=true')")
    page.wait_for_function(f"(chart) => ({TICK_FONT_PX})(chart) > {normal}", arg=HEADS_CHART)
    large = _tick_font_px(page)
    assert large >= normal * 1.4
    link = page.url

    with watched_page(browser) as other:  # a student's own session, opened from the link
        open_app(other, link)
        wait_heatmaps(other, DEFAULTS.config.n_heads)
        assert toggle_on(other, "presenter")
        assert _tick_font_px(other) == large
        assert input_value(other, "sentence") == DEFAULTS.sentence
