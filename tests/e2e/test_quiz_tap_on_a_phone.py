"""The tap question on a 390×844 phone (issue 34 part 4): every token a button a thumb can hit, in reading order,
inside the screen; a tap picks, Reveal draws the row's bars with the pick."""

from __future__ import annotations

import pytest

from bench.streamlit_server import wait_idle
from tests.e2e.conftest import watched_page
from tests.e2e.dom import horizontal_overflow
from tests.e2e.test_projector_and_phone import PHONE

pytestmark = pytest.mark.e2e

TAP_PX = 40
"""Least height of a tap target (Apple's guideline is 44 pt; Streamlit's buttons are 40 px)."""


def test_the_tap_question_fits_a_phone_and_reveals_the_row(server, browser):
    query = "quiz=true&weights=identity&sentence=The+bank+of+the+river+gave+a+loan&quiz_question=6"
    with watched_page(browser, PHONE) as phone:
        phone.goto(f"{server}/?{query}")
        wait_idle(phone)
        buttons = phone.locator("[class*='st-key-quiz_tap_'] button")
        labels = [b.inner_text() for b in buttons.all()]
        assert labels == ["0·the", "1·bank", "2·of", "3·the", "4·river", "5·gave", "6·a", "7·loan"]
        boxes = [b.bounding_box() for b in buttons.all()]
        assert all(box["height"] >= TAP_PX for box in boxes), boxes
        assert all(box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0] for box in boxes), boxes
        order = [(round(box["y"]), box["x"]) for box in boxes]
        assert order == sorted(order)  # reading order: left to right, then the next line
        assert not horizontal_overflow(phone)["scroll"]
        buttons.nth(6).tap()
        wait_idle(phone)
        phone.get_by_role("button", name="Reveal", exact=True).tap()
        phone.locator(".st-key-quiz_tap_bars .js-plotly-plot").wait_for(timeout=30_000)
        assert "Right: 6·a" in phone.locator(".st-key-quiz_panel").inner_text()
