"""Fixtures for the browser tests: one Streamlit server per module, one chromium, one fresh page per test.

Every page records, from before the app's first byte, whether an ``stException``
element was ever inserted and whether the page threw an uncaught JavaScript
error; the ``page`` fixture fails the test on either, so "no exception" is
checked for every state a test passes through, not only the last one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench.streamlit_server import chromium, streamlit_server, watch_runs
from tests.conftest import require_chromium

# Installed before any page script: counts stException elements as they are added.
WATCH_EXCEPTIONS = """
window.__alExceptions = [];
new MutationObserver((records) => {
    for (const r of records) {
        for (const n of r.addedNodes) {
            if (n.nodeType !== 1) continue;
            const hits = n.matches("[data-testid='stException']") ? [n]
                : [...n.querySelectorAll("[data-testid='stException']")];
            for (const h of hits) window.__alExceptions.push(h.innerText || '(empty)');
        }
    }
}).observe(document, {childList: true, subtree: true});
"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """Base URL of the dashboard running in a real Streamlit server (started once per module)."""
    require_chromium()
    with streamlit_server() as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def browser(server):
    """One headless Debian chromium for the module (depends on ``server`` so it starts after it)."""
    with chromium(require_chromium()) as b:
        yield b


DESK = (1400, 1000)
"""The default page size: a laptop's browser window."""


@contextmanager
def watched_page(browser, size: tuple[int, int] = DESK, headers: dict[str, str] | None = None) -> Iterator:
    """A fresh browser context of ``size`` (its own Streamlit session); on exit, fails on any exception it saw.

    A page narrower than 500 px is a phone's: a touch screen, with a phone's viewport handling (``is_mobile``).
    The page is watched (``watch_runs``): ``wait_idle(page, action)`` counts its finished runs. ``headers`` are sent
    with every request (``Accept-Encoding``: what a phone offers a plain-HTTP host).
    """
    phone = size[0] < 500
    context = browser.new_context(
        viewport={"width": size[0], "height": size[1]},
        is_mobile=phone,
        has_touch=phone,
        device_scale_factor=1,
        extra_http_headers=headers,
    )
    try:
        context.set_default_timeout(60_000)  # shared 2-core machine: generous
        context.add_init_script(WATCH_EXCEPTIONS)
        page = watch_runs(context.new_page())  # before goto: wait_idle(page, action) counts finished runs
        js_errors: list[str] = []
        page.on("pageerror", lambda e: js_errors.append(str(e)))
        yield page
        seen = page.evaluate("() => window.__alExceptions || []")
        now = page.locator("[data-testid='stException']").all_inner_texts()
    finally:
        context.close()  # also when the test failed: no page of it keeps running in the module's browser
    assert not seen and not now, f"Streamlit exception on the page: {seen or now}"
    assert not js_errors, f"uncaught JavaScript errors: {js_errors}"


@pytest.fixture
def page(browser):
    """The test's own page (see ``watched_page``); a test that shares a link opens a second one."""
    with watched_page(browser) as p:
        yield p
