"""The contract of each entry point of ``dashboard/streamlit_runtime.py`` with the installed Streamlit.

Each test drives Streamlit's own objects the way the app's entry point does and checks what comes out, so a
Streamlit upgrade that renames or reshapes what the module relies on fails here, by name, never silently on a page.
"""

from __future__ import annotations

import math

from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime.state.common import WidgetMetadata
from streamlit.runtime.state.session_state import SessionState

from dashboard.streamlit_runtime import guard_widget_states

OPTIONS = ["1", "2", "4"]


def index_widget(widget_id: str) -> WidgetMetadata:
    """A widget as Streamlit registers a selectbox: its value travels as an index into its options."""
    return WidgetMetadata(
        id=widget_id,
        deserializer=lambda v: None if v is None else OPTIONS[int(v)],
        serializer=lambda v: OPTIONS.index(v),
        value_type="int_value",
    )


def states(*widgets: WidgetState) -> WidgetStates:
    out = WidgetStates()
    out.widgets.extend(widgets)
    return out


def test_a_state_the_widget_cannot_read_is_dropped_and_the_rest_stored():
    guard_widget_states()
    guard_widget_states()  # once per process: a second call changes nothing
    session = SessionState()
    session._set_widget_metadata(index_widget("w1"))
    session._set_widget_metadata(index_widget("w2"))
    session._set_widget_metadata(index_widget("w3"))
    session.set_widgets_from_proto(
        states(
            WidgetState(id="w1", int_value=2),  # readable: kept
            WidgetState(id="w2", string_value="2"),  # another field
            WidgetState(id="w3", int_value=9),  # no such option
            WidgetState(id="unknown", double_value=math.nan),  # no metadata: left to Streamlit
        )
    )
    stored = {s.id for s in session._new_widget_state.as_widget_states()}
    assert stored == {"w1", "unknown"}
    assert session._new_widget_state["w1"] == "4"


def test_the_guard_wraps_the_method_every_rerun_stores_widget_states_through():
    """``on_script_will_rerun`` is what a rerun calls with the browser's states: it must reach the guarded method."""
    guard_widget_states()
    session = SessionState()
    session._set_widget_metadata(index_widget("w1"))
    session.on_script_will_rerun(states(WidgetState(id="w1", json_value="{")))
    assert "w1" not in {s.id for s in session._new_widget_state.as_widget_states()}
