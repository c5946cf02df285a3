"""``dashboard.serve.server_memory``: a few views draw at once, and the process keeps two malloc arenas."""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import sys
import threading
import time

import pytest

from dashboard.serve import server_memory
from dashboard.views import VIEWS
from tests.conftest import ROOT
from tests.dashboard.conftest import make_app, no_exception


def test_no_more_views_draw_at_once_than_the_turns():
    """Ten pages asking at once: at most ``DRAWING_AT_ONCE`` are inside ``drawing()`` together, and every one draws
    (without the turns: all ten at once)."""
    inside, most, done = 0, 0, []
    lock = threading.Lock()

    def draw(settings: int) -> None:
        nonlocal inside, most
        with server_memory.drawing():
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.05)
            with lock:
                inside -= 1
        done.append(settings)

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(done) == list(range(10))
    assert 1 < most <= server_memory.DRAWING_AT_ONCE


@pytest.mark.parametrize("view", ["heads", "steps"])
def test_the_page_draws_its_view_inside_a_turn(monkeypatch, view):
    """The page (``app.py``) calls the chosen view's ``render`` inside ``drawing()``, once, with the turn held
    from its first line to its last."""
    held, seen = [False], []
    real_drawing, real_render = server_memory.drawing, VIEWS[view].render

    @contextlib.contextmanager
    def watched():
        with real_drawing() as turn:
            held[0] = True
            try:
                yield turn
            finally:
                held[0] = False

    def render(settings, controls):
        seen.append(("start", held[0]))
        real_render(settings, controls)
        seen.append(("end", held[0]))

    monkeypatch.setattr(server_memory, "drawing", watched)
    monkeypatch.setitem(VIEWS, view, dataclasses.replace(VIEWS[view], render=render))
    at = make_app(view=view).run()
    no_exception(at)
    assert seen == [("start", True), ("end", True)]
    assert at.get("plotly_chart"), "the view drew its charts"


def test_a_view_that_waited_too_long_draws_anyway(monkeypatch):
    """Every turn held by pages that do not finish (a room store that does not answer): the next page waits
    ``WAIT_SECONDS``, then draws without a turn instead of waiting for ever."""
    monkeypatch.setattr(server_memory, "WAIT_SECONDS", 0.2)
    held = [server_memory._turns.acquire(timeout=1) for _ in range(server_memory.DRAWING_AT_ONCE)]
    try:
        assert all(held)
        start = time.monotonic()
        with server_memory.drawing() as turn:
            waited = time.monotonic() - start
        assert turn is False and 0.15 < waited < 5
    finally:
        for _ in held:
            server_memory._turns.release()
    with server_memory.drawing() as turn:
        assert turn is True  # the turns are back


ALLOCATOR = """
import ctypes, sys
sys.path.insert(0, {root!r})
from dashboard.serve import server_memory
if {configure}:
    server_memory.configure_allocator()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
"""
"""A child process's start: this checkout's server_memory, configured or not, and glibc's malloc and free."""

ARENAS = """
import threading
barrier = threading.Barrier(8)
def work():
    barrier.wait()  # all eight allocate at once: glibc gives a thread that finds the arenas busy a new one
    blocks = [libc.malloc(4096) for _ in range(2000)]
    for b in blocks:
        libc.free(b)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc.malloc_stats()  # to stderr: one "Arena n:" line per arena
"""


def in_a_child(script: str, configure: bool) -> subprocess.CompletedProcess:
    """``script`` run after ``ALLOCATOR`` in a fresh Python (glibc's arenas and thresholds are per process)."""
    code = ALLOCATOR.format(root=str(ROOT), configure=configure) + script
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)


def arenas(configure: bool) -> int:
    return in_a_child(ARENAS, configure).stderr.count("Arena ")


@pytest.mark.skipif(server_memory._LIBC is None, reason="glibc only: another C library has no arenas to limit")
def test_the_process_keeps_two_malloc_arenas():
    """Eight threads allocating at once get arenas of their own by default (glibc: up to 8 per core); after
    ``configure_allocator`` they share ``MALLOC_ARENAS``."""
    assert arenas(configure=True) <= server_memory.MALLOC_ARENAS < arenas(configure=False)


MAPPED = """
FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in FIELDS.split()]
libc.mallinfo2.restype = Info
libc.free(libc.malloc(8 << 20))  # an 8 MB page's worth of figures, freed
mapped = libc.mallinfo2().hblks  # blocks mapped for themselves
block = libc.malloc(1 << 20)  # then a 1 MB array
print(libc.mallinfo2().hblks - mapped)
"""


def mapped_blocks(configure: bool) -> int:
    return int(in_a_child(MAPPED, configure).stdout)


@pytest.mark.skipif(server_memory._LIBC is None, reason="glibc only")
def test_large_blocks_stay_mapped_for_themselves_after_larger_ones_are_freed():
    """glibc raises its mmap threshold to the size of each mapped block freed (up to 32 MB), so after an 8 MB
    block a 1 MB one comes from the heap, where freeing it leaves the pages in the process; with
    ``configure_allocator`` it is mapped for itself, and unmapped when freed."""
    assert mapped_blocks(configure=True) == 1 > mapped_blocks(configure=False) == 0
