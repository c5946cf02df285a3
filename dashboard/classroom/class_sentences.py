"""The class's sentences on the page: a student sends one, the teacher decides what reaches the projector.

The app calls, on the page itself (a phone's sidebar is collapsed), under the follow line:

- ``sentences_panel(state, presenter)``. On a student's page in a room: "Send a sentence to your teacher", an
  expander drawn only while open (``page.opened``: every student's page redraws at each change the teacher makes),
  in a fragment with the box and Send, so opening it or sending reruns nothing else. On the teacher's page outside
  presenter mode (a laptop, or the teacher link on a phone): how many sentences wait, and an expander that draws
  them only once the teacher opens it; each as plain text (``st.text``: never Markdown or HTML, whatever was typed)
  with Use (it becomes the page's sentence, so the room's, so every follower's) and Dismiss, then "All in the class
  view" (the class view's list becomes these sentences: one head on each of them) and Clear all. Redrawn every
  ``room_page.TALLY_SECONDS``.
- ``sentence_count(state, presenter)`` in presenter mode's heading row: the count only, a pill with the number
  ("12 sentences from the class" on hover), never a student's text (nothing while none waits).

The room keeps the sentences and every limit (``rooms.RoomStore.send_sentence``); its messages are ours.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from core import MAX_CHARS, MAX_TOKENS
from dashboard.classroom import room_page
from dashboard.classroom.room_page import TALLY_SECONDS, RoomState, held_key, store
from dashboard.classroom.rooms import SEND_SECONDS, RoomError, Sent
from dashboard.page.common import opened
from dashboard.state.session import SENT, USED, forget, keep, set_values
from dashboard.views.class_heads import list_text

SEND_LABEL = "Send a sentence to your teacher"
LIST_LABEL = "The class's sentences"
TEXT = "class_sentence"
"""The student's box (not in the URL: what a student types is theirs until sent)."""


def count_line(n: int) -> str:
    return f"{n} sentence{'s' if n != 1 else ''} from the class"


def sentences_panel(state: RoomState, presenter: bool) -> None:
    """A student's send box, or the teacher's list (outside presenter mode: ``sentence_count`` there)."""
    if state.code is None or state.room is None:
        return
    if state.teacher:
        if not presenter:
            st.fragment(_teacher_list, run_every=TALLY_SECONDS)(state.code)
    else:
        st.fragment(_send_panel)(state.code)


def _send_panel(code: str) -> None:
    """The student's expander and box in one fragment: opening it, typing and Send rerun the fragment alone. Opened
    on the page, it reran the whole page with its maps, 200 such runs when a hall sends within 30 s
    (``python -m bench.sends`` at 200: followers' redraw p95 +67% over the run without sends then, +45% now)."""
    if (box := opened(SEND_LABEL, "class_send", ":material/send:")) is not None:
        with box:
            _send_box(code)


def sentence_count(state: RoomState, presenter: bool) -> None:
    """Presenter mode, on the teacher's page: how many sentences wait, redrawn every ``TALLY_SECONDS``."""
    if presenter and state.teacher and state.code and state.room is not None:
        with st.container(width="content", key="class_count"):  # a fragment alone stretches: a row of its own
            st.fragment(_count, run_every=TALLY_SECONDS)(state.code)


def _pending(code: str) -> list[Sent] | None:
    """The room's pending sentences, or None when the room closed or its server is away (the page says so)."""
    try:
        return store().sentences(code, held_key(code))
    except RoomError:
        return None


def _count(code: str) -> None:
    """A pill in the projector's heading row (or the tour's): the number and the list's icon, its words on hover.
    A caption of the words ("12 sentences from the class") wrapped to two lines beside the room's buttons and
    pushed the maps down 22 px (48 px beside a 10-step tour's bar) each time the first sentence arrived."""
    if pending := _pending(code):  # none yet: the projector's heading row stays as it was
        n = len(pending)
        st.badge(
            str(n),
            icon=":material/forum:",
            color="violet",
            help=f"{count_line(n)} wait{'s' * (n == 1)}. Their text shows only where you open the list: on a page "
            "out of presenter mode, such as the teacher link on your phone.",
        )


def _send(code: str) -> None:
    """Send button callback: the box's text to the room; our message for the box."""
    try:
        store().send_sentence(code, room_page.client(), st.session_state.get(TEXT, ""))
    except RoomError as err:
        keep(SENT, (False, str(err)))
        return
    keep(
        SENT,
        (
            True,
            f"Sent: your teacher sees it, without your name. Sending again replaces it (once every {SEND_SECONDS:g} "
            "s).",
        ),
    )


def _send_box(code: str) -> None:
    st.text_input(
        "Your sentence",
        key=TEXT,
        max_chars=MAX_CHARS,
        placeholder="e.g. the animal didn't cross the street because it was too tired",
        help=f"Any text up to {MAX_TOKENS} tokens ({MAX_CHARS} characters), as in the sentence box. Your teacher "
        "sees it, not your name, and may show it to the class. You have one sentence waiting at a time: sending "
        f"again replaces it, at most once every {SEND_SECONDS:g} s.",
    )
    st.button("Send", key="class_send_button", icon=":material/send:", on_click=_send, args=(code,))
    if (sent := st.session_state.get(SENT)) is not None:
        ok, message = sent
        (st.success if ok else st.warning)(message)  # our own words (``rooms``' messages, core's for the limits)


def _use(code: str, sent: Sent) -> None:
    """Use button callback: the student's sentence becomes the page's (so the room's), and leaves the list."""
    set_values(sentence=sent.text)
    keep(USED, True)
    with contextlib.suppress(RoomError):  # closed meanwhile: the page says so
        store().dismiss_sentences(code, held_key(code), [sent.id])


def _to_class_view(pending: list[Sent]) -> None:
    """Button callback: the class view's list becomes the class's sentences (as many as its box holds) and the page
    shows that view, the room's too; the sentences stay on the list until used, dismissed or cleared."""
    text, shown = list_text([sent.text for sent in pending])
    set_values(class_text=text, view="class")
    keep(USED, True)
    if shown < len(pending):
        st.toast(f"The class view reads {shown} of the {len(pending)} sentences: the first ones sent.", icon="✂️")


def _dismiss(code: str, ids: list[str] | None) -> None:
    with contextlib.suppress(RoomError):
        store().dismiss_sentences(code, held_key(code), ids)


def _teacher_list(code: str) -> None:
    if forget(USED, False):
        st.rerun(scope="app")  # the sidebar's sentence box and the room take the new sentence
    pending = _pending(code)
    if pending is None:
        return
    st.caption(count_line(len(pending)))
    box = opened(LIST_LABEL, "class_sentences", ":material/forum:")
    if box is None:
        return
    with box:
        if not pending:
            st.caption("None waiting. Students send them from their page in the room.")
        for sent in pending:
            with st.container(horizontal=True, vertical_alignment="center", key=f"class_sent_{sent.id}"):
                st.text(sent.text)  # plain text, whatever the student typed
                st.button(
                    "Use",
                    key=f"class_use_{sent.id}",
                    on_click=_use,
                    args=(code, sent),
                    type="primary",
                    help="This sentence becomes the page's sentence, and every follower's.",
                )
                st.button(
                    "Dismiss",
                    key=f"class_dismiss_{sent.id}",
                    on_click=_dismiss,
                    args=(code, [sent.id]),
                    help="Takes it off this list.",
                )
        if pending:
            with st.container(horizontal=True):
                st.button(
                    "All in the class view",
                    key="class_all",
                    icon=":material/grid_view:",
                    on_click=_to_class_view,
                    args=(pending,),
                    help="The class view draws one head on each of these sentences, side by side, for everyone.",
                )
                st.button(
                    "Clear all",
                    key="class_clear",
                    icon=":material/delete_sweep:",
                    on_click=_dismiss,
                    args=(code, None),
                    help="Takes every sentence off this list.",
                )
