"""A room on the page: start one, follow the teacher, leave and come back, the class's tally.

The app calls, in this order:

1. ``enter_room(link)`` before any widget: spends the teacher link's claim token (``teacher_key``: the key then
   lives in the session and this browser's localStorage, never in an address) and, on a student's page that
   follows the room, writes the room's settings into ``st.session_state`` so the widgets are created with them.
2. ``room_panel(state, presenter)`` in the sidebar and ``class_bar(state, presenter)`` on the page (presenter
   mode's "Share with the class" and room buttons, and the room's dialogs).
3. ``room_quiz.join_quiz(state)`` before the view: the quiz is the teacher's (``dashboard/classroom/room_quiz.py``).
4. ``publish_room(state, settings)`` last: the teacher's widget values become the room's settings (a new version
   only when they changed), with the state of the teacher's training of them, and the question on screen the
   room's question.

A student's page that follows is pushed: it registers with ``dashboard.classroom.push``, whose one thread per
process reads each followed room's version (a dict lookup under a lock, or one Redis round trip) and asks the pages
behind it to rerun. The page itself answers every ``CHECK_SECONDS``: its check keeps its seat (only a page's own
answer does: ``rooms.SEAT_SECONDS``) and is the push's fallback, and its timer also brings the page back after a
server restart. A student exploring on their own answers as often, with a fragment that never reruns the page.

A refusal stops: a page the room cannot take (full, or its server unreachable: ``RoomState.waiting``) says so and
asks again every ``CHECK_SECONDS``, rerunning itself once when it gets in. A fragment asks for a whole run only from
its own run (a timer's, a click's), never from inside a whole run, which draws from what it has just found: a full
room's refused page did so without end (issue 32: 1,684 runs in 20 s from one tab, most of a core). While the
room's server does not answer, a teacher's page keeps its controls and teaches on its own; on the next check that
finds the room again, the room takes the teacher's settings and the students follow again.

The rooms live in ``store()``: in this process, or in Redis when ``ATTENTION_LAB_REDIS_URL`` is set (an
environment variable or a Streamlit secret), so that several app processes serve one room.

The quiz (``dashboard/classroom/quiz_panel.py``) is read through its room interface: ``current_question()``,
``pick(question)`` and ``quiz.question_id``; the room keeps one anonymous integer per session per question.

After class the teacher downloads the tally of each revealed question (CSV, ``tally_csv``), can bring every
student back to following (``RoomStore.recall_students``), and closes the room: each student's page keeps the
view it has, and its room section says that the teacher closed the room.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

import streamlit as st

from dashboard.classroom import push, quiz_panel, teacher_key
from dashboard.classroom.quiz import question_id
from dashboard.classroom.rooms import (
    CODE_LENGTH,
    HOLD_SECONDS,
    LEFT_SECONDS,
    SEAT_SECONDS,
    Client,
    Forbidden,
    MemoryRoomStore,
    Owned,
    RedisRoomStore,
    RoomError,
    RoomStore,
    Snapshot,
    Unreachable,
    normal_code,
)
from dashboard.classroom.share import Base, base_note, public_base, share_button, show_link, with_query
from dashboard.classroom.tally_csv import tally_csv
from dashboard.compute.computations import secret
from dashboard.compute.training_jobs import TEACHER_TRAINING, registry, training_state
from dashboard.page.common import session_id
from dashboard.serve import clients, streamlit_runtime
from dashboard.state.address import onto_room_link
from dashboard.state.followed import Role
from dashboard.state.session import (
    APPLIED,
    CLOSED_MINE,
    DRAWN,
    FOLLOW,
    NOTE,
    QUESTION_WAS_OPEN,
    RECALLED,
    REFUSED,
    SHOW_KEY_ONCE,
    SHOW_LINK,
    SHOW_MINE,
    SPENT,
    TEACHER,
    forget,
    keep,
    set_values,
)
from dashboard.state.settings import LINK_KEYS, Settings

REDIS_URL = "ATTENTION_LAB_REDIS_URL"
"""Environment variable (or Streamlit secret) with a Redis URL: rooms then live there, shared by every process."""

ROOM = "room"
"""The room code's text box; bound to the URL, so a student's reload stays in the room."""
SPENT_LINK = (
    "This teacher link was used already, or it is not this room's (each one opens the room once), so you see the "
    "room as a student. The teacher's page shows a new teacher link in the room's dialog."
)
CHECK_SECONDS = 10.0
"""Every student's page answers the room every 10 s (a following page's check, an explorer's seat, a page waiting
for its place): its seat is seen then and only then. A following page is pushed (``dashboard.classroom.push``):
the check is also the push's fallback (3-8 ms of server CPU per check: about 0.5 ms per student per second)."""
assert CHECK_SECONDS * 2 < SEAT_SECONDS, "a seat must survive one late answer"
TALLY_SECONDS = 2.0
"""The teacher's count of seated students, and of picks until the reveal, redraws every 2 s; the same timer tells
the room that a teacher's page shows it (``RoomStore.hold``)."""
assert TALLY_SECONDS * 30 < HOLD_SECONDS, "a room stays held through a hidden tab's once-a-minute timer"
FOLLOW_P95_SECONDS = ((30, 0.41), (100, 0.98), (200, 2.09), (300, 3.92))
"""(students, seconds): 95% of students' pages showed the teacher's change within this, on one server process
(``python -m bench.load --classroom`` and ``--lecture-hall``, recorded in bench/README.md). What "Start a room"
promises is read from here, so a class bigger than the first row is not told 2 s."""
FOLLOWED_KEYS = tuple(sorted((LINK_KEYS | {quiz_panel.NUMBER}) - {ROOM, "presenter"}))
"""What students take from the teacher: every URL key but the room itself and presenter mode (their screens), and
which of the run's quiz questions is on screen. Never a student's own pick (``quiz_panel.pick_key``)."""


@dataclass(frozen=True)
class RoomState:
    """Where this page stands: no room, a room it runs (teacher), or a room it is in (student)."""

    code: str | None = None
    teacher: bool = False
    following: bool = False
    room: Snapshot | None = None
    problem: str | None = None
    """Our own message (never text from the URL) when the code or the key could not be used."""
    gone: bool = False
    """The room in the link no longer exists: the page offers to start a new one."""
    held: bool = False
    """A student's page that follows only because the teacher's question is open (``question_open``): "Follow the
    teacher" is off, and the page explores on its own once the answer is revealed."""
    waiting: str | None = None
    """Why this page is not in its room yet (our words): the room is full, or its server did not answer. The page
    says so where it would follow and asks again every ``CHECK_SECONDS`` (``follow_line``); the page is the student's
    meanwhile, and a teacher's controls stay the teacher's."""
    unreachable: bool = False
    """The room's server did not answer this run (``rooms.Unreachable``): nothing later in the run asks it."""

    @property
    def role(self) -> Role:
        """Whose page this is: the room's follower, its teacher, or an explorer (in no room, or not following)."""
        return Role.FOLLOWER if self.following else Role.TEACHER if self.teacher else Role.EXPLORER


def question_open(room: Snapshot | None) -> bool:
    """The teacher's question is asked and not revealed. Until it is, every student's page in the room shows the
    room's page (the question, no map), whatever its "Follow the teacher" toggle says, and keeps the room: every
    view of the question's run reveals some answer, and for the mechanics questions on random weights (which cells
    are 0, a row's sum, d_k, a reordering, ÷√d_k) so does every view of any seed or sentence with the same shapes
    and mask, so no view a student could open is safe while the question is open."""
    return room is not None and room.question is not None and room.question not in room.revealed


def redis_url() -> str | None:
    """The configured Redis URL (environment first, then the app's secrets), or None for the in-process store."""
    return os.environ.get(REDIS_URL) or secret(REDIS_URL)


@st.cache_resource(max_entries=1, show_spinner=False)
def store() -> RoomStore:
    """The server's rooms, shared by every session: in Redis when configured, else in this process."""
    url = redis_url()
    return RedisRoomStore(url, alive=clients.alive) if url else MemoryRoomStore(alive=clients.alive)


def client() -> Client:
    """This page as the room's limits count it: its address, its tab and its browser (``dashboard.serve.clients``)."""
    return Client(clients.address(), session_id(), clients.browser())


def missing_room(code: str, teacher_link: bool) -> str:
    """Why room ``code`` is not open, in words: closed, idle, or (in-process rooms) lost with a restart."""
    why = store().gone(code)
    if why == "closed":
        return (
            f"Room {code} was closed by its teacher. Your page keeps the view it had, and it is yours to explore. "
            "Start a new room, or ask for the new code."
        )
    if why == "idle":
        return f"Room {code} closed after 3 hours without a change. Start a new room, or ask for the new code."
    if why == "left":
        return (
            f"Room {code} closed: no page of its teacher had shown it for {LEFT_SECONDS / 60:g} minutes. Start a new "
            "room, or ask for the new code."
        )
    if not store().survives_restart:
        started = time.strftime("%H:%M UTC", time.gmtime(store().started))
        lead = "This teacher link's room is gone" if teacher_link else f"There is no room {code} on this server"
        return (
            f"{lead}: the server restarted at {started}, and rooms live in its memory, so every room opened "
            "before then has ended (or the code is mistyped). Start a new room: it gets a new code."
        )
    return f"No open room has the code {code}: check it, or ask for the new code."


def _teacher_of(code: str) -> str | None:
    """The key this session holds for room ``code``, if any."""
    held = st.session_state.get(TEACHER)
    return held[1] if held and held[0] == code else None


def held_key(code: str) -> str:
    """The key this session holds for room ``code`` ("" for none: every teacher call then says ``Forbidden``)."""
    return _teacher_of(code) or ""


def enter_room(link: Mapping[str, str]) -> tuple[dict[str, str], RoomState]:
    """The link without the teacher link's claim token, and this page's place in a room. Call it before any widget.
    The room's server not answering leaves the page as it is, not in its room (``RoomState.waiting``)."""
    problem = forget(NOTE)
    try:
        return _enter_room(link, problem)
    except Unreachable as err:
        raw_code = st.session_state.get(ROOM, st.query_params.get(ROOM, ""))
        code = normal_code(str(raw_code)) if raw_code else None
        teacher = code is not None and _teacher_of(code) is not None
        return {k: v for k, v in link.items() if k != teacher_key.CLAIM_PARAM}, RoomState(
            code, teacher=teacher, problem=problem, waiting=str(err), unreachable=True
        )


def _enter_room(link: Mapping[str, str], problem: str | None) -> tuple[dict[str, str], RoomState]:
    link = dict(link)
    token = link.pop(teacher_key.CLAIM_PARAM, None)
    raw_code = st.session_state.get(ROOM, st.query_params.get(ROOM, ""))
    code = normal_code(str(raw_code)) if raw_code else None
    if token is not None and code and store().snapshot(code) is None:
        return link, RoomState(code, problem=missing_room(code, teacher_link=True), gone=True)
    if token is not None and _teacher_of(code or "") is None:
        key = store().claim(code, token) if code else None
        if key is not None:
            _become_teacher(code, key)
            _apply(code, store().snapshot(code))  # another device: start from the room's settings
        else:
            problem = SPENT_LINK
            keep(SPENT, code)
    if raw_code and code is None:
        return link, RoomState(problem=f"A room code is {CODE_LENGTH} letters and digits, as the teacher shows it.")
    if code is None:
        return link, RoomState(problem=problem)
    key = _teacher_of(code)
    if key is not None:
        if store().is_teacher(code, key):
            return link, RoomState(code, teacher=True, room=store().snapshot(code), problem=problem)
        forget(TEACHER)
        return link, RoomState(code, problem=missing_room(code, teacher_link=True), gone=True)
    room = store().snapshot(code)
    if room is None:
        return link, RoomState(code, problem=problem or missing_room(code, teacher_link=False), gone=True)
    try:
        store().join(code, session_id())
    except RoomError as err:  # full: the page says so and asks again (``follow_line``), never reruns meanwhile
        return link, RoomState(code, problem=problem, waiting=str(err), unreachable=isinstance(err, Unreachable))
    _back_to_the_room()
    keep(QUESTION_WAS_OPEN, question_open(room))
    following = _still_following(code, room)
    held = not following and question_open(room)  # the teacher's question: shown, whatever the toggle says
    if following or held:
        _apply(code, room)
    if st.session_state.get(SPENT) == code and following:
        problem = problem or SPENT_LINK
    else:
        forget(SPENT)  # the page moved on: exploring, or in another room
    return link, RoomState(code, following=following or held, room=room, problem=problem, held=held)


def _become_teacher(code: str, key: str) -> None:
    """This session runs room ``code`` from now on (``class_bar`` hands the key to the browser: ``teacher_key``);
    a seat it held as a student is freed."""
    keep(TEACHER, (code, key))
    store().leave(code, session_id())


def _back_to_the_room() -> None:
    """Back or Forward onto the entry where this page followed (a following page's address is the room's link:
    ``address.onto_room_link``): the page follows again, rather than opening the student's own default page."""
    if not onto_room_link(st.query_params.to_dict()):
        return
    if not st.session_state.get(FOLLOW, True):
        st.toast("Back in the room: you follow the teacher's view again.", icon="🧭")
    keep(FOLLOW, True)
    forget(APPLIED)  # the room's settings are written into the page again


def _still_following(code: str, room: Snapshot) -> bool:
    """The toggle's state; a student who changed a control while following has left to explore (said once).
    The teacher's "Bring everyone back" turns following on again, once per press."""
    seen = st.session_state.get(RECALLED)
    keep(RECALLED, (code, room.recall))
    if seen is not None and seen[0] == code and room.recall > seen[1]:
        keep(FOLLOW, True)
        forget(APPLIED)
        st.toast("Your teacher brought everyone back: you follow the teacher's view again.", icon="🧭")
        return True
    if not st.session_state.get(FOLLOW, True):
        return False
    if _explored(code, room.version):
        keep(FOLLOW, False)
        st.toast(
            "Your teacher's question is open: your page shows it until the answer is revealed, then you explore on "
            "your own."
            if question_open(room)
            else "You are exploring on your own. Turn on “Follow the teacher” to come back.",
            icon="🧭",
        )
        return False
    return True


_UNSET = object()
"""A key the page's state does not hold (``_explored``)."""


def _explored(code: str, version: int | None = None) -> bool:
    """The student changed a control the room set on this page (a "Try one" example's sentence, say): since the
    room's ``version`` was applied, or since whatever version was applied last (None)."""
    applied = st.session_state.get(APPLIED)
    if not applied or applied[0] != code or version not in (None, applied[1]):
        return False
    for k, value in applied[2].items():
        mine = st.session_state.get(k, _UNSET)  # one look per key: each costs ~30 µs, and a room sets ~48 keys
        if mine is not _UNSET and not _same(mine, value):
            return True
    return False


def follow_on(code: str) -> RoomState | None:
    """In a rerun of the following page's body alone (the room's push, a click in it): the room's newest state,
    its settings written into the page's state; None when the page must run whole instead, to say or draw what
    changed: the room closed, this browser became its teacher, following was turned off (and no question holds the
    page: ``question_open``), the teacher asked or revealed a question (the code box locks or unlocks), the teacher
    brought everyone back, the student changed a control, or the room's server did not answer (``enter_room`` then
    says so)."""
    try:
        room = store().snapshot(code)
    except Unreachable:
        return None
    held = not st.session_state.get(FOLLOW, True)
    if (
        room is None
        or _teacher_of(code) is not None
        or (held and not question_open(room))
        or st.session_state.get(QUESTION_WAS_OPEN, False) != question_open(room)
        or st.session_state.get(RECALLED) != (code, room.recall)
        or _explored(code)
    ):
        return None
    _apply(code, room)
    return RoomState(code, following=True, room=room, held=held)


def _same(mine: object, room: object) -> bool:
    """Equal values; an empty selection is one, whether it reads None or "" (an empty box's URL value)."""
    return mine == room or (mine in (None, "") and room in (None, ""))


def _apply(code: str, room: Snapshot | None) -> None:
    """Write the room's settings into this page's widgets (before they are created), once per version."""
    if room is None:
        return
    applied = st.session_state.get(APPLIED)
    if applied and applied[0] == code and applied[1] == room.version:
        return
    set_values(**{key: value for key, value in room.settings.items() if key in FOLLOWED_KEYS})
    keep(APPLIED, (code, room.version, dict(room.settings)))


def _follow_again() -> None:
    """Toggle callback: following again takes the room's current settings at the next run."""
    if st.session_state.get(FOLLOW):
        forget(APPLIED)


def publish_room(state: RoomState, settings: Settings) -> None:
    """On the teacher's page, last in the run: the widgets' values become the room's settings, with the state of
    the teacher's training of them and the process that holds it (``training_jobs.TEACHER_TRAINING``: the followers
    redraw as it starts and ends)."""
    if not state.teacher or state.code is None or state.waiting:
        return  # a teacher whose room's server is away teaches on alone: the room takes these when it is back
    values = {k: st.session_state[k] for k in FOLLOWED_KEYS if k in st.session_state}
    with contextlib.suppress(ValueError):  # settings no model trains on (the train view says why)
        if (training := training_state(settings.training)) is not None:
            values[TEACHER_TRAINING] = training
    question = quiz_panel.current_question() if st.session_state.get("quiz") else None
    asked = None if question is None else question_id(question)
    try:
        store().publish(state.code, _teacher_of(state.code) or "", values, asked)
        push.changed()  # this process's followers rerun now, not at the watcher's next look
    except Forbidden:
        forget(TEACHER)
        keep(NOTE, "Your room has closed: start a new one.")
    except Unreachable:
        pass  # the page's next look at the room says so (``_seats``), and the next run that reaches it publishes


# -- starting a room -------------------------------------------------------------------------------------------------
def start_room() -> None:
    """Button callback (before the widgets exist): open a room with this page's settings; this session teaches."""
    values = {k: st.session_state[k] for k in FOLLOWED_KEYS if k in st.session_state}
    try:
        code, key = store().open(values, client())
    except RoomError as err:
        keep(REFUSED, str(err))  # shown where the button was pressed: a dialog (``class_bar``)
        return
    keep(TEACHER, (code, key))
    set_values(room=code)
    keep(SHOW_KEY_ONCE, True)


def _leave_room() -> None:
    """Button callback: clear the room code (a teacher's room stays open for the teacher link); a seat is freed (or,
    the room's server away, frees itself within ``SEAT_SECONDS``)."""
    code = normal_code(str(st.session_state.get(ROOM, "") or ""))
    if code:
        with contextlib.suppress(Unreachable):
            store().leave(code, session_id())
    set_values(room="")
    forget(APPLIED)


def _close_room() -> None:
    """Button callback: close the teacher's room for everyone, and say what that does to the students' pages."""
    held = st.session_state.get(TEACHER)
    if held:
        try:
            with contextlib.suppress(Forbidden):  # already closed (idle): nothing left to close
                store().close(*held)
        except Unreachable as err:  # the room stays open, and this page its teacher: the next run says why
            keep(NOTE, str(err))
            return
        forget(TEACHER)
        keep(
            NOTE,
            f"You closed room {held[0]}. Your students' pages keep the view they show, and their room section "
            "says that you closed the room.",
        )
    _leave_room()


def _bring_back() -> None:
    """Button callback: every student in the room follows again (``RoomStore.recall_students``)."""
    code = normal_code(str(st.session_state.get(ROOM, "") or ""))
    if code:
        try:
            store().recall_students(code, held_key(code))
        except Forbidden:  # closed meanwhile: the page says so
            pass
        except Unreachable as err:
            keep(NOTE, str(err))


def after_class(code: str) -> None:
    """The teacher's after-class buttons: bring everyone back, and the tally of each revealed question."""
    st.button(
        "Bring everyone back",
        key="room_recall",
        icon=":material/u_turn_left:",
        on_click=_bring_back,
        help="Every student exploring on their own follows your view again, within a few seconds.",
    )
    try:
        results = store().results(code, held_key(code))
    except RoomError:  # closed meanwhile, or its server away: the page's next look says so
        return
    st.download_button(
        "Download the tally (CSV)",
        tally_csv(results),
        file_name=f"room_{code}_tally.csv",
        mime="text/csv",
        key="room_tally_csv",
        icon=":material/download:",
        disabled=not results,
        on_click="ignore",
        help="One row per revealed question and choice: the question, the choice, how many students picked it "
        "(as it stood at your reveal), and whether it is the right answer."
        if results
        else "Reveal a quiz question first: the file then has the class's tally of each one.",
    )


def start_help() -> str:
    """The "Start a room" help: how quickly students follow, as measured for a class and for a lecture hall."""
    (few, few_s), *hall = FOLLOW_P95_SECONDS
    larger = ", ".join(f"{n} students {s:g} s" for n, s in hall)
    return (
        "Students who open the room's link follow your settings and view as you change them: for a class of "
        f"{few} on one server process, 95% of them within {few_s:g} s; a lecture hall waits longer ({larger}). "
        "You get a room code, a link with a QR code for them, and a teacher link to reopen the room elsewhere."
    )


def start_button() -> None:
    st.button(
        "Start a room",
        key="room_start",
        icon=":material/groups:",
        on_click=start_room,
        help=start_help(),
    )


def _ask_for_mine() -> None:
    """Button callback: the dialog of this browser's rooms opens in the main page (``class_bar``)."""
    keep(SHOW_MINE, True)


def mine_button() -> None:
    """The sidebar's way to the rooms this browser opened (``rooms_dialog``), on a page that runs none."""
    st.button(
        "Rooms this browser opened",
        key="room_mine",
        icon=":material/list:",
        type="tertiary",
        on_click=_ask_for_mine,
        help="The open rooms this browser started, each with a button to close it for everyone.",
    )


def _close_mine(code: str) -> None:
    """Button callback: close room ``code``, one this browser started (``RoomStore.close_mine``)."""
    try:
        store().close_mine(code, client())
    except Forbidden:  # closed meanwhile (or never this browser's): the list says what is left
        pass
    except Unreachable as err:  # the dialog says so, in place of its refusal
        keep(REFUSED, str(err))
        return
    keep(CLOSED_MINE, code)


def owned_line(room: Owned) -> str:
    """One line of the dialog's list: whether a page of this browser holds the room (it counts against the limits)
    or it was left behind, and then when it closes by itself."""
    if room.held:
        return f"Room {room.code}: shown on a page of yours."
    left = max(1, math.ceil((LEFT_SECONDS - room.since) / 60))
    return f"Room {room.code}: no page of yours shows it; it closes by itself within {left} min."


@st.dialog("Rooms this browser opened", width="large")
def rooms_dialog(refusal: str | None) -> None:
    """Where "Start a room" was pressed, whether in the sidebar or the presenter bar: why it was refused, and the
    rooms this browser opened, each with Close, then Start a room again. A Close reruns the dialog alone (a
    fragment), with the same ``refusal``: it then says which room closed instead."""
    closed = forget(CLOSED_MINE)
    if closed:
        st.success(f"You closed room {closed} for everyone.", icon=":material/door_front:")  # our alphabet only
    elif refusal:
        st.warning(refusal, icon=":material/meeting_room:")  # our own message (``RoomStore.open``)
    try:
        owned = store().mine(client())
    except Unreachable as err:
        st.warning(str(err), icon=":material/cloud_off:")  # our own words (``rooms.Unreachable``)
        return
    if not owned:
        st.caption("This browser runs no open room now.")
    for room in owned:
        with st.container(horizontal=True, vertical_alignment="center", key=f"room_mine_{room.code}"):
            st.markdown(owned_line(room))  # our alphabet and our numbers only
            st.button(
                f"Close {room.code}",
                key=f"room_close_mine_{room.code}",
                icon=":material/door_front:",
                on_click=_close_mine,
                args=(room.code,),
                help="Ends the room for everyone: each student's page keeps the view it shows.",
            )
    if st.button("Start a room", key="room_start_again", icon=":material/groups:", on_click=start_room):
        st.rerun()  # the page as a room's teacher (or this dialog again, with why not)


def room_links(code: str, base: Base) -> tuple[str, str]:
    """The students' link (the code only) and the teacher link (the code and the room's unspent claim token)."""
    students = with_query(base.url, {ROOM: code})
    try:
        token = store().claim_token(code, _teacher_of(code) or "")
    except Forbidden:  # not this page's room (or it closed): no teacher link to give
        return students, students
    return students, with_query(base.url, {ROOM: code, teacher_key.CLAIM_PARAM: token})


@st.dialog("Your room", width="large")
def _room_dialog(code: str, with_key: bool) -> None:
    base = public_base()
    try:
        student, teacher = room_links(code, base)
    except Unreachable as err:
        st.warning(str(err), icon=":material/cloud_off:")
        return
    with show_link(student, "the room: students follow your view"):
        with st.container(key="room_code"):  # presenter mode draws the code large (dashboard/page/presenter.py)
            st.subheader(f"Room code: {code}", anchor=False)  # our alphabet only: safe as a heading
        base_note(base)
        if with_key:
            st.warning(
                "Your teacher link opens this room as its teacher on another device. It works once: then this "
                "dialog shows the next one. Until used, anyone with it can change the room: keep it off the "
                "projector and out of the chat. This browser stays the teacher after a reload, in a new tab too.",
                icon=":material/key:",
            )
        with st.expander("Show the teacher link"):
            st.code(teacher, language=None, wrap_lines=True)


def _ask_for_link() -> None:
    """Button callback: the room's link dialog opens in the main page (``class_bar``), not in the sidebar."""
    keep(SHOW_LINK, True)


def class_bar(state: RoomState, presenter: bool) -> None:
    """On the page: presenter mode's buttons (the sidebar is collapsed there) and the room's dialogs. A following page
    has none: sharing its view would hand out a link that does not follow the room, and the room is the teacher's to
    share (the teacher's "Room CODE" dialog)."""
    if presenter and not state.following:
        # as wide as its buttons: beside a view's long heading it moves under it rather than squeezing the
        # buttons into a column with their labels cut ("Share with the cl…" at 1280 px)
        with st.container(horizontal=True, width="content", key="class_bar"):
            share_button()
            if state.teacher and state.code:
                st.button(
                    f"Room {state.code}",
                    key="room_show",
                    icon=":material/qr_code_2:",
                    on_click=_ask_for_link,
                    help="Shows the room's code, link and QR code for students to join.",
                )
            elif state.code is None:
                start_button()
    held = st.session_state.get(TEACHER) if state.teacher else None
    if not state.unreachable:  # its answer is read once the room's server answers again
        teacher_key.browser_keys(store(), state.code, held, _become_teacher)  # a reload, a new tab, a restart
    with_key = forget(SHOW_KEY_ONCE, False)
    refused, mine = forget(REFUSED), forget(SHOW_MINE, False)
    if state.teacher and state.room and (forget(SHOW_LINK, False) or with_key):
        _room_dialog(state.code, with_key)
    elif refused or mine:
        rooms_dialog(refused)
    else:  # a Close the dialog did not rerun for (it was dismissed): not news at its next opening
        forget(CLOSED_MINE)


def fragment_rerun() -> bool:
    """This run reruns fragments alone (a push, a timer, a click in one), not the whole page."""
    return streamlit_runtime.fragment_rerun()


def drawn(state: RoomState) -> None:
    """Last in each run of a following page's body: it drew the room's version to the end (``_check`` reads it)."""
    if state.following and state.room is not None:
        keep(DRAWN, (state.room.code, state.room.version))


def _shows_a_job(settings: Mapping[str, object]) -> bool:
    """A room whose page can show a training job: the train view, or any view of trained weights."""
    return settings.get("view") == "train" or settings.get("weights") == "trained"


def _redraw_training_pages() -> None:
    """``Registry.when_changed``: a job of this process started or ended; the followers of rooms that can show one
    redraw (``push.redraw``), the rest of a lecture hall does not."""
    push.redraw(_shows_a_job)


def watch_room(state: RoomState, body: str | None) -> None:
    """On a following page, in each run of its body (fragment ``body``): the push reruns it at the room's next
    version (``dashboard.classroom.push``), and when a training job of this process starts or ends (the train view
    shows the teacher's run without polling it: ``Registry.when_changed``, given the same callback every time)."""
    if state.following and state.room is not None:
        registry().when_changed(_redraw_training_pages)
        push.watch(store(), session_id(), (state.room.code, state.room.version), body)


def follow_line(state: RoomState) -> None:
    """On a following page, under the view's heading: "Following room CODE" in the page itself (a phone's sidebar is
    collapsed), drawn by the ``_check`` fragment, push's fallback; one element for both. Not in presenter mode's
    heading row: beside a long heading it was squeezed into a column of five lines. On a page waiting for its place
    (``RoomState.waiting``), in the same place: why, by the ``_retry`` fragment, which asks again."""
    if state.following and state.room is not None:
        st.fragment(_check, run_every=CHECK_SECONDS)(state.room.code, state.held)
    elif state.waiting and state.code:
        st.fragment(_retry, run_every=CHECK_SECONDS)(state.code, state.teacher, state.waiting)


def code_box(state: RoomState) -> None:
    """The room code's box, bound to the address (a reload stays in the room). A student's page cannot leave the
    room while the teacher's question is open (``question_open``): out of the room, the page's own quiz would
    reveal it. One box per page: the sidebar's, or the welcome's on a first visit (``dashboard.page.welcome``)."""
    locked = state.following and question_open(state.room)
    st.text_input(
        "Room code",
        value="",
        max_chars=12,
        key="room",  # ROOM, written out: tests/dashboard/test_links.py reads every bound key from the source
        bind="query-params",
        placeholder="e.g. K7QX2M",
        disabled=locked,
        help="You can leave the room once your teacher reveals the answer to the open question."
        if locked
        else "The code on the teacher's screen: type it and press Enter to follow the teacher's view. "
        "Clear it to leave the room.",
    )


def room_panel(state: RoomState, presenter: bool, with_code_box: bool = True) -> None:
    """The sidebar's room section: the code box (unless the welcome holds it: ``code_box``), then start / follow /
    leave as this page's place allows."""
    if not (state.following and state.room is not None):  # a following page's body registers (``watch_room``)
        push.watch(store(), session_id(), None)
    st.subheader("Room", anchor=False)
    if with_code_box:
        code_box(state)
    if state.problem:
        st.warning(state.problem, icon=":material/meeting_room:")
    if state.gone:
        st.button(
            "Start a new room",
            key="room_restart",
            icon=":material/groups:",
            on_click=start_room,
            help="Opens a new room with this page's settings; you run it, and it gets a new code and teacher link.",
        )
        mine_button()
    if state.teacher and state.code and state.room:
        st.fragment(_seats, run_every=TALLY_SECONDS)(state.code)
        st.button(
            "Show the room's link",
            key="room_show_side",
            icon=":material/qr_code_2:",
            on_click=_ask_for_link,
            help="The room's code, link and QR code for students to join.",
        )
        st.button(
            "Close the room",
            key="room_close",
            icon=":material/door_front:",
            on_click=_close_room,
            help="Ends the room for everyone: each student's page keeps the view it shows, now theirs to explore, "
            "and says that you closed the room. Download the tally first: it goes with the room.",
        )
        after_class(state.code)
    elif state.room is not None:
        st.toggle(
            "Follow the teacher",
            value=True,
            key=FOLLOW,
            on_change=_follow_again,
            help="On: your page shows the teacher's settings and view as they change. Off: explore on your own; "
            "turn it on again to come back to the teacher's view.",
        )
        if state.held:
            st.caption("Your teacher's question is open: your page shows it until the answer is revealed.")
        if not state.following:  # a following page's check is on the page itself (``follow_line``)
            st.fragment(_keep_seat, run_every=CHECK_SECONDS)(state.room.code, state.room.recall)
    elif state.code is None:
        if not presenter:  # presenter mode has it in the bar on the page (``class_bar``)
            start_button()
        mine_button()


def _check(code: str, held: bool = False) -> None:
    """Every ``CHECK_SECONDS``: the page answers (its seat seen now), and a change the push missed reruns the page.
    Its timer also makes the browser rerun the whole page after it reconnects to a restarted server (Streamlit's
    frontend does so for a page with self-rerunning fragments), where the page then says the room is gone. The version
    the page shows is the one its body drew to the end last (``drawn``): the push reruns the page's body alone, so
    this fragment's own arguments are older, and a body run that Streamlit ended early (a rerun asked for while it
    drew; 10% of 100 students per change in ``bench.load --classroom``) applied a version it did not finish drawing.
    A version the watcher has already asked this page's rerun for is left to that rerun (``push.pending``).
    In a whole run it only draws its line: ``enter_room`` has just seen the room and the seat."""
    if fragment_rerun():
        try:
            seen = _seen(code)
        except RoomError:  # the seat went to another student meanwhile, or the room's server is away
            seen = None
        shown = st.session_state.get(DRAWN)
        missed = seen != (shown[1] if shown and shown[0] == code else None)
        if seen is None or (missed and not push.pending(session_id(), seen)):
            st.rerun(scope="app")  # the whole page says why, or draws the version it missed
    if held:  # "Follow the teacher" is off, but the teacher's question holds the page
        st.caption(
            f"Room {code}: your teacher's question is open, so your page shows it, not the map, until your teacher "
            "reveals the answer. Then you explore on your own."
        )
    else:
        st.caption(f"Following room {code}: your page changes when the teacher's does.")


def _seats(code: str) -> None:
    """The teacher's line, redrawn every ``TALLY_SECONDS``: how many are seated (live tabs only: ``RoomStore``); a
    room gone, or its server away, reruns the page (from the fragment's own run). The teacher's page holds the room
    (``RoomStore.hold``): it stays open, and counts against the limits."""
    try:
        n = None
        if store().snapshot(code) is not None:
            store().hold(code, held_key(code), session_id())
            n = store().students(code)
    except Unreachable:
        n = None
    if n is None:
        if fragment_rerun():
            st.rerun(scope="app")  # the page says why (closed, idle, left, the server restarted, its server away)
        return
    st.success(f"You run room {code}: {n} student{'s' if n != 1 else ''} joined.", icon=":material/groups:")


def _keep_seat(code: str, recall: int) -> None:
    """Every ``CHECK_SECONDS`` while exploring: the page answers, and the seat stays this student's; a closed room,
    a seat lost, the room's server away, the teacher's "Bring everyone back" (a new ``recall``) or a question the
    teacher asks (``question_open``) reruns the page. In a whole run it does nothing: ``enter_room`` has just seen
    the seat."""
    if not fragment_rerun():
        return
    try:
        room = store().snapshot(code) if _seen(code) is not None else None
    except RoomError:
        room = None
    if room is None or room.recall != recall or question_open(room):
        st.rerun(scope="app")


def _seen(code: str) -> int | None:
    """The room's version, this student seen now; a seat freed while the page was away is taken again. None: the
    room has closed. ``RoomError`` when the seat cannot be had again (the room is full) or its server is away."""
    polled = store().poll(code, session_id())
    if polled is None:
        return None
    version, seated = polled
    if not seated:
        store().join(code, session_id())
    return version


def _retry(code: str, teacher: bool, why: str) -> None:
    """Every ``CHECK_SECONDS`` on a page waiting for its place in room ``code`` (``RoomState.waiting``): ask again
    (the room's server, and a student's seat); once the room takes the page, or has closed, the whole page runs again
    and says so. Meanwhile, and in a whole run, it only says why the page waits: it never reruns the page."""
    if fragment_rerun():
        try:
            if store().snapshot(code) is not None and not teacher:
                store().join(code, session_id())
        except RoomError as err:
            why = str(err)
        else:
            st.rerun(scope="app")
    st.warning(_waiting_note(why, teacher), icon=":material/hourglass_top:")


def _waiting_note(why: str, teacher: bool) -> str:
    if teacher:
        return (
            f"{why} Your controls work as ever: this page asks again every {CHECK_SECONDS:g} s, and your class "
            "follows your settings again once the room answers."
        )
    return (
        f"{why} This page asks again every {CHECK_SECONDS:g} s and follows the teacher once it is in; meanwhile the "
        "page is yours to explore."
    )
