"""In chromium: the quiz hides the map until Reveal, then marks the row's largest drawn weight; a tour's Next and
Back move every control and the address bar."""

from __future__ import annotations

import re

import numpy as np

from bench.streamlit_server import wait_idle
from tests.e2e.dom import chosen_segment, heads_z, input_value, toggle_on, widget

QUIZ_URL = "?quiz=true&causal=true&n_heads=2&sentence=the+key+to+the+cabinet+is+rusted"


def test_predict_then_reveal(server, page):
    page.goto(server + "/" + QUIZ_URL)
    panel = widget(page, "quiz_panel")
    panel.wait_for()
    assert page.locator(".st-key-heads_chart").count() == 0  # the maps stay hidden
    question = panel.get_by_text(re.compile(r"which token does")).first.inner_text()
    row = int(re.search(r"row (\d+)", question).group(1))
    reveal = widget(page, "quiz_reveal").locator("button").first
    assert reveal.is_disabled()  # predict first
    panel.locator("[data-testid='stSelectbox']").click()
    option = page.get_by_role("option").first
    picked = option.inner_text().strip()
    wait_idle(page, option.click)
    wait_idle(page, reveal.click)
    page.locator(".st-key-quiz_map .js-plotly-plot").wait_for()
    [z] = heads_z(page, ".st-key-quiz_map")  # what plotly.js drew
    best = int(np.nanargmax(z[row]))
    why = page.get_by_text(re.compile(r"^Row \d+ of head")).first.inner_text()
    assert f"on {best}·" in why and f"{np.nanmax(z[row]):.2f}" in why  # the line explains the drawn numbers
    verdict = page.get_by_text(re.compile(r"^(Right|Not this time)")).first.inner_text()
    assert verdict.startswith("Right") == picked.startswith(f"{best}·")
    answer_box = page.evaluate(
        "() => document.querySelector('.st-key-quiz_map .js-plotly-plot').layout.shapes.slice(-1)[0]"
    )
    assert round(answer_box["x0"] + 0.5) == best and round(answer_box["y0"] + 0.5) == row
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
