"""Attention Lab: the entry file. It routes; the views render.

Run from the repository root: ``streamlit run dashboard/app.py``.

One page, one view at a time, chosen by a selector written to the ``view`` query
parameter (by ``dashboard/address.py``: each view change is a history entry): a link
carries the whole state, and only the chosen view computes. Why not ``st.navigation``: it works in the browser, but
``AppTest.switch_page`` reaches file-based pages only, so each ``render(settings)``
view would need a stub script plus a Session State hand-off of the settings, and
the view would live in the URL path while everything else lives in the query.
"""

import os
import sys
from pathlib import Path

# One BLAS thread per process, set before NumPy loads OpenBLAS. The matrices are small (at most
# 64 x 512) and the server already runs one thread per session: on 2 shared cores a 2-thread
# OpenBLAS made a largest-settings run ~6x slower (105 ms against 17 ms, measured under load).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `core` lives at the repository root

import streamlit as st

from dashboard.address import hold as hold_address
from dashboard.address import send as send_address
from dashboard.classroom.room_page import RoomState, class_bar, enter_room, follow_line, publish_room, room_panel
from dashboard.classroom.room_quiz import join_quiz
from dashboard.classroom.tours import open_tour_link, tour_bar, tour_picker
from dashboard.follower_page import follow_room, follower_settings, take_controls
from dashboard.link_notes import show_link_notes
from dashboard.long_text import offer_prefix
from dashboard.presenter import presenter_style
from dashboard.server_memory import configure_allocator
from dashboard.settings import Settings, apply_recommended, sidebar
from dashboard.url_state import read_address, remember_address
from dashboard.views import DEFAULT_VIEW, choose_view
from dashboard.weight_notes import show_weights_note
from dashboard.welcome import open_on_first_visit, welcome, welcome_button

OWNED_DEFAULTS = {"view": DEFAULT_VIEW, "tour": None}
"""The page's own URL keys (``settings.OWNED_KEYS``) at their defaults: the address leaves them out."""

configure_allocator()  # two malloc arenas, a fixed mmap threshold: freed memory leaves (dashboard/server_memory.py)
st.set_page_config(page_title="Attention Lab", page_icon="🔎", layout="wide")

hold_address()  # first: what the run writes to the address is sent once, at its end (one history entry)
open_on_first_visit()  # a bare address: the welcome
link = read_address()  # every rerun, before any widget: what is new in the address, every value usable
open_tour_link(link)  # ?tour=...&tour_step=... alone: that step's settings, before the widgets exist
if link.get("presenter") == "true":  # a projector link: the maps get the whole width
    st.set_page_config(initial_sidebar_state="collapsed")
apply_recommended(link)  # a link to the train view: the task's recommendation for what the link leaves unset
link, room = enter_room(link)  # a student's page takes its room's settings; a teacher key leaves the link
settings = follower_settings(room)  # a student who follows: the room's settings, and no controls (dashboard.followed)
with st.sidebar:  # where a lecturer looks first: the welcome and the lessons' tours, above the controls
    st.header("Attention Lab")
    if settings is None:  # a follower's tour and view are the teacher's: the page says them, no picker
        welcome_button()
        tour_picker()
if settings is None:
    take_controls()  # just stopped following: the widgets start from the teacher's settings
    settings = sidebar(trains=st.session_state.get("view", link.get("view")) == "train")
teacher_line = st.sidebar.container() if room.following else None  # the body writes the teacher's settings here
welcome()  # a bare address: what this is and three ways in, above the live default view
with st.sidebar:
    room_panel(room, settings.presenter)  # the room code, start a room, follow the teacher
if settings.presenter:
    presenter_style()  # larger page text: the project's constant style sheet (dashboard/presenter.py says why)
top = st.container()  # the view bar, a tour's bar and the view's heading: drawn by the body, above the follow line
follow_line(room)  # a student who follows: says so in the page, under the heading row


def body(room: RoomState, settings: Settings) -> None:
    """Everything the settings decide; on a following page, a fragment the room's push reruns alone."""
    with top:
        view = choose_view()
        tour_bar(settings)  # during a tour: its note (numbers read from this page's run), Back and Next
        if settings.presenter:  # our own constant text: safe as a heading
            heading = st.container(horizontal=True, vertical_alignment="center")  # one row: the maps start higher
            heading.subheader(view.teaches, anchor=False, width="content")
        else:  # the line and class_bar's zero-height component (or nothing) in one unwrapped row: a container of
            # its own under the line took a 16 px gap, empty or not
            heading = st.container(horizontal=True, wrap=False, gap=None)
            heading.caption(view.teaches)
        with heading:
            class_bar(room, settings.presenter)  # presenter mode: Share with the class, the room's link
    show_link_notes(link, settings)
    show_weights_note(settings.weights, settings.sentence, settings.config)
    join_quiz(room)  # in a room, the quiz is the teacher's: it reveals for the class, students pick
    view.render(settings)
    offer_prefix(settings)  # a sentence too long for the weights: under the view's refusal, one click keeps its start


if teacher_line is not None:
    follow_room(room, body, teacher_line)  # the room's settings line in the sidebar, then the body, as a fragment
else:
    body(room, settings)
publish_room(room, settings)  # the teacher's page, last: its settings (and training) become the room's
send_address(OWNED_DEFAULTS, push=not room.following)  # one history entry if the run moved; a follower: none
remember_address()  # last: what the page wrote to the address is its own, not a new link
