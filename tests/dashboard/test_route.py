"""Issue 33 part 5: the files a head count passes through, from the page's read to ``go.Heatmap``.

``bench.route`` runs one AppTest run of the page under a profiler hook and takes our files on the call stack at the
calls the value meets: the heads control drawn, ``core.multihead.multi_head_attention`` and ``go.Heatmap(...)``.
A reader who follows the value opens these files; the issue allows 12 on a laptop page and 14 on a following
student's page (whose caches are emptied after the teacher's run, so that it computes and draws itself).
"""

from __future__ import annotations

from bench.route import follower, laptop, route

LAPTOP_FILES = 12
FOLLOWER_FILES = 14
REACHED = {"dashboard/app.py", "core/multihead.py", "dashboard/figures/plain.py"}
"""The page, attention's head split and the figure: a route that misses one of them measured nothing."""


def test_a_laptop_page_s_head_count_reaches_its_maps_through_at_most_12_files():
    files = route(laptop())
    assert REACHED | {"dashboard/state/settings.py"} <= files, sorted(files)  # settings.py draws the heads control
    assert len(files) <= LAPTOP_FILES, sorted(files)


def test_a_following_student_s_head_count_reaches_its_maps_through_at_most_14_files():
    files = route(follower())
    assert REACHED | {"dashboard/classroom/follower_page.py"} <= files, sorted(files)  # it followed the room
    assert "dashboard/state/settings.py" not in files, "a following page draws no heads control"
    assert len(files) <= FOLLOWER_FILES, sorted(files)
