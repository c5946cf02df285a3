"""The quiz in a room is the teacher's: the teacher reveals for the class, students pick for it.

``join_quiz(state)``, before the view, puts this run's ``RoomQuiz`` in the session for ``quiz_panel`` (its
``InRoom`` interface): the panel then asks the teacher for no pick of their own, sends a student's pick to the
room, shows a student the answer only once the room has it, and draws the class's count and tally in the panel,
under the question, where the class looks.

The room keeps one integer per student for the teacher's current question (``rooms.RoomStore.record_guess``); at
the reveal it keeps the counts with the question's text and choices for the teacher's download
(``tally_csv``).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard.classroom import room_page
from dashboard.classroom.quiz import Question, question_id
from dashboard.classroom.room_page import TALLY_SECONDS, RoomState, held_key, store
from dashboard.classroom.rooms import Forbidden, RoomError, Snapshot
from dashboard.figures.tally import tally_figure
from dashboard.page.common import PLOTLY_CONFIG
from dashboard.state import session
from dashboard.state.session import forget, keep


@dataclass(frozen=True)
class RoomQuiz:
    """This run's room, as the quiz sees it (``quiz_panel.InRoom``)."""

    code: str
    teacher: bool
    following: bool
    room: Snapshot
    """The room as this run began: its revealed answers and the teacher's current question."""

    def for_class(self, qid: str) -> bool:
        return self.following or qid == self.room.question

    def revealed(self, qid: str) -> int | None:
        return self.room.revealed.get(qid)

    def send(self, qid: str, pick: int) -> str | None:
        try:
            store().record_guess(self.code, qid, room_page.session_id(), pick)  # the tab's id
        except RoomError as err:
            return str(err)
        return None

    def reveal(self, question: Question) -> None:
        qid = question_id(question)
        try:
            store().reveal(self.code, held_key(self.code), qid, question.answer, question.text, question.choices)
        except (Forbidden, RoomError):
            return  # the room closed meanwhile: the page says so on this run

    def tally(self, question: Question, presenter: bool) -> None:
        qid = question_id(question)
        every = None if self.revealed(qid) is not None else TALLY_SECONDS  # after the reveal the bars stand still
        st.fragment(_tally, run_every=every)(self.code, qid, tuple(question.choices), presenter)

    def picks(self, qid: str) -> list[int] | None:
        if self.revealed(qid) is None:
            return None
        try:
            kept = next((r for r in store().results(self.code, held_key(self.code)) if r["id"] == qid), None)
        except (Forbidden, RoomError):
            return None  # a student holds no key, or the room closed: the page's own pick instead
        return None if kept is None else [int(c) for c in kept["counts"]]


def join_quiz(state: RoomState) -> None:
    """Before the view: the quiz of this run is the room's (``session.QUIZ_ROOM``), or its own outside a room. The
    question on screen is the one this run's view asks (``quiz_panel.ask``), none if it asks none: a teacher who
    moved to a view without the quiz asks the room nothing (``room_page.publish_room``), so the students' pages are
    no longer held on it."""
    forget(session.QUIZ_CURRENT)
    if state.code is None or state.room is None:
        forget(session.QUIZ_ROOM)
        return
    keep(session.QUIZ_ROOM, RoomQuiz(state.code, state.teacher, state.following, state.room))


def _tally(code: str, qid: str, choices: tuple[str, ...], presenter: bool) -> None:
    """The teacher's line, then bars: how many seated students picked so far (live); once revealed, the tally
    the room kept at the reveal."""
    key = held_key(code)
    try:
        room = store().snapshot(code)
        if room is None:
            return  # closed: the page's next run says so
        if qid not in room.revealed:
            n, seated = sum(store().tally(code, key, qid).values()), store().students(code)
            st.caption(
                f"The class: {n} of {seated} student{'s' if seated != 1 else ''} picked so far. "
                "The tally appears when you reveal."
            )
            return
        kept = next((r for r in store().results(code, key) if r["id"] == qid), None)
    except RoomError:  # closed, or its server away: the page's next look says so
        return
    counts = dict(enumerate(kept["counts"])) if kept else {}
    if not any(counts.values()):
        st.caption("No student had picked when you revealed.")
        return
    figure = tally_figure(choices, counts, room.revealed[qid], presenter=presenter)
    st.plotly_chart(figure, key="room_tally", config=PLOTLY_CONFIG)
