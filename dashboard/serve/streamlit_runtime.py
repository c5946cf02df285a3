"""Streamlit's internals the app relies on where no public API does the job, in one module.

Streamlit is pinned (requirements.txt); each entry point here names the private names it touches, and
tests/dashboard/test_streamlit_runtime.py checks its behaviour against the installed Streamlit, so an upgrade that
moves them fails there, loudly, never silently on a page. The names only one entry point uses, and that Streamlit
has moved between releases (the chart's, the widget guard's), are imported when it first runs: a Streamlit that
moved one fails that entry point (its contract test, and the page where it draws) with an ImportError, not the import
of every page module.

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


The other entry points, each for one caller:

``session_id()``, ``fragment_rerun()``, ``running_fragment()``, ``history_navigation()`` (``page``, ``room_page``,
``follower_page``, ``address``): the run's ``ScriptRunContext`` (``get_script_run_ctx``: ``session_id``,
``fragment_ids_this_run``, ``is_history_navigation``) and ``ThreadState.get().fragment_id`` (the fragment running
now). Public API tried: ``st.context`` has headers, cookies, the URL, the address, locale and theme, but no session
id, no fragment and no sign of Back or Forward; ``st.session_state`` is per session but has no id another thread can
name (the room watcher reruns a session by its id).

``hold_query_params()``, ``query_params()``, ``send_query_params(params, send=...)``, ``sent_query_params()``,
``drawn_bound_params()`` (``address``: the address sent once per run, the module's docstring says why): the
session's ``QueryParams`` (``get_session_state().query_params()``: ``_query_params``, ``_bindings_by_widget``,
``_send_query_param_msg``, the last replaced on the instance), the run's ``query_string`` and
``shared.widget_ids_this_run``. Public API tried: ``st.query_params`` writes each change to the browser at once (a
tour step sent a dozen addresses, each a history entry); its ``from_dict`` sends one message, but Streamlit's own
writes during the run (a bound widget set from code, one that left the page) still send theirs, and nothing public
says which bound controls a run drew.

``sessions()``, ``client_state(session)``, ``rerun_session(session_id, fragment_id)`` (``clients.alive``,
``classroom.push``): the runtime's session manager (``Runtime._session_mgr``), a session's last client state
(``AppSession._client_state``: its URL and widget values) and its event loop (``_call_soon_on_event_loop``), as
Streamlit reruns a page itself for ``runOnSave`` (``AppSession._on_source_file_changed``). Public API tried:
``st.rerun`` reruns only the session whose script calls it, and a fragment's ``run_every`` polls (3-8 ms of server
CPU per student per second, the design ``classroom/push.py`` replaced). ``sessions()`` is None where there is no
server (no runtime, or AppTest's stand-in); a real runtime without the attribute raises, it never reads as "cannot
tell".

``enqueue_chart(...)`` (``map_columns``): ``st.plotly_chart``'s element built from a spec made once
(``dg._enqueue``, ``compute_and_register_element_id``, ``plotly_chart``'s ``_resolve_content_width`` /
``_resolve_content_height`` / ``_plotly_data``, the ``PlotlyChart`` proto), the same element ``st.plotly_chart``
builds for a chart with no selections and Streamlit's theme. Public API tried: ``st.plotly_chart`` takes a figure or
a dict and turns it into JSON on every call (``plotly.io.to_json``): once per chart per follower per run, for a
string that is the same for every follower of a room.

``static_dir()``, ``static_cache_control()`` (``precompressed``): where Streamlit's frontend build lies
(``streamlit.file_util.get_static_dir``) and the caching header it gives its hashed files
(``starlette_server_config.STATIC_ASSET_CACHE_MAX_AGE_SECONDS``). Public API tried: none names either (the URL prefix
is public: ``st.get_option("server.baseUrlPath")``).
"""

from __future__ import annotations

import functools
import json
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import plotly.io
from streamlit import file_util
from streamlit.delta_generator import DeltaGenerator
from streamlit.elements.lib.mutable_expander_container import ExpanderContainer  # noqa: F401  (page's type)
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState
from streamlit.runtime.session_manager import SessionManager
from streamlit.runtime.state.query_params import QueryParams
from streamlit.runtime.state.session_state import SessionState
from streamlit.runtime.state.session_state_proxy import get_session_state

_GUARDED = "_attention_lab_guarded"
"""Attribute on the wrapped method: installed once per process."""


def readable(state: WidgetState, value_type: str, deserializer: Callable[[Any], Any]) -> bool:
    """The widget whose value type is ``value_type`` can read ``state``: its own field, and a value its deserializer
    takes (a finite number, where it is one)."""
    from streamlit.runtime.state.common import unpack_widget_state_value  # here: a rename fails this entry alone

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
    from streamlit.runtime.state.common import unpack_widget_state_value  # noqa: F401  (``readable``'s: fail now)

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


# -- the run ---------------------------------------------------------------------------------------------------------
def session_id() -> str | None:
    """Streamlit's id of the session this thread runs a script for (a browser tab), None outside a script run."""
    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def fragment_rerun() -> bool:
    """This run reruns fragments alone (a push, a timer, a click in one), not the whole page."""
    ctx = get_script_run_ctx()
    return ctx is not None and bool(ctx.fragment_ids_this_run)


def running_fragment() -> str | None:
    """The id of the fragment whose body is running now (None outside one, and outside a run)."""
    return None if get_script_run_ctx() is None else ThreadState.get().fragment_id


def history_navigation() -> bool:
    """This run was started by the browser's Back or Forward."""
    ctx = get_script_run_ctx()
    return ctx is not None and ctx.is_history_navigation


# -- the address -----------------------------------------------------------------------------------------------------
_HELD = "_al_held"
"""Attribute on the session's QueryParams: its messages are held for ``send_query_params``."""
_SENT = "_al_sent"
"""Attribute on the session's QueryParams: the parameters it sent lately, newest last (``sent_query_params``)."""
KEPT_SENDS = 64
"""How many sent addresses ``sent_query_params`` remembers: far more than can be on their way at once."""


def _hold_messages(qp: QueryParams) -> None:
    """From now on, a change to ``qp`` updates the run's query string (what ``st.rerun`` restarts from and
    AppTest reads) and is remembered, but reaches the browser only through ``send_query_params``."""

    def keep() -> None:  # stands in for QueryParams._send_query_param_msg
        ctx = get_script_run_ctx()
        if ctx is not None:
            ctx.query_string = urlencode(qp._query_params, doseq=True)

    qp._send_query_param_msg = keep  # an instance attribute: the class's method stays as it is
    setattr(qp, _HELD, True)


def hold_query_params() -> None:
    """Every write to this session's query parameters, Streamlit's own included, changes the run's query string and
    reaches the browser only through ``send_query_params``. Once per session; again changes nothing."""
    with get_session_state().query_params() as qp:
        if not getattr(qp, _HELD, False):
            _hold_messages(qp)
            setattr(qp, _SENT, deque(maxlen=KEPT_SENDS))


def query_params() -> dict[str, str | list[str]]:
    """The session's query parameters as Streamlit holds them (a repeated key's values as a list)."""
    with get_session_state().query_params() as qp:
        return dict(qp._query_params)


def send_query_params(params: Mapping[str, str | list[str]], *, send: bool) -> bool:
    """The session's query parameters become ``params`` (the run's query string too, what a rerun starts from);
    ``send``: and they go to the browser, one message, remembered by ``sent_query_params``. False outside a run
    (nothing changed)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    with get_session_state().query_params() as qp:
        qp._query_params = dict(params)
        ctx.query_string = urlencode(qp._query_params, doseq=True)
        if send:
            QueryParams._send_query_param_msg(qp)  # the class's: the held instance's own only keeps
            getattr(qp, _SENT).append(dict(qp._query_params))
    return True


def sent_query_params() -> Sequence[Mapping[str, str | list[str]]]:
    """The parameters ``send_query_params`` sent lately in this session, oldest first (at most ``KEPT_SENDS``)."""
    with get_session_state().query_params() as qp:
        return tuple(getattr(qp, _SENT, ()))


def drawn_bound_params() -> frozenset[str]:
    """The query parameters of the widgets bound to the URL (``bind="query-params"``) that this run drew."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return frozenset()
    drawn = ctx.shared.widget_ids_this_run
    with get_session_state().query_params() as qp:
        return frozenset(b.param_key for widget_id, b in qp._bindings_by_widget.items() if widget_id in drawn)


# -- other sessions --------------------------------------------------------------------------------------------------
def sessions() -> SessionManager | None:
    """The server's session manager (``is_active_session``, ``get_session_info``, ``get_active_session_info``), or
    None where no server runs: no runtime, or AppTest's (a stand-in, not a ``Runtime``). A ``Runtime`` without one
    raises ``AttributeError``: Streamlit moved it, and ``clients.alive`` must not read that as "cannot tell"."""
    if not Runtime.exists():
        return None
    runtime = Runtime.instance()
    if type(runtime) is not Runtime:  # AppTest's MagicMock(spec=Runtime): no sessions behind it
        return None
    return runtime._session_mgr


def client_state(session: AppSession) -> ClientState:
    """A copy of the client state ``session``'s page last ran with (its URL, its widget values, its fragment).
    Read it on the session's event loop (``rerun_session``), where Streamlit writes it."""
    state = ClientState()
    state.CopyFrom(session._client_state)
    return state


def rerun_session(session_id: str, fragment_id: str | None = None) -> bool:
    """Ask session ``session_id``'s page to rerun as it last ran (its URL, its widgets), as Streamlit does for
    ``runOnSave``: only fragment ``fragment_id`` when the session still holds it, else the whole page. False: no such
    session is connected."""
    manager = sessions()
    info = None if manager is None else manager.get_active_session_info(session_id)
    if info is None:
        return False
    session = info.session
    if fragment_id is not None and not session.has_fragment(fragment_id):  # a whole run since dropped it
        fragment_id = None

    def again() -> None:  # on the session's event loop, where its client state is written
        state = client_state(session)
        state.fragment_id = fragment_id or ""  # "": the whole page, whatever ran last
        state.is_auto_rerun = False
        session.request_rerun(state)

    session._call_soon_on_event_loop(again)
    return True


# -- a chart whose JSON was made once --------------------------------------------------------------------------------
SELECTION_MODES = ("points", "box", "lasso")
"""``st.plotly_chart``'s default ``selection_mode``: part of the element id even with selections off."""
THEME = "streamlit"


def spec_of(figure: dict) -> str:
    """The ``spec`` string ``st.plotly_chart`` makes of a figure's dict (``Figure.to_dict()``)."""
    return plotly.io.to_json(figure, validate=False)


@functools.cache
def _chart_internals() -> SimpleNamespace:
    """What ``enqueue_chart`` uses of ``st.plotly_chart``'s insides, imported at its first chart (a rename fails
    charts alone) and once (the imports were ~4 us a chart, a follower's redraw draws a dozen)."""
    from streamlit.delta_generator_singletons import get_dg_singleton_instance
    from streamlit.elements.lib import agent_spec
    from streamlit.elements.lib.form_utils import current_form_id
    from streamlit.elements.lib.layout_utils import LayoutConfig
    from streamlit.elements.lib.utils import compute_and_register_element_id
    from streamlit.elements.plotly_chart import _plotly_data, _resolve_content_height, _resolve_content_width
    from streamlit.proto.PlotlyChart_pb2 import PlotlyChart

    return SimpleNamespace(
        main_dg=lambda: get_dg_singleton_instance().main_dg,
        agent_element=agent_spec.element,
        form_id=current_form_id,
        LayoutConfig=LayoutConfig,
        element_id=compute_and_register_element_id,
        plotly_data=_plotly_data,
        content_width=_resolve_content_width,
        content_height=_resolve_content_height,
        PlotlyChart=PlotlyChart,
    )


def enqueue_chart(
    figure: dict, spec: str, *, width: str | int, key: str, config: dict[str, Any], dg: DeltaGenerator | None = None
) -> None:
    """``dg.plotly_chart(figure, width=width, key=key, config=config)``, sending ``spec`` (``spec_of(figure)``);
    ``dg`` None is ``st`` itself (the container the page is in)."""
    lib = _chart_internals()
    dg = dg if dg is not None else lib.main_dg()
    proto = lib.PlotlyChart()
    proto.theme = THEME
    proto.form_id = lib.form_id(dg)
    proto.spec = spec
    proto.config = json.dumps(config)
    proto.id = lib.element_id(
        "plotly_chart",
        user_key=key,
        key_as_main_identity=False,
        dg=dg,
        plotly_spec=proto.spec,
        plotly_config=proto.config,
        selection_mode=SELECTION_MODES,
        is_selection_activated=False,
        theme=THEME,
        width=width,
        height="content",
        alt=None,
    )
    width, height = lib.content_width(width, figure), lib.content_height("content", figure)
    layout = lib.LayoutConfig(width=width, height=height)
    dg._enqueue(
        "plotly_chart",
        proto,
        layout_config=layout,
        agent_props=lib.agent_element("plotly_chart", key=key, data_builder=lambda: lib.plotly_data(spec), alt=None),
    )


# -- the frontend's files --------------------------------------------------------------------------------------------
def static_dir() -> Path:
    """Streamlit's frontend build: ``index.html`` and the hashed bundle under ``static/``."""
    return Path(file_util.get_static_dir())


def static_cache_control() -> str:
    """The caching header Streamlit gives its hashed files (``_StreamlitStaticFiles._apply_cache_headers``)."""
    from streamlit.web.server.starlette.starlette_server_config import STATIC_ASSET_CACHE_MAX_AGE_SECONDS

    return f"public, immutable, max-age={STATIC_ASSET_CACHE_MAX_AGE_SECONDS}"
