"""A room in chromium: one teacher page and two student pages on one server.

The teacher starts a room and changes a setting: both students' pages follow by their own polling (the room's
version, every second), within 2 s plus one redraw. The room's quiz, end to end, is
tests/e2e/test_room_quiz_in_browser.py.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page

from bench.streamlit_server import wait_idle
from dashboard.page.common import CODE_LABEL
from tests.conftest import require_minilm
from tests.e2e.conftest import watched_page
from tests.e2e.dom import charts, choose_segment, chosen_segment, open_expander, wait_charts_drawn, widget
from tests.e2e.test_projector_and_phone import PHONE

pytestmark = pytest.mark.e2e  # a browser test: the full pass runs it, the light one leaves it out

FOLLOW_S = 2.0
"""The issue's target: a student's page shows the teacher's change within 2 s."""
REDRAW_S = 3.0
"""Slack for drawing on this shared 2-core machine (three chromium pages and the server)."""


def heads_shown(page: Page) -> tuple[str, int]:
    """The head count the page's control shows (a following page, which has none: its line of the teacher's
    settings), and how many head charts it draws (one chart per head)."""
    drawn = page.locator("[class*='st-key-heads_chart_'] .js-plotly-plot").count()
    bar = page.locator(".st-key-heads_chart_bar .js-plotly-plot").count()  # the shared colour bar
    if page.locator(".st-key-n_heads").count():  # the teacher's control
        return chosen_segment(page, "n_heads"), drawn - bar
    line = re.search(r"(\d+) heads of d_k", page.get_by_test_id("stSidebar").inner_text())  # a follower's line
    return (line.group(1) if line else None), drawn - bar


def wait_heads(page: Page, n: int, timeout: float) -> float:
    """Seconds until ``page`` shows ``n`` heads, in its control and as ``n`` charts; fails after ``timeout``."""
    start = time.monotonic()
    while heads_shown(page) != (str(n), n):
        assert time.monotonic() - start < timeout, f"shows {heads_shown(page)}, not {n} heads"
        page.wait_for_timeout(50)
    return time.monotonic() - start


def test_a_teacher_and_two_students(server, browser, page):
    page.goto(server + "/?sentence=the+cat+sat+on+the+mat&seed=18")
    wait_heads(page, 4, 60)
    wait_idle(page, page.get_by_role("button", name="Start a room", exact=True).click)
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert "key=" in dialog.inner_text() or dialog.get_by_text("Show the teacher link").count() == 1
    assert "key=" not in page.url  # the projector's address bar never shows the key
    code = re.search(r"room=([A-Z0-9]{6})", page.url).group(1)
    page.keyboard.press("Escape")

    with watched_page(browser) as s1, watched_page(browser) as s2:
        students = (s1, s2)
        for s in students:
            s.goto(f"{server}/?room={code}")
            wait_heads(s, 4, 60)
            assert widget(s, "room_follow").locator("input[type='checkbox']").is_checked()
            assert s.locator(".st-key-n_heads, .st-key-seed, .st-key-sentence").count() == 0  # the lean page
            assert "key=" not in s.url

        code_box = open_expander(s1, CODE_LABEL)  # drawn only while open: opening it reruns the page
        assert "n_heads=4" in code_box.get_by_test_id("stCode").first.inner_text().replace(" ", "")
        assert widget(s1, "room_follow").locator("input[type='checkbox']").is_checked()  # still following

        clicked = time.monotonic()
        choose_segment(page, "n_heads", "2")  # returns when the teacher's run has finished
        for s in students:
            wait_heads(s, 2, FOLLOW_S + REDRAW_S)
            print(f"a student shows 2 heads {time.monotonic() - clicked:.2f} s after the teacher's click")
        assert "n_heads=2" in code_box.get_by_test_id("stCode").first.inner_text().replace(" ", "")  # still open
        assert s2.get_by_test_id("stCode").count() == 0  # the other student's stays closed


def test_a_phone_following_minilm_s_model_view_shows_one_layer_readably(server, browser, page):
    """The teacher projects MiniLM's 72 maps at once; a student following on a 390 x 844 phone gets the teacher's
    layer, one head per chart, each map the phone's width (>= 100 px: the whole grid drew them ~25 px), and no
    "One layer at a time" switch or hint (a following page has none to turn on)."""
    require_minilm()
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/?view=model&weights=minilm&layer=2&presenter=true")
    page.locator(".st-key-model_chart .js-plotly-plot").wait_for()
    wait_idle(page, page.get_by_role("button", name="Start a room", exact=True).click)
    code = re.search(r"room=([A-Z0-9]{6})", page.url).group(1)
    page.keyboard.press("Escape")
    assert len(charts_of(page, "model_chart")[0]["maps"]) == 72  # the projector keeps the grid
    with watched_page(browser, PHONE) as phone:
        phone.goto(f"{server}/?room={code}")
        phone.locator("[class*='st-key-model_chart_'] .js-plotly-plot").first.wait_for()
        wait_charts_drawn(phone)
        maps = [m for c in charts(phone) if re.fullmatch(r"model_chart_\d+", c["key"]) for m in c["maps"]]
        assert len(maps) == 12, f"{len(maps)} maps"
        assert min(m["w"] for m in maps) >= 100, [round(m["w"]) for m in maps]
        titles = [t["text"] for c in charts(phone) if c["key"] == "model_chart_1" for t in c["texts"]]
        assert "layer 2, head 1" in titles  # the teacher's layer
        assert phone.locator(".st-key-one_layer").count() == 0
        assert phone.get_by_text("One layer at a time", exact=True).count() == 0  # the switch's label
        assert phone.get_by_text("turn on One layer at a time").count() == 0  # the overview's phone hint


def charts_of(page: Page, key: str) -> list[dict]:
    """The drawn charts keyed ``key``."""
    return [c for c in charts(page) if c["key"] == key]
