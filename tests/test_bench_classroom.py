"""The lecture-hall bench's own counting (bench/classroom.py, bench/page_assets.py): who a failure is blamed on,
one verdict per distinct page, and what the join storm fetches. No server: pure functions, a tiny HTTP server."""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest
import streamlit
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosedError

import bench.classroom as classroom
from bench.classroom import STARVED_LAG_S, LoopLag, Record, page_digest, shows, starved
from bench.expected import Mismatch
from bench.page_assets import (
    BROWSER,
    GZIP_ONLY,
    AssetPlan,
    fetch,
    lazy_imports,
    named_in_index,
    static_imports,
    wait_compressed,
)
from bench.protocol import Page, Tab


def test_a_time_out_while_the_clients_were_late_is_their_starvation():
    assert starved(TimeoutError("no script_finished"), STARVED_LAG_S + 0.5)
    closed = ConnectionClosedError(None, None)
    assert starved(closed, STARVED_LAG_S)
    assert not starved(TimeoutError("no script_finished"), STARVED_LAG_S - 0.1)  # the clients kept up: the server's


def test_a_wrong_page_is_the_servers_however_late_the_clients_were():
    assert not starved(Mismatch("head 1: weights differ"), 30.0)
    assert not starved(AssertionError("shows none of the teacher's changes"), 30.0)


def test_loop_lag_counts_a_wake_up_overdue_right_now():
    lag = LoopLag()
    lag.samples = [(100.0, 0.01), (101.0, 2.5), (200.0, 0.02)]
    lag.last = 200.0
    assert lag.worst(since=150.0, now=200.1) == pytest.approx(0.05)  # the 2.5 s is before `since`
    assert lag.worst(since=50.0, now=200.1) == pytest.approx(2.5)
    assert lag.worst(since=150.0, now=204.0) == pytest.approx(4.0 - LoopLag.PERIOD_S)  # the loop is just back


def test_lateness_is_measured_by_the_running_loop():
    async def run() -> LoopLag:
        lag = LoopLag()
        task = asyncio.create_task(lag.run())
        await asyncio.sleep(0.2)
        time.sleep(0.4)  # the loop is blocked: every tab in the process would be this late
        await asyncio.sleep(0.1)
        task.cancel()
        return lag

    lag = asyncio.run(run())
    assert 0.3 <= lag.pct(100) <= 1.5


def test_record_counts_starvation_apart_from_the_servers_failures():
    rec = Record()
    now = time.monotonic()
    rec.lag.samples, rec.lag.last = [(now - 5, 3.0)], now
    rec.fail("student 3", TimeoutError("no script_finished within 120 s"))
    rec.fail("student 4", Mismatch("2 maps of these tokens for 4 heads"))
    assert len(rec.starved) == 1 and "student 3" in rec.starved[0] and "3.0 s late" in rec.starved[0]
    assert len(rec.errors) == 1 and "student 4" in rec.errors[0]
    assert rec.students_failed == 2
    quiet = Record()
    quiet.lag.samples, quiet.lag.last = [(now - 5, 0.02)], now
    quiet.fail("student 5", TimeoutError("no script_finished within 120 s"))
    assert quiet.errors and not quiet.starved  # the clients kept up: a time-out is the server's


def test_a_starved_run_is_not_a_pass():
    result = classroom.Result("one process", 20, 0, 0.5, 0.9, 1.0, 0.0, 10.0, 1.0, 200.0, starved=1)
    assert not result.ok
    assert result.row().rstrip("|").rstrip().endswith("| 1")  # the last column: client starvation


def _page(spec: str, status: int = 0) -> Page:
    msg = ForwardMsg()
    msg.delta.new_element.plotly_chart.spec = spec
    page = Page(status=status)
    page.elements[(0, 1)] = msg.delta.new_element
    return page


def test_one_verdict_per_distinct_page(monkeypatch):
    calls = []

    def check(page, values):
        calls.append(values["seed"])
        if values["seed"] != 7:
            raise Mismatch("weights differ")

    monkeypatch.setattr(classroom, "check_student", check)
    monkeypatch.setattr(classroom, "VERDICTS", {})
    a1, a2, b = _page('{"data": [1]}'), _page('{"data": [1]}'), _page('{"data": [2]}')
    assert page_digest(a1) == page_digest(a2) != page_digest(b)
    assert page_digest(a1) != page_digest(_page('{"data": [1]}', status=2))
    assert shows(a1, page_digest(a1), {"seed": 7}) and shows(a2, page_digest(a2), {"seed": 7})
    assert not shows(a1, page_digest(a1), {"seed": 8})
    assert calls == [7, 8]  # the second student's identical page was not checked again
    assert shows(b, page_digest(b), {"seed": 7}) and calls == [7, 8, 7]  # other bytes: checked


INDEX = """<html><head><link rel="shortcut icon" href="./favicon.png" />
<link rel="preload" href="./static/media/Sans.woff2" as="font" />
<script type="module" crossorigin src="./static/js/index.A1.js"></script>
<link rel="modulepreload" crossorigin href="./static/js/react.B2.js">
<link rel="stylesheet" crossorigin href="./static/css/index.C3.css">
<link rel="service-desc" href="./_stcore/agent/openapi.json" /></head></html>"""
SCRIPTS = {
    "static/js/index.A1.js": 'import{a}from"./react.B2.js";import"./util.D4.js";'
    "const P=lazy(()=>H(()=>import(`./PlotlyChart.E5.js`),[]));const B=lazy(()=>import(`./Button.F6.js`));"
    'url("./MaterialSymbols-Rounded.G7.woff2")',
    "static/js/react.B2.js": "export const a=1",
    "static/js/util.D4.js": 'import"./react.B2.js";export const u=2',
    "static/js/PlotlyChart.E5.js": 'import{a}from"./react.B2.js";import{p}from"./plotly.H8.js";',
    "static/js/plotly.H8.js": "export const p=3",
    "static/js/Button.F6.js": 'import"./index.A1.js";',
    "static/css/index.C3.css": "body{}",
}


def test_index_names_and_imports():
    assert named_in_index(INDEX) == [
        "favicon.png",
        "static/media/Sans.woff2",
        "static/js/index.A1.js",
        "static/js/react.B2.js",
        "static/css/index.C3.css",
    ]  # the agent API's description is no asset
    assert static_imports(SCRIPTS["static/js/index.A1.js"]) == ["react.B2.js", "util.D4.js"]
    assert lazy_imports(SCRIPTS["static/js/index.A1.js"]) == ["PlotlyChart.E5.js", "Button.F6.js"]


def test_the_plan_follows_what_is_served():
    read = []
    plan = AssetPlan.from_files(INDEX, lambda p: read.append(p) or SCRIPTS[p])
    assert plan.eager == [
        "",
        "favicon.png",
        "static/media/Sans.woff2",
        "static/js/index.A1.js",
        "static/js/react.B2.js",
        "static/css/index.C3.css",
        "static/js/util.D4.js",  # imported, not named
        "static/media/MaterialSymbols-Rounded.G7.woff2",  # the icons' font, named in a script
        "_stcore/health",
        "_stcore/host-config",
    ]
    assert "static/js/PlotlyChart.E5.js" not in plan.eager  # loaded only when a chart arrives
    assert plan.lazy_for({"plotly_chart"}) == ["static/js/PlotlyChart.E5.js", "static/js/plotly.H8.js"]
    assert plan.lazy_for({"button", "markdown"}) == ["static/js/Button.F6.js"]  # its imports were fetched already
    assert plan.lazy_for({"markdown"}) == []
    renamed = INDEX.replace("index.A1.js", "index.Z9.js")
    scripts = SCRIPTS | {"static/js/index.Z9.js": SCRIPTS["static/js/index.A1.js"]}
    assert "static/js/index.Z9.js" in AssetPlan.from_files(renamed, scripts.__getitem__).eager


def test_the_installed_streamlit_page_is_about_what_chromium_fetched():
    """Chromium on a room's student page (Streamlit 1.67, captured while writing bench/page_assets.py) fetched 112
    responses, 9,335,312 bytes; the plan read from the same files, for the kinds on that page, must come close."""
    static = Path(streamlit.__file__).parent / "static"
    plan = AssetPlan.from_files((static / "index.html").read_text(), lambda p: (static / p).read_text("utf-8"))
    kinds = {"plotly_chart", "button", "button_group", "checkbox", "selectbox", "text_input", "download_button"}
    kinds |= {"bidi_component", "code", "markdown", "alert"}
    files = [p for p in plan.eager + plan.lazy_for(kinds) if p and not p.startswith("_stcore/")]
    total = sum((static / p).stat().st_size for p in files)
    assert 8.5e6 <= total <= 10e6
    assert any(p.startswith("static/js/PlotlyChart.") for p in plan.lazy_for({"plotly_chart"}))


class _Files(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the browser's connections
    bodies: ClassVar[dict[str, bytes]] = {"/": b"x" * 10, "/a.js": b"y" * 300_000, "/b.css": b"z" * 7}
    connections: ClassVar[list[int]] = []
    offered: ClassVar[list[str]] = []

    def setup(self):
        super().setup()
        self.connections.append(1)

    def do_HEAD(self):
        self.offered.append(self.headers.get("Accept-Encoding", ""))
        self.send_response(200 if self.path in self.bodies else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.offered.append(self.headers.get("Accept-Encoding", ""))
        body = self.bodies.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def files_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Files.connections = []
    _Files.offered = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_fetch_reads_every_body_over_few_connections(files_url):
    paths = ["", "a.js", "b.css"] * 4
    assert asyncio.run(fetch(files_url, paths, connections=2)) == 4 * (10 + 300_000 + 7)
    assert len(_Files.connections) == 2  # keep-alive: two connections carried twelve requests


def test_fetch_offers_what_a_phone_offers_unless_told_otherwise(files_url):
    asyncio.run(fetch(files_url, ["a.js"]))
    asyncio.run(fetch(files_url, ["a.js"], accept=BROWSER))
    assert _Files.offered == [GZIP_ONLY, BROWSER] == ["gzip, deflate", "gzip, deflate, br, zstd"]


def test_waiting_for_brotli_ends_at_once_on_a_server_that_compresses_nothing(files_url):
    assert wait_compressed(files_url, ["a.js", "b.css"], timeout=5) is None


def test_fetch_fails_on_a_missing_file(files_url):
    with pytest.raises(OSError, match="404"):
        asyncio.run(fetch(files_url, ["nothing.js"]))


class _Clock:
    """A fake monotonic clock: the teacher's sleeps move it at once, so a 90 s run takes no real time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class _TeacherPage:
    def __init__(self, values: dict) -> None:
        self.status, self.quiz = 0, bool(values.get("quiz"))

    def of(self, kind: str) -> list:
        return []

    def widgets(self) -> dict:
        return {"quiz_reveal": None} if self.quiz else {}

    def figures(self) -> list:
        return []


class _TeacherTab:
    """What ``teacher`` asks of its ``Tab``: a page, its values, a room code once the room is started."""

    def __init__(self, url: str, **_) -> None:
        self.values = {"sentence": "", "d_model": 64, "n_heads": 4, "causal": False, "positional": "rope", "seed": 0}

    async def __aenter__(self) -> _TeacherTab:
        return self

    async def __aexit__(self, *exc) -> None:
        pass

    async def open(self, params: dict) -> _TeacherPage:
        self.values |= params
        return _TeacherPage(self.values)

    async def change(self, **change) -> _TeacherPage:
        self.values |= {"room": "ABCD"} if change.pop("room_start", False) else {}
        self.values |= change
        return _TeacherPage(self.values)


def _teach(monkeypatch, join_seconds: float) -> Record:
    """The teacher's whole 90 s run on the fake clock, with a class that takes ``join_seconds`` to join."""
    import random
    from types import SimpleNamespace

    clock = _Clock()
    monkeypatch.setattr(classroom, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(classroom, "asyncio", SimpleNamespace(sleep=clock.sleep))
    monkeypatch.setattr(classroom, "Tab", _TeacherTab)
    monkeypatch.setattr(classroom, "QUIZ_PICK_S", 1.0)  # nobody picks here: the teacher reveals after the wait

    async def run() -> Record:
        rec, ready = Record(deadline=clock.now + classroom.HALL_SECONDS), asyncio.Event()

        async def the_class() -> None:  # one student, seated ``join_seconds`` after the link went out
            await ready.wait()
            while clock.now < rec.link_out + join_seconds:
                await asyncio.sleep(0)
            rec.joined.append(clock.now - rec.link_out)

        await asyncio.gather(classroom.teacher("u", rec, random.Random(0), ready, 1, lambda: 0.0), the_class())
        return rec

    return asyncio.run(run())


def test_a_slow_join_takes_none_of_the_changes_and_quiz_rounds_time(monkeypatch):
    """The join storm's last first map came 57 s after the link went out; counted against the run's 90 s, that left
    the teacher one change and no quiz round, so ``--lecture-hall`` failed its quiz check for the storm's own time."""
    quick, storm = _teach(monkeypatch, 0.5), _teach(monkeypatch, 57.0)
    assert not quick.errors and not storm.errors
    assert storm.quiz_counts and len(storm.quiz_counts) == len(quick.quiz_counts)
    assert len(storm.changes) == len(quick.changes) >= 4  # the room's start, a change, the quiz on and off
    assert storm.deadline - quick.deadline == pytest.approx(57.0 - 0.5, abs=0.2)  # the teacher looks every 0.2 s


def test_an_early_student_waits_while_the_class_is_still_joining():
    rec = Record(deadline=190.0, link_out=103.0)
    assert rec.time_left(150.0) == pytest.approx(40.0)
    assert rec.time_left(195.0) == 1.0  # past the run's unmoved end, but the join is not over: the deadline will move
    rec.join_done(200.0)
    assert rec.deadline == pytest.approx(287.0) and rec.time_left(287.5) < 0


def test_a_run_with_failures_or_no_redraw_measured_is_not_a_pass():
    failed = classroom.Result("one process, join storm", 200, 3, 0.5, 0.9, 57.0, 0.2, 60.0, 8.0, 240.0, quiz=[(1, 1)])
    nothing = classroom.Result("one process", 200, 0, float("nan"), float("nan"), 5.0, 0.2, 30.0, 4.0, 200.0)
    assert not failed.ok and not nothing.ok


def _markdown(body: str) -> Element:
    element = Element()
    element.markdown.body = body
    return element


def test_a_push_that_came_with_the_pages_own_check_is_drawn():
    """Streamlit runs a pushed body and the page's 30 s check, asked for at once, as one fragment run: the browser
    draws both, so the tab must too. The old ``poll`` returned that run unmerged, and the student showed the
    teacher's change only at its next check (the hall's 42 s maxima)."""
    tab = Tab("http://127.0.0.1:1")  # never connected: ``_ran`` only reads what a run sent
    tab.page = Page(
        elements={(0,): _markdown("sidebar"), (1, 0): _markdown("check: following"), (1, 1): _markdown("seed 1")},
        status=ForwardMsg.FINISHED_SUCCESSFULLY,
        owners={(1, 0): "check", (1, 1): "body"},
    )
    tab.auto_reruns = {"check": 30.0}
    timer_only = Page(
        elements={(1, 0): _markdown("check: still following")},
        status=ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        owners={(1, 0): "check"},
    )
    assert not asyncio.run(tab._ran(timer_only)).redrew
    assert [e.markdown.body for e in tab.page.elements.values()] == ["sidebar", "check: following", "seed 1"]
    with_push = Page(
        elements={(1, 0): _markdown("check: following"), (1, 1): _markdown("seed 2")},
        status=ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        owners={(1, 0): "check", (1, 1): "body"},
    )
    drawn = asyncio.run(tab._ran(with_push))
    assert drawn.redrew and drawn.finished and tab.page is drawn
    assert [e.markdown.body for e in tab.page.elements.values()] == ["sidebar", "check: following", "seed 2"]


FRAGMENT_END = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY


class _Wire:
    """A websocket that has already received ``msgs``: ``recv`` hands them out in order; ``sent`` keeps what the tab
    sent."""

    def __init__(self, msgs: list[ForwardMsg]) -> None:
        self._raw = [m.SerializeToString() for m in msgs]
        self.sent: list[BackMsg] = []

    async def send(self, raw: bytes) -> None:
        msg = BackMsg()
        msg.ParseFromString(raw)
        self.sent.append(msg)

    async def recv(self) -> bytes:
        return self._raw.pop(0)


def _delta(path: tuple[int, ...], body: str, fragment: str) -> ForwardMsg:
    fm = ForwardMsg()
    fm.metadata.delta_path[:] = path
    fm.delta.new_element.CopyFrom(_markdown(body))
    fm.delta.fragment_id = fragment
    return fm


def _run_of(*deltas: ForwardMsg, status: int) -> list[ForwardMsg]:
    start, end = ForwardMsg(), ForwardMsg()
    start.new_session.page_script_hash = "page"
    end.script_finished = status
    return [start, *deltas, end]


def test_a_pushed_body_whose_end_the_next_run_rewrote_is_drawn():
    """A pushed body run whose messages were still queued when the page's own check started comes with its elements
    whole but its end rewritten to ``FINISHED_EARLY_FOR_RERUN`` (Streamlit's ``ForwardMsgQueue.clear``); a browser
    draws them. The old ``_read_run`` dropped them at the check's ``new_session`` and returned the check's run
    alone: 4 of 100 students never saw the teacher's quiz (a 34 s maximum, the next push)."""
    tab = Tab("http://127.0.0.1:1")  # never connected: the wire below is what the server sent
    tab.page = Page(
        elements={(1, 0): _markdown("check: following"), (1, 1): _markdown("seed 1"), (1, 2): _markdown("old map")},
        status=ForwardMsg.FINISHED_SUCCESSFULLY,
        owners={(1, 0): "check", (1, 1): "body", (1, 2): "body"},
    )
    tab.auto_reruns = {"check": 30.0}
    tab._ws = _Wire(
        _run_of(
            _delta((1, 1), "quiz", "body"),
            _delta((1, 2), "pick box", "body"),
            status=ForwardMsg.FINISHED_EARLY_FOR_RERUN,
        )
        + _run_of(_delta((1, 0), "check: still following", "check"), status=FRAGMENT_END)
    )
    page = asyncio.run(tab.next_run(timeout=1))
    assert page.redrew and tab.page is page
    assert [e.markdown.body for e in page.elements.values()] == ["check: still following", "quiz", "pick box"]
    assert page.owners == {(1, 0): "check", (1, 1): "body", (1, 2): "body"}


class _Then(_Wire):
    """A ``_Wire`` after whose messages nothing more comes: ``recv`` waits, as a socket with nothing sent does."""

    async def recv(self) -> bytes:
        if not self._raw:
            await asyncio.sleep(3600)
        return await super().recv()


@pytest.mark.parametrize("body_comes", [True, False])
def test_a_whole_run_without_its_body_is_read_with_the_pushed_body_that_dropped_it(monkeypatch, body_comes):
    """The page's own check reran the page whole (it had seen the room's new version), and the watcher's pushed body
    started while that run's messages were still queued: Streamlit dropped the whole run's body and kept its end, so
    the tab read a page with the check's line alone, and the bench failed a page the browser shows for a moment
    only (5 in the session-41 walk). ``settled`` reads the body's run that comes next; when none comes, the page
    stays what it was and fails as before."""
    monkeypatch.setattr(classroom, "OVERTAKEN_S", 0.2)
    monkeypatch.setattr(  # change j is "seed j" in the body's line: what ``shown_change`` reads, in short
        classroom,
        "shown_change",
        lambda page, changes, first: next((j for j in (2, 1) if f"seed {j}" in page.texts("markdown")), None),
    )
    tab = Tab("http://127.0.0.1:1")
    tab.page = Page(
        elements={(1, 0): _markdown("check: following"), (1, 1): _markdown("seed 1")},
        status=ForwardMsg.FINISHED_SUCCESSFULLY,
        owners={(1, 0): "check", (1, 1): "body"},
    )
    tab.auto_reruns = {"check": 10.0}
    whole = _run_of(_delta((1, 0), "check: following", "check"), status=ForwardMsg.FINISHED_SUCCESSFULLY)
    body = _run_of(_delta((1, 1), "seed 2", "body"), status=FRAGMENT_END)
    tab._ws = _Then(whole + (body if body_comes else []))
    rec = Record()

    async def student() -> tuple[Page, Page, int | None]:
        read = await tab.next_run(timeout=1)
        return (read, *await classroom.settled(tab, read, 1, rec))

    read, page, index = asyncio.run(student())
    assert read.texts("markdown") == ["check: following"]  # what the tab read first: no body
    if body_comes:
        assert index == 2 and page.texts("markdown") == ["check: following", "seed 2"] and tab.page is page
        assert len(rec.overtaken) == 1
    else:
        assert index is None and page is read and rec.overtaken == []


@pytest.mark.parametrize("whole", [False, True])
def test_a_cut_run_leaves_nothing_that_the_run_after_it_drew_again(whole):
    """A body Streamlit cut and ran again (or a whole run after it): only the later run's elements are drawn."""
    tab = Tab("http://127.0.0.1:1")
    tab.page = Page(
        elements={(1, 1): _markdown("seed 1")}, status=ForwardMsg.FINISHED_SUCCESSFULLY, owners={(1, 1): "body"}
    )
    cut = _run_of(
        _delta((1, 1), "seed 2", "body"),
        _delta((1, 2), "half a map", "body"),
        status=ForwardMsg.FINISHED_EARLY_FOR_RERUN,
    )
    again = _delta((1, 1), "seed 3", "" if whole else "body")
    tab._ws = _Wire(cut + _run_of(again, status=ForwardMsg.FINISHED_SUCCESSFULLY if whole else FRAGMENT_END))
    page = asyncio.run(tab.next_run(timeout=1))
    assert [e.markdown.body for e in page.elements.values()] == ["seed 3"] and page.redrew


def _selectbox(key: str, options: list[str]) -> Element:
    element = Element()
    element.selectbox.id = f"$$ID-0123abcd-{key}"
    element.selectbox.options[:] = options
    return element


@pytest.mark.parametrize("in_body", [True, False])
def test_a_widget_a_fragment_drew_reruns_that_fragment_as_the_browser_does(in_body):
    """The quiz's pick box is in the following page's body fragment: the browser sends that fragment's id, and the
    server reruns the body alone. The old ``change`` sent every pick as a whole-page run (the bench's quiz round cost
    the server 100 whole runs). A widget outside any fragment still reruns the page."""
    tab = Tab("http://127.0.0.1:1")
    tab.page = Page(
        elements={(1, 0): _markdown("check: following"), (1, 1): _selectbox("quiz_pick_q1", ["the", "cat"])},
        status=ForwardMsg.FINISHED_SUCCESSFULLY,
        owners={(1, 0): "check", (1, 1): "body"} if in_body else {(1, 0): "check"},
    )
    tab.auto_reruns = {"check": 30.0}
    after = _delta((1, 1), "your pick: cat", "body" if in_body else "")
    tab._ws = _Wire(_run_of(after, status=FRAGMENT_END if in_body else ForwardMsg.FINISHED_SUCCESSFULLY))
    page = asyncio.run(tab.change(quiz_pick_q1="cat"))
    [sent] = tab._ws.sent
    assert sent.rerun_script.fragment_id == ("body" if in_body else "")
    assert not sent.rerun_script.is_auto_rerun
    assert [w.string_value for w in sent.rerun_script.widget_states.widgets] == ["cat"]
    assert page.redrew and tab.page is page and "your pick: cat" in page.texts("markdown")
    if in_body:  # the check's element stays: the run drew the body alone
        assert page.texts("markdown") == ["check: following", "your pick: cat"]


@pytest.mark.parametrize("fragment", ["send box", ""])
def test_an_expander_a_fragment_drew_reruns_that_fragment_as_the_browser_does(fragment):
    """A stateful expander is a block, not an element: the tab kept it as a widget but not which fragment drew it, so
    opening the send box (``class_sentences._send_panel``, in a fragment) ran the whole page, 200 runs of every map
    in ``bench.sends`` at 200, where the browser sends the toggle with the fragment's id (Streamlit's frontend,
    ``setBoolValue(..., {fragmentId})``) and the box's fragment reruns alone."""
    opener = ForwardMsg()
    opener.metadata.delta_path[:] = (1, 2)
    opener.delta.add_block.expandable.id = "$$ID-0123abcd-class_send"
    opener.delta.add_block.expandable.label = "Send a sentence to your teacher"
    opener.delta.fragment_id = fragment
    tab = Tab("http://127.0.0.1:1")
    tab._ws = _Wire(
        _run_of(_delta((1, 0), "check: following", "check"), opener, status=ForwardMsg.FINISHED_SUCCESSFULLY)
        + _run_of(_delta((1, 2, 0), "your sentence", fragment), status=FRAGMENT_END if fragment else 0)
    )
    asyncio.run(tab.next_run(timeout=1))
    asyncio.run(tab.change(class_send=True))
    [sent] = tab._ws.sent
    assert sent.rerun_script.fragment_id == fragment
    assert [w.bool_value for w in sent.rerun_script.widget_states.widgets if w.id.endswith("class_send")] == [True]


def _button(key: str) -> Element:
    element = Element()
    element.button.id = f"$$ID-0123abcd-{key}"
    return element


def test_a_button_is_sent_only_in_the_rerun_its_press_causes():
    """The frontend sends a button's trigger once, with its press, and never as False. Streamlit keeps a button's
    callback after the button is gone, and reads a False for a button no longer drawn as a change: the tab that sent
    every unpressed button as False made a follower's stale "Try one" example (``page.common._open_example``) rewrite
    its sentence, layer and head, and the page left the room (``room_page._explored``)."""
    tab = Tab("http://127.0.0.1:1")
    tab.page = Page(
        elements={(1, 0): _button("example_0"), (1, 1): _selectbox("layer", ["1", "2"])},
        status=ForwardMsg.FINISHED_SUCCESSFULLY,
    )
    tab.values = {"example_0": False, "layer": "2"}
    assert [w.WhichOneof("value") for w in tab._states()] == ["string_value"]  # the box, not the button

    redrawn = []  # each run draws the same two widgets again
    for path, element in tab.page.elements.items():
        fm = ForwardMsg()
        fm.metadata.delta_path[:] = path
        fm.delta.new_element.CopyFrom(element)
        redrawn.append(fm)
    tab._ws = _Wire(_run_of(*redrawn, status=ForwardMsg.FINISHED_SUCCESSFULLY) * 2)
    asyncio.run(tab.change(example_0=True))
    asyncio.run(tab.poll("check"))
    pressed, after = ({w.id: w for w in m.rerun_script.widget_states.widgets} for m in tab._ws.sent)
    assert pressed["$$ID-0123abcd-example_0"].trigger_value is True
    assert set(after) == {"$$ID-0123abcd-layer"}  # the press lasted one rerun; then the button sends nothing


def test_the_follower_profile_keeps_the_runs_of_a_function_the_following_page_calls():
    """``bench.follower --profile`` keeps the runs that called ``FOLLOWER_RUN``: after a rename it kept none and
    wrote no profile at all (it named ``follower_sidebar``, gone since the body became a fragment)."""
    import inspect

    from bench.follower import FOLLOWER_RUN
    from dashboard.classroom import follower_page

    assert inspect.isfunction(getattr(follower_page, FOLLOWER_RUN, None))
    assert f"st.fragment({FOLLOWER_RUN})" in inspect.getsource(follower_page.follow_room)


class _Picker:
    """A tab whose page asks question ``quiz_pick_q1`` (or nothing): ``change`` records the pick sent."""

    def __init__(self, asks: bool) -> None:
        elements = {(1, 1): _selectbox("quiz_pick_q1", ["the", "cat"])} if asks else {}
        self.page = Page(elements=elements, status=ForwardMsg.FINISHED_SUCCESSFULLY)
        self.sent: list[dict] = []

    async def change(self, **values) -> Page:
        self.sent.append(values)
        return self.page


@pytest.mark.parametrize(
    ("asks", "open_", "picked_before", "picks"),
    [(True, True, False, True), (False, True, False, False), (True, False, False, False), (True, True, True, False)],
)
def test_a_student_picks_once_only_while_the_page_still_asks_and_the_quiz_is_open(asks, open_, picked_before, picks):
    """A student picks after reading the question (``READ_S``); by then the teacher may have revealed (the quiz is
    closed) or the page moved on (no pick box): no pick then, and never a second pick for one question."""
    import random

    rec = Record(deadline=100.0)
    rec.quiz_open = open_
    if picked_before:
        rec.picked["quiz_pick_q1"] = {7}
    tab = _Picker(asks)
    asyncio.run(classroom._pick(tab, 7, "quiz_pick_q1", rec, random.Random(0)))
    assert (tab.sent != []) == picks and rec.picking == 0
    if picks:
        assert tab.sent[0]["quiz_pick_q1"] in ("the", "cat") and rec.picked == {"quiz_pick_q1": {7}}


def test_the_k_v_heads_the_bench_expects_after_a_head_change_are_what_the_page_reads():
    """A teacher who clicked Heads 8 from multi-head attention shows multi-head attention with 8 heads; the bench once
    expected K/V heads kept at 4 (grouped), and failed every student of such a room (issue 34's failing runs: "shows
    none of the teacher's changes since 3"). The page's rule is its address's: ``kv_heads`` is written only when it
    differs from the heads, and read back as the nearest divisor of the heads."""
    from bench.classroom import kv_heads_after
    from dashboard.state.settings import kv_head_options
    from dashboard.state.url_state import read

    heads = [1, 2, 4, 8, 16]
    for n in heads:
        for kv in kv_head_options(n):
            for new in heads:
                address = {"n_heads": str(new)} | ({} if kv == n else {"kv_heads": str(kv)})
                page = int(read(address, repair=True).context["kv_heads"])
                assert kv_heads_after(n, kv, new) == page, (n, kv, new)
    assert kv_heads_after(4, 4, 8) == 8 and kv_heads_after(1, 1, 4) == 4 and kv_heads_after(4, 2, 8) == 2
