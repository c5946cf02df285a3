"""The class's sentences in chromium: a student on a phone sends one, the teacher's page counts it by itself, shows
it as plain text once opened, and Use makes it the room's sentence, which reaches the student's maps.

The pages' logic is tested with AppTest (``tests/dashboard/test_room_sentences.py``); here what AppTest cannot run:
the send box inside its fragment on a 390 x 844 touch page, the teacher's live count, and Use from inside the
teacher's 2 s fragment, which must rerun the whole page so that the room (and every follower) gets the sentence.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from bench.streamlit_server import wait_idle
from core import tokenize
from tests.conftest import require_minilm
from tests.e2e.conftest import watched_page
from tests.e2e.dom import horizontal_overflow, open_expander, widget
from tests.e2e.test_projector_and_phone import PHONE, PROJECTOR
from tests.e2e.test_room_quiz_in_browser import FOLLOW_MS, LIVE_S, start_room, teacher_line

pytestmark = pytest.mark.e2e

TYPED = "<b>the fox</b> **jumped** over"
"""Markup a page that rendered it would turn into bold text: shown as typed, it keeps its brackets and stars."""


def test_a_student_on_a_phone_sends_and_the_teacher_uses_the_sentence(server, browser, page):
    code = start_room(page, server, "sentence=the+cat+sat&view=heads")
    teacher_line(page, r"0 sentences from the class")
    with watched_page(browser, PHONE) as student:
        student.goto(f"{server}/?room={code}")
        wait_idle(student)
        box = open_expander(student, "Send a sentence to your teacher")
        field = widget(student, "class_sentence").locator("input")
        assert field.bounding_box()["x"] + field.bounding_box()["width"] <= PHONE[0]  # on the phone's screen
        wait_idle(student, lambda: (field.fill(TYPED), field.press("Enter")))
        wait_idle(student, widget(student, "class_send_button").locator("button").click)
        expect(box).to_contain_text("Sent: your teacher sees it")
        assert horizontal_overflow(student) == {"scroll": 0, "wide": []}
        teacher_line(page, r"1 sentence from the class")  # by itself: no click of the teacher's
        assert TYPED not in page.inner_text("body")  # not before the teacher opens the list
        listed = open_expander(page, "The class's sentences")
        expect(listed).to_contain_text(TYPED)  # the brackets and stars as typed: nothing rendered
        assert listed.locator("b, strong").count() == 0
        listed.get_by_role("button", name="Use", exact=True).click()
        expect(widget(page, "sentence").locator("input")).to_have_value(TYPED, timeout=FOLLOW_MS)
        fox = f"{tokenize(TYPED).index('fox')}·fox"  # an axis label of the new sentence (core's own tokens)
        expect(student.locator("body")).to_contain_text(fox, timeout=FOLLOW_MS)  # the student's maps
        teacher_line(page, r"0 sentences from the class")  # used: off the list


@pytest.mark.parametrize(
    "query",
    ["presenter=true&view=heads", "presenter=true&tour=what-heads-learn&tour_step=2"],
    ids=["heading", "ten-step-tour"],
)
def test_the_projector_s_maps_stay_put_when_the_first_sentence_arrives(server, browser, query):
    """Presenter mode at 1280 x 720: the count joins the heading row (the view's title, or a tour's bar of 10 steps,
    the longest) as a pill, and the first map does not move. As words ("1 sentence from the class") it wrapped beside
    the room's buttons: the maps jumped 22 px, and 48 px beside the tour's bar."""
    if "what-heads-learn" in query:
        require_minilm()
    with watched_page(browser, PROJECTOR) as teacher, watched_page(browser) as student:
        code = start_room(teacher, server, query)
        first = teacher.locator(".stPlotlyChart").first
        first.wait_for()
        before = first.bounding_box()["y"]
        student.goto(f"{server}/?room={code}")
        wait_idle(student)
        box = open_expander(student, "Send a sentence to your teacher")
        field = widget(student, "class_sentence").locator("input")
        wait_idle(student, lambda: (field.fill("the students write this"), field.press("Enter")))
        wait_idle(student, widget(student, "class_send_button").locator("button").click)
        expect(box).to_contain_text("Sent: your teacher sees it")
        pill = widget(teacher, "class_count").locator(".stMarkdownBadge").first  # the icon's ligature, the number
        expect(pill).to_have_text(re.compile(r"^\D*1$"), timeout=LIVE_S * 1000)  # by itself: the 2 s timer
        assert first.bounding_box()["y"] == before
        assert "the students write this" not in teacher.inner_text("body")
