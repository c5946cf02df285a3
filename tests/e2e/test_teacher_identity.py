"""A teacher stays the teacher, in chromium (issue 18, goal 3): reload, a second tab, another device.

The key never appears in an address; the teacher link carries a single-use claim token
(``dashboard/classroom/teacher_key.py`` says why), which leaves the address in place (``history.replaceState``), so
no history entry ever holds it, and which, once spent, opens the room as a student's page anywhere else.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page

from bench.streamlit_server import wait_idle
from tests.e2e.conftest import watched_page

pytestmark = pytest.mark.e2e

WAIT_MS = 60_000
"""A first page on a shared 2-core machine is slow; every wait below is for a sentence the page will show."""


def sidebar(page: Page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def runs_the_room(page: Page, code: str) -> None:
    """Wait until ``page`` says it runs room ``code`` (the teacher's line in the sidebar)."""
    page.locator("[data-testid='stSidebar']").get_by_text(f"You run room {code}").wait_for(timeout=WAIT_MS)


def start_room(page: Page, server: str) -> str:
    """Start a room from ``page`` (settings off their defaults), close its dialog; the room's code."""
    page.goto(server + "/?seed=5&n_heads=2")
    page.get_by_role("button", name="Start a room", exact=True).wait_for(timeout=WAIT_MS)
    wait_idle(page, page.get_by_role("button", name="Start a room", exact=True).click)
    page.get_by_role("dialog").wait_for()
    page.keyboard.press("Escape")
    code = re.search(r"room=([A-Z0-9]{6})", page.url).group(1)
    runs_the_room(page, code)
    return code


def teacher_link_token(page: Page) -> str:
    """The claim token of the teacher link the teacher's room dialog shows now."""
    wait_idle(page, page.get_by_role("button", name="Show the room's link", exact=True).click)
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Show the teacher link").click()
    dialog.locator("[data-testid='stCode']").last.wait_for()
    token = re.search(r"claim=([A-Za-z0-9_-]+)", dialog.inner_text()).group(1)
    page.keyboard.press("Escape")
    return token


def address_without_claim(page: Page) -> str:
    """The address once the page's component has taken the claim token out of it (it runs after the first draw)."""
    page.wait_for_function("() => !location.search.includes('claim=')", timeout=WAIT_MS)
    return page.url


def history_urls(page: Page) -> list[str]:
    """Every entry of the tab's session history, oldest first: the address each shows when Back or Forward reaches it.

    Read from the browser's own list (DevTools' ``Page.getNavigationHistory``), without moving. Why not walk Back to
    the start and Forward again: the oldest entries are whole page loads (the tab's ``about:blank``, then
    ``?seed=7``), and Chromium swaps the tab's frame when it goes from one to the other; a move that returns at its
    commit let the next one reach a frame no longer active ("Not attached to an active page", 1 walk in 15 here).
    """
    cdp = page.context.new_cdp_session(page)
    try:
        history = cdp.send("Page.getNavigationHistory")
    finally:
        cdp.detach()
    entries = history["entries"]
    assert history["currentIndex"] == len(entries) - 1, "the page is on its newest entry"
    return [entry["url"] for entry in entries]


def test_a_reload_and_a_second_tab_keep_the_teacher(server, page):
    code = start_room(page, server)
    kept = json.loads(page.evaluate("() => localStorage.getItem('attention-lab:teacher-keys')"))
    assert [c for c, _ in kept] == [code]  # this browser keeps the room's key...
    assert len(kept[0][1]) == 32 and kept[0][1] not in page.url  # ...and no address ever shows it
    page.reload()
    runs_the_room(page, code)
    assert "Follow the teacher" not in sidebar(page)
    second = page.context.new_page()  # same browser profile, a new tab: a new Streamlit session
    second.goto(f"{server}/?room={code}")
    runs_the_room(second, code)
    assert "Follow the teacher" not in sidebar(second)
    second.close()


def test_the_teacher_link_leaves_no_token_in_history_and_works_once(server, browser, page):
    code = start_room(page, server)
    token = teacher_link_token(page)
    link = f"{server}/?room={code}&claim={token}"
    with watched_page(browser) as device:  # another device: its own profile, no key kept
        device.goto(server + "/?seed=7")
        device.get_by_role("button", name="Start a room", exact=True).wait_for(timeout=WAIT_MS)
        before = device.evaluate("() => history.length")
        device.goto(link)
        runs_the_room(device, code)
        assert token not in address_without_claim(device)
        # the link's entry now holds the page's address: the room's settings, which the teacher's page shows
        own = f"{server}/?n_heads=2&room={code}&seed=5"
        device.wait_for_url(own, timeout=WAIT_MS)
        wait_idle(device)  # every run the claim started has sent its address (taking the token out alone left
        # ?room=CODE, and the next send pushed the settings as a second entry, after this test had looked)
        assert device.evaluate("() => history.length") == before + 1  # the link's own entry, nothing pushed
        urls = history_urls(device)
        assert len(urls) == before + 1 and not any(token in u or "claim" in u for u in urls), urls
        assert urls[-1] == own

    with watched_page(browser) as stranger:  # the spent link, opened again in a fresh profile
        stranger.goto(link)
        stranger.get_by_text("This teacher link was used already").wait_for(timeout=WAIT_MS)
        stranger.get_by_text(f"Following room {code}").wait_for(timeout=WAIT_MS)
        stranger.wait_for_url(f"{server}/?room={code}", timeout=WAIT_MS)
        wait_idle(stranger)  # the runs the claim started are over: the page says why it is a student's still
        assert stranger.get_by_text("This teacher link was used already").is_visible()
        assert f"You run room {code}" not in sidebar(stranger)
        assert token not in address_without_claim(stranger)

    assert teacher_link_token(page) != token  # the teacher's dialog now shows the next, unspent link
