"""What bounds the server's memory besides its caches (``dashboard.compute.bounded_cache``): the work in flight.

    configure_allocator()      once per process (the entry file): two malloc arenas, a fixed mmap threshold
    with drawing(): view.render(settings, controls)     at most DRAWING_AT_ONCE views draw at once
    give_back()                return freed heap pages to the system (the caches' sweep calls it)

Measured with 30 sessions changing views at the largest settings, each with a run in flight at all times
(``python -m bench.memory --cycle``; bench/README.md), the caches already bounded:

- Every session's page runs in a thread of its own, and glibc gives threads their own malloc arenas (up to 8
  per core), each keeping the high-water mark of what was drawn in it: the server peaked at 950 MB and stayed
  118 MB above its resting size after the class left. Two arenas: 706 MB, +21 MB.
- Thirty pages drawing at once hold thirty pages' figures, their JSON and their messages (5-20 MB each at the
  largest settings), although the GIL runs one at a time: four at once, 744 -> 503 MB with as many views drawn.
- glibc raises its mmap threshold up to 32 MB as mapped blocks are freed; then arrays and page JSON come from
  the heap, where a freed block stays in the process. Kept at 128 kB: 695 -> 547 MB, +80 -> +28 MB after.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator

MALLOC_ARENAS = 2
"""malloc arenas for the whole process (glibc's ``M_ARENA_MAX``; its default is 8 per core)."""
MMAP_THRESHOLD = 128 * 1024
"""Blocks of at least this many bytes are mapped for themselves and unmapped when freed (glibc's
``M_MMAP_THRESHOLD``: its starting value, which it otherwise raises up to 32 MB as blocks are freed, so that an
array or a page's JSON freed in the middle of the heap stays in the process)."""
DRAWING_AT_ONCE = 4
"""Views drawn at once: two per core of the largest Community Cloud allowance. Python's GIL runs one thread at a
time, so more at once draws no faster and holds more pages' figures."""
WAIT_SECONDS = 10.0
"""A view waits at most this long for its turn, then draws anyway: a page stuck inside its view (a room store
that does not answer) must not stop every other page."""
_M_ARENA_MAX = -8  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3


def _glibc() -> ctypes.CDLL | None:
    """glibc, with ``mallopt`` and ``malloc_trim``; None for another C library (macOS, musl): nothing to set."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - the look-up is the test: glibc has both
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()
_configured = False
_turns = threading.BoundedSemaphore(DRAWING_AT_ONCE)


def configure_allocator() -> None:
    """Limit the process to ``MALLOC_ARENAS`` malloc arenas (threads that allocate later share them) and fix the
    mmap threshold at ``MMAP_THRESHOLD``, once."""
    global _configured
    if not _configured and _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, MALLOC_ARENAS)
        _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    _configured = True


def give_back() -> None:
    """Return the heap's free pages to the system (``malloc_trim``): freed memory otherwise stays in RSS."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


@contextlib.contextmanager
def drawing() -> Iterator[bool]:
    """Draw a view in one of ``DRAWING_AT_ONCE`` turns; yields False when it waited ``WAIT_SECONDS`` and draws
    without one."""
    turn = _turns.acquire(timeout=WAIT_SECONDS)
    try:
        yield turn
    finally:
        if turn:
            _turns.release()
