"""Streamlit's internals the app relies on where no public API does the job, in one module.

Streamlit is pinned (requirements.txt); each entry point here names the private names it touches, and
tests/dashboard/test_streamlit_runtime.py checks its behaviour against the installed Streamlit, so an upgrade that
moves them fails there, loudly, never silently on a page.

``guard_widget_states``: the browser sends every widget's value with each rerun, as a protobuf ``WidgetState`` whose
value field the server trusts. A client can send any field with any content: a string for a selectbox's index, NaN
for a slider, a list for a toggle. Streamlit deserializes them when a widget registers or a callback runs, inside
the page's own call, and a value its deserializer cannot read raised there (``int(None)``, ``'float' object is not
subscriptable``); the value stayed in the session, so every later run raised again. Public API tried: none reaches
the values before the widget call deserializes them (``st.session_state`` reads them deserialized, and
``on_change`` runs after). So the session's ``set_widgets_from_proto`` is wrapped: a state whose field is not the
widget's own, or whose value its deserializer refuses, is dropped before Streamlit stores it, and the widget keeps
the value it had. A value of the right type that no control offers (None for a required choice, NaN in a number box)
is the address parser's to replace (``url_state.settle``), as a link's is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime.state.common import unpack_widget_state_value
from streamlit.runtime.state.session_state import SessionState

_GUARDED = "_attention_lab_guarded"
"""Attribute on the wrapped method: installed once per process."""


def readable(state: WidgetState, value_type: str, deserializer: Callable[[Any], Any]) -> bool:
    """The widget whose value type is ``value_type`` can read ``state``: its own field, and a value its deserializer
    takes (a finite number, where it is one)."""
    if state.WhichOneof("value") not in (value_type, None):
        return False
    try:
        value = deserializer(unpack_widget_state_value(state))
    except Exception:  # any error of a deserializer is a value the widget cannot hold
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


def guard_widget_states() -> None:
    """Drop, before Streamlit stores them, the widget states a widget this session drew could not read (its
    metadata says how: ``WidgetMetadata.value_type`` and ``deserializer``). States of widgets the session has no
    metadata for are left to Streamlit (a reconnecting page's)."""
    stored = SessionState.set_widgets_from_proto
    if getattr(stored, _GUARDED, False):
        return

    def set_widgets_from_proto(self: SessionState, widget_states: WidgetStates) -> None:
        known = self._new_widget_state.widget_metadata
        kept = WidgetStates()
        for state in widget_states.widgets:
            meta = known.get(state.id)
            if meta is None or readable(state, meta.value_type, meta.deserializer):
                kept.widgets.append(state)
        stored(self, kept)

    setattr(set_widgets_from_proto, _GUARDED, True)
    SessionState.set_widgets_from_proto = set_widgets_from_proto
