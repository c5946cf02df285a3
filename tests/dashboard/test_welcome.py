"""The first screen's welcome (AppTest): a bare address opens it, a link or a pick closes it, the sidebar reopens
it, and tours are offered by their titles, near the top of the sidebar."""

from __future__ import annotations

import tomllib

import pytest

from dashboard.classroom import room_page
from dashboard.classroom.tours import TOURS_DIR
from dashboard.state.url_state import read
from tests.dashboard.conftest import figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

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


# -- a student who types the room code (issue 31, part 7) -----------------------------------------------------------
def main_box(at) -> bool:
    """The room code's box is on the page itself (a phone's collapsed sidebar hides the sidebar's)."""
    return any(w.key == room_page.ROOM for w in at.main.text_input)


def side_box(at) -> bool:
    return any(w.key == room_page.ROOM for w in at.sidebar.text_input)


def test_the_room_code_box_is_in_the_welcome_while_it_is_open():
    at = make_app().run()
    assert main_box(at) and not side_box(at), "one box, on the first screen"
    at.button(key="welcome_close").click().run()
    no_exception(at)
    assert side_box(at) and not main_box(at), "closed: back in the sidebar"


def test_a_student_who_types_the_code_follows_and_the_welcome_closes(tabs):  # noqa: F811
    _, code, _ = start_room(tabs, seed="5")
    student = tabs(make_app(), "s1")
    assert set(WAYS_IN) <= keys(student)
    student.text_input(key=room_page.ROOM).set_value(code)
    tabs(student, "s1")
    no_exception(student)
    assert f"Following room {code}" in " ".join(c.value for c in student.caption)
    assert not set(WAYS_IN) & keys(student), "following: the welcome has closed"
    assert side_box(student) and not main_box(student)
    assert figures(student), "the teacher's maps"
    tabs(student, "s1")
    assert not set(WAYS_IN) & keys(student), "and it stays closed"


def test_a_mistyped_code_keeps_the_welcome_and_says_why_in_it(tabs):  # noqa: F811
    start_room(tabs)
    student = tabs(make_app(), "s1")
    student.text_input(key=room_page.ROOM).set_value("ZZZZZZ")
    tabs(student, "s1")
    no_exception(student)
    assert set(WAYS_IN) <= keys(student), "not in a room: the welcome stays"
    assert any("ZZZZZZ" in w.value for w in student.main.warning), "why, under the box on the first screen"
