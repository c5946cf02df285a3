"""The first screen's welcome (AppTest): a bare address opens it, a link or a pick closes it, the sidebar reopens
it, and tours are offered by their titles, near the top of the sidebar."""

from __future__ import annotations

import tomllib

import pytest

from dashboard.classroom.tours import TOURS_DIR
from dashboard.url_state import read
from tests.dashboard.conftest import figures, make_app, no_exception

TITLES = {p.stem: tomllib.loads(p.read_text(encoding="utf-8"))["title"] for p in sorted(TOURS_DIR.glob("*.toml"))}
"""Each tour file's title, read from the files themselves."""
WAYS_IN = ("welcome_presenter", "welcome_room", "welcome_close", *(f"welcome_tour_{slug}" for slug in TITLES))


def keys(at) -> set[str]:
    return {b.key for b in at.button}


def test_a_bare_address_opens_the_welcome_above_the_live_page():
    at = make_app().run()
    no_exception(at)
    assert set(WAYS_IN) <= keys(at)
    assert "Welcome to Attention Lab" in at.markdown[0].value
    assert figures(at), "the default view draws below it"


@pytest.mark.parametrize("query", [dict(n_heads="2"), dict(view="steps"), dict(tour="lesson-1-one-head")])
def test_any_query_parameter_leaves_it_closed(query):
    at = make_app(**query).run()
    no_exception(at)
    assert not set(WAYS_IN) & keys(at)
    assert "welcome_open" in keys(at), "the sidebar can still open it"


def test_closing_it_and_reopening_it():
    at = make_app().run()
    at.button(key="welcome_close").click().run()
    assert not set(WAYS_IN) & keys(at)
    at.run()
    assert not set(WAYS_IN) & keys(at), "it stays closed"
    at.button(key="welcome_open").click().run()
    no_exception(at)
    assert set(WAYS_IN) <= keys(at)


@pytest.mark.parametrize("slug", list(TITLES))
def test_a_tour_button_starts_that_tour_by_its_title(slug):
    at = make_app().run()
    button = at.button(key=f"welcome_tour_{slug}")
    assert button.label == TITLES[slug]
    button.click().run()
    no_exception(at)
    assert at.session_state["tour"] == slug and at.session_state["tour_step"] == 1
    assert at.query_params["tour"] in (slug, [slug]), "the address carries the slug, not the title"
    assert not set(WAYS_IN) & keys(at)


def test_presenter_mode_from_the_welcome():
    at = make_app().run()
    at.button(key="welcome_presenter").click().run()
    no_exception(at)
    assert at.toggle(key="presenter").value is True
    assert not set(WAYS_IN) & keys(at)


def test_a_room_from_the_welcome():
    at = make_app().run()
    at.button(key="welcome_room").click().run()
    no_exception(at)
    assert at.text_input(key="room").value, "a room code: this page runs the room"
    assert not set(WAYS_IN) & keys(at)


def test_the_sidebar_lists_tours_by_title_above_the_controls():
    at = make_app().run()
    picker = at.sidebar.selectbox(key="tour")
    assert picker.options == list(TITLES.values())
    order = [w.key for w in at.sidebar if getattr(w, "key", None)]
    assert order.index("tour") < order.index("sentence"), "above the first setting"
    picker.select("lesson-2-heads-and-shapes").run()
    no_exception(at)
    assert at.session_state["tour"] == "lesson-2-heads-and-shapes"
    assert at.query_params["tour"] in ("lesson-2-heads-and-shapes", ["lesson-2-heads-and-shapes"])


def test_owned_keys_leave_the_address_at_their_defaults():
    tour = "lesson-1-one-head"
    assert read({"view": "heads"}).address() == {}
    assert read({"view": "steps", "tour": tour}).address() == {"view": "steps", "tour": tour}
    assert read({"view": "steps", "tour": ""}).address() == {"view": "steps"}
