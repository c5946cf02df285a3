"""Attention Lab: the entry file. It routes; the views render.

Run from the repository root: ``streamlit run streamlit_app.py``, which serves this file as its page.

One page, one view at a time, chosen by a selector written to the ``view`` query
parameter (by ``dashboard/state/address.py``: each view change is a history entry): a link
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

from dashboard.classroom.class_sentences import sentence_count, sentences_panel
from dashboard.classroom.follower_page import follow_room, follower_settings, room_address
from dashboard.classroom.room_page import RoomState, class_bar, enter_room, follow_line, publish_room, room_panel
from dashboard.classroom.room_quiz import join_quiz
from dashboard.classroom.tour_export import download_button as tour_download
from dashboard.classroom.tours import open_tour_link, presenting, tour_bar, tour_picker
from dashboard.page.long_text import offer_prefix
from dashboard.page.presenter import presenter_style
from dashboard.page.weight_notes import show_weights_note
from dashboard.page.welcome import open_on_first_visit, welcome, welcome_button
from dashboard.serve.server_memory import configure_allocator, drawing
from dashboard.serve.streamlit_runtime import guard_widget_states
from dashboard.state.address import drawn_keys
from dashboard.state.address import hold as hold_address
from dashboard.state.address import send as send_address
from dashboard.state.followed import OWN, Controls, Role
from dashboard.state.link_notes import show_link_notes
from dashboard.state.session import SHOWN_SETTINGS, SHOWN_VIEW, keep
from dashboard.state.settings import Settings, settings_from, sidebar
from dashboard.state.url_state import finish, read_address, remember_address, settle
from dashboard.views import choose_view

configure_allocator()  # two malloc arenas, a fixed mmap threshold: freed memory leaves (serve/server_memory.py)
st.set_page_config(page_title="Attention Lab", page_icon="🔎", layout="wide")

guard_widget_states()  # once per process: a widget value no control of the page could hold is dropped on arrival
hold_address()  # first: what the run writes to the address is sent once, at its end (one history entry)
open_on_first_visit()  # a bare address: the welcome
link = read_address()  # every rerun, before any widget: what is new in the address, every value usable
open_tour_link(link)  # ?tour=...&tour_step=... alone: that step's address
if link.get("presenter") == "true":  # a projector link: the maps get the whole width
    st.set_page_config(initial_sidebar_state="collapsed")
link, room = enter_room(link)  # a student's place in a room; a teacher link's token leaves the link
role = room.role  # explorer, teacher or follower: which controls this page draws, read once
page = settle(link, room_address(room))  # before any widget: the page's values, from one address (url_state)
settings, controls = follower_settings(room) or (settings_from(page.context), OWN)  # a follower's: the room's
keep(SHOWN_SETTINGS, settings)  # what this run draws from, for the tests to compare
with st.sidebar:  # where a lecturer looks first: the welcome and the lessons' tours, above the controls
    st.header("Attention Lab")
    if role is not Role.FOLLOWER:  # a follower's tour and view are the teacher's: the page says them, no picker
        welcome_button()
        tour_picker()
        tour_download()  # the chosen tour as one offline file
        sidebar(page.context, page.defaults)  # the controls, each showing its value in ``page``
teacher_line = st.sidebar.container() if role is Role.FOLLOWER else None  # the body writes the teacher's settings here
joining = welcome(room, role)  # a bare address: what this is, three ways in and the room code, above the live view
with st.sidebar:
    room_panel(room, settings.presenter, with_code_box=not joining)  # the code, start a room, follow the teacher
if settings.presenter:
    presenter_style()  # larger page text: the project's constant style sheet (dashboard/page/presenter.py says why)
top = st.container()  # the view bar, a tour's bar and the view's heading: drawn by the body, above the follow line
follow_line(room)  # a student who follows: says so in the page, under the heading row
sentences_panel(room, settings.presenter)  # a student's "Send a sentence", the teacher's list (not presenting)


def body(room: RoomState, settings: Settings, controls: Controls) -> None:
    """Everything the settings decide; on a following page, a fragment the room's push reruns alone."""
    with top:
        view = choose_view(controls, drawn=not presenting(settings))  # a tour on a projector: its bar is the page's top
        keep(SHOWN_VIEW, view.slug)  # the charts' file names say it (page.chart_config)
        row = tour_bar(settings, controls)  # during a tour: its note (numbers read from this page's run), Back and Next
        if row is not None:  # presenter mode's tour bar: the class's buttons in its row, no view line
            heading = row
        elif settings.presenter:  # our own constant text: safe as a heading
            heading = st.container(horizontal=True, vertical_alignment="center")  # one row: the maps start higher
            heading.subheader(view.teaches, anchor=False, width="content")
        else:  # the line and class_bar's zero-height component (or nothing) in one unwrapped row: a container of
            # its own under the line took a 16 px gap, empty or not
            heading = st.container(horizontal=True, wrap=False, gap=None)
            heading.caption(view.teaches)
        with heading:
            class_bar(room, settings.presenter)  # presenter mode: Share with the class, the room's link
            sentence_count(room, settings.presenter)  # presenter mode: how many sentences wait, never their text
    show_link_notes(link, settings)
    show_weights_note(settings.weights, settings.sentence, settings.config, controls)
    join_quiz(room)  # in a room, the quiz is the teacher's: it reveals for the class, students pick
    with drawing():  # a few views draw at once, whatever the number of pages (serve/server_memory.py)
        view.render(settings, controls)
    offer_prefix(settings)  # a sentence too long for the weights: under the view's refusal, one click keeps its start


if teacher_line is not None:
    follow_room(room, body, teacher_line)  # the room's settings line in the sidebar, then the body, as a fragment
else:
    body(room, settings, controls)
publish_room(room, settings)  # the teacher's page, last: its settings (and training) become the room's
# the values the controls show (a follower's: the room's)
address = finish(page, drawn_keys(), following=role is Role.FOLLOWER)
send_address(address)  # one history entry if the run moved; a follower's is the room's link
remember_address()  # last: what the page wrote to the address is its own, not a new link
