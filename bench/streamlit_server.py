"""Start the dashboard in a real Streamlit server and drive it from headless Chromium.

Shared by the browser tests (tests/e2e/), the app benchmark (bench/app.py) and the
load benchmark: one way to start the server, one way to launch Debian's chromium,
and one way to wait for a rerun to finish, so they all measure the same thing.

    with streamlit_server() as (url, proc):      # proc.pid -> server RSS
        with chromium() as browser:
            page = watch_runs(browser.new_page())
            page.goto(url)
            wait_idle(page)
            wait_idle(page, lambda: page.keyboard.press("r"))  # rerun, and wait for it
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # playwright is a dev dependency: only the browser helpers need it
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[1]
APP = "streamlit_app.py"
"""The server's entry, as README's run command names it: the page behind Streamlit's server, its static files
served compressed (``dashboard/serve/precompressed.py``)."""
PAGE = "dashboard/app.py"
"""The page's script itself (what AppTest runs, and the entry of a checkout from before ``streamlit_app.py``)."""
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Playwright's own browser download does not work here: Debian's binary needs these flags
# (no sandbox in a container, no GPU, and no network traffic of its own).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
APP_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
SKELETON = "[data-testid='stSkeleton']"
"""What Streamlit 1.67 draws in an element's place while the element's code is on its way: most elements (a
button, a segmented control, a chart, the component) are chunks the page fetches the first time it draws one
(``React.lazy`` under a ``Suspense`` whose fallback is this skeleton, ``ElementNodeRenderer``). The run can end
first: on a fresh page, the welcome's eight buttons came 0.1 to 0.7 s after the script state said "notRunning"
(more under load), and a test that counted them then found none."""
_DRAWN = f"""() => document.querySelector("{APP_IDLE}") !== null && document.querySelector("{SKELETON}") === null"""


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base_url: str, proc: subprocess.Popen, tail: deque[str], timeout: float) -> None:
    """Poll /_stcore/health until it answers "ok"; fail early, with the server's output, if it died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            time.sleep(0.2)  # let the reader thread collect the last lines
            out = "".join(tail)
            raise RuntimeError(f"streamlit exited with code {proc.returncode} before it was healthy:\n{out}")
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"streamlit did not answer {base_url}/_stcore/health within {timeout:.0f}s:\n{''.join(tail)}")


@contextlib.contextmanager
def streamlit_server(
    app: str = APP,
    timeout: float = 90,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    port: int | None = None,
    module: str = "streamlit",
    root: Path = ROOT,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``streamlit run app`` from the repository root; yield (base URL, process); always stop it.

    Headless, no file watcher (nothing edits the app mid-run, and watching costs CPU on
    a shared machine), no usage statistics (no network). The server's output is read
    by a daemon thread from the start, so a chatty server never blocks on a full pipe,
    and its last lines are shown if it fails to start. ``env`` adds environment variables
    (``ATTENTION_LAB_REDIS_URL`` for rooms in Redis); ``port`` reuses a port (a restart), else a free one.
    ``module`` runs another module with Streamlit's command line (``bench.profiled``: a profiled server); ``root``
    is the checkout to run (``bench.follower --against``: another commit's app, side by side; a checkout without
    ``streamlit_app.py`` runs its ``dashboard/app.py``, uncompressed, as it was run then).
    """
    if app == APP and not (root / APP).is_file():
        app = PAGE
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-m",
        module,
        "run",
        app,
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
        *extra_args,
    ]
    environment = {**os.environ, **(env or {})}
    proc = subprocess.Popen(cmd, cwd=root, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: deque[str] = deque(maxlen=50)
    threading.Thread(target=lambda: tail.extend(proc.stdout or ()), daemon=True).start()
    try:
        _wait_healthy(base_url, proc, tail, timeout)
        yield base_url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def checkout(ref: str, into: str) -> Path:
    """The repository at ``ref``, as files (``git archive``): an app to run beside this one (``root=``)."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return Path(into)


@contextlib.contextmanager
def redis_server(executable: str = "redis-server", timeout: float = 20) -> Iterator[str]:
    """A real redis-server on a free loopback port, nothing saved to disk; yields its URL; always stops it."""
    import redis

    port = free_port()
    proc = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def chromium(executable: str = CHROMIUM) -> Iterator[Browser]:
    """Launch Debian's headless chromium through Playwright; always close it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


# Pages whose websocket is watched: page -> [number of script runs the server reported finished].
_FINISHED_RUNS: weakref.WeakKeyDictionary[Page, list[int]] = weakref.WeakKeyDictionary()
# A ScriptFinished message is a few bytes; deltas (figures) are larger: skip parsing those.
_SMALL_FRAME = 512


def watch_runs(page: Page) -> Page:
    """Count the script runs the server finishes for ``page``; call it before ``page.goto``.

    Why not the DOM: the frontend's ``data-test-script-state`` attribute is React
    state, and when a rerun is quick its "running" and "notRunning" updates can be
    batched into one render, so the attribute never changes and an observer sees
    nothing. The server's ``ScriptFinished`` message on the websocket always arrives.
    A run cut short by a newer rerun (FINISHED_EARLY_FOR_RERUN) is not counted.
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    finished = [0]

    def on_frame(payload: bytes | str) -> None:
        if not isinstance(payload, bytes) or len(payload) > _SMALL_FRAME:
            return
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            finished[0] += 1

    def on_websocket(ws) -> None:
        if ws.url.endswith("/_stcore/stream"):
            ws.on("framereceived", on_frame)

    page.on("websocket", on_websocket)
    _FINISHED_RUNS[page] = finished
    return page


def finished_runs(page: Page) -> int:
    """Script runs finished for ``page`` since ``watch_runs(page)``."""
    return _FINISHED_RUNS[page][0]


def wait_idle(page: Page, action: Callable[[], object] | None = None, timeout: float = 60) -> None:
    """Wait until the app's script has finished running and every element it sent is drawn, optionally after
    doing ``action``.

    Without ``action`` (right after ``page.goto``) the page attribute is enough: a
    fresh page says "initial" until its first run starts, then "running", then
    "notRunning". After an interaction it is not: the page still says "notRunning"
    until the rerun reaches the server, and a quick rerun may never change it (see
    ``watch_runs``). With ``action``, the page must be watched: the number of runs
    finished is read, ``action`` runs, and the wait ends when the server has
    finished one more run and the page is idle again, two animation frames later
    (React has committed the last messages). An action that triggers no rerun
    times out, which is what a test wants.

    Idle also means no element is still a ``SKELETON``: the elements of a run are on
    the page once it is idle, but an element whose code has not arrived yet is a
    placeholder, so a count, a box or a state read then is of the placeholder. (What
    draws later still, as a Plotly chart's SVG after its code has arrived, has its
    own wait: ``wait_heatmaps``, ``tests/e2e/dom.py``'s ``wait_charts_drawn``.)
    """
    deadline = time.monotonic() + timeout
    if action is not None:
        if page not in _FINISHED_RUNS:
            raise ValueError("wait_idle(page, action) needs watch_runs(page) before page.goto(...)")
        before = finished_runs(page)
        action()
        while finished_runs(page) == before:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no script run finished within {timeout:.0f}s of the action")
            page.wait_for_timeout(20)  # lets Playwright deliver websocket events
    page.wait_for_selector(APP_IDLE, timeout=max(1.0, deadline - time.monotonic()) * 1000)
    if action is not None:
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.wait_for_function(_DRAWN, polling="raf", timeout=max(1.0, deadline - time.monotonic()) * 1000)


# The dashboard's heads chart: st.plotly_chart(key="heads_chart") gets the class "st-key-heads_chart".
HEADS_CHART = ".st-key-heads_chart .js-plotly-plot"
# plotly.js draws each heatmap trace as one SVG <image> inside a "g.hm" group whose d3 datum is
# the trace's calcdata (cd[0].trace is the full trace). A weights map is a heatmap on the shared
# colour axis; the dashboard's grey "masked" overlay is a heatmap too, but on no colour axis.
_COUNT_WEIGHT_MAPS = """(chart) => [...document.querySelectorAll(chart + ' g.hm')]
    .filter((g) => g.querySelector('image') && g.__data__ && g.__data__[0].trace.coloraxis).length"""


def heatmap_count(page: Page) -> int:
    """Attention-weight heatmaps drawn in the heads chart right now (masked-cell overlays excluded)."""
    return page.evaluate(_COUNT_WEIGHT_MAPS, HEADS_CHART)


def wait_heatmaps(page: Page, n: int, timeout: float = 60) -> None:
    """Wait until the heads chart shows exactly ``n`` drawn weight heatmaps; the error names the count seen."""
    try:
        page.wait_for_function(
            f"(chart) => ({_COUNT_WEIGHT_MAPS})(chart) === {int(n)}",
            arg=HEADS_CHART,
            polling="raf",
            timeout=timeout * 1000,
        )
    except Exception as err:  # playwright's TimeoutError: say what was on the page instead
        raise AssertionError(f"expected {n} heatmaps drawn, found {heatmap_count(page)}") from err
