"""Retake the README's screenshots that need more than a link: ``python -m bench.screenshots [replay] [room_teacher]``.

- ``replay``: the train view's replay of the recommended induction run at ``REPLAY_STEP``, in the phase change
  (the previous-token head and the induction head sharpen together), from the heading to the formation chart.
- ``room_teacher``: a room's teacher page after Reveal: three students on their own pages answer the teacher's
  question (two the third choice, one the first), the teacher reveals, and the page is shown with the tally in
  view and the sidebar's line counting the students.

Each is taken in Debian's chromium on a server of its own (``bench.streamlit_server``) and written to
``dashboard/screenshots/<name>.png``. The other screenshots are one link each: ``/work/shared/tools/snap.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench.streamlit_server import chromium, streamlit_server, wait_idle, watch_runs

OUT = Path(__file__).resolve().parent.parent / "dashboard" / "screenshots"
REPLAY_STEP = 120
"""A snapshot in the middle of the phase change (tests/test_readme.py checks the README's caption against the run)."""
REPLAY_QUERY = f"view=train&task=induction&replay_step={REPLAY_STEP}"
"""The recommended induction run (loaded from its file), the replay at ``REPLAY_STEP``."""
ROOM_QUERY = "sentence=the+cat+sat+on+the+mat&seed=18&n_heads=2"
"""The teacher's sentence: a question with one clear answer (seed 18, head 2)."""
TIMEOUT_S = 180
"""Generous: the machine these run on is shared."""
STUDENTS_CHOICES = (2, 2, 0)
"""Which choice each student picks (by position in the answer box)."""


def replay(browser, url: str) -> Path:
    """The replay section, heading to the formation chart's caption, on a 1400 px wide page."""
    page = browser.new_page(viewport={"width": 1400, "height": 4000})
    page.set_default_timeout(TIMEOUT_S * 1000)
    page.goto(f"{url}/?{REPLAY_QUERY}")
    wait_idle(page, timeout=TIMEOUT_S)
    page.locator(".st-key-replay_formation .js-plotly-plot").wait_for()
    page.wait_for_timeout(1500)  # Plotly's drawing settles
    top = page.get_by_role("heading", name="Replay: how the maps formed").bounding_box()
    chart = page.locator(".st-key-replay_formation").bounding_box()
    caption = page.get_by_text("the dotted line is the step shown").bounding_box()
    bottom = max(chart["y"] + chart["height"], caption["y"] + caption["height"])
    left = top["x"] - 20
    clip = {"x": left, "y": top["y"] - 20, "width": 1400 - left - 40, "height": bottom - top["y"] + 40}
    path = OUT / "replay.png"
    page.screenshot(path=path, clip=clip)
    page.close()
    return path


def pick(page, index: int) -> None:
    """Choose the ``index``-th answer in the quiz's answer box."""
    page.locator(".st-key-quiz_panel [data-testid='stSelectbox']").click()
    wait_idle(page, page.get_by_role("option").nth(index).click, timeout=TIMEOUT_S)


def room_teacher(browser, url: str) -> Path:
    """A room after Reveal, as the teacher sees it: the tally scrolled into view, the sidebar's room line."""
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    context.set_default_timeout(TIMEOUT_S * 1000)
    teacher = watch_runs(context.new_page())
    teacher.goto(f"{url}/?{ROOM_QUERY}")
    wait_idle(teacher, timeout=TIMEOUT_S)
    wait_idle(teacher, teacher.get_by_role("button", name="Start a room", exact=True).click, timeout=TIMEOUT_S)
    teacher.get_by_role("dialog").wait_for()
    code = re.search(r"room=([A-Z0-9]{6})", teacher.url).group(1)
    teacher.keyboard.press("Escape")
    wait_idle(teacher, teacher.locator(".st-key-quiz label").first.click, timeout=TIMEOUT_S)
    teacher.locator(".st-key-quiz_panel").wait_for()
    students = []
    for choice in STUDENTS_CHOICES:
        student_context = browser.new_context(viewport={"width": 1400, "height": 1000})
        student_context.set_default_timeout(TIMEOUT_S * 1000)
        student = watch_runs(student_context.new_page())
        student.goto(f"{url}/?room={code}")
        wait_idle(student, timeout=TIMEOUT_S)
        student.locator(".st-key-quiz_panel [data-testid='stSelectbox']").wait_for()
        pick(student, choice)
        students.append(student)
    teacher.get_by_text(f"{len(STUDENTS_CHOICES)} students joined").wait_for()
    teacher.get_by_text(f"{len(STUDENTS_CHOICES)} of {len(STUDENTS_CHOICES)} students picked").wait_for()
    wait_idle(teacher, teacher.get_by_role("button", name="Reveal", exact=True).click, timeout=TIMEOUT_S)  # no guess
    tally = teacher.locator(".st-key-room_tally .js-plotly-plot")
    tally.wait_for()
    tally.scroll_into_view_if_needed()
    teacher.locator("[data-testid='stSidebar']").get_by_text("students joined").scroll_into_view_if_needed()
    teacher.wait_for_timeout(1500)
    path = OUT / "room_teacher.png"
    teacher.screenshot(path=path)
    for student in students:
        student.context.close()
    context.close()
    return path


SHOTS = {"replay": replay, "room_teacher": room_teacher}


def main(names: list[str]) -> None:
    unknown = set(names) - set(SHOTS)
    if unknown:
        raise SystemExit(f"unknown screenshots {sorted(unknown)}; choose from {sorted(SHOTS)}")
    with streamlit_server() as (url, _), chromium() as browser:
        for name in names or list(SHOTS):
            print(f"{name}: {SHOTS[name](browser, url)}")


if __name__ == "__main__":
    main(sys.argv[1:])
