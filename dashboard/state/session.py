"""What the page remembers between runs besides its address: every such session-state key, declared once here, and
the one place that writes them (``keep``, ``forget``, ``keep_first``).

The page's values (the sentence, the view, a head...) live in the address and in the widgets bound to it; a button
that changes one calls ``set_values``, and ``url_state`` keeps the address's own bookkeeping (what it saw, what it
corrected). Everything else a session keeps is below, grouped by the module that reads it, with what it holds. A
key written that is not declared here fails loudly (``Undeclared``), so this table stays the whole of the page's
memory. Any module reads them (``st.session_state.get(key)``); only this one writes them.
"""

from __future__ import annotations

import streamlit as st


class Undeclared(KeyError):
    """A session-state key written that this module does not declare."""


# -- the page (app.py) ---------------------------------------------------------------------------------------------
SHOWN_SETTINGS = "_settings_shown"
"""The ``Settings`` the page's last full run drew from (the app writes it; tests read it)."""
SHOWN_VIEW = "_view_shown"
"""The view this run draws (``app.py`` writes it), for the charts' file names (``page.common.chart_config``)."""
REPLACE = "_address_replace"
"""An address the next run opens as it is, as a link would be (``address.replace``)."""
WELCOME_OPEN = "_welcome_open"
"""The welcome is shown (set once, on the session's first run, from the address: ``page/welcome.py``)."""
REPLAY_PLAYING = "_replay_playing"
"""The train view's replay is playing (``views/train.py``)."""

# -- a room (classroom/room_page.py) ---------------------------------------------------------------------------------
FOLLOW = "room_follow"
"""The "Follow the teacher" toggle (not in the URL: a reload follows again)."""
TEACHER = "_room_teacher"
"""(code, key) of the room this session runs (the browser keeps it too: ``teacher_key``)."""
APPLIED = "_room_applied"
"""(code, version, settings) of the room state last written into this student's widgets."""
DRAWN = "_room_drawn"
"""(code, version) the following page's body last drew to its end (``room_page.drawn``). A body run cut short
(Streamlit ended it early for another rerun) has applied its version without drawing it all: the check sees that."""
SHOW_KEY_ONCE = "_room_show_key"
"""Set when a room starts; the dialog pops it, so it opens by itself once (with the teacher link's warning)."""
SHOW_LINK = "_room_show_link"
"""A button asked for the room's link dialog."""
SPENT = "_room_spent_link"
"""The room whose teacher link this page opened after it was used: the page says so while it follows the room (the
runs the claim token starts would otherwise take a one-run note away before anyone read it)."""
NOTE = "_room_note"
"""One message for the next run (a key that did not open the room, a closed room)."""
REFUSED = "_room_refused"
"""Why "Start a room" was refused; the next run shows it in a dialog, with this browser's rooms."""
SHOW_MINE = "_room_show_mine"
"""A button asked for the dialog of this browser's rooms (``room_page.rooms_dialog``)."""
CLOSED_MINE = "_room_closed_mine"
"""The room the dialog's Close just closed: the dialog's next run says so, in place of its refusal."""
QUESTION_WAS_OPEN = "_room_asked"
"""Whether the teacher's question was open (``room_page.question_open``) when the page last ran whole: a change runs
it whole again, so the code box locks and unlocks (``room_page.code_box``) with the question."""
RECALLED = "_room_recalled"
"""(code, the room's "Bring everyone back" count this page has obeyed)."""

# -- the teacher's key in the browser (classroom/teacher_key.py) -----------------------------------------------------
KEY_FORGET = "_teacher_key_forget"
"""Codes whose key the browser holds but which no longer open a room (restart, closed, idle)."""
KEY_ASKED = "_teacher_key_asked"
"""The room code the browser answered for (it keeps no key that opens the room, or this page took it)."""
KEY_IN_PLACE = "_teacher_key_in_place"
"""The address (a query string) the last run that held the claim token ended with (``address_in_place``)."""
KEY_ASKED_BY = "_teacher_key_asked_by"
"""A random nonce in the component's data, so each session's first data differs from a page's last."""

# -- the quiz (classroom/quiz_panel.py, classroom/room_quiz.py) -----------------------------------------------------
QUIZ_REVEALED = "quiz_revealed"
"""The ids of the questions this session has revealed."""
QUIZ_CURRENT = "quiz_current"
"""The question on screen in this run, for a room to read."""
QUIZ_ROOM = "quiz_room"
"""This run's room as the quiz sees it (an ``InRoom``); absent outside a room."""
QUIZ_PICK = "quiz_pick_"
"""The start of a question's pick key (``quiz_pick_<question id>``): the answer this session picked, a widget's."""

# -- the class's sentences (classroom/class_sentences.py) -----------------------------------------------------------
SENT = "_class_sentence_sent"
"""(ok, our message) of the last send, shown under the box."""
USED = "_class_sentence_used"
"""The teacher's Use changed the page's sentence: the fragment reruns the page, which publishes it."""

DECLARED = frozenset(value for name, value in dict(globals()).items() if name.isupper() and isinstance(value, str))
"""Every key above."""
PREFIXES = (QUIZ_PICK,)
"""Keys declared by their start: one per question."""


def set_values(**values: object) -> None:
    """Change the page's values as its controls would (a button's callback, before the widgets are drawn again):
    each key one the address carries (``url_state.SPEC``; ``tests/test_architecture.py`` checks every call's keys),
    each value as the control would hold it (None: a choice with nothing chosen). The next run reads them as it reads
    a control's."""
    for key, value in values.items():
        st.session_state[key] = value


def _declared(key: str) -> str:
    if key not in DECLARED and not key.startswith(PREFIXES):
        raise Undeclared(f"session key {key!r} is not declared in dashboard/state/session.py")
    return key


def keep(key: str, value: object) -> None:
    """Remember ``value`` under ``key`` for the session's next runs."""
    st.session_state[_declared(key)] = value


def keep_first(key: str, value: object) -> object:
    """What ``key`` holds, after keeping ``value`` there if it held nothing."""
    return st.session_state.setdefault(_declared(key), value)


def forget(key: str, default: object = None) -> object:
    """What ``key`` held (``default`` if nothing), now forgotten."""
    return st.session_state.pop(_declared(key), default)
