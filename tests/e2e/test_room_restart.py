"""A restart (kill -9, then start again) ends in-process rooms: both pages say so by themselves, in a real browser.

Issue 18: after a restart the teacher's page kept showing "You run room X" and the student's "Following room X"
until someone clicked, and the old teacher link then claimed its key "does not open the room".
"""

from __future__ import annotations

import re
import time

import pytest

from bench.streamlit_server import chromium, free_port, streamlit_server, wait_idle
from tests.conftest import require_chromium
from tests.e2e.conftest import watched_page

pytestmark = pytest.mark.e2e

SAYS = "the server restarted at"
WAIT_S = 90
"""The pages reconnect on their own and rerun (their room fragments ask); a cold start on a shared machine is slow."""


@pytest.fixture(scope="module")
def browser():
    """Chromium without the module's shared server: this test starts (and kills) its own."""
    with chromium(require_chromium()) as b:
        yield b


def sidebar(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def test_after_a_restart_the_teacher_and_the_student_are_told_the_room_is_gone(browser):
    port = free_port()
    with watched_page(browser) as teacher, watched_page(browser) as student:
        with streamlit_server(port=port) as (url, proc):
            teacher.goto(url + "/?seed=18")
            wait_idle(teacher, teacher.get_by_role("button", name="Start a room", exact=True).click)
            teacher.get_by_role("dialog").wait_for()
            teacher.keyboard.press("Escape")
            code = re.search(r"room=([A-Z0-9]{6})", teacher.url).group(1)
            student.goto(f"{url}/?room={code}")
            student.get_by_text(f"Following room {code}").wait_for(timeout=60_000)
            assert f"You run room {code}" in sidebar(teacher)
            proc.kill()  # kill -9: no clean shutdown
            proc.wait()
        with streamlit_server(port=port):
            start = time.monotonic()
            for page in (teacher, student):
                page.get_by_text(SAYS).first.wait_for(timeout=WAIT_S * 1000)
            print(f"both pages said the server restarted {time.monotonic() - start:.1f} s after it was up")
            for page in (teacher, student):
                text = sidebar(page)
                assert f"There is no room {code} on this server" in text and "Start a new room" in text
                assert f"You run room {code}" not in text and f"Following room {code}" not in text
            wait_idle(teacher, teacher.get_by_role("button", name="Start a new room", exact=True).click)
            teacher.get_by_role("dialog").wait_for()
            new_code = re.search(r"room=([A-Z0-9]{6})", teacher.url).group(1)
            assert new_code != code
