"""A student in a room, in chromium (issue 31, parts 6 and 7): the open question keeps its map, a phone joins on the
first screen, and Back after exploring returns to the room.

- The quiz: a student who turns "Follow the teacher" off while the teacher's question is open keeps the question and
  gets no map, no Quiz switch, no view bar, and a code box that cannot leave the room; the teacher's reveal lets the
  page explore again.
- The phone (390 x 844, sidebar collapsed): the room code's box is on the first screen (the welcome's), and once the
  student follows, the welcome has closed and the teacher's maps are there.
- Back: a following page's entry in the history is the room's link; after exploring, Back returns to it and the page
  follows again, never the student's own default page.
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from bench.streamlit_server import wait_idle
from dashboard.classroom.room_page import CHECK_SECONDS
from tests.e2e.conftest import watched_page
from tests.e2e.dom import choose_segment, flip_toggle, input_value, toggle_on, type_text, widget
from tests.e2e.test_projector_and_phone import PHONE
from tests.e2e.test_room_quiz_in_browser import FOLLOW_MS, start_room

pytestmark = pytest.mark.e2e

TEACHER_SEED = "5"
"""The teacher's seed, not the default (18): a page showing seed 18 is the student's own default page."""


def following(page: Page, code: str) -> bool:
    return page.get_by_text(f"Following room {code}", exact=False).count() > 0


def wait_following(page: Page, code: str) -> None:
    expect(page.get_by_text(f"Following room {code}", exact=False).first).to_be_visible(timeout=FOLLOW_MS)


def maps(page: Page) -> int:
    """Plotly charts drawn on the page (a map, a view's figure, the quiz's reveal)."""
    return page.locator(".js-plotly-plot").count()


def test_follow_off_during_the_question_keeps_the_question_and_no_map(server, browser, page):
    code = start_room(page, server, f"seed={TEACHER_SEED}&quiz=true")
    question = widget(page, "quiz_panel").locator("[data-testid='stText']").first.inner_text()
    with watched_page(browser) as student:
        student.goto(f"{server}/?room={code}")
        wait_following(student, code)
        wait_idle(student)
        expect(widget(student, "quiz_panel")).to_contain_text(question)
        flip_toggle(student, "room_follow")  # Follow off
        assert not toggle_on(student, "room_follow")
        student.wait_for_timeout(1500)  # anything the page would draw after the run
        expect(widget(student, "quiz_panel")).to_contain_text(question)
        assert maps(student) == 0, "no map, no figure of any view"
        assert widget(student, "quiz").count() == 0, "no Quiz switch to turn off"
        assert widget(student, "view").count() == 0, "no view bar"
        assert student.get_by_test_id("stDownloadButton").count() == 0
        assert widget(student, "room").locator("input").is_disabled(), "the room cannot be left until the reveal"
        assert "question is open" in student.locator("body").inner_text()
        student.reload()  # a reload: a new session, which follows the room's question again
        wait_following(student, code)
        wait_idle(student)
        expect(widget(student, "quiz_panel")).to_contain_text(question)
        assert maps(student) == 0
        flip_toggle(student, "room_follow")  # Follow off again, and the teacher reveals
        wait_idle(page, widget(page, "quiz_reveal").locator("button").first.click)
        expect(widget(student, "quiz").first).to_be_visible(timeout=FOLLOW_MS)  # the page explores on its own
        expect(student.locator(".st-key-quiz_map .js-plotly-plot").first).to_be_visible()  # the revealed map
        assert not widget(student, "room").locator("input").is_disabled()


def test_a_student_exploring_when_the_teacher_asks_is_brought_to_the_question(server, browser, page):
    """The exploring page's seat check (every ``CHECK_SECONDS``) finds the question open and runs the page
    whole: within that, plus drawing, the student's page shows the question instead of the view it explored."""
    code = start_room(page, server, f"seed={TEACHER_SEED}")
    with watched_page(browser) as student:
        student.goto(f"{server}/?room={code}")
        wait_following(student, code)
        wait_idle(student)
        flip_toggle(student, "room_follow")
        choose_segment(student, "view", "steps")  # the weights' numbers, step by step
        assert maps(student) > 0
        flip_toggle(page, "quiz")  # the teacher asks
        question = widget(page, "quiz_panel").locator("[data-testid='stText']").first.inner_text()
        asked = time.monotonic()
        expect(widget(student, "quiz_panel")).to_contain_text(question, timeout=(CHECK_SECONDS + 10) * 1000)
        print(f"the exploring student's page showed the question {time.monotonic() - asked:.1f} s after it was asked")
        wait_idle(student)
        assert maps(student) == 0 and widget(student, "view").count() == 0


def test_a_phone_student_types_the_code_on_the_first_screen(server, browser, page):
    code = start_room(page, server, f"seed={TEACHER_SEED}")
    with watched_page(browser, PHONE) as student:
        student.goto(server + "/")
        wait_idle(student)
        assert student.get_by_test_id("stExpandSidebarButton").is_visible(), "the phone's sidebar is collapsed"
        box = widget(student, "room").locator("input")
        assert box.is_visible(), "the code box without opening the sidebar"
        at = box.bounding_box()  # a collapsed sidebar is moved off the screen, to the left
        assert at["x"] >= 0 and at["x"] + at["width"] <= PHONE[0] and at["y"] + at["height"] <= PHONE[1]
        type_text(student, "room", code)
        wait_following(student, code)
        wait_idle(student)
        assert widget(student, "welcome").count() == 0, "the welcome closes once the student follows"
        assert f"room={code}" in student.url, "a reload stays in the room"
        first = student.locator("[class*='st-key-heads_chart_'] .js-plotly-plot").first
        first.wait_for()
        assert first.bounding_box()["y"] < PHONE[1], "the teacher's first map starts on the first screen"


def shown(page: Page, code: str) -> str:
    """What the student's page is: "following", or the seed of the page it explores."""
    return "following" if following(page, code) else input_value(page, "seed")


def test_back_after_exploring_returns_to_the_room(server, browser, page):
    code = start_room(page, server, f"seed={TEACHER_SEED}")
    with watched_page(browser) as student:
        student.goto(f"{server}/?room={code}")
        wait_following(student, code)
        wait_idle(student)
        entries = student.evaluate("() => history.length")
        flip_toggle(student, "room_follow")  # explore: the teacher's settings, then two views
        choose_segment(student, "view", "steps")
        choose_segment(student, "view", "shapes")
        made = student.evaluate("() => history.length") - entries
        assert made >= 2, "each view change is an entry"
        seen = []
        for _ in range(made):
            wait_idle(student, student.go_back)
            seen.append(shown(student, code))
            assert seen[-1] in ("following", TEACHER_SEED), f"Back opened the student's own default page: {seen}"
        assert seen[-1] == "following", f"Back after exploring returns to the room: {seen}"
        wait_following(student, code)
        assert toggle_on(student, "room_follow")
        wait_idle(student, student.go_forward)
        assert shown(student, code) in ("following", TEACHER_SEED), "Forward: the explored page, or the room"
