"""Who is asking, as the server's limits count it: the connection's address, and whether a tab is still open.

A browser tab is a Streamlit session here: Streamlit sets no cookie, and its proxy on Community Cloud forwards
only an allowlist of them, so a session id (random, per tab, gone with the tab) is the finest handle on a browser,
and the address the coarsest one a script cannot multiply at will. The limits in ``dashboard.classroom.rooms``
and ``dashboard.training_jobs`` count both.

``alive`` reads Streamlit's runtime: its session manager is private API (``Runtime._session_mgr``), pinned by
``tests/dashboard/test_limits.py`` against the installed Streamlit, which would catch a rename.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime import Runtime

LOCAL = "local"
"""The address of a page opened on this machine (Streamlit reports None for 127.0.0.1 and ::1)."""


def address() -> str:
    """The client's IP address as Streamlit saw the connection (``st.context.ip_address``), or ``LOCAL``."""
    try:
        ip = st.context.ip_address
    except RuntimeError:  # outside a script run: no connection to read
        ip = None
    return ip if isinstance(ip, str) and ip else LOCAL  # AppTest's connection is a mock, not a text


def alive(session_id: str, *, here: bool = False) -> bool | None:
    """True while the tab's websocket is connected to this process, False once it has gone, None when this
    process cannot tell (no runtime, as in AppTest, or a session of another app process).

    ``here``: the session is known to have run on this process, so one the runtime no longer knows at all has gone
    too (False, not None). Streamlit forgets a closed tab's session at once when it cannot be resumed, and keeps
    the others for a reconnect only for a while (at most 128, for ``server.disconnectedSessionTTL``: 2 minutes)."""
    if not Runtime.exists():
        return None
    sessions = getattr(Runtime.instance(), "_session_mgr", None)  # private: see the module docstring
    if sessions is None:  # AppTest's runtime is a mock without one
        return None
    if sessions.is_active_session(session_id):
        return True
    return False if here or sessions.get_session_info(session_id) is not None else None
