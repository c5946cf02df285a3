"""In chromium: the quiz hides the map until Reveal, then draws the map its answer was read from; a tour's Next and
Back move every control and the address bar."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench.streamlit_server import wait_idle
from tests.e2e.dom import chosen_segment, heads_z, input_value, toggle_on, widget

pytestmark = pytest.mark.e2e  # a browser test: the full pass runs it, the light one leaves it out

QUIZ_URL = "?quiz=true&causal=true&n_heads=2&sentence=the+key+to+the+cabinet+is+rusted"


def test_predict_then_reveal(server, page):
    """Random weights: the first question asks which cells are exactly 0; the revealed map has exactly those as the
    masked gaps plotly.js drew, as many as the explanation says."""
    page.goto(server + "/" + QUIZ_URL)
    panel = widget(page, "quiz_panel")
    panel.wait_for()
    assert page.locator(".st-key-heads_chart").count() == 0  # the maps stay hidden
    question = panel.get_by_text(re.compile(r"which cells of the \d+×\d+ map hold a weight of exactly 0")).first
    head = int(re.search(r"In head (\d+)", question.inner_text()).group(1))
    reveal = widget(page, "quiz_reveal").locator("button").first
    assert reveal.is_disabled()  # predict first
    panel.locator("[data-testid='stSelectbox']").click()
    option = page.get_by_role("option").first
    picked = option.inner_text().strip()
    wait_idle(page, option.click)
    wait_idle(page, reveal.click)
    page.locator(".st-key-quiz_map .js-plotly-plot").wait_for()
    [z] = heads_z(page, ".st-key-quiz_map")  # what plotly.js drew: NaN in a masked gap
    gaps = np.isnan(z)
    rows, cols = np.indices(z.shape)
    assert np.array_equal(gaps, cols > rows)  # the causal mask's cells, above the diagonal
    why = page.get_by_text(re.compile(rf"^In head {head}, \d+ weights are exactly 0")).first.inner_text()
    assert f"{int(gaps.sum())} weights are exactly 0 (above the diagonal" in why
    verdict = page.get_by_text(re.compile(r"^(Right|Not this time)")).first.inner_text()
    assert verdict.startswith("Right") == picked.startswith("above the diagonal")
    page.locator(".st-key-heads_chart").wait_for()  # after the reveal the view's maps are back


def test_a_tour_walks_forwards_and_back(server, page):
    page.goto(server + "/?tour=lesson-1-one-head")
    widget(page, "tour_bar").wait_for()
    assert chosen_segment(page, "tour_step") == "1"
    assert chosen_segment(page, "view") == "tokens"
    assert input_value(page, "sentence") == "the robot opens the door"
    wait_idle(page, widget(page, "tour_next").locator("button").first.click)
    wait_idle(page, widget(page, "tour_next").locator("button").first.click)  # step 3: heads, values on
    assert chosen_segment(page, "tour_step") == "3" and chosen_segment(page, "view") == "heads"
    assert toggle_on(page, "values")
    assert "tour_step=3" in page.url and "view=" not in page.url and "values=true" in page.url  # heads: the default
    wait_idle(page, widget(page, "tour_next").locator("button").first.click)  # step 4: the mask
    assert toggle_on(page, "causal") and "causal=true" in page.url
    wait_idle(page, widget(page, "tour_back").locator("button").first.click)
    wait_idle(page, widget(page, "tour_back").locator("button").first.click)  # step 2: steps view, no mask
    assert chosen_segment(page, "view") == "steps" and not toggle_on(page, "causal")
    assert "causal=true" not in page.url and "values=true" not in page.url
    shared = page.url  # a link copied mid-tour reproduces the step in another session
    other = page.context.new_page()
    other.goto(shared)
    widget(other, "tour_bar").wait_for()
    assert chosen_segment(other, "tour_step") == "2" and chosen_segment(other, "view") == "steps"
    assert input_value(other, "sentence") == "the robot opens the door"
