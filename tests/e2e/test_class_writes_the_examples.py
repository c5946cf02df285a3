"""Issue 34 end to end in chromium: a teacher and two students, one on a 390 x 844 phone, in one room.

Both students send a sentence; the teacher's page counts them by itself; the teacher uses the phone's sentence (every
page's maps take it), puts the rest in the class view (both students' pages draw it), then asks the tap question on
the words: both students tap, the teacher's count goes up by itself, and Reveal draws the real row on every page, with
the class's two picks on the teacher's (a student's page has their own pick: students read no room's tally). The
pieces are tested alone elsewhere (AppTest: test_room_sentences.py, test_quiz_tap.py; chromium:
test_room_sentences_in_browser.py, test_quiz_tap_on_a_phone.py); here they run as one lesson.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from bench.streamlit_server import wait_idle
from core import tokenize
from dashboard.figures.across import sentence_title
from dashboard.views import VIEWS
from tests.e2e.conftest import watched_page
from tests.e2e.dom import choose_segment, flip_toggle, horizontal_overflow, open_expander, widget
from tests.e2e.test_projector_and_phone import PHONE
from tests.e2e.test_room_quiz_in_browser import FOLLOW_MS, start_room, teacher_line

pytestmark = pytest.mark.e2e

FROM_THE_PHONE = "the dog ran home"
FROM_THE_LAPTOP = "a bird flew over the sea"
TAP_BUTTONS = "[class*='st-key-quiz_tap_'] button"


def send(student: Page, text: str) -> None:
    """The student's "Send a sentence to your teacher" box: type, press Send, see it sent."""
    box = open_expander(student, "Send a sentence to your teacher")
    field = widget(student, "class_sentence").locator("input")
    wait_idle(student, lambda: (field.fill(text), field.press("Enter")))
    wait_idle(student, widget(student, "class_send_button").locator("button").click)
    expect(box).to_contain_text("Sent: your teacher sees it")


def label(text: str, word: str) -> str:
    """The axis label of ``word`` in ``text``'s map (core's own tokens, as every map's axes)."""
    return f"{tokenize(text).index(word)}·{word}"


def to_the_tap_question(teacher: Page) -> None:
    """Another question until the tap question shows: it is the run's last (quiz_panel.questions_for)."""
    for _ in range(40):
        if teacher.locator(".st-key-quiz_panel").inner_text().find("look at most?") >= 0:
            return
        wait_idle(teacher, teacher.get_by_role("button", name="Another question", exact=True).click)
    raise AssertionError("no tap question after 40 presses of Another question")


def test_two_students_send_the_teacher_uses_one_shows_the_class_and_asks_a_tap(server, browser, page):
    code = start_room(page, server, "sentence=the+cat+sat&view=heads&weights=identity")
    with watched_page(browser, PHONE) as phone, watched_page(browser) as laptop:
        for student in (phone, laptop):
            student.goto(f"{server}/?room={code}")
            wait_idle(student)
        send(phone, FROM_THE_PHONE)
        send(laptop, FROM_THE_LAPTOP)
        teacher_line(page, r"2 sentences from the class")  # by itself: no click of the teacher's

        listed = open_expander(page, "The class's sentences")
        row = listed.locator("[class*='st-key-class_sent_']").filter(has_text=FROM_THE_PHONE)
        row.get_by_role("button", name="Use", exact=True).click()
        expect(widget(page, "sentence").locator("input")).to_have_value(FROM_THE_PHONE, timeout=FOLLOW_MS)
        for student in (phone, laptop):  # the room's sentence, on both students' maps
            expect(student.locator("body")).to_contain_text(label(FROM_THE_PHONE, "dog"), timeout=FOLLOW_MS)
        teacher_line(page, r"1 sentence from the class")  # used: off the list

        to_class = page.get_by_role("button", name="All in the class view", exact=True)
        if not to_class.is_visible():  # the list stays open after Use while Streamlit keeps its expander
            open_expander(page, "The class's sentences")
        wait_idle(page, to_class.click)
        title = sentence_title(1, FROM_THE_LAPTOP, presenter=False)
        for who in (page, phone, laptop):  # the class view, with the laptop's sentence as its first map
            expect(who.locator("body")).to_contain_text(VIEWS["class"].teaches, timeout=FOLLOW_MS)
            expect(who.locator("body")).to_contain_text(title, timeout=FOLLOW_MS)
        assert horizontal_overflow(phone)["scroll"] == 0

        choose_segment(page, "view", "heads")
        flip_toggle(page, "quiz")
        to_the_tap_question(page)
        question = page.locator(".st-key-quiz_panel").inner_text()
        for student in (phone, laptop):  # the class's question: the same words to tap, in reading order
            buttons = student.locator(TAP_BUTTONS)
            buttons.first.wait_for(timeout=FOLLOW_MS)
            assert [b.inner_text() for b in buttons.all()] == [
                label(FROM_THE_PHONE, w) for w in tokenize(FROM_THE_PHONE)
            ]
            assert page.locator(TAP_BUTTONS).count() == 0  # the teacher does not guess
        assert "look at most?" in question
        phone.locator(TAP_BUTTONS).nth(1).tap()
        teacher_line(page, r"The class: 1 of 2 students picked so far")
        laptop.locator(TAP_BUTTONS).nth(2).click()
        teacher_line(page, r"The class: 2 of 2 students picked so far")

        page.get_by_role("button", name="Reveal", exact=True).click()
        # the real row on every page; the class's picks on the teacher's, each student's own on theirs
        for who, picks, whose in ((page, [0, 1, 1, 0], "the class's picks"), (phone, [0, 1, 0, 0], "your pick"),
                                  (laptop, [0, 0, 1, 0], "your pick")):  # fmt: skip
            chart = who.locator(".st-key-quiz_tap_bars .js-plotly-plot")
            chart.wait_for(timeout=FOLLOW_MS)
            drawn = chart.evaluate("(gd) => gd.data.map((t) => [t.name, (t.customdata || []).map(Number)])")
            assert drawn[1] == [f"share of {whose}", picks], drawn
        assert horizontal_overflow(phone)["scroll"] == 0
