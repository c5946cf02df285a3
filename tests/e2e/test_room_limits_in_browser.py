"""The room limits as a lecturer meets them, in chromium (issue 31 part 7): one browser's tabs are one browser, and
a refused Start a room in the presenter bar says why on the projector's first screen, with the rooms to close.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from bench.streamlit_server import wait_idle, watch_runs
from dashboard.classroom.rooms import ROOMS_PER_BROWSER
from tests.e2e.conftest import watched_page

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
"""A first page on a shared 2-core machine is slow; every wait below is for something the page will show."""
PROJECTOR = (1280, 720)


def start_in_the_bar(page: Page, server: str) -> None:
    """Open the presenter link in ``page`` and press the presenter bar's Start a room (the sidebar is collapsed)."""
    page.goto(server + "/?presenter=true")
    start = page.get_by_test_id("stMain").get_by_role("button", name="Start a room", exact=True)
    start.wait_for(timeout=WAIT_MS)
    wait_idle(page, start.click)


def on_first_screen(page: Page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"]


def test_a_browsers_refused_room_says_why_in_the_presenter_bar_and_offers_its_rooms(browser, server):
    """Three presenter tabs of one browser each start a room (Streamlit's XSRF cookie is the browser: one per tab
    would allow 4, one per address 5); the fourth tab's Start a room opens a dialog on the projector's first screen
    that says why and lists the three, each with Close. Closing one there keeps the dialog, now listing two, and its
    Start a room then opens this tab's room."""
    with watched_page(browser, PROJECTOR) as first:
        tabs = [first] + [watch_runs(first.context.new_page()) for _ in range(ROOMS_PER_BROWSER)]
        codes = []
        for tab in tabs[:-1]:
            start_in_the_bar(tab, server)
            tab.get_by_role("dialog").get_by_text("Room code:").wait_for(timeout=WAIT_MS)
            codes.append(re.search(r"room=([A-Z0-9]{6})", tab.url).group(1))
            tab.keyboard.press("Escape")
        fourth = tabs[-1]
        start_in_the_bar(fourth, server)
        dialog = fourth.get_by_role("dialog")
        refusal = dialog.get_by_text(f"This browser already runs {ROOMS_PER_BROWSER} open rooms")
        refusal.wait_for(timeout=WAIT_MS)
        assert on_first_screen(fourth, refusal)
        closes = dialog.get_by_role("button", name=re.compile(r"^Close [A-Z0-9]{6}$"))
        assert sorted(b.inner_text().split()[-1] for b in closes.all()) == sorted(codes)
        assert "room=" not in fourth.url
        wait_idle(fourth, dialog.get_by_role("button", name=f"Close {codes[0]}", exact=True).click)
        expect(closes).to_have_count(ROOMS_PER_BROWSER - 1, timeout=WAIT_MS)  # the dialog stays, its list redrawn
        assert dialog.get_by_text(f"You closed room {codes[0]} for everyone.").is_visible()
        assert dialog.get_by_text("already runs").count() == 0
        wait_idle(fourth, dialog.get_by_role("button", name="Start a room", exact=True).click)
        fourth.get_by_role("dialog").get_by_text("Room code:").wait_for(timeout=WAIT_MS)
        code = re.search(r"room=([A-Z0-9]{6})", fourth.url).group(1)
        assert code not in codes
        first.get_by_text(f"Room {codes[0]} was closed by its teacher").wait_for(state="attached", timeout=WAIT_MS)
