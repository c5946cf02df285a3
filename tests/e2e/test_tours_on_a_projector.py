"""Every step of every tour on a 1280 x 720 projector in presenter mode, walked with Next as a lecturer does.

At each step: the tour's bar stands in for the view bar and the view's line and ends within the 192 px they took
(``figures/layout.PRESENTER_FOLD_PX`` plans the maps under them), the figure the step's note is about
(``Step.figure``, or the page's first map) is wholly on the first screen (only its first ``rows_on_screen`` rows
where the note says the rest is below), and the page reads as every view must on a projector
(``test_projector_and_phone.assert_projector_readable``).
"""

from __future__ import annotations

import pytest

from bench.streamlit_server import wait_idle
from dashboard.classroom.tours import load_tours
from dashboard.page.presenter import PAGE_TEXT_PX
from tests.conftest import require_minilm
from tests.e2e.conftest import watched_page
from tests.e2e.dom import chosen_segment, figure_parts, first_map_key, wait_charts_drawn, widget
from tests.e2e.test_projector_and_phone import PRESENTER_STYLE, PROJECTOR, assert_projector_readable

pytestmark = pytest.mark.e2e

TOURS = load_tours()
BAR_PX = 192
"""What Streamlit's header, the view bar and the view's line took at 1280 x 720: the tour's bar ends within it."""
LINE_PX = 1.6 * PAGE_TEXT_PX + 1
"""One line of page text on a projector (Streamlit's line height is 1.6)."""
TABLES = ("tokens", "shapes")
"""Views that draw tables, no chart."""


def off_screen(parts: list[dict]) -> list[dict]:
    """The boxes that are not wholly inside the 1280 x 720 screen (half a pixel of rounding allowed)."""
    width, height = PROJECTOR
    return [
        b
        for b in parts
        if b["x"] < -0.5 or b["y"] < -0.5 or b["x"] + b["w"] > width + 0.5 or b["y"] + b["h"] > height + 0.5
    ]


def check_step(page, slug: str, number: int) -> None:
    step = TOURS[slug].steps[number - 1]
    where = f"{slug} step {number}"
    view = step.settings.get("view", "heads")
    wait_charts_drawn(page, charts=view not in TABLES and not step.settings.get("quiz"))
    bar = widget(page, "tour_bar").bounding_box()
    assert bar["y"] + bar["height"] <= BAR_PX, f"{where}: the tour's bar ends at {bar['y'] + bar['height']:.0f} px"
    assert widget(page, "view").count() == 0, f"{where}: the view bar is drawn too"
    key = step.figure or first_map_key(page)
    parts = figure_parts(page, key, step.rows_on_screen)
    assert parts, f"{where}: {key} drew nothing"
    outside = off_screen(parts)
    assert not outside, f"{where}: {len(outside)} parts of {key} off the first screen, e.g. {outside[0]}"
    assert_projector_readable(page)


@pytest.mark.parametrize("slug", list(TOURS))
def test_every_step_shows_its_figure_on_the_first_screen(browser, server, slug):
    if slug == "what-heads-learn":
        require_minilm()
    tour = TOURS[slug]
    with watched_page(browser, PROJECTOR) as page:
        page.goto(f"{server}/?presenter=true&tour={slug}")
        wait_idle(page)
        page.wait_for_function(PRESENTER_STYLE)
        for number in range(1, len(tour.steps) + 1):
            assert chosen_segment(page, "tour_step") == str(number)
            check_step(page, slug, number)
            if number < len(tour.steps):
                wait_idle(page, widget(page, "tour_next").locator("button").first.click)


def test_the_note_is_one_line_and_whole_in_its_popover(browser, server):
    """The bar's line holds the step's title and its note cut to one line; the popover beside Next has all of it."""
    slug = "lesson-2-heads-and-shapes"
    step = TOURS[slug].steps[2]  # the longest note of the tour
    with watched_page(browser, PROJECTOR) as page:
        page.goto(f"{server}/?presenter=true&tour={slug}&tour_step=3")
        wait_idle(page)
        page.wait_for_function(PRESENTER_STYLE)
        line = widget(page, "tour_line").locator("p").first
        assert line.inner_text().startswith(f"3. {step.title}")
        box = line.bounding_box()
        assert box["height"] <= LINE_PX, f"the note's line is {box['height']:.0f} px tall"
        assert line.evaluate("(p) => p.scrollWidth > p.clientWidth"), "this note is longer than its line: cut"
        widget(page, "tour_note").locator("button").first.click()  # opens in the browser: no script run
        whole = page.get_by_test_id("stPopoverBody")
        whole.wait_for()
        text = whole.inner_text()
        assert step.note[:30] in text and step.note[-30:] in text
        assert whole.get_by_role("button", name="End tour").count() == 1
