"""The dashboard in a real browser: drawn heatmaps, redraws on change, shared links, bad input.

What the AppTest suite cannot see: that plotly.js actually draws one heatmap per
head from the payload, that a click in the sidebar reaches the server and comes
back as a redraw, and that the URL the browser shows restores the same pictures
in a fresh session. Every test also fails if an ``stException`` element appears
at any moment or the page throws (see conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

from bench.streamlit_server import HEADS_CHART, heatmap_count, wait_heatmaps, wait_idle
from core import MAX_TOKENS, tokenize
from dashboard.state.settings import DEFAULTS
from tests.e2e.conftest import watched_page
from tests.e2e.dom import (
    cell_colours,
    choose_segment,
    chosen_segment,
    expect_number,
    flip_toggle,
    heads_z,
    input_value,
    mask_z,
    toggle_on,
    type_text,
)

pytestmark = pytest.mark.e2e
LINK_NOTE = "[data-testid='stAlert']:has-text('The link')"
"""The page's note about a link value it could not use (dashboard/state/link_notes.py)."""


def open_app(page, url: str, query: str = "") -> None:
    page.goto(f"{url}/?{query}" if query else url)
    wait_idle(page)


def assert_rows_are_distributions(grids: list[np.ndarray], t: int) -> None:
    """Each grid is T x T, and every query row's visible weights sum to 1."""
    for g in grids:
        assert g.shape == (t, t)
        np.testing.assert_allclose(np.nansum(g, axis=1), 1.0, atol=1e-5)  # float32 on the wire


def test_default_page_draws_one_heatmap_per_head(page, server):
    open_app(page, server)
    t = len(tokenize(DEFAULTS.sentence))
    wait_heatmaps(page, DEFAULTS.config.n_heads)
    assert chosen_segment(page, "n_heads") == str(DEFAULTS.config.n_heads)
    grids = heads_z(page)
    assert len(grids) == DEFAULTS.config.n_heads
    assert_rows_are_distributions(grids, t)
    assert not any(np.isnan(g).any() for g in grids), "no cell is masked without the causal mask"
    assert len({g.tobytes() for g in grids}) == len(grids), "heads have their own projections: maps differ"


def test_head_count_and_causal_mask_redraw(page, server):
    open_app(page, server)
    t = len(tokenize(DEFAULTS.sentence))
    wait_heatmaps(page, DEFAULTS.config.n_heads)

    for h in (8, 1, 2):
        choose_segment(page, "n_heads", str(h))
        wait_heatmaps(page, h)
        assert f"n_heads={h}" in page.url, "the link follows the control"
        assert_rows_are_distributions(heads_z(page), t)

    flip_toggle(page, "causal")
    assert toggle_on(page, "causal")
    wait_heatmaps(page, 2)
    future = np.triu(np.ones((t, t), dtype=bool), k=1)  # key j > query i
    grids = heads_z(page)
    for g in grids:
        assert np.array_equal(np.isnan(g), future), "exactly the future keys are left out of the weights"
    masks = mask_z(page)
    assert len(masks) == 2, "one masked-cell overlay per head"
    for m in masks:
        assert np.array_equal(~np.isnan(m), future), "the overlay covers exactly the future keys"
    assert_rows_are_distributions(grids, t)
    assert grids[0][0, 0] == pytest.approx(1.0), "the first token can only attend to itself"

    # Masked cells must look unlike any weight, even a tiny one: Viridis is never grey
    # (its darkest end, for ~0, is purple), the mask is a light neutral grey under hatching.
    rgb = cell_colours(page, head=0)  # (T, T, 3)
    spread = rgb.max(axis=-1) - rgb.min(axis=-1)  # 0 for grey
    assert (spread[future] < 25).all() and (rgb[future].mean(axis=-1) > 150).all(), rgb[future]
    assert (spread[~future] > 40).all(), "every allowed cell, however small its weight, is coloured"

    flip_toggle(page, "causal")
    assert not toggle_on(page, "causal")
    wait_heatmaps(page, 2)
    assert not any(np.isnan(g).any() for g in heads_z(page))
    assert mask_z(page) == []


def test_shared_url_reproduces_the_state(page, server, browser):
    open_app(page, server)
    type_text(page, "sentence", "the dog bites the man")
    choose_segment(page, "positional", "sinusoidal")
    choose_segment(page, "n_heads", "2")
    flip_toggle(page, "causal")
    type_text(page, "seed", "7")
    wait_heatmaps(page, 2)
    teacher = heads_z(page)
    assert teacher[0].shape == (5, 5)
    expect(page.locator(LINK_NOTE)).to_have_count(0)  # values set through the controls: never read as a bad link
    link = page.url

    with watched_page(browser) as other:  # a student's own session, opened from the link
        open_app(other, link)
        wait_heatmaps(other, 2)
        assert input_value(other, "sentence") == "the dog bites the man"
        assert chosen_segment(other, "positional") == "sinusoidal"
        assert chosen_segment(other, "n_heads") == "2"
        assert toggle_on(other, "causal")
        expect_number(other, "seed", "7")  # not input_value: the field paints its default (18) first
        expect(other.locator(LINK_NOTE)).to_have_count(0)
        student_grids = heads_z(other)
    assert len(student_grids) == len(teacher)
    for a, b in zip(teacher, student_grids, strict=True):
        np.testing.assert_array_equal(a, b)  # same settings, same pictures, bit for bit


def test_a_bad_link_is_replaced_and_said_once(page, server):
    """Empty and malformed values that made controls raise: the page draws the defaults and says so, once."""
    open_app(page, server, "n_heads=&seed=inf&positional=%3Cb%3Ex%3C%2Fb%3E&tour=lesson-1-one-head&tour_step=%C2%B2")
    note = page.locator(LINK_NOTE)
    expect(note).to_have_count(1)
    expect(note).to_contain_text("tour_step must be a whole number from 1 to 7: showing tour_step = 1")
    assert "<b>" not in note.inner_text() and "²" not in note.inner_text()
    assert chosen_segment(page, "tour_step") == "1" and "tour_step" not in page.url
    choose_segment(page, "tour_step", "3")  # a step of the tour: the heads view with values
    wait_heatmaps(page, 1)
    expect(page.locator(LINK_NOTE)).to_have_count(0)  # said once; the step's values are the page's own


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Type a sentence"),
        ("   ", "Type a sentence"),
        (" ".join(f"w{i}" for i in range(MAX_TOKENS + 1)), f"the limit is {MAX_TOKENS}"),
    ],
    ids=["empty", "spaces", "too-long"],
)
def test_bad_sentence_shows_a_message_not_an_exception(page, server, text, message):
    open_app(page, server)
    wait_heatmaps(page, DEFAULTS.config.n_heads)
    type_text(page, "sentence", text)
    alert = page.locator("[data-testid='stAlert']", has_text=message)
    alert.wait_for(state="visible")
    expect(page.locator(HEADS_CHART)).to_have_count(0)  # no stale maps under the message
    assert heatmap_count(page) == 0
    # the sidebar still works and brings the maps back
    type_text(page, "sentence", "back to work")
    wait_heatmaps(page, DEFAULTS.config.n_heads)
