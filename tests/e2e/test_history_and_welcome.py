"""In chromium: the browser's Back and Forward move between views and tour steps inside the app, one entry each,
and the first screen's welcome fits a projector and a phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from bench.streamlit_server import APP_IDLE, SKELETON, wait_idle
from dashboard.classroom.tours import load_tours
from dashboard.views import VIEWS
from tests.e2e.conftest import watched_page
from tests.e2e.dom import choose_segment, chosen_segment, cut_text, input_value, toggle_on, widget

pytestmark = pytest.mark.e2e

ENTRIES = "() => history.length"


def history_move(page, direction: str) -> None:
    """Press the browser's Back or Forward and wait for the rerun it starts."""
    wait_idle(page, page.go_back if direction == "back" else page.go_forward)


def test_back_and_forward_move_between_views(server, page):
    page.goto(server + "/")
    widget(page, "view").wait_for()
    wait_idle(page)
    start = page.evaluate(ENTRIES)
    first_url = page.url
    choose_segment(page, "view", "steps")
    choose_segment(page, "view", "shapes")
    assert page.evaluate(ENTRIES) == start + 2, "one history entry per view change"
    assert "view=shapes" in page.url
    history_move(page, "back")  # from the second view: the first, inside the app
    assert page.url.startswith(server) and "view=steps" in page.url
    assert chosen_segment(page, "view") == "steps"
    page.get_by_text(VIEWS["steps"].teaches).first.wait_for()  # the steps view is drawn, not only selected
    history_move(page, "back")
    assert page.url == first_url and chosen_segment(page, "view") == "heads"
    page.locator(".st-key-heads_chart").first.wait_for()
    history_move(page, "forward")
    assert "view=steps" in page.url and chosen_segment(page, "view") == "steps"
    history_move(page, "forward")
    assert "view=shapes" in page.url and chosen_segment(page, "view") == "shapes"
    assert page.evaluate(ENTRIES) == start + 2, "moving through history adds no entry"


def _next(page) -> None:
    wait_idle(page, widget(page, "tour_next").locator("button").first.click)


def test_back_and_forward_retrace_tour_steps(server, page):
    page.goto(server + "/?tour=lesson-1-one-head")
    widget(page, "tour_bar").wait_for()
    wait_idle(page)
    start = page.evaluate(ENTRIES)
    _next(page)  # step 2: steps view
    _next(page)  # step 3: heads, values on
    _next(page)  # step 4: the causal mask
    assert page.evaluate(ENTRIES) == start + 3, "one history entry per tour step"
    assert chosen_segment(page, "tour_step") == "4" and toggle_on(page, "causal")
    history_move(page, "back")
    assert chosen_segment(page, "tour_step") == "3" and chosen_segment(page, "view") == "heads"
    assert toggle_on(page, "values") and not toggle_on(page, "causal")
    history_move(page, "back")
    assert chosen_segment(page, "tour_step") == "2" and chosen_segment(page, "view") == "steps"
    assert input_value(page, "sentence") == "the robot opens the door"
    history_move(page, "forward")
    assert chosen_segment(page, "tour_step") == "3" and toggle_on(page, "values")
    _next(page)  # a step after going back: a new entry, as a link followed after Back is
    assert chosen_segment(page, "tour_step") == "4" and toggle_on(page, "causal")
    history_move(page, "back")
    assert chosen_segment(page, "tour_step") == "3" and not toggle_on(page, "causal")


def test_the_next_buttons_tooltip_leaves_the_note_readable(server, page):
    """After a click the pointer rests on Next: nothing may then cover the step's note."""
    page.goto(server + "/?tour=lesson-1-one-head")
    widget(page, "tour_bar").wait_for()
    _next(page)
    page.mouse.move(0, 0)
    button = widget(page, "tour_next").locator("button").first
    button.hover()
    page.wait_for_timeout(1500)  # longer than Streamlit's tooltip delay
    note = widget(page, "tour_bar").get_by_text("One head, step by step").first
    box = note.bounding_box()
    covering = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('.st-key-tour_bar') !== null",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert covering, "the note's middle is the tour bar's own text, not a tooltip over it"
    assert page.locator("[data-testid='stTooltipContent']").count() == 0


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["projector", "phone"])
def test_the_welcome_fits_without_horizontal_overflow(browser, server, size):
    phone = size[0] < 500
    with watched_page(browser, size) as page:
        page.goto(server + "/")
        wait_idle(page)  # the run has ended and every element is drawn: the welcome's box is of all of it
        card = widget(page, "welcome")
        box = card.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= size[0], "the welcome is inside the screen"
        assert box["y"] + box["height"] <= size[1], "the whole welcome on the first screen"
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        assert not cut_text(page), "every tour's title whole (a row of buttons cut the long ones on a phone)"
        buttons = card.locator("[data-testid^='stBaseButton']").filter(visible=True).all()
        assert len(buttons) == len(load_tours()) + 3, "every tour, presenter mode, a room, close"
        for button in buttons:
            b = button.bounding_box()
            assert b["x"] >= box["x"] and b["x"] + b["width"] <= box["x"] + box["width"], "every way in inside it"
        if not phone:  # the live page starts on the first screen: the view bar, under the welcome
            view_bar = widget(page, "view").bounding_box()
            assert view_bar["y"] + view_bar["height"] <= size[1]


def test_wait_idle_waits_for_elements_whose_code_comes_late(browser, server):
    """The buttons' code is a chunk the page fetches when it first draws a button: held back here, the run ends
    with the welcome's buttons still placeholders, and ``wait_idle`` must not return until they are drawn (on CI a
    slow chunk made the test above count 0 buttons)."""
    held = []
    with watched_page(browser) as page:
        page.route("**/static/js/Button.*.js", lambda route: held.append(route))
        page.goto(server + "/")
        page.wait_for_selector(APP_IDLE)  # the script state says the run is over
        card = widget(page, "welcome")
        assert held and card.locator("[data-testid^='stBaseButton']").count() == 0, "the buttons' code is held"
        with pytest.raises(PlaywrightTimeoutError):
            wait_idle(page, timeout=3)  # idle, but placeholders: not drawn yet
        for route in held:
            route.continue_()
        wait_idle(page)
        assert card.locator("[data-testid^='stBaseButton']").filter(visible=True).count() == len(load_tours()) + 3
        assert page.locator(SKELETON).count() == 0


def wait_view(page, slug: str, timeout: float = 30) -> None:
    """Until ``page`` shows view ``slug``: its line of what the view teaches. A following page has no view bar
    (``dashboard/state/followed.py``), and it redraws when the teacher's change reaches it."""
    expect(page.get_by_text(VIEWS[slug].teaches, exact=True).first).to_be_visible(timeout=timeout * 1000)


def test_a_room_from_the_welcome_and_a_follower_without_history(server, browser, page):
    """The welcome's "Start a room" opens one; a student following it keeps one history entry while the teacher's
    view changes reach their page."""
    page.goto(server + "/")
    widget(page, "welcome").wait_for()
    wait_idle(page, widget(page, "welcome_room").locator("button").first.click)
    page.get_by_role("dialog").wait_for()
    code = re.search(r"room=([A-Z0-9]{6})", page.url).group(1)
    page.keyboard.press("Escape")
    assert widget(page, "welcome").count() == 0, "a way in was taken: the welcome is gone"
    with watched_page(browser) as student:
        student.goto(f"{server}/?room={code}")
        wait_view(student, "heads")
        wait_idle(student)
        entries, address = student.evaluate(ENTRIES), student.url
        choose_segment(page, "view", "steps")
        wait_view(student, "steps")
        choose_segment(page, "view", "shapes")
        wait_view(student, "shapes")
        assert student.evaluate(ENTRIES) == entries, "the teacher's changes add nothing to a follower's history"
        assert student.url == address
