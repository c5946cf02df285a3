"""The n_heads route: which of our files a head count passes through, from the page's read to ``go.Heatmap``.

    python -m bench.route              # a laptop page at ?n_heads=4
    python -m bench.route --follower   # a student following a room whose teacher chose 4 heads

Issue 33 part 5 asks for at most 12 files on a laptop page and 14 on a following student's page. A profiler hook
(``sys.setprofile``) runs through one AppTest run of the page and, at each of the calls the value meets, takes the
project files (``core/``, ``dashboard/``) on the call stack:

- the heads control being drawn (a call with ``key="n_heads"``; a following page draws none);
- ``core.multihead.multi_head_attention``, where it splits d_model into heads;
- ``go.Heatmap(...)``, where a head's map is made.

The route is the union of those files. The follower's page is measured with every cache emptied after the teacher's
run: its route then reaches core and ``go.Heatmap`` too, as the first follower's does. It prints them, one per
line, and their count.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"
HEADS = "4"
STOPS = {"multi_head_attention"}
"""Our functions on the route, by name (with the heads control and ``go.Heatmap``)."""
WIDGETS = {"segmented_control", "radio", "pills", "selectbox", "select_slider", "slider", "number_input"}
"""Streamlit's functions that draw a control: the heads control is the one called with ``key="n_heads"``."""


def _ours(frame) -> set[str]:
    """The project files (core/, dashboard/) with a function on ``frame``'s stack."""
    files = set()
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(ROOT) and path.parts[len(ROOT.parts)] in ("core", "dashboard"):
            files.add(path.relative_to(ROOT).as_posix())
        frame = frame.f_back
    return files


def _on_route(frame) -> bool:
    code = frame.f_code
    if code.co_name == "__init__" and code.co_filename.endswith(os.path.join("graph_objs", "_heatmap.py")):
        return True
    if code.co_name in STOPS and Path(code.co_filename).is_relative_to(ROOT):
        return True
    return code.co_name in WIDGETS and frame.f_locals.get("key") == "n_heads" and "streamlit" in code.co_filename


def route(at: AppTest) -> set[str]:
    """Run ``at`` once and return the route's files."""
    found: set[str] = set()

    def hook(frame, event, _arg) -> None:
        if event == "call" and _on_route(frame):
            found.update(_ours(frame))

    threading.setprofile(hook)  # AppTest runs the script in a thread of its own
    sys.setprofile(hook)
    try:
        at.run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return found


def laptop(*, fresh: bool = True) -> AppTest:
    """A laptop page at ``n_heads=HEADS``; ``fresh``: every cache emptied first, so that the run computes and draws
    (a page whose run and figures are cached stops at the caches, and its route reaches neither core nor a heatmap)."""
    if fresh:
        from dashboard.compute import bounded_cache

        bounded_cache.clear_all()
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["n_heads"] = HEADS
    return at


def follower() -> AppTest:
    """A page following a room opened (in this process's store) with ``n_heads=HEADS``."""
    from dashboard.classroom import room_page
    from dashboard.compute import bounded_cache

    teacher = laptop(fresh=False)
    teacher.run()
    teacher.button(key="room_start").click().run()
    code, _ = teacher.session_state[room_page.TEACHER]
    bounded_cache.clear_all()  # the follower computes and draws its maps itself, not from the teacher's run
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["room"] = code
    return at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--follower", action="store_true", help="a student following a room, not a laptop page")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    files = sorted(route(follower() if args.follower else laptop()))
    print("\n".join(files))
    print(f"{len(files)} files on the n_heads route ({'following student' if args.follower else 'laptop page'})")


if __name__ == "__main__":
    main()
