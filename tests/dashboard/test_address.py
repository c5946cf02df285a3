"""The address the page sends once per run (``dashboard/state/address.py``; the Streamlit internals it goes through are
contract-tested in ``tests/dashboard/test_streamlit_runtime.py``): what the address holds after a view change and a
tour step (chromium counts the history entries: tests/e2e/test_history_and_welcome.py)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext
from streamlit.runtime.state.query_params import QueryParams

from dashboard.classroom.teacher_key import CLAIM_PARAM
from dashboard.state import address
from dashboard.state.address import sends
from dashboard.state.session import KEY_IN_PLACE
from tests.dashboard.conftest import make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)


def query(at) -> dict[str, str]:
    """The AppTest page's address, one value per key."""
    return {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}


def test_a_view_change_is_in_the_address_and_the_default_view_is_not():
    at = make_app(n_heads="2").run()
    at.button_group(key="view").set_value("steps").run()
    no_exception(at)
    assert query(at) == {"n_heads": "2", "view": "steps"}
    at.button_group(key="view").set_value("heads").run()
    assert query(at) == {"n_heads": "2"}


def test_a_control_of_the_view_left_leaves_the_address():
    at = make_app(values="true").run()
    assert query(at) == {"values": "true"}
    at.button_group(key="view").set_value("shapes").run()
    no_exception(at)
    assert query(at) == {"view": "shapes"}


def test_a_tour_step_is_the_whole_address():
    at = make_app(tour="lesson-1-one-head").run()
    no_exception(at)
    first = query(at)
    assert first["tour"] == "lesson-1-one-head" and first["view"] == "tokens" and first["n_heads"] == "1"
    at.button(key="tour_next").click().run()
    no_exception(at)
    second = query(at)
    assert second["tour_step"] == "2" and second["view"] == "steps"
    assert second["sentence"] == "the robot opens the door"
    at.button(key="tour_end").click().run()
    assert "tour" not in query(at) and "tour_step" not in query(at)


def test_every_finished_run_sends_its_address_even_when_nothing_moved(monkeypatch):
    # A run superseded by a click right after its send loses that message (the session forwards only its current
    # ScriptRunner's), so "the last one sent" need not be what the browser has: a run that moved nothing sends too.
    sent: list[str] = []
    real = QueryParams._send_query_param_msg

    def spy(qp: QueryParams) -> None:
        real(qp)
        sent.append(urlencode(qp._query_params, doseq=True))

    monkeypatch.setattr(QueryParams, "_send_query_param_msg", spy)
    at = make_app(n_heads="2").run()
    at.run()  # nothing clicked: same address as the last run's
    no_exception(at)
    assert sent == ["n_heads=2", "n_heads=2"]


@pytest.fixture
def to_browser(monkeypatch) -> list[str]:
    """Every address the runs put on their way to the browser (``page_info_changed``), whoever in Streamlit or here
    sent it: what the browser pushes or replaces."""
    sent: list[str] = []
    real = ScriptRunContext.enqueue

    def spy(ctx: ScriptRunContext, msg) -> None:
        if msg.WhichOneof("type") == "page_info_changed":
            sent.append(msg.page_info_changed.query_string)
        real(ctx, msg)

    monkeypatch.setattr(ScriptRunContext, "enqueue", spy)
    return sent


def test_a_run_sends_one_address_whatever_streamlit_writes_on_its_way(to_browser):
    # The behaviour the private hold stands for: if Streamlit wrote the address through anything but the instance's
    # _send_query_param_msg (a rename, a new path), a tour step would send several again (4 and 5 in 1.67 unheld).
    at = make_app(tour="lesson-1-one-head").run()
    assert to_browser == [urlencode(query(at))]
    to_browser.clear()
    at.button(key="tour_next").click().run()
    no_exception(at)
    assert to_browser == [urlencode(query(at))] and query(at)["tour_step"] == "2"
    to_browser.clear()
    at.button_group(key="view").set_value("shapes").run()  # bound controls of the view left go in the same one
    assert to_browser == [urlencode(query(at))] and query(at)["view"] == "shapes"


def test_a_page_holding_a_claim_token_sends_no_address(to_browser):
    at = make_app(n_heads="2", **{CLAIM_PARAM: "token"}).run()
    no_exception(at)
    assert to_browser == []  # teacher_key takes the token out in place; a pushed address would keep it in history


def test_a_page_holding_a_claim_token_keeps_the_address_the_browser_writes_in_its_place(to_browser):
    # teacher_key rewrites the link's entry to this address: the first address the page sends is then already the
    # browser's, and adds no entry (tests/e2e/test_teacher_identity.py counts them)
    at = make_app(n_heads="2", seed="5", view="steps", **{CLAIM_PARAM: "token"}).run()
    no_exception(at)
    assert at.session_state[KEY_IN_PLACE] == "n_heads=2&seed=5&view=steps" and to_browser == []


def test_which_runs_send():
    assert sends({"n_heads": "2"}) and sends({}) and sends({"room": "ABC123"})
    assert not sends({CLAIM_PARAM: "token", "view": "steps"})  # teacher_key takes it out in place


def test_an_address_the_page_sent_before_is_not_read_as_a_link():
    # Fast clicks: the click that chose heads left while the page's own earlier view=steps was still the browser's
    # address, so the rerun reports view=steps; it is the page's, not a link, and the view stays heads.
    at = make_app(n_heads="2").run()
    at.button_group(key="view").set_value("steps").run()
    at.button_group(key="view").set_value("heads").run()
    assert query(at) == {"n_heads": "2"}
    at.query_params["view"] = "steps"  # what the browser reports with the next rerun
    at.run()
    no_exception(at)
    assert at.button_group(key="view").value == "heads" and query(at) == {"n_heads": "2"}


def test_a_following_page_sends_the_rooms_link_and_nothing_else(to_browser, tabs):  # noqa: F811
    """Its entry in the history is the room's (``address.onto_room_link``: Back onto it follows again), whatever
    address the student joined from (it sent nothing, and kept the address it joined from)."""
    _, code, _ = start_room(tabs, seed="5")
    to_browser.clear()
    student = tabs(make_app(room=code, view="steps", n_heads="2"), "s1")
    no_exception(student)
    assert to_browser == [f"room={code}"]
    assert query(student) == {"room": code}
    to_browser.clear()
    student = tabs(make_app(room=code, presenter="true"), "s2")  # the student's own screen stays in it
    assert to_browser == [f"presenter=true&room={code}"]


@pytest.mark.parametrize(
    ("query", "back", "follows"),
    [
        ({"room": "K7QX2M"}, True, True),
        ({"room": "K7QX2M", "presenter": "true"}, True, True),  # the student's own screen stays a room link
        ({"room": "K7QX2M", "seed": "5"}, True, False),  # an exploring page's entry: its own settings
        ({"room": "K7QX2M", "view": "steps"}, True, False),
        ({"presenter": "true"}, True, False),  # no room
        ({}, True, False),
        ({"room": "K7QX2M"}, False, False),  # not Back or Forward: a link opened or a reload follows by itself
    ],
)
def test_back_onto_a_room_link_follows_again(monkeypatch, query, back, follows):
    """Back or Forward onto the entry a following page made (its address: the room's link only)."""
    monkeypatch.setattr(address, "going_back", lambda: back)
    assert address.onto_room_link(query) is follows
