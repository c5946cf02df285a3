"""Lesson 2's downloaded tour opens in chromium with no server and no network, and every step's charts draw.

The file is written to disk and opened from there (``file://``) in a context whose every request is aborted
(``page.route``): plotly.js and the figures must come from the file itself. Each step's section says how many
charts it holds; every one of them must be drawn (an SVG from plotly.js, heatmaps as images), and no request may
have been tried but the file's own.
"""

from __future__ import annotations

import pytest

from bench.streamlit_server import chromium
from dashboard.classroom.tour_export import tour_html
from tests.conftest import require_chromium

pytestmark = pytest.mark.e2e

LESSON_2 = "lesson-2-heads-and-shapes"
DRAWN = """() => [...document.querySelectorAll('section')].map((s) => ({
    id: s.id,
    expected: Number(s.dataset.charts),
    drawn: [...s.querySelectorAll('.js-plotly-plot')].filter((d) => d._fullLayout && d.querySelector('svg.main-svg'))
        .length,
    heatmaps: s.querySelectorAll('g.hm image').length,
}))"""


def test_lesson_2_draws_every_chart_with_the_network_blocked(tmp_path):
    path = tmp_path / f"{LESSON_2}.html"
    path.write_text(tour_html(LESSON_2), encoding="utf-8")
    tried: list[str] = []
    errors: list[str] = []
    with chromium(require_chromium()) as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))

        def block(route) -> None:
            if route.request.url == path.as_uri():
                route.continue_()  # the file itself, from the disk
                return
            tried.append(route.request.url)
            route.abort()

        context.route("**/*", block)  # every request but the file's own fails
        page.goto(path.as_uri())
        page.wait_for_function(f"() => ({DRAWN})().every((s) => s.drawn === s.expected)", timeout=120_000)
        sections = page.evaluate(DRAWN)
        context.close()
    assert not errors, errors
    assert not tried, f"the file asked the network for {tried[:5]}"
    assert len(sections) == 7 and all(s["drawn"] == s["expected"] for s in sections)
    by_id = {s["id"]: s for s in sections}
    assert by_id["step-1"]["heatmaps"] >= 2 and by_id["step-2"]["heatmaps"] >= 8  # the heads' maps, as images
    assert sum(s["expected"] for s in sections) > 30
