"""The page's role and its ``Controls``: a page with controls draws each one; a following page returns the room's
value (or the control's default when the room holds none) and draws nothing."""

from __future__ import annotations

import pytest

from dashboard.classroom.room_page import RoomState
from dashboard.state.followed import OWN, Controls, Role


class Drawn:
    """A control's ``draw``: returns ``value`` and counts its calls."""

    def __init__(self, value: object) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def test_a_page_with_controls_draws_each_one_it_is_asked_for():
    draw = Drawn(3)
    assert OWN.drawn and OWN.choice("head", 1, draw) == 3 and draw.calls == 1
    assert OWN.hint(" Type a longer sentence.") == " Type a longer sentence."
    assert OWN.room_value("head") is None


@pytest.mark.parametrize(("room", "shown"), [({"head": 4}, 4), ({"head": None}, None), ({}, 1)])
def test_a_following_page_shows_the_rooms_value_or_the_default_and_draws_nothing(room, shown):
    draw = Drawn(3)
    controls = Controls(room)
    assert not controls.drawn
    assert controls.choice("head", 1, draw) == shown and draw.calls == 0
    assert controls.hint(" Type a longer sentence.") == ""
    assert controls.room_value("head") == room.get("head")


@pytest.mark.parametrize(
    ("state", "role"),
    [
        (RoomState(), Role.EXPLORER),
        (RoomState(code="ABCDE"), Role.EXPLORER),  # in a room, "Follow the teacher" off
        (RoomState(code="ABCDE", teacher=True), Role.TEACHER),
        (RoomState(code="ABCDE", following=True), Role.FOLLOWER),
        (RoomState(code="ABCDE", following=True, held=True), Role.FOLLOWER),  # held by the open question
    ],
)
def test_the_role_is_one_value_of_where_the_page_stands(state, role):
    assert state.role is role


def test_a_key_session_does_not_declare_is_refused_when_written():
    """``session`` is the whole of the page's memory: writing a key it does not declare fails loudly; a question's
    pick key, declared by its start, is kept."""
    import streamlit as st

    from dashboard.state import session

    with pytest.raises(session.Undeclared):
        session.keep("_a_key_nobody_declared", 1)
    assert "_a_key_nobody_declared" not in st.session_state
    session.keep(f"{session.QUIZ_PICK}q1", 2)
    assert session.forget(f"{session.QUIZ_PICK}q1") == 2
