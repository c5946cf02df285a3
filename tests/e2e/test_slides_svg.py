"""Figures for slides, in chromium: in presenter mode a map's camera button downloads an SVG made in the browser,
named for the view and the settings, at the size the map is drawn on a 1280×720 projector."""

from __future__ import annotations

import re

import pytest

from bench.streamlit_server import wait_heatmaps, wait_idle
from tests.e2e.conftest import watched_page

pytestmark = pytest.mark.e2e

PROJECTOR = (1280, 720)


def test_a_map_s_camera_button_saves_an_svg_named_for_the_settings(server, browser):
    with watched_page(browser, PROJECTOR) as page:
        page.goto(f"{server}/?presenter=true&d_model=128&n_heads=4&causal=true&seed=7")
        wait_idle(page)
        wait_heatmaps(page, 4)
        chart = page.locator(".st-key-heads_chart .js-plotly-plot").nth(2)
        chart.hover()
        drawn = chart.locator(".main-svg").first.bounding_box()
        with page.expect_download() as info:
            chart.locator('.modebar-btn[data-title^="Download plot"]').click()
        download = info.value
        body = download.path().read_text(encoding="utf-8")
    assert download.suggested_filename == "heads_d128_h4_causal_seed7_heads_chart_3.svg"
    assert body.lstrip().startswith("<svg")
    size = re.search(r'<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"', body)
    assert size and abs(float(size[1]) - drawn["width"]) <= 2 and abs(float(size[2]) - drawn["height"]) <= 2
    assert "<text" in body  # labels stay text on a slide
