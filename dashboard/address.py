"""The address bar as the page's history: one entry per run that moves the page, none on a follower's page.

How Streamlit 1.67 writes the address (``frontend/app/src/App.tsx``, ``runtime/state/query_params.py``):

- a bound widget the *user* changes writes its own parameter in the browser with ``history.replaceState``:
  no history entry;
- every change on the *server* (``st.query_params``, a bound widget set from code, a bound control that left the
  page) sends the whole query string at once, and the browser pushes it as a new entry (``pushState``), or
  replaces the entry during the rerun that Back or Forward started.

So a view selector bound to the URL never made an entry (Back left the app), and a tour step, which sets a dozen
controls from code, pushed a dozen: Back then walked through half-applied steps. Here the session's query
parameters take every change without sending it (``hold``); the end of the run writes the keys the page owns
(``OWNED_KEYS``: the view and the tour, whose controls are not bound), drops the parameters of bound controls the
run did not draw, and sends the address once (``send``): one entry for a view change or a tour step. A follower's
page sends nothing: its address stays the room's link, and the teacher's changes add nothing to its history. Nor
does a page whose address still holds a teacher link's claim token: ``classroom/teacher_key.py`` takes it out in
place, and the next run sends.

This reads three internals of Streamlit 1.67, pinned by ``tests/dashboard/test_address.py``: the session's
``QueryParams`` object (``_query_params``, ``_bindings_by_widget``, ``_send_query_param_msg``), and the run's
``widget_ids_this_run`` and ``is_history_navigation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.query_params import QueryParams
from streamlit.runtime.state.session_state_proxy import get_session_state

from dashboard.classroom.share import url_value
from dashboard.classroom.teacher_key import CLAIM_PARAM
from dashboard.settings import OWNED_KEYS

_HELD = "_al_held"
"""Attribute on the session's QueryParams: its messages are held for the end of the run."""
_CHANGED = "_al_changed"
"""Attribute on the session's QueryParams: the address changed since it was last sent."""
_SENT = "_al_sent"
"""Attribute on the session's QueryParams: the query string last sent (at first, the one the page opened with).
A run cut short by a click sends nothing, and the next run starts from the browser's address as it was when the
click left, before that send arrived: so a run whose address differs from the last one sent sends it, even when
the run itself changed nothing (the browser pushes it only if its own address differs)."""


def _hold_messages(qp: QueryParams) -> None:
    """From now on, a change to ``qp`` updates the run's query string (what ``st.rerun`` restarts from and
    AppTest reads) and is remembered, but reaches the browser only through ``send``."""

    def keep() -> None:  # stands in for QueryParams._send_query_param_msg
        ctx = get_script_run_ctx()
        if ctx is not None:
            ctx.query_string = urlencode(qp._query_params, doseq=True)
        setattr(qp, _CHANGED, True)

    qp._send_query_param_msg = keep  # an instance attribute: the class's method stays as it is
    setattr(qp, _HELD, True)


def hold() -> None:
    """First in every run, before anything can write the address."""
    with get_session_state().query_params() as qp:
        if not getattr(qp, _HELD, False):
            _hold_messages(qp)
            ctx = get_script_run_ctx()
            setattr(qp, _SENT, None if ctx is None else ctx.query_string)


def going_back() -> bool:
    """This run was started by the browser's Back or Forward: the address wins over the session."""
    ctx = get_script_run_ctx()
    return ctx is not None and ctx.is_history_navigation


def owned_values(values: Mapping[str, object], defaults: Mapping[str, object]) -> dict[str, str | None]:
    """The address text of each owned key (None: the key leaves the address, as a widget's default does)."""
    return {k: None if values.get(k) in (None, "", defaults[k]) else str(values[k]) for k in OWNED_KEYS}


def send(defaults: Mapping[str, object], *, push: bool = True) -> None:
    """Last in the run: the owned keys from the session, no parameter of a control the run did not draw, and the
    address sent once if it changed (``push=False``, a follower's page: kept for later, never sent now)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    drawn = ctx.shared.widget_ids_this_run
    with get_session_state().query_params() as qp:
        params = qp._query_params
        before = dict(params)
        for key, text in owned_values(st.session_state, defaults).items():
            if text is None:
                params.pop(key, None)
            else:
                params[key] = text
        for widget_id, binding in list(qp._bindings_by_widget.items()):
            key = binding.param_key
            if widget_id not in drawn:  # Streamlit would drop it after the run, in a message of its own
                params.pop(key, None)
            elif key in params and st.session_state.get(key) is not None:  # a click can race a send: the control wins
                params[key] = url_value(st.session_state[key])
        qp._query_params = dict(sorted(params.items()))  # the browser's own order (it sorts when it writes)
        ctx.query_string = urlencode(qp._query_params, doseq=True)
        changed = getattr(qp, _CHANGED, False) or qp._query_params != before or ctx.query_string != getattr(qp, _SENT)
        if changed and push and CLAIM_PARAM not in qp._query_params:  # the token leaves in place (teacher_key)
            QueryParams._send_query_param_msg(qp)  # the one message: the browser pushes one entry
            setattr(qp, _CHANGED, False)
            setattr(qp, _SENT, ctx.query_string)
        elif changed:
            setattr(qp, _CHANGED, True)
