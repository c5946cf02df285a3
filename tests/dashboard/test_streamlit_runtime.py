"""The contract of each entry point of ``dashboard/serve/streamlit_runtime.py`` with the installed Streamlit.

Each test drives Streamlit's own objects the way the app's entry point does and checks what comes out, so a
Streamlit upgrade that renames or reshapes what the module relies on fails here, by name, never silently on a page.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import plotly.graph_objects as go
import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime import Runtime, RuntimeConfig
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.state.common import WidgetMetadata
from streamlit.runtime.state.session_state import SessionState
from streamlit.testing.v1 import AppTest

from dashboard.page.shared_figures import SharedFigure, without_unused_templates
from dashboard.serve import clients, streamlit_runtime
from dashboard.serve.streamlit_runtime import guard_widget_states, spec_of
from tests.dashboard.test_address import to_browser  # noqa: F401  (the fixture: every address sent)
from tests.dashboard.test_shared_figures import grid

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


# -- a real server: sessions(), rerun_session(), client_state(), and the run's own entry points ---------------------
SEEN: list[dict] = []
"""What each run of ``SCRIPT`` saw through the entry points, in order."""
SCRIPT = """
import streamlit as st
from dashboard.serve import streamlit_runtime as rt
from tests.dashboard import test_streamlit_runtime as t

def body():
    t.SEEN.append({"in": "fragment", "fragment": rt.running_fragment(), "fragment_rerun": rt.fragment_rerun()})

t.SEEN.append({
    "in": "page", "session": rt.session_id(), "back": rt.history_navigation(), "fragment": rt.running_fragment(),
    "fragment_rerun": rt.fragment_rerun(),
})
st.fragment(body)()
"""


class Browser:
    """A ``SessionClient`` that keeps what the server sends."""

    def __init__(self) -> None:
        self.sent = []

    def write_forward_msg(self, msg) -> None:
        self.sent.append(msg)


async def seen(count: int, seconds: float = 20.0) -> list[dict]:
    """Wait (on the server's event loop) until ``SEEN`` holds ``count`` entries; they and nothing more."""
    end = time.monotonic() + seconds
    while len(SEEN) < count and time.monotonic() < end:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)  # anything more would show now
    assert len(SEEN) == count, SEEN
    return list(SEEN)


def on_a_server(tmp_path, test: Callable[[Runtime, str], Awaitable[None]]) -> None:
    """``test(runtime, session_id)`` on a started Streamlit runtime serving ``SCRIPT``, with one browser connected."""
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    SEEN.clear()

    async def main() -> None:
        config = RuntimeConfig(
            script_path=str(script),
            media_file_storage=MemoryMediaFileStorage("/media"),
            uploaded_file_manager=MemoryUploadedFileManager("/upload"),
        )
        runtime = Runtime(config)
        try:
            await runtime.start()
            session_id = runtime.connect_session(client=Browser(), user_info={})
            await test(runtime, session_id)
        finally:
            runtime.stop()
            await asyncio.wait_for(runtime.stopped, 20)

    try:
        asyncio.run(main())
    finally:
        Runtime._instance = None


def browser_run(runtime: Runtime, session_id: str, state: ClientState) -> None:
    """The browser asks for a run, as its websocket does (a ``rerun_script`` BackMsg)."""
    msg = BackMsg()
    msg.rerun_script.CopyFrom(state)
    streamlit_runtime.sessions().get_active_session_info(session_id).session.handle_backmsg(msg)


def test_sessions_is_the_servers_session_manager_and_tells_a_closed_tab(tmp_path):
    async def test(runtime: Runtime, session_id: str) -> None:
        manager = streamlit_runtime.sessions()
        assert manager.is_active_session(session_id) and clients.alive(session_id) is True
        assert manager.get_active_session_info(session_id).session.id == session_id
        assert not manager.is_active_session("no-such") and clients.alive("no-such") is None
        runtime.disconnect_session(session_id)  # the tab closed: kept a while for a reconnect
        assert not manager.is_active_session(session_id) and manager.get_session_info(session_id) is not None
        assert clients.alive(session_id) is False

    on_a_server(tmp_path, test)


def test_the_runs_entry_points_on_a_real_server(tmp_path):
    """``session_id``, ``running_fragment``, ``fragment_rerun`` and ``history_navigation`` in runs the browser asks
    for: the whole page, its fragment alone, Back."""

    async def test(runtime: Runtime, session_id: str) -> None:
        browser_run(runtime, session_id, ClientState(query_string="room=ABC234"))
        page, fragment = await seen(2)
        assert page == {"in": "page", "session": session_id, "back": False, "fragment": None, "fragment_rerun": False}
        assert fragment["in"] == "fragment" and fragment["fragment"] and not fragment["fragment_rerun"]
        browser_run(runtime, session_id, ClientState(query_string="room=ABC234", fragment_id=fragment["fragment"]))
        assert (await seen(3))[2] == {"in": "fragment", "fragment": fragment["fragment"], "fragment_rerun": True}
        browser_run(runtime, session_id, ClientState(query_string="room=ABC234", is_history_navigation=True))
        assert [s["in"] for s in (await seen(5))[3:]] == ["page", "fragment"] and SEEN[3]["back"] is True

    on_a_server(tmp_path, test)


def test_rerun_session_reruns_the_fragment_or_the_page_as_it_last_ran(tmp_path):
    """The push: ``rerun_session`` from another thread than the session's, as the room watcher calls it."""

    async def test(runtime: Runtime, session_id: str) -> None:
        browser_run(runtime, session_id, ClientState(query_string="room=ABC234"))
        _, fragment = await seen(2)
        session = streamlit_runtime.sessions().get_active_session_info(session_id).session
        assert streamlit_runtime.client_state(session).query_string == "room=ABC234"

        # The fragment alone, as the page last ran (its URL).
        assert await asyncio.to_thread(streamlit_runtime.rerun_session, session_id, fragment["fragment"])
        assert (await seen(3))[2] == {"in": "fragment", "fragment": fragment["fragment"], "fragment_rerun": True}
        assert streamlit_runtime.client_state(session).query_string == "room=ABC234"

        # A fragment the session does not hold: the whole page.
        assert await asyncio.to_thread(streamlit_runtime.rerun_session, session_id, "no-such-fragment")
        assert [s["in"] for s in (await seen(5))[3:]] == ["page", "fragment"] and SEEN[3]["back"] is False
        assert not streamlit_runtime.rerun_session("no-such-session")

    on_a_server(tmp_path, test)


def test_outside_a_run_and_without_a_server_the_entry_points_say_so():
    assert not Runtime.exists()
    assert streamlit_runtime.sessions() is None and not streamlit_runtime.rerun_session("any")
    assert streamlit_runtime.session_id() is None and not streamlit_runtime.fragment_rerun()
    assert streamlit_runtime.running_fragment() is None and not streamlit_runtime.history_navigation()
    assert streamlit_runtime.drawn_bound_params() == frozenset()


def test_apptests_stand_in_runtime_has_no_sessions():
    at = AppTest.from_function(_sessions_in_apptest).run(timeout=60)
    assert not at.exception and [m.value for m in at.markdown] == ["None None"]


def _sessions_in_apptest() -> None:
    import streamlit as st

    from dashboard.serve import clients, streamlit_runtime

    st.markdown(f"{streamlit_runtime.sessions()} {clients.alive('any')}")


def test_a_runtime_that_moved_its_session_manager_fails_loudly(monkeypatch):
    """Not "cannot tell": ``clients.alive`` would then let every closed tab keep its seat."""

    class Moved(Runtime):
        def __init__(self) -> None:  # a Runtime without ``_session_mgr``
            pass

    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(Runtime, "instance", staticmethod(Moved))
    monkeypatch.setattr(streamlit_runtime, "Runtime", Moved)
    with pytest.raises(AttributeError):
        clients.alive("any")


# -- the address: hold_query_params, send_query_params, sent_query_params, query_params, drawn_bound_params ---------
def _address_app(send: bool) -> None:
    import streamlit as st

    from dashboard.serve import streamlit_runtime as rt

    rt.hold_query_params()
    rt.hold_query_params()  # once per session
    st.query_params["a"] = "1"  # Streamlit's own writes: held
    st.query_params["b"] = "2"
    st.selectbox("bound", ["x", "y"], key="bound", bind="query-params")  # writes its parameter when set from code
    st.selectbox("unbound", ["x", "y"], key="unbound")
    held = rt.query_params()
    st.markdown(f"held {sorted(held.items())} drawn {sorted(rt.drawn_bound_params())}")
    assert rt.send_query_params({"a": "1", "c": ["3", "4"]}, send=send)
    st.markdown(f"sent {[dict(s) for s in rt.sent_query_params()]}")


@pytest.mark.parametrize("send", [True, False])
def test_held_query_params_reach_the_browser_once_and_only_when_sent(to_browser, send):  # noqa: F811
    at = AppTest.from_function(_address_app, args=(send,)).run(timeout=60)
    assert not at.exception
    held, sent = (m.value for m in at.markdown)
    assert held == "held [('a', '1'), ('b', '2')] drawn ['bound']"
    assert to_browser == (["a=1&c=3&c=4"] if send else [])  # one message, or none: Streamlit's own were held
    assert urlencode(at.query_params, doseq=True) == "a=1&c=3&c=4"  # the run's address, what a rerun starts from
    assert sent == ("sent [{'a': '1', 'c': ['3', '4']}]" if send else "sent []")
    at.run()
    assert to_browser == (["a=1&c=3&c=4"] * 2 if send else [])
    assert at.markdown[1].value == ("sent " + str([{"a": "1", "c": ["3", "4"]}] * 2) if send else "sent []")


def test_sent_query_params_keeps_the_last_few():
    at = AppTest.from_function(_many_sends).run(timeout=60)
    assert not at.exception
    assert at.markdown[0].value == str([{"n": str(i)} for i in range(6, 6 + streamlit_runtime.KEPT_SENDS)])


def _many_sends() -> None:
    import streamlit as st

    from dashboard.serve import streamlit_runtime as rt

    rt.hold_query_params()
    for i in range(6 + rt.KEPT_SENDS):
        rt.send_query_params({"n": str(i)}, send=True)
    st.markdown(str([dict(s) for s in rt.sent_query_params()]))


# -- enqueue_chart: st.plotly_chart's element, from a spec made once ------------------------------------------------
CALLS: dict[str, list[tuple]] = {}
"""Per app run: the ``_enqueue`` calls of each way of drawing."""


def draw(way: str, width: str | int = "stretch", plain: bool = False) -> None:
    """An app: one shared map drawn ``way`` ("streamlit": ``st.plotly_chart``; "ours": ``enqueue_chart``), inside a
    column as the heads view draws it; every ``_enqueue`` call of a chart recorded in ``CALLS[way]``. ``plain``:
    ``small_figure()``, not a shared map (``st.plotly_chart`` only)."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    from dashboard.page.map_columns import MAP_CONFIG
    from dashboard.page.shared_figures import SharedFigure
    from dashboard.serve.streamlit_runtime import enqueue_chart
    from tests.dashboard.test_shared_figures import grid
    from tests.dashboard.test_streamlit_runtime import CALLS, record, small_figure

    figure = small_figure() if plain else SharedFigure(grid(values=True).maps[1])
    original = DeltaGenerator._enqueue
    DeltaGenerator._enqueue = record(original, CALLS.setdefault(way, []))
    try:
        with st.columns(2)[1]:
            if way != "ours":
                st.plotly_chart(figure, width=width, key="map", config=MAP_CONFIG)
            else:
                enqueue_chart(figure.to_dict(), figure.spec, width=width, key="map", config=MAP_CONFIG)
    finally:
        DeltaGenerator._enqueue = original


def record(original, calls: list):
    def _enqueue(self, delta_type, element_proto, *args, **kwargs):
        if delta_type == "plotly_chart":
            layout, one_shot = [*args, None, False][:2]
            layout, one_shot = kwargs.get("layout_config", layout), kwargs.get("has_one_shot_effect", one_shot)
            calls.append((element_proto.SerializeToString(deterministic=True), layout, one_shot))
            calls.append(element_proto.spec)
        return original(self, delta_type, element_proto, *args, **kwargs)

    return _enqueue


def both(width: str | int = "stretch") -> tuple[tuple, tuple]:
    CALLS.clear()
    ours = AppTest.from_function(draw, args=("ours", width)).run(timeout=60)
    theirs = AppTest.from_function(draw, args=("streamlit", width)).run(timeout=60)
    assert not ours.exception and not theirs.exception
    [mine, _], [streamlit, _] = CALLS["ours"], CALLS["streamlit"]
    return mine, streamlit


def test_enqueue_chart_sends_the_element_st_plotly_chart_builds_field_for_field():
    mine, streamlit = both()
    assert mine == streamlit  # proto bytes (spec, config, theme, form, id), layout, no one-shot effect
    assert len(mine[0]) > 1000  # a real map


def test_enqueue_chart_with_a_fixed_width_too():
    """The colour bar: a width in pixels."""
    mine, streamlit = both(width=180)
    assert mine == streamlit and mine[1].width == 180


def test_spec_of_is_the_json_st_plotly_chart_sends_for_a_figure():
    """What ``st.plotly_chart`` puts in the element for a plain figure is ``spec_of`` its dict (the shared figure's
    spec is made so: ``SharedFigure.spec``)."""
    CALLS.clear()
    at = AppTest.from_function(draw, args=("plain", "stretch", True)).run(timeout=60)
    assert not at.exception
    [_, sent] = CALLS["plain"]
    assert sent == spec_of(small_figure().to_dict())
    figure = grid(values=True).maps[1]
    assert SharedFigure(figure).spec == spec_of(without_unused_templates(figure.to_dict()))


def small_figure() -> go.Figure:
    return go.Figure(go.Heatmap(z=[[0.25, 0.75], [1.0, float("nan")]], x=["0·<b>a</b>", "1·b"]), layout={"title": "t"})


def test_a_shared_figure_is_turned_into_json_once_not_per_chart(monkeypatch):
    """The map columns send a shared figure's spec as it is; a plain figure still goes through ``st.plotly_chart``."""
    import plotly.io

    made = []
    to_json = plotly.io.to_json
    monkeypatch.setattr(plotly.io, "to_json", lambda *a, **k: made.append(1) or to_json(*a, **k))
    shared = SharedFigure(grid().maps[0])
    assert made == [1]  # built: its JSON, once
    AppTest.from_function(_draw_three, args=(shared,)).run(timeout=60)
    assert made == [1, 1]  # three charts drawn: the shared one twice (no JSON made), the plain one once


def _draw_three(shared) -> None:
    from dashboard.page.map_columns import MAP_CONFIG, chart
    from tests.dashboard.test_shared_figures import grid

    chart(shared, width="stretch", key="a", config=MAP_CONFIG)
    chart(shared, width="stretch", key="b", config=MAP_CONFIG)
    chart(grid().maps[0], width="stretch", key="c", config=MAP_CONFIG)


# -- the frontend's files --------------------------------------------------------------------------------------------
def test_static_dir_holds_streamlits_frontend_build():
    static = streamlit_runtime.static_dir()
    assert (static / "index.html").is_file()
    assert any(static.glob("static/js/*.js"))


def test_static_cache_control_is_a_long_immutable_max_age():
    header = streamlit_runtime.static_cache_control()
    match = re.fullmatch(r"public, immutable, max-age=(\d+)", header)
    assert match and int(match[1]) >= 86400
