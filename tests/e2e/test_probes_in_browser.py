"""The probes in chromium, on a 1280 x 720 projector (presenter mode) and a 390 x 844 phone.

Knock a head out (its sentence, bar chart and table), the predictions with a temperature, the repeated-random-
token induction scores and "Why a score is high" (the neuron view): each is drawn, readable, and nothing on the
page is wider than the screen. Every check reads what the browser drew (tests/e2e/dom.py's chart boxes and text).

Each test also saves a screenshot of its probe: to pytest's tmp_path, or, with ``ATTENTION_LAB_SCREENSHOTS=1``,
to dashboard/screenshots/ (how the README's probe pictures are made).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_minilm
from tests.e2e.dom import charts, text_overlaps, toolbar_overlaps, widget
from tests.e2e.test_projector_and_phone import (
    PHONE,
    PROJECTOR,
    assert_projector_readable,
    opened,
)

pytestmark = pytest.mark.e2e

TRAIN = "view=train&task=induction&ablate=L2+H1&temperature=0.5"
"""The recommended induction run, its induction head knocked out, predictions at T = 0.5."""
MODEL = "view=model&weights=trained&task=induction&ablate=L1+H1"
"""The trained model's overview: its previous-token head knocked out, and the repeated-random-token scores."""
STEPS = "view=steps&sentence=the+cat+sat+on+the+mat&probe_query=4&probe_key=1"
"""The steps view's score probe: query "the" (position 4) on key "cat" (position 1)."""

WIDER_THAN_THE_SCREEN = """() => {
  const scrolls = (e) => {
    for (let a = e.parentElement; a; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll('[data-testid=stMain] *')]
    .filter((e) => !e.closest('.js-plotly-plot, svg') && e.checkVisibility())
    .map((e) => [e, e.getBoundingClientRect()])
    .filter(([e, r]) => r.width > 0 && r.height > 0 && (r.right > innerWidth + 0.5 || r.left < -0.5) && !scrolls(e))
    .map(([e, r]) => `${e.tagName} ${e.dataset.testid || ''} ${e.className.toString().slice(0, 40)} `
      + `${Math.round(r.left)}..${Math.round(r.right)} ${(e.textContent || '').slice(0, 30)}`)
    .slice(0, 8);
}"""
"""Visible page elements reaching past either edge of the screen, outside the charts (each chart's box is checked
on its own) and outside any element that scrolls sideways by design (a code block, a table's frame)."""


def shot_path(tmp_path: Path, name: str) -> Path:
    """Where a probe's screenshot goes (see the module docstring)."""
    folder = ROOT / "dashboard" / "screenshots" if os.environ.get("ATTENTION_LAB_SCREENSHOTS") == "1" else tmp_path
    return folder / name


def assert_fits_the_width(page) -> None:
    """No horizontal scrolling: the document is as wide as the screen and no element reaches past it."""
    width, inner = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert width <= inner, f"the page scrolls sideways: {width} px in {inner}"
    assert not page.evaluate(WIDER_THAN_THE_SCREEN)


def drawn(page, key: str, shown: list[dict]) -> dict:
    """The chart keyed ``key`` among those drawn, inside the screen's width."""
    [chart] = [c for c in shown if c["key"] == key]
    box = chart["box"]
    assert box["w"] > 200 and box["h"] > 150, (key, box)
    assert box["x"] >= 0 and box["x"] + box["w"] <= page.viewport_size["width"] + 0.5, (key, box)
    index = [c["key"] for c in charts(page)].index(key)  # toolbar_overlaps counts in charts(page)'s order
    assert not toolbar_overlaps(page, index), f"Plotly's toolbar over {key}'s text"
    return chart


def snap(page, key: str, path: Path) -> None:
    """A screenshot of probe ``key``'s element, scrolled into view."""
    element = widget(page, key)
    element.scroll_into_view_if_needed()
    page.mouse.move(0, 0)  # away from the chart: its toolbar hides again
    element.screenshot(path=str(path), animations="disabled")
    assert path.stat().st_size > 5_000  # a drawn chart, not an empty frame


def readable(page, presenter: bool) -> list[dict]:
    """On a projector, the whole page's text rules (test_projector_and_phone); on a phone, no chart text over
    other text (each probe chart's width is checked by ``drawn``; the maps' phone rules are that file's)."""
    if presenter:
        return assert_projector_readable(page)
    drawn_charts = charts(page)
    assert not text_overlaps(drawn_charts), "text over text"
    return drawn_charts


def assert_section(page, title: str) -> None:
    """The page has one subheading ``title``."""
    assert page.get_by_role("heading", name=title, exact=True).count() == 1, f"one heading {title!r}"


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_knockout_and_predictions_in_the_train_view(browser, server, size, tmp_path):
    presenter = size == PROJECTOR
    with opened(browser, server, TRAIN, size, presenter=presenter) as page:
        shown = readable(page, presenter)
        bars = drawn(page, "ablation_chart", shown)
        assert {t["text"] for t in bars["texts"] if t["kind"] == "xtick"} >= {"L1 H1", "L2 H1"}
        assert_section(page, "Knock a head out")
        assert page.get_by_text("Without L2 H1", exact=False).count() == 1  # the chosen head's sentence
        assert page.locator("[data-testid=stDataFrame]").count() >= 2  # the pattern table and the knockout table
        drawn(page, "predictions_chart", shown)
        assert page.get_by_text("predicted next token and its probability at T = 0.5").count() == 1
        assert_fits_the_width(page)
        name = "probe_ablation.png" if presenter else "probe_predictions_phone.png"
        snap(page, "ablation_chart" if presenter else "predictions_chart", shot_path(tmp_path, name))


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_repeated_random_tokens_and_knockout_in_the_model_view(browser, server, size, tmp_path):
    presenter = size == PROJECTOR
    with opened(browser, server, MODEL, size, presenter=presenter) as page:
        shown = readable(page, presenter)
        scores = drawn(page, "induction_chart", shown)
        assert {t["text"] for t in scores["texts"] if t["kind"] == "xtick"} >= {"L1 H1", "L2 H1"}
        assert_section(page, "Repeated random tokens")
        drawn(page, "ablation_chart", shown)
        assert page.get_by_text("Without L1 H1", exact=False).count() == 1
        assert_fits_the_width(page)
        if presenter:
            snap(page, "induction_chart", shot_path(tmp_path, "probe_induction_scores.png"))


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_why_a_score_is_high_in_the_steps_view(browser, server, size, tmp_path):
    presenter = size == PROJECTOR
    with opened(browser, server, STEPS, size, presenter=presenter) as page:
        shown = readable(page, presenter)
        products = drawn(page, "score_probe_chart", shown)
        assert any("q of the (4)" in t["text"] and "cat (1)" in t["text"] for t in products["texts"]), [
            t["text"] for t in products["texts"] if t["kind"] == "title"
        ]
        assert_section(page, "Why a score is high")
        assert page.locator("[data-testid=stMarkdownContainer] .katex").count()  # the sum and the score, typeset
        assert_fits_the_width(page)
        if presenter:
            snap(page, "score_probe_chart", shot_path(tmp_path, "probe_neuron_view.png"))


def test_minilm_knockout_fits_a_phone(browser, server, tmp_path):
    """MiniLM's zero ablation of one head: the embedding's cosine and the later layers' table, on a phone."""
    require_minilm()
    with opened(browser, server, "view=model&weights=minilm&ablate=L1+H3", PHONE, presenter=False) as page:
        assert_section(page, "Knock a head out")
        assert page.get_by_text("the sentence embedding's cosine with the intact one", exact=False).count() == 1
        page.locator("[data-testid=stDataFrame]").first.wait_for()  # the later layers' table (drawn lazily)
        assert_fits_the_width(page)
