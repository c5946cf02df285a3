"""The first screen's welcome: what Attention Lab is, and three ways in (a lesson's tour, presenter mode, a room).

A bare address (no query parameters) opens it; any parameter (a shared link, a tour, a room) does not. It closes
when the visitor picks a way in or closes it, or once the page follows a room, and the sidebar's "Welcome" button
opens it again. The default view draws below it, so the first screen already shows maps.

It holds the room code's box while it is open (``room_page.code_box``): a student on a phone types the code on the
first screen, where a collapsed sidebar would hide it.
"""

from __future__ import annotations

import streamlit as st

from dashboard.classroom.room_page import RoomState, code_box, start_room
from dashboard.classroom.tours import apply_step, load_tours
from dashboard.state.followed import Role
from dashboard.state.session import WELCOME_OPEN, keep, keep_first, set_values


def open_on_first_visit() -> None:
    """Call it first in the run, before anything reads or rewrites the address: a bare address opens the welcome."""
    keep_first(WELCOME_OPEN, not len(st.query_params))


def _open() -> None:
    keep(WELCOME_OPEN, True)


def _close() -> None:
    keep(WELCOME_OPEN, False)


def _take_tour(slug: str) -> None:
    """Button callback: the tour's first step, welcome closed."""
    apply_step(slug, 1)
    _close()


def _present() -> None:
    set_values(presenter=True)
    _close()


def _start() -> None:
    start_room()
    _close()


def welcome_button() -> None:
    """The sidebar's way back to the welcome (call it inside ``st.sidebar``)."""
    st.button(
        "Welcome",
        key="welcome_open",
        icon=":material/waving_hand:",
        on_click=_open,
        disabled=bool(st.session_state.get(WELCOME_OPEN)),
        help="What Attention Lab is, and three ways to start: a lesson's tour, presenter mode, a room.",
    )


def welcome(room: RoomState, role: Role) -> bool:
    """The welcome, while it is open (call it at the top of the page, after ``room_page.enter_room``); True when it
    drew the room code's box (the sidebar then draws none). A page that follows a room closes it: the teacher's maps
    are what the student came for; and so does the page that runs one (``role``)."""
    if role is not Role.EXPLORER:
        _close()
    if not st.session_state.get(WELCOME_OPEN):
        return False
    with st.container(border=True, key="welcome"):
        st.markdown(
            "**Welcome to Attention Lab:** attention maps of a sentence you type, computed live and exactly by a "
            "small NumPy model (the page below is live). Three ways in: take a lesson's tour, project it in "
            "presenter mode, or start a room your students follow. A student joins a room by typing its code in "
            "Room code."
        )
        # one tour to a line: a squeezed button in a row (or in st.columns) cuts its label with an ellipsis ("What
        # heads learn: a pretrained model and a t…" on a 390 px phone); on a line of its own the label wraps
        with st.container(key="welcome_tours"):
            for slug, tour in load_tours().items():  # the tour files' own titles, never typed input
                st.button(
                    tour.title,
                    key=f"welcome_tour_{slug}",
                    icon=":material/route:",
                    on_click=_take_tour,
                    args=(slug,),
                    help=f"Take this lesson's tour: {tour.about} Each step sets the view and notes what to ask.",
                )
        # one row, aligned on the buttons' bottom edge: the code box's label sits above it
        with st.container(horizontal=True, vertical_alignment="bottom", key="welcome_ways"):
            st.button(
                "Presenter mode",
                key="welcome_presenter",
                icon=":material/co_present:",
                on_click=_present,
                help="For a projector: larger type and cells in every figure, fewer panels per row.",
            )
            st.button(
                "Start a room",
                key="welcome_room",
                icon=":material/groups:",
                on_click=_start,
                help="Students who open the room's link follow your settings and view as you change them.",
            )
            with st.container(key="welcome_join", width=220):  # a code is 6 characters
                code_box(room)  # a student's way in: the code on the teacher's screen
            st.button(
                "Close",
                key="welcome_close",
                icon=":material/close:",
                on_click=_close,
                help="Hide this welcome; the sidebar's Welcome button shows it again.",
            )
        if room.problem:  # our own message, under the code box: a mistyped code, a closed or full room
            st.warning(room.problem, icon=":material/meeting_room:")
    return True
