"""Download this tour (dashboard/classroom/tour_export.py): one HTML file, every step's note and charts, plotly.js once.

The charts are checked against the page's own: for every step of lesson 2 the figures in the file are the JSON of
the charts the page drew at that step's address (AppTest, the real script), so the file cannot drift from the view.
Lessons 1 to 3 are checked so (every view they use but the tokens and shapes tables is in the file). The size
target is issue 35's (lesson 2 at most 8 MB). Hostile text in a tour file is escaped; token text inside a
figure stays escaped as the figure builders write it. Drawing with no network: tests/e2e/test_tour_offline.py.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache

import plotly.offline
import pytest

from dashboard.classroom import tour_export, tours
from dashboard.classroom.tours import Step, Tour, load_tours, step_address
from tests.dashboard.conftest import make_app

LESSON_2 = "lesson-2-heads-and-shapes"
MAX_BYTES = 8_000_000


@pytest.fixture(scope="module")
def lesson_2() -> str:
    return tour_export.tour_html(LESSON_2)


def figures_in(html: str) -> dict[str, dict]:
    """Chart div id -> the figure JSON the file draws there (``Plotly.newPlot("id", data, layout, ...)``)."""
    found = {}
    for m in re.finditer(r'Plotly\.newPlot\(\s*"([^"]+)",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{"displaylogo"', html, re.S):
        found[m.group(1)] = {"data": json.loads(m.group(2)), "layout": json.loads(m.group(3))}
    return found


def test_lesson_2_is_one_file_under_8_mb_with_plotly_js_once(lesson_2):
    size = len(lesson_2.encode())
    assert size <= MAX_BYTES, f"lesson 2's tour is {size:,} B"
    js = plotly.offline.get_plotlyjs()
    assert lesson_2.count(js[:200]) == 1 and js in lesson_2
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|<iframe\b|<img\b", lesson_2), "nothing loaded from elsewhere"


def test_every_step_has_its_title_note_and_charts(lesson_2):
    tour = load_tours()[LESSON_2]
    sections = re.findall(r'<section id="step-(\d+)" data-charts="(\d+)">(.*?)</section>', lesson_2, re.S)
    assert [int(n) for n, _, _ in sections] == list(range(1, len(tour.steps) + 1))
    for (n, count, body), step in zip(sections, tour.steps, strict=True):
        assert f"{n}. {html.escape(step.title)}</h2>" in body
        assert f'<p class="note">{html.escape(step.note)}</p>' in body  # lesson 2's notes state no fact
        assert body.count("Plotly.newPlot(") == int(count)
        view = step.settings["view"]
        if view in tour_export.VIEW_CHARTS:
            assert int(count) > 0, f"step {n} ({view}) has no chart"
        else:
            assert "has no chart in this file" in body


def page_specs(slug: str, number: int, without_quiz: bool = False) -> list[dict]:
    """The charts the page draws at the step's address (with the quiz off: the maps its Reveal answers with), in
    page order, as their JSON specs (AppTest)."""
    address = step_address(slug, number)
    at = make_app(**({k: v for k, v in address.items() if k != "quiz"} if without_quiz else address))
    at.run()
    assert not at.exception
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


LESSONS = ("lesson-1-one-head", LESSON_2, "lesson-3-from-scratch")


@cache
def tour_file(slug: str) -> str:
    return tour_export.tour_html(slug)


@pytest.mark.parametrize(
    ("slug", "number"), [(slug, n) for slug in LESSONS for n in range(1, len(load_tours()[slug].steps) + 1)]
)
def test_the_file_draws_what_the_page_draws(slug, number):
    """Each of the step's figures in the file is one of the page's charts at that step (data and layout), in the
    page's order; the page draws more (a quiz's, a code view's), never less of the view's."""
    html_file = tour_file(slug)
    drawn = [f for key, f in figures_in(html_file).items() if key.startswith(f"step{number}-")]
    count = int(re.search(rf'<section id="step-{number}" data-charts="(\d+)">', html_file).group(1))
    assert len(drawn) == count, "every chart of the step was read from the file"
    view = load_tours()[slug].steps[number - 1].settings["view"]
    assert count > 0 or (view not in tour_export.VIEW_CHARTS and view in ("tokens", "shapes"))
    quiz = load_tours()[slug].steps[number - 1].settings.get("quiz") is True
    page = page_specs(slug, number, without_quiz=quiz)  # a quiz step's page hides the maps until Reveal
    assert (
        not quiz or "the maps below are the answer" in html_file.split(f'id="step-{number}"')[1].split("</section>")[0]
    )

    def same(a: dict, b: dict) -> bool:
        return a["data"] == b["data"] and {k: v for k, v in a["layout"].items() if k != "template"} == {
            k: v for k, v in b["layout"].items() if k != "template"
        }

    at = 0
    for figure in drawn:
        while at < len(page) and not same(figure, page[at]):
            at += 1
        assert at < len(page), f"step {number}: a chart in the file is not on the page"
        at += 1


def test_facts_in_a_note_are_read_from_the_step_s_computation(monkeypatch):
    hostile = "<script>alert('x')</script> & <b>bold</b>"
    tour = Tour(
        "hostile",
        f"A tour {hostile}",
        "",
        f"about {hostile}",
        (
            Step(f"Step {hostile}", f"{{tokens}} tokens, {{k_shape}} for K. {hostile}", {"view": "heads"}),
            Step("Typed tokens", "Tokens as typed.", {"view": "heads", "sentence": "<img src=x onerror=alert(1)> go"}),
            Step("A table", "No chart here.", {"view": "shapes"}),
        ),
    )
    monkeypatch.setattr(tour_export, "load_tours", lambda: {"hostile": tour})
    monkeypatch.setattr(tours, "load_tours", lambda: {"hostile": tour})
    page = tour_export.tour_html("hostile")
    assert "<script>alert" not in page and "<b>bold" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    settings, _ = tour_export.step_page("hostile", 1)
    t, h, d_k = (
        len(settings.sentence.split()),
        settings.config.n_heads,
        settings.config.d_model // settings.config.n_heads,
    )
    assert f"{t} tokens, ({h}, {t}, {d_k}) for K." in page  # shape_text of the run's K: (kv_heads, T, d_k)
    assert "The shapes view has no chart in this file" in page


def test_the_sidebar_offers_the_download_while_a_tour_runs():
    at = make_app(**step_address(LESSON_2, 2))
    at.run()
    buttons = [b for b in at.get("download_button") if b.proto.id.endswith("tour_download")]
    assert len(buttons) == 1 and buttons[0].proto.label == "Download this tour"
    at = make_app()
    at.run()
    assert not [b for b in at.get("download_button") if b.proto.id.endswith("tour_download")]
