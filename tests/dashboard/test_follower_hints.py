"""A following student's page: no hint tells the student to use a control the page does not draw, and MiniLM's 72
maps are one layer at a time (the teacher's), as large as a phone's width allows; the teacher's page keeps them all."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_minilm
from tests.dashboard.conftest import keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

HINT = re.compile(r"(?:^|[.:;!?)]\s+|,\s+|\(|\s-\s)(turn|flip|type|choose|switch|press|drag|open|change|click)\b", re.I)
"""A sentence that tells the reader to use a control: it starts with (or a clause starts with) one of these verbs."""
THEIRS = ("Follow the teacher",)
"""Controls a following page draws: a hint naming them is true there (turn off "Follow the teacher" to explore)."""
LINKS = {
    "heads, scaling off": dict(view="heads", scaled="false"),
    "heads, one token": dict(view="heads", sentence="hello"),
    "steps, no mask": dict(view="steps"),
    "positions, odd d_k": dict(view="positions", d_model="8", n_heads="8"),
    "scaling, one token": dict(view="scaling", sentence="hello"),
    "summary, random weights": dict(view="summary", scaled="false"),
    "previous-token weights, no positions": dict(view="heads", weights="previous", positional="none"),
    "empty sentence": dict(view="heads", sentence=" "),
}


def texts(at) -> list[str]:
    """Every sentence the page writes (main area and sidebar): markdown, captions and alerts."""
    kinds = ("markdown", "caption", "info", "warning", "error", "success")
    return [e.value for kind in kinds for e in getattr(at, kind)] + [
        e.value for kind in kinds for e in getattr(at.sidebar, kind)
    ]


def hints(at) -> list[str]:
    """The page's sentences that tell the reader to use a control it does not draw."""
    return [t for t in texts(at) if HINT.search(t) and not any(name in t for name in THEIRS)]


@pytest.mark.parametrize("name", list(LINKS))
def test_a_following_page_names_no_control_it_does_not_draw(tabs, name):  # noqa: F811
    """The same settings on the teacher's page give the hint (it has the controls); the student's page drops it."""
    teacher, code, _ = start_room(tabs, **LINKS[name])
    assert hints(teacher), f"{name}: the teacher's page has a hint to drop (else this case checks nothing)"
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert not hints(student), hints(student)


def test_minilm_s_model_view_follows_one_layer_at_a_time(tabs):  # noqa: F811
    """72 maps of ~25 px on a 390 px phone: a following page draws the teacher's layer, each head its own chart (a
    phone stacks them, each the phone's width), and no "One layer at a time" switch or hint; the teacher's page (the
    projector) keeps the whole grid in one chart."""
    require_minilm()
    teacher, code, _ = start_room(tabs, view="model", weights="minilm", layer="3")
    assert len(keyed_figures(teacher)["model_chart"]["data"]) >= 72  # every layer's heads, one chart
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    grid = [
        k for k in (f.proto.id.rsplit("-", 1)[-1] for f in student.get("plotly_chart")) if k.startswith("model_chart_")
    ]
    assert len([k for k in grid if k != "model_chart_bar"]) == 12  # one chart per head of one layer
    titles = [keyed_figures(student)["model_chart"]["layout"]["annotations"][0]["text"]]
    assert titles == ["layer 3, head 1"]  # the teacher's layer
    assert not [t for t in student.toggle if t.key == "one_layer"]
    assert not any("One layer at a time" in t for t in texts(student))
    assert "Layer 3 of 6, the teacher's: 12 head maps" in " ".join(texts(student))  # the line says what it shows
    assert not hints(student), hints(student)
