"""On a following student's page, the teacher's choices stand where controls would: ``choice(key, default, draw)``.

A student who follows cannot use the page's controls: changing one leaves following ("You are exploring on your
own"), and the room's settings say what every one of them holds. Drawing them anyway (the view bar, the tour
picker, a view's switches) cost each follower redraw a widget per control, and every follower of a room redraws on
each change the teacher makes (``python -m bench.follower --profile``). So on a following page ``choice`` returns
the room's value without drawing the widget; anywhere else it draws it. Turning "Follow the teacher" off gives the
controls back on the next run, holding the teacher's values (``room_page._apply`` wrote them into the page's state).

``follow(settings)`` is called once per run by ``follower_page.follower_settings`` (the room's settings, or None
on a page that does not follow), before any control; the page's pieces only call ``following()`` and ``choice``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import streamlit as st

T = TypeVar("T")

ROOMS_VALUES = "_followed_values"
"""Session: the room's settings on a page that follows, this run; absent on any other page."""


def follow(values: Mapping[str, object] | None) -> None:
    """This run follows a room whose settings are ``values`` (None: it does not)."""
    if values is None:
        st.session_state.pop(ROOMS_VALUES, None)
    else:
        st.session_state[ROOMS_VALUES] = values


def following() -> bool:
    """True on a following student's page: draw the teacher's content, no controls."""
    return ROOMS_VALUES in st.session_state


def choice(key: str, default: T, draw: Callable[[], T]) -> T:
    """The control keyed ``key``: ``draw()`` (the widget, returning its value) on a page of one's own; on a
    following page the room's value for ``key`` (``default`` when the teacher's page never set it, which is what
    the teacher's widget then shows), and no widget."""
    values = st.session_state.get(ROOMS_VALUES)
    if values is None:
        return draw()
    return values.get(key, default)


def hint(text: str) -> str:
    """``text``, a sentence that tells the reader to use one of the page's controls: itself on a page of one's own,
    "" on a following page, which draws none of them (the sidebar's settings, the view bar, a view's switches)."""
    return "" if following() else text


def room_value(key: str) -> object:
    """On a following page, the room's value for ``key`` (None when it has none); None on any other page."""
    values = st.session_state.get(ROOMS_VALUES)
    return None if values is None else values.get(key)
