"""A browser tab without the browser: Streamlit's websocket protocol, spoken from Python.

The frontend talks to the server over one websocket, ``/_stcore/stream``, with the
``streamlit`` subprotocol. It sends ``BackMsg`` protobufs; a rerun is
``BackMsg.rerun_script``, a ``ClientState`` carrying the URL's query string and
the current value of every widget on the page. The server answers with
``ForwardMsg`` protobufs: ``new_session`` when a run starts, one ``delta`` per
element (its place in the page is ``metadata.delta_path``), and
``script_finished``. This module does exactly that, so a load test can run many
"students" on two cores without many chromium processes competing with the
server (see streamlit/web/server/starlette/starlette_websocket.py and
streamlit/runtime/app_session.py in the installed package).

Two browser behaviours are kept on purpose: every rerun sends the state of every
widget on the page (not just the one that changed), and widget values are encoded
as the frontend encodes them (a selectbox sends its option's label, a segmented
control the list of selected labels, an integer number input ``int_value``).
By default, unlike a browser, ``cached_message_hashes`` is left empty, so the
server always sends whole elements and every run can be checked in full. With
``Tab(..., browser_cache=True)`` the tab keeps large messages as the frontend's
ForwardMessageCache does (the server marks them ``metadata.cacheable``; each
leaves after ``max_cached_message_age`` finished runs without use), lists their
hashes with every rerun and resolves the server's ``ref_hash`` answers from it:
what a rerun costs in bytes with Streamlit's message caching on or off
(``global.minCachedMessageSize``). Every run counts the bytes it received.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import zlib
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

import numpy as np
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState

WIDGETS = {"text_input", "text_area", "selectbox", "button_group", "checkbox", "number_input", "button", "expandable"}
"""Widget types this client can set; a chart with a key has an id too but sends no state unless selectable."""
DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}
"""Statuses that end the run we asked for (FINISHED_EARLY_FOR_RERUN ends an older one)."""
FRAGMENT_DONE = DONE | {ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
"""...and for a fragment's rerun, also its own end (a fragment that calls st.rerun(scope="app") ends early and the
whole page runs: that run's end is then the one awaited)."""


def _proto(element: Element) -> Any:
    """The typed message inside an ``Element`` (its ``text_input``, ``plotly_chart``...)."""
    return getattr(element, element.WhichOneof("type"))


def widget_key(element: Element) -> str | None:
    """The user key of a widget element: its id is ``$$ID-<hash>-<key>``."""
    wid = getattr(_proto(element), "id", "")
    parts = wid.split("-", 2)
    return parts[2] if wid.startswith("$$ID-") and len(parts) == 3 else None


def encode(element: Element, value: Any) -> WidgetState:
    """``value`` as the frontend sends it for this widget."""
    kind = element.WhichOneof("type")
    proto = getattr(element, kind)
    ws = WidgetState(id=proto.id)
    if kind in ("text_input", "text_area", "selectbox"):
        ws.string_value = str(value)
    elif kind == "button_group":
        ws.string_array_value.data[:] = [str(value)]
    elif kind in ("checkbox", "expandable"):  # a stateful expander (on_change="rerun"): open or not
        ws.bool_value = bool(value)
    elif kind == "button":  # a press is a trigger: True for the one rerun it causes
        ws.trigger_value = bool(value)
    elif kind == "number_input":
        if proto.data_type == NumberInput.INT:
            ws.int_value = int(value)
        else:
            ws.double_value = float(value)
    else:
        raise NotImplementedError(f"no encoding for widget type {kind}")
    return ws


def shown_value(element: Element, query: dict[str, str]) -> Any:
    """The value the frontend shows for a widget it has not touched yet.

    The server's value when it set one (``set_value``), else the URL's for a widget
    bound to a query parameter (the frontend reads the URL itself), else the default.
    """
    kind = element.WhichOneof("type")
    if kind == "button":
        return False  # not pressed
    if kind == "expandable":
        return element.expandable.expanded
    p = _proto(element)
    url = None if p.set_value else query.get(p.query_param_key) if p.query_param_key else None
    if kind in ("text_input", "text_area"):
        return p.value if p.set_value else url if url is not None else p.default
    if kind == "selectbox":  # one with no default (index=None) shows its placeholder: no value
        default = p.options[p.default] if p.HasField("default") else None
        url = url if url in p.options else None  # "tour=" in the URL: the box is empty
        return p.raw_value if p.set_value else url if url is not None else default
    if kind == "button_group":
        values = list(p.raw_values) if p.set_value else [p.options[i].content for i in p.default]
        return url if url is not None else values[0] if values else ""
    if kind == "checkbox":
        return p.value if p.set_value else url.lower() == "true" if url is not None else p.default
    if kind == "number_input":
        v = p.value if p.set_value else float(url) if url is not None else p.default
        return int(v) if p.data_type == NumberInput.INT else v
    raise NotImplementedError(f"no value for widget type {kind}")


def decode_array(value: Any) -> np.ndarray:
    """A Plotly JSON array: a list, or ``{"dtype", "bdata", "shape"}`` (base64, as plotly.py 6+ writes NumPy)."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape is None:
            return flat
        return flat.reshape([int(s) for s in str(shape).split(",")])
    return np.asarray(value, dtype=float)


TEACHER_KEY_COMPONENT = "attention_lab_teacher_key"
"""The app's one component (``dashboard/classroom/teacher_key.py``): this tab answers it as its JavaScript does."""


class TeacherKeys:
    """What ``teacher_key.JS`` does with the component's data, in Python: this browser's localStorage of room code ->
    teacher key, and the trigger value ``done`` it reports (None: it reports nothing). A tab (and the AppTests'
    fake browser) runs it each time the component's data changes or it is mounted again, as the frontend does."""

    def __init__(self) -> None:
        self.kept: dict[str, str] = {}

    def run(self, data: dict) -> dict | None:
        drop = set(data["forget"]) | ({data["remember"][0]} if data["remember"] else set())
        kept = [(c, k) for c, k in self.kept.items() if c not in drop]
        if data["remember"]:
            kept.append(tuple(data["remember"]))
        self.kept.clear()
        self.kept.update(kept[-data["kept_rooms"] :])
        found = self.kept.get(data["ask"]) if data["ask"] else None
        if data["drop"] or found or data.get("answer"):
            return {"code": data["ask"], "key": found, "forgot": data["forget"]}
        return None


@dataclass
class Page:
    """What one run put on the page: elements by delta path, in page order."""

    elements: dict[tuple[int, ...], Element] = field(default_factory=dict)
    status: int | None = None
    seconds: float = 0.0
    """Time from sending the rerun to ``script_finished``: interaction to redrawn charts, server side."""
    received: int = 0
    """Bytes of websocket payload received for this run (uncompressed; the tab negotiates no compression)."""
    deflated: int = 0
    """The same bytes as permessage-deflate would carry them (``server.enableWebsocketCompression``): compressed here
    with the server's settings (uvicorn's websockets-sansio: 12 window bits, memLevel 5, context kept across
    messages), since the tab itself negotiates no compression."""
    references: int = 0
    """Elements the server sent as a ``ref_hash`` to a message this tab had cached, instead of in full."""
    first_chart: float | None = None
    """Seconds from sending the rerun to the first ``plotly_chart`` element."""
    auto_reruns: dict[str, float] = field(default_factory=dict)
    """Fragments that asked to rerun by themselves (``st.fragment(run_every=...)``): fragment id -> seconds."""
    owners: dict[tuple[int, ...], str] = field(default_factory=dict)
    """Delta path -> the fragment that drew the element there (elements a fragment did not draw are absent)."""
    redrew: bool = False
    """The tab's page is this run's: a whole run, or a fragment's run the server pushed (a following page's body),
    merged into the page the tab had (``Tab.next_run``); not a self-rerunning fragment's look (``poll``)."""

    @property
    def finished(self) -> bool:
        """The run ended as it should: a whole run's end, or a fragment's (a pushed body, merged: ``redrew``)."""
        return self.status in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)

    def of(self, kind: str) -> list[Element]:
        return [e for _, e in sorted(self.elements.items()) if e.WhichOneof("type") == kind]

    def widgets(self) -> dict[str, Element]:
        return {
            k: e for e in self.elements.values() if e.WhichOneof("type") in WIDGETS and (k := widget_key(e)) is not None
        }

    def figures(self) -> list[dict]:
        """Every Plotly figure on the page, as the JSON the browser receives."""
        return [json.loads(e.plotly_chart.spec) for e in self.of("plotly_chart")]

    def texts(self, kind: str) -> list[str]:
        """The body of every ``kind`` element (alert, markdown...), to read messages."""
        return [getattr(e, kind).body for e in self.of(kind)]


def _runs(kinds: list[str]) -> str:
    """``["delta", "delta", "new_session"]`` as ``"delta x2, new_session"``."""
    out: list[list] = []
    for k in kinds:
        if out and out[-1][0] == k:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in out) or "nothing"


@dataclass
class Runs:
    """What ``Tab.idle`` saw: runs started (``new_session``) and finished (not cut short for another), the text of
    the alerts (warnings, errors) and markdown the runs drew, in order, and the elements that were exceptions."""

    started: int = 0
    finished: int = 0
    said: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)


class NoRun(TimeoutError):
    """``Tab.next_run``: no run started in time (what a run that started and did not finish raises is not this)."""


class CacheMiss(RuntimeError):
    """The server referred to a message this tab does not hold: the browser's "Cached ForwardMsg MISS"."""


class MessageCache:
    """The frontend's ForwardMessageCache (``ForwardMessageCache`` in Streamlit's index.js), for one tab.

    A message the server marks ``metadata.cacheable`` is kept, stamped with the
    number of runs finished so far; a use (sent again, or referred to) renews the
    stamp. When a run finishes (other than ended early for a rerun), every
    message older than ``max_age`` runs is dropped. The frontend only ages
    messages after its first ``new_session``; so does this cache.
    """

    def __init__(self) -> None:
        self.max_age: int | None = None
        self.runs = 0
        self._messages: dict[str, tuple[bytes, int]] = {}

    def hashes(self) -> list[str]:
        return list(self._messages)

    def process(self, fm: ForwardMsg, raw: bytes) -> ForwardMsg:
        """Cache ``fm`` if it is cacheable; resolve a ``ref_hash`` to the cached message (with the ref's metadata)."""
        if fm.WhichOneof("type") != "ref_hash":
            if fm.metadata.cacheable and fm.hash:
                self._messages[fm.hash] = (self._messages.get(fm.hash, (raw, 0))[0], self.runs)
            return fm
        if fm.ref_hash not in self._messages:
            raise CacheMiss(f"Cached ForwardMsg MISS [hash={fm.ref_hash}]")
        cached_raw, _ = self._messages[fm.ref_hash]
        self._messages[fm.ref_hash] = (cached_raw, self.runs)
        cached = ForwardMsg()
        cached.ParseFromString(cached_raw)
        cached.metadata.CopyFrom(fm.metadata)
        return cached

    def run_finished(self) -> None:
        if self.max_age is None:
            return
        self.runs += 1
        self._messages = {h: (raw, at) for h, (raw, at) in self._messages.items() if self.runs - at <= self.max_age}


class Tab:
    """One browser tab on ``base_url`` (``http://127.0.0.1:port``): open, then change widgets. ``headers`` go with
    the websocket's handshake (``X-Forwarded-For`` as a proxy, or a client forging one, sends it; a browser's
    ``Cookie``)."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 60,
        browser_cache: bool = False,
        deflate: bool = True,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.ws_url = base_url.replace("http://", "ws://", 1).rstrip("/") + "/_stcore/stream"
        self.page_url = base_url
        self.timeout = timeout
        self.page = Page()
        self.query: dict[str, str] = {}
        self.values: dict[str, Any] = {}
        """What the page shows in each widget, as the frontend tracks it between runs."""
        self._ws: Any = None
        self.cache: MessageCache | None = MessageCache() if browser_cache else None
        self._deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -12, 5) if deflate else None
        """``deflate=False``: ``Page.deflated`` stays 0 and the tab spends no zlib on what it receives (a crowd of tabs
        in one process, bench.classroom, needs every client millisecond)."""
        self.auto_reruns: dict[str, float] = {}
        """The page's self-rerunning fragments (id -> seconds), as of its last whole run: what a browser polls."""
        self.keys = TeacherKeys()
        """This tab's browser's localStorage for the teacher-key component (a profile of its own: empty)."""
        self._key_data: str | None = None
        """The teacher-key component's data as its JavaScript last ran it (None: not mounted)."""
        self.headers = dict(headers or {})
        self.progress: list[tuple[int, str]] = []
        """Every ``st.progress`` element this tab received, as (percent, text), in order, whichever run drew it:
        a bar redrawn in place leaves only its last state in ``page``."""

    async def __aenter__(self) -> Tab:
        # ping_interval=None: a browser sends no websocket pings (the JS API has none); it only answers the server's.
        # The websockets client's own keepalive (a ping every 20 s, closed when no pong within 20 s) would make a
        # crowd of tabs sharing one event loop fail on its own lateness, not the server's.
        self._ws = await websockets.connect(
            self.ws_url,
            subprotocols=["streamlit"],
            max_size=None,
            open_timeout=self.timeout,
            compression=None,
            ping_interval=None,
            additional_headers=self.headers,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()

    async def open(self, query: dict[str, str] | None = None) -> Page:
        """Load the page with ``?query`` in the URL: the first run, no widget states yet."""
        self.query = dict(query or {})
        return await self._rerun([])

    async def change(self, **values: Any) -> Page:
        """Set some widgets (by key) and rerun, sending every widget's state as the browser does: widgets a fragment
        drew rerun that fragment alone (its id in the request), any other the whole page."""
        widgets = self.page.widgets()
        unknown = set(values) - set(widgets)
        if unknown:
            raise KeyError(f"no widget with key {sorted(unknown)} on the page")
        drew = {self.page.owners.get(p) for p, el in self.page.elements.items() if widget_key(el) in values}
        fragment = drew.pop() if len(drew) == 1 else None
        self.values.update(values)
        states = self._states()
        for k, el in widgets.items():  # a button press lasts one rerun, as in the browser
            if el.WhichOneof("type") == "button":
                self.values[k] = False
        for k, v in values.items():  # a bound widget writes its value into the URL, as the frontend does
            if getattr(_proto(widgets[k]), "query_param_key", ""):  # a button has none
                self.query[k] = str(v).lower() if isinstance(v, bool) else str(v)
        return await self._rerun(states, fragment_id=fragment, auto=False)

    async def poll(self, fragment_id: str) -> Page:
        """Rerun one fragment as the browser's timer does (``is_auto_rerun``), with every widget's state.

        Returns the fragment's own run, or the whole page's run when the fragment called ``st.rerun(scope="app")``;
        a whole run replaces ``self.page``, and a run that drew more than the timers' fragments (a push the server
        ran with this look) is merged into it (``_ran``).
        """
        return await self._rerun(self._states(), fragment_id=fragment_id)

    def _states(self) -> list[WidgetState]:
        """Every widget's state as the page shows it, as the browser sends it with each rerun; a button's only in the
        rerun its press causes. The frontend sends a trigger once and then forgets it, so an unpressed button sends
        nothing. Sending it as False is not the same: Streamlit keeps a button's callback after the button is gone,
        and a False for a button no longer drawn reads as a change, so the callback ran (a follower's stale "Try one"
        example rewrote its sentence, and the page left the room)."""
        widgets = self.page.widgets()
        return [
            encode(el, value)
            for k, el in widgets.items()
            if (value := self.values.get(k)) is not None and (value is True or el.WhichOneof("type") != "button")
        ]

    async def knock(self, query: dict[str, str] | None = None) -> None:
        """Ask for the page with ``?query`` and read nothing: a script's socket that holds a session (and whatever
        its first run takes: a seat) without ever drawing the page. Nothing this tab reads afterwards is its own."""
        self.query = dict(query or {})
        await self._ws.send(self._request([]).SerializeToString())

    async def idle(self, seconds: float, query: dict[str, str] | None = None) -> Runs:
        """``seconds`` of a browser tab nobody touches: read everything the server sends and fire the page's
        fragment timers (``auto_rerun``, kept in ``auto_reruns`` for the next call) at their intervals, as the
        frontend's ``setInterval`` does; count the runs that start (``new_session``: whole runs and fragment runs)
        and finish. With ``query``, the page is asked for first (its first run counts). For a page whose runs may
        never end (a run that reruns itself): this never waits for a ``script_finished``, nor merges what it reads
        into ``page``."""
        if query is not None:
            await self.knock(query)
        runs = Runs()
        timers: dict[str, tuple[float, float]] = {f: (s, time.monotonic() + s) for f, s in self.auto_reruns.items()}
        deadline = time.monotonic() + seconds
        while (now := time.monotonic()) < deadline:
            due = min([deadline, *(at for _, at in timers.values())])
            if due <= now:
                for fragment_id, (every, at) in list(timers.items()):
                    if at <= now:
                        timers[fragment_id] = (every, at + every)
                        await self._ws.send(self._request(self._states(), fragment_id).SerializeToString())
                continue
            try:
                async with asyncio.timeout(due - now):
                    raw = await self._ws.recv()
            except TimeoutError:
                continue
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                runs.started += 1
            elif kind == "script_finished" and fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                runs.finished += 1
            elif kind == "auto_rerun" and timers.get(fm.auto_rerun.fragment_id, (None,))[0] != fm.auto_rerun.interval:
                every = self.auto_reruns[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
                timers[fm.auto_rerun.fragment_id] = (every, time.monotonic() + every)
            elif kind == "stop_auto_rerun":
                for fragment_id in fm.stop_auto_rerun.fragment_ids:
                    timers.pop(fragment_id, None)
                    self.auto_reruns.pop(fragment_id, None)
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                if element.WhichOneof("type") in ("alert", "markdown"):
                    runs.said.append(_proto(element).body)
                elif element.WhichOneof("type") == "exception":
                    runs.exceptions.append(f"{element.exception.type}: {element.exception.message}")
        return runs

    def _request(self, states: list[WidgetState], fragment_id: str | None = None, auto: bool = True) -> BackMsg:
        """The ``rerun_script`` message a browser sends: the URL, every widget's state, the fragment (a timer's,
        ``auto``, or a widget's) or none (the whole page)."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = urlencode(self.query)
        cs.widget_states.widgets.extend(states)
        if fragment_id is not None:
            cs.fragment_id = fragment_id
            cs.is_auto_rerun = auto
        cs.context_info.url = f"{self.page_url}/?{cs.query_string}"
        cs.context_info.timezone = "UTC"
        cs.context_info.locale = "en-US"
        if self.cache is not None:
            cs.cached_message_hashes[:] = self.cache.hashes()
        return msg

    async def _rerun(self, states: list[WidgetState], fragment_id: str | None = None, auto: bool = True) -> Page:
        """Send one rerun and read it to its end: the whole page, or fragment ``fragment_id`` (a timer's look,
        ``auto``, or a widget the fragment drew)."""
        msg = self._request(states, fragment_id, auto)
        start = time.perf_counter()
        await self._ws.send(msg.SerializeToString())
        page = await self._read_run(start, FRAGMENT_DONE if fragment_id is not None else DONE)
        return await self._ran(page, asked=None if auto else fragment_id)

    async def _ran(self, page: Page, asked: str | None = None) -> Page:
        """A run read to its end becomes what the browser shows. A fragment's run draws its own elements only: one
        that drew a fragment other than the page's timers (a pushed body, even one that came in the same run as the
        timer's look asked for: Streamlit runs both fragments in one run) is merged into ``self.page`` and returned
        merged, ``redrew`` True; a timer's look alone leaves ``self.page`` as it was. ``asked``: the fragment whose
        widget this tab changed, which the browser redraws even when it is one of the timers'."""
        if page.status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            ran = set(page.owners.values()) | ({asked} if asked else set())
            if asked is None and (not ran or ran <= set(self.auto_reruns)):
                return page
            page = self._merged(page, ran)
        self._took(page)
        await self._answer_keys()
        return page

    async def _answer_keys(self) -> None:
        """As the browser does: the teacher-key component's JavaScript runs when it is mounted or its data changes,
        and its answer (a trigger value) reruns the page at once; that run is read here (the page it returns is the
        tab's page; what the caller gets is the run it asked for, its timing unchanged)."""
        components = [e.bidi_component for e in self.page.elements.values() if e.WhichOneof("type") == "bidi_component"]
        mounted = [c for c in components if c.component_name.endswith(TEACHER_KEY_COMPONENT)]
        data = mounted[0].json if mounted else None
        ran, self._key_data = self._key_data, data
        if data is None or data == ran or (done := self.keys.run(json.loads(data))) is None:
            return
        trigger = WidgetState(id=f"$$STREAMLIT_INTERNAL_KEY_{mounted[0].id}__events")  # the frontend's id for it
        trigger.json_trigger_value = json.dumps([{"event": "done", "value": done}])
        await self._rerun([*self._states(), trigger])

    async def next_run(self, timeout: float | None = None) -> Page:
        """Wait up to ``timeout`` for a run this tab did not ask for (the server reran the page: a room's push);
        once it has started (``new_session``), read it to its end, as the browser does. ``NoRun`` (a TimeoutError)
        only while no run has started, so a run is never cut in half and a run that starts but never finishes
        fails as the ``TimeoutError`` of ``_read_run``; what comes between runs (``session_status_changed`` after
        the tab's own run, say) is read and left. A fragment's run may come too, with its status,
        ``FINISHED_FRAGMENT_RUN_SUCCESSFULLY``: one the server pushed (a following page's body, which draws the
        room's new version) is merged into ``self.page`` and returned merged, ``redrew`` True, as the browser
        replaces that fragment's elements; one of the page's own timers (whose poll a push overtook) leaves
        ``self.page`` as it was. ``seconds`` then counts from the call."""
        start = time.perf_counter()
        try:
            async with asyncio.timeout(timeout if timeout is not None else self.timeout):
                while True:
                    first = await self._ws.recv()
                    fm = ForwardMsg()
                    fm.ParseFromString(first)
                    if fm.WhichOneof("type") in ("new_session", "delta", "ref_hash"):
                        break
        except TimeoutError:
            raise NoRun(f"no run started within {timeout} s") from None
        return await self._ran(await self._read_run(start, FRAGMENT_DONE, first))

    def _merged(self, run: Page, ran: set[str]) -> Page:
        """The tab's page with the fragments in ``ran`` drawn as ``run`` drew them (their older elements gone)."""
        old = self.page
        kept = {p: e for p, e in old.elements.items() if old.owners.get(p) not in ran}
        owners = {p: f for p, f in old.owners.items() if p in kept} | run.owners
        return replace(
            run,
            elements=dict(sorted((kept | run.elements).items())),
            auto_reruns=old.auto_reruns | run.auto_reruns,
            owners=owners,
        )

    def _took(self, page: Page) -> Page:
        """A whole run's page (or a pushed fragment's, merged) becomes this tab's page; widgets the run set or added
        take the values shown."""
        page.redrew = True
        self.page = page
        self.auto_reruns = dict(page.auto_reruns)
        for k, el in self.page.widgets().items():
            if getattr(_proto(el), "set_value", False) or k not in self.values:  # a button has no set_value
                self.values[k] = shown_value(el, self.query)
        return self.page

    async def _read_run(self, start: float, done: set[int] = DONE, first: bytes | None = None) -> Page:
        """Read messages up to the end of a run in ``done``. A fragment's run that another run's start overtook in
        the server's queue before it was sent (a pushed body, then the page's own check) arrives with its elements
        whole but its end rewritten to ``FINISHED_EARLY_FOR_RERUN`` (``ForwardMsgQueue.clear``, which keeps other
        fragments' deltas); the browser draws those elements, so a fragment run that ends in ``done`` returns them
        too, under the fragments that drew them, except where it redrew that fragment itself."""
        page = Page()
        cut: dict[tuple[int, ...], tuple[Element, str]] = {}  # fragments' elements of runs that ended early
        deadline = time.monotonic() + self.timeout
        trail: list[str] = []  # the kinds of message read, for the error when the run does not end
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                if first is not None:  # already received (next_run)
                    raw, first = first, None
                else:
                    async with asyncio.timeout(remaining):
                        raw = await self._ws.recv()
            except TimeoutError:
                raise TimeoutError(f"no script_finished within {self.timeout:.0f} s after {_runs(trail)}") from None
            page.received += len(raw)
            if self._deflate is not None:
                page.deflated += len(self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)) - 4
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            if self.cache is not None:
                if fm.WhichOneof("type") == "ref_hash":
                    page.references += 1
                fm = self.cache.process(fm, raw)
            kind = fm.WhichOneof("type")
            trail.append(f"{kind} {fm.script_finished}" if kind == "script_finished" else str(kind))
            if kind == "new_session":
                page = Page()  # a run (re)started: what came before belongs to an older run
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                page.elements[tuple(fm.metadata.delta_path)] = fm.delta.new_element
                if fm.delta.new_element.WhichOneof("type") == "progress":
                    self.progress.append((fm.delta.new_element.progress.value, fm.delta.new_element.progress.text))
                if fm.delta.fragment_id:
                    page.owners[tuple(fm.metadata.delta_path)] = fm.delta.fragment_id
                if page.first_chart is None and fm.delta.new_element.WhichOneof("type") == "plotly_chart":
                    page.first_chart = time.perf_counter() - start
            elif kind == "delta" and fm.delta.WhichOneof("type") == "add_block" and fm.delta.add_block.expandable.id:
                page.elements[tuple(fm.metadata.delta_path)] = fm.delta.add_block  # a stateful expander: a widget
                if fm.delta.fragment_id:  # the frontend sends its toggle with that fragment's id, as any widget's
                    page.owners[tuple(fm.metadata.delta_path)] = fm.delta.fragment_id
            elif kind == "ref_hash":  # only reached without a cache: the tab announced no hashes
                raise RuntimeError("the server sent a cached-message reference although none was announced")
            elif kind == "auto_rerun":
                page.auto_reruns[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "page_info_changed":
                self.query = dict(parse_qsl(fm.page_info_changed.query_string, keep_blank_values=True))
            if kind == "new_session" and self.cache is not None:
                self.cache.max_age = fm.new_session.config.max_cached_message_age
            early = fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN
            if kind == "script_finished" and early:
                cut |= {p: (e, page.owners[p]) for p, e in page.elements.items() if p in page.owners}
            if kind == "script_finished" and not early and self.cache is not None:
                self.cache.run_finished()
            if kind == "script_finished" and fm.script_finished in done:
                if fm.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY and cut:
                    redrawn = set(page.owners.values())
                    kept = {p: eo for p, eo in cut.items() if eo[1] not in redrawn and p not in page.elements}
                    page.elements = dict(sorted((page.elements | {p: e for p, (e, _) in kept.items()}).items()))
                    page.owners |= {p: owner for p, (_, owner) in kept.items()}
                page.status = fm.script_finished
                page.seconds = time.perf_counter() - start
                return page
