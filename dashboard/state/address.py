"""The address bar as the page's history: one entry per run that moves the page, none on a follower's page.

How Streamlit 1.67 writes the address (``frontend/app/src/App.tsx``, ``runtime/state/query_params.py``):

- a bound widget the *user* changes writes its own parameter in the browser with ``history.replaceState``:
  no history entry;
- every change on the *server* (``st.query_params``, a bound widget set from code, a bound control that left the
  page) sends the whole query string at once, and the browser pushes it as a new entry (``pushState``), or
  replaces the entry during the rerun that Back or Forward started.

So a view selector bound to the URL never made an entry (Back left the app), and a tour step, which sets a dozen
controls from code, pushed a dozen: Back then walked through half-applied steps. Here the session's query
parameters take every change without sending it (``hold``); the end of the run sends the page's whole address once
(``send``; ``url_state.finish`` makes it: the value of every control the run drew, and of the view and the tour,
where it differs from the default the address implies): one entry for a view change or a tour step. A follower's
page sends the room's link and nothing else (``OWN_KEYS``): the teacher's changes add nothing to its history,
and the entry where it followed is the room's, so Back or Forward onto it follows again (``onto_room_link``)
instead of opening the student's own default page. A page whose address still holds a teacher link's claim token
sends nothing: ``classroom/teacher_key.py`` writes the run's address in place of the link, and the next run sends
that same address, which adds no entry.

Every other run that reaches its end sends, changed or not: the server cannot know what the browser's address is
by then. With ``runner.fastReruns`` (the default) a click stops the running script and starts a new ScriptRunner at
once, and the session forwards a message to the browser only from its current ScriptRunner
(``AppSession._handle_scriptrunner_event_on_event_loop``: "Ignoring event from non-current ScriptRunner"). A run
that sent its address just before a click arrived is then superseded before its message leaves: the server sent it,
the browser never got it. Meanwhile an earlier run's address, still on its way, can reach the browser after the
last click's ``replaceState`` and push an older head count or view. So neither "changed in this run", nor "differs
from the last one sent", nor "differs from the address the click reported" (``ctx.query_string`` at the start) tells
whether the browser shows the page's address (fast clicks 30 ms apart hit each: tests/e2e/test_fast_clicks.py).
Messages reach the browser in order, and the last run's is delivered, so the last run's send always settles the
address; the browser compares it with its own and pushes only if they differ (``handlePageInfoChanged``), so a run
that moved nothing adds no history entry.

The hold and the send go below Streamlit's public API, in ``dashboard/serve/streamlit_runtime.py``
(``hold_query_params``, ``send_query_params``, ``sent_query_params``, ``drawn_bound_params``,
``history_navigation``), whose contract tests pin what they read; ``tests/dashboard/test_address.py`` pins what the
hold stands for: every address message any part of Streamlit sends in a run goes through it, so a run sends
exactly one. Fragment runs never reach ``send``: what they write (a replay slider set from code every frame) waits
for the next full run, which sends it as one entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

import streamlit as st

from dashboard.classroom.teacher_key import CLAIM_PARAM, address_in_place
from dashboard.serve import streamlit_runtime
from dashboard.state.session import REPLACE, forget, keep

OWN_KEYS = ("presenter", "room")
"""Each screen's own keys (``room_page.ROOM``, and presenter mode): a tour step and a room's settings leave them as
this screen has them, and a following page's address is these only: the room's link."""


def hold() -> None:
    """First in every run, before anything can write the address."""
    streamlit_runtime.hold_query_params()


def replace(address: Mapping[str, str]) -> None:
    """The next run opens ``address`` as a link would (every key it leaves out at its default), keeping this
    screen's own keys (``url_state.OWN_KEYS``): a tour step. Call it from a callback, or before ``url_state.settle``."""
    keep(REPLACE, dict(address))


def replaced() -> dict[str, str] | None:
    """The address ``replace`` asked for, once (None when nothing did)."""
    return forget(REPLACE)


def going_back() -> bool:
    """This run was started by the browser's Back or Forward: the address wins over the session."""
    return streamlit_runtime.history_navigation()


def onto_room_link(query: Mapping[str, str]) -> bool:
    """This run is Back or Forward onto the entry of a page that followed a room: its address is a room's link
    (``OWN_KEYS``, a room among them), which a following page sends and an exploring one never does."""
    return going_back() and "room" in query and set(query) <= set(OWN_KEYS)


def sent_before(key: str, text: str) -> bool:
    """The page itself sent ``key=text`` lately: in the address of a rerun that is not Back or Forward, it is the
    page's own, never a link. The browser reports the address it shows when the click left, and that can be any
    recent send still arriving after a newer one was made (the module's docstring): fast clicks through a view
    brought ``view=steps`` back after the last click chose heads, and the page went back to steps."""
    return any(sent.get(key) == text for sent in streamlit_runtime.sent_query_params())


def sends(query: Mapping[str, str]) -> bool:
    """Whether a finished run sends its address: always, whether or not it changed (the module's docstring: what the
    server last sent may never have reached the browser), but while the address holds a teacher link's claim token
    (``teacher_key`` takes it out in place)."""
    return CLAIM_PARAM not in query


def drawn_keys() -> frozenset[str]:
    """The query parameters of the bound controls this run drew (Streamlit's record of the run's widgets)."""
    return streamlit_runtime.drawn_bound_params()


def send(address: Mapping[str, str]) -> None:
    """Last in the run: the address is ``address`` (and a teacher link's claim token, while the page holds one), sent
    once (``sends``): the browser pushes it as one entry if it differs from its own address. A following page's is
    the room's link (``url_state.finish``): the teacher's changes add nothing to its history."""
    held = streamlit_runtime.query_params()
    claim = {CLAIM_PARAM: held[CLAIM_PARAM]} if CLAIM_PARAM in held else {}
    query = dict(sorted({**address, **claim}.items()))  # the browser's own order (it sorts too)
    in_run = streamlit_runtime.send_query_params(query, send=sends(query))  # the one message: one entry if it moved
    if in_run and claim and address_in_place(urlencode(dict(sorted(address.items())), doseq=True)):
        st.rerun(scope="app")  # once: the component writes this address in place of the teacher link
