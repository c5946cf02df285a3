"""The room's quiz in chromium: a teacher and two students run it end to end, and a student follows on a phone.

- The teacher's quiz: the count of students and of picks goes up on the teacher's page by itself (no click of the
  teacher's), students see their pick marked as sent and have no Reveal, the teacher reveals without a guess, and
  both students' screens then show the answer; a closed tab leaves the count.
- The projector: the room code in the room's dialog is at least 48 px.
- The phone (390 x 844): the follower page and the room's quiz, before and after the reveal, fit the screen's
  width (nothing wider than the screen, no sideways scroll).
- The class's tally, on the teacher's projector (1280 x 720, presenter) and phone: every choice's label whole inside
  the chart, nothing over other text, ticks at the projector's size.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from bench.streamlit_server import wait_idle
from dashboard.figures.layout import PRESENTER_MIN_TICK
from dashboard.views import VIEWS
from tests.e2e.conftest import watched_page
from tests.e2e.dom import charts, flip_toggle, horizontal_overflow, text_overlaps, wait_charts_drawn, widget
from tests.e2e.test_projector_and_phone import PHONE, PROJECTOR, assert_phone_readable

pytestmark = pytest.mark.e2e

LIVE_S = 10.0
"""The teacher's count redraws every 2 s (room_page.TALLY_SECONDS); slack for three pages on two shared cores."""
FOLLOW_MS = 15_000
"""A student's page shows the teacher's change within 2 s (test_room_in_browser.py measures it); slack here."""
ROOM_CODE_LEAST_PX = 48
GAP_PX = 16
"""Streamlit's gap between two elements of the page."""


def start_room(page: Page, server: str, query: str, *, open_sidebar: bool = False) -> str:
    """The teacher opens ``query``, starts a room and closes the dialog; the room's code. ``open_sidebar``: a
    phone's sidebar, where "Start a room" is, starts collapsed."""
    page.goto(f"{server}/?{query}")
    wait_idle(page)
    if open_sidebar:
        page.get_by_test_id("stExpandSidebarButton").click()
    wait_idle(page, page.get_by_role("button", name="Start a room", exact=True).first.click)
    page.get_by_role("dialog").wait_for()
    code = re.search(r"room=([A-Z0-9]{6})", page.url).group(1)
    page.keyboard.press("Escape")
    return code


def pick(page: Page, n: int) -> None:
    """Choose choice ``n`` in the quiz's answer box."""
    widget(page, "quiz_panel").locator("[data-testid='stSelectbox']").click()
    wait_idle(page, page.get_by_role("option").nth(n).click)


def teacher_line(page: Page, pattern: str) -> None:
    """Wait, without touching the teacher's page, for its text to match ``pattern`` (a live fragment)."""
    expect(page.locator("body")).to_contain_text(re.compile(pattern), timeout=LIVE_S * 1000)


def test_a_teacher_and_two_students_run_the_quiz(server, browser, page):
    code = start_room(page, server, "sentence=the+cat+sat+on+the+mat&seed=18&quiz=true")
    panel = widget(page, "quiz_panel")
    panel.wait_for()
    assert panel.locator("[data-testid='stSelectbox']").count() == 0  # the teacher does not guess
    teacher_line(page, r"0 students joined")
    with watched_page(browser) as s1, watched_page(browser) as s2:
        students = (s1, s2)
        for n, s in enumerate(students, start=1):
            s.goto(f"{server}/?room={code}")
            widget(s, "quiz_panel").wait_for()
            teacher_line(page, rf"{n} students? joined")  # the teacher's count goes up by itself
        for s in students:
            assert s.get_by_role("button", name="Reveal", exact=True).count() == 0  # students cannot reveal
        for n, s in enumerate(students, start=1):
            pick(s, n - 1)
            expect(widget(s, "quiz_panel")).to_contain_text("Your pick is sent")
            teacher_line(page, rf"The class: {n} of 2 students picked so far")  # live, no click of the teacher's
        for s in students:
            assert s.locator(".st-key-quiz_map").count() == 0  # no answer before the teacher's reveal
        reveal = page.get_by_role("button", name="Reveal", exact=True)
        assert reveal.is_enabled()
        reveal.click()
        chart = page.locator(".st-key-quiz_panel .st-key-room_tally .js-plotly-plot")  # under the question
        chart.wait_for()
        assert sum(chart.evaluate("(gd) => gd.data[0].x.map(Number)")) == 2  # the bars lie down: counts on x
        body = page.inner_text("body")
        assert "Not this time" not in body and "your pick" not in body.lower()  # the projector has no pick
        for s in students:
            s.locator(".st-key-quiz_map .js-plotly-plot").wait_for(timeout=FOLLOW_MS)  # the answer, by itself
        verdicts = [s.locator(".st-key-quiz_panel").inner_text() for s in students]
        assert sum("Right:" in v for v in verdicts) + sum("Not this time" in v for v in verdicts) == 2
    teacher_line(page, r"0 students joined")  # closed tabs leave the count


def test_the_room_code_reads_from_the_back_of_the_hall(server, page):
    page.goto(f"{server}/?presenter=true")
    wait_idle(page)
    wait_idle(page, page.get_by_role("button", name="Start a room", exact=True).first.click)
    heading = page.get_by_role("dialog").locator(".st-key-room_code h3")
    heading.wait_for()
    size = heading.evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= ROOM_CODE_LEAST_PX, f"room code at {size} px"
    box = heading.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1400  # the large code still fits the dialog's row


def assert_fits(page: Page, *, charts: bool = True) -> None:
    """Nothing wider than the phone, and (charts) every map readable, one per row (test_projector_and_phone.py)."""
    wait_charts_drawn(page, charts=charts)
    over = horizontal_overflow(page)
    assert over == {"scroll": 0, "wide": []}, over
    assert_phone_readable(page)


def test_the_follower_page_and_the_quiz_fit_a_phone(server, browser, page):
    code = start_room(page, server, "view=heads")  # the default 8 tokens (6 draw 230 x 230 px maps: 40 px cells)
    with watched_page(browser, PHONE) as student:  # a 390 x 844 touch page, as a student's phone
        student.goto(f"{server}/?room={code}")
        wait_idle(student)
        assert_fits(student)  # the follower page
        line = student.get_by_text(re.compile(rf"^Following room {code}")).bounding_box()
        teaches = student.get_by_text(VIEWS["heads"].teaches, exact=True).bounding_box()
        gap = line["y"] - teaches["y"] - teaches["height"]
        assert gap <= GAP_PX + 1, f"{gap:.0f} px between the view's line and the follow line"  # was 32: two gaps
        flip_toggle(page, "quiz")
        widget(student, "quiz_panel").wait_for(timeout=FOLLOW_MS)
        assert_fits(student, charts=False)  # the question, before the reveal: no map
        pick(student, 0)
        expect(widget(student, "quiz_panel")).to_contain_text("Your pick is sent")
        teacher_line(page, r"The class: 1 of 1 student picked so far")
        page.get_by_role("button", name="Reveal", exact=True).click()
        student.locator(".st-key-quiz_map .js-plotly-plot").wait_for(timeout=FOLLOW_MS)
        assert_fits(student)  # the answer and its map


def inside(text: dict, box: dict) -> bool:
    return (
        text["x"] >= box["x"] - 0.5
        and text["y"] >= box["y"] - 0.5
        and text["x"] + text["w"] <= box["x"] + box["w"] + 0.5
        and text["y"] + text["h"] <= box["y"] + box["h"] + 0.5
    )


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_the_class_s_tally_reads_on_the_teacher_s_projector_and_phone(server, browser, size):
    """The first question on random weights asks which cells are exactly 0: choices of up to 42 characters. Written
    under upright bars they stood 350 px tall on a projector, the longest cut at the chart's foot, and the count
    axis was at 12 px: now each label wraps beside its bar."""
    phone = size == PHONE
    with watched_page(browser, size) as teacher, watched_page(browser) as student:
        code = start_room(teacher, server, f"{'' if phone else 'presenter=true&'}quiz=true", open_sidebar=phone)
        if phone:
            teacher.get_by_test_id("stSidebarCollapseButton").click()
        student.goto(f"{server}/?room={code}")
        widget(student, "quiz_panel").wait_for()
        pick(student, 0)
        teacher_line(teacher, r"The class: 1 of 1 student picked so far")
        teacher.get_by_role("button", name="Reveal", exact=True).click()
        teacher.locator(".st-key-room_tally .js-plotly-plot").wait_for()
        wait_charts_drawn(teacher)
        teacher.locator(".st-key-room_tally").scroll_into_view_if_needed()
        drawn = charts(teacher)
        [tally] = [c for c in drawn if c["key"] == "room_tally"]
        ticks = [t for t in tally["texts"] if t["kind"] in ("xtick", "ytick")]
        labels = [t for t in ticks if not t["text"].isdigit()]  # the choices, on whichever axis
        assert len(labels) >= 3 and max(len(t["text"]) for t in labels) >= 30, "the long choices, one label each"
        assert [t["text"] for t in tally["texts"] if not inside(t, tally["box"])] == [], "text cut at the chart's edge"
        assert not text_overlaps([tally]), "text over text"
        if phone:
            assert_fits(teacher)
        else:
            assert min(t["fs"] for t in ticks) >= PRESENTER_MIN_TICK, "ticks at the projector's size"
