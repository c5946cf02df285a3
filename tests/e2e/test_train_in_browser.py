"""Press Train in chromium: the live curve appears while it trains, then the trained maps and the replay; Play moves it.

The settings differ from the task's recommendation (seed 4), so the server really trains.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.dom import widget

pytestmark = pytest.mark.e2e  # a browser test: the full pass runs it, the light one leaves it out

TRAIN_URL = "?view=train&task=induction&seed=4&train_steps=2000"
"""2000 steps of induction (two layers, ~10 s alone): long enough to watch the live curve. Shift's 2000
steps got fast enough to end before the browser saw the progress (the results' rerun had already
replaced it, with the live chart still on the page as a stale element)."""


def test_train_shows_live_curves_then_the_maps(server, page):
    page.goto(server + TRAIN_URL)
    widget(page, "train_button").locator("button").first.click()
    page.get_by_text("Training: step").first.wait_for(timeout=60_000)  # the running job's progress
    page.locator(".st-key-live_curves .js-plotly-plot").first.wait_for(timeout=10_000)  # and its curves
    start = time.monotonic()
    maps = page.locator(".st-key-trained_maps").first
    maps.wait_for(state="attached", timeout=120_000)  # the results' run has drawn the maps' place
    maps.scroll_into_view_if_needed()  # below the fold: a chart off screen may wait to be drawn
    page.locator(".st-key-trained_maps .js-plotly-plot").first.wait_for(timeout=60_000)
    assert time.monotonic() - start < 90
    assert page.locator(".st-key-live_curves").count() == 0  # the live chart gave way to the results
    page.locator(".st-key-train_curves .js-plotly-plot").first.wait_for()
    page.locator(".st-key-replay_maps .js-plotly-plot").first.wait_for()
    assert page.get_by_text("Held-out accuracy").count() >= 1


def test_play_moves_the_replay_step(server, page):
    page.goto(server + "?view=train&task=induction&replay_step=0")
    page.locator(".st-key-replay_maps .js-plotly-plot").first.wait_for()
    shown = widget(page, "replay_step").locator("[data-testid='stSliderThumbValue']").first
    assert shown.inner_text() == "0"
    widget(page, "replay_play").locator("button").first.click()
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline and len(set(seen)) < 4:
        seen.append(int(shown.inner_text()))
        time.sleep(0.25)
    assert len(set(seen)) >= 4, f"the replay did not move: {seen}"
    assert seen == sorted(seen)  # forwards only
    assert "replay_step=" in page.url and not page.url.endswith("replay_step=0")  # the link follows the replay
