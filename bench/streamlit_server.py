"""Start the dashboard in a real Streamlit server and drive it from headless Chromium.

Shared by the browser tests (tests/e2e/), the app benchmark (bench/app.py) and the
load benchmark: one way to start the server, one way to launch Debian's chromium,
and one way to wait for a rerun to finish, so they all measure the same thing.

    with streamlit_server() as (url, proc):      # proc.pid -> server RSS
        with chromium() as browser:
            page = browser.new_page()
            page.goto(url)
            wait_idle(page)
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
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # playwright is a dev dependency: only the browser helpers need it
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[1]
APP = "dashboard/app.py"
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
    app: str = APP, timeout: float = 90, extra_args: tuple[str, ...] = ()
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``streamlit run app`` from the repository root; yield (base URL, process); always stop it.

    Headless, no file watcher (nothing edits the app mid-run, and watching costs CPU on
    a shared machine), no usage statistics (no network). The server's output is read
    by a daemon thread from the start, so a chatty server never blocks on a full pipe,
    and its last lines are shown if it fails to start.
    """
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
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
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


def wait_idle(page: Page, action: Callable[[], object] | None = None, timeout: float = 60) -> None:
    """Wait until the app's script has finished running, optionally after doing ``action``.

    Without ``action`` (right after ``page.goto``) this is safe: a fresh page says
    "initial" until its first run starts. After an interaction it is not: the page
    still says "notRunning" until the rerun request reaches the server, so waiting
    for "notRunning" alone can return the old page. With ``action``, a
    MutationObserver is installed first and records any change of the state
    attribute (``oldValue`` catches a running -> notRunning flip that happens inside
    one batch), then ``action`` runs, then both "a run happened" and "notRunning"
    are awaited. An action that triggers no rerun times out, which is what a test wants.
    """
    ms = timeout * 1000
    if action is not None:
        page.evaluate(
            """() => {
                window.__alRerun = false;
                const app = document.querySelector("[data-testid='stApp']");
                const obs = new MutationObserver((records) => {
                    const now = app.getAttribute('data-test-script-state');
                    if (now !== 'notRunning' || records.some((r) => r.oldValue !== 'notRunning')) {
                        window.__alRerun = true;
                        obs.disconnect();
                    }
                });
                obs.observe(app, {attributes: true, attributeOldValue: true,
                                  attributeFilter: ['data-test-script-state']});
            }"""
        )
        action()
        page.wait_for_function("() => window.__alRerun === true", timeout=ms)
    page.wait_for_selector(APP_IDLE, timeout=ms)


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
