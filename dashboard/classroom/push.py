"""Push, not poll: when a room changes, this process reruns the pages that follow it.

A follower's page used to poll: a fragment rerun every second per student (3-8 ms of server CPU each, so 200 idle
students took most of a core). Now each follower's run registers here, ``watch(store, session, (code, version))``,
and one daemon thread per process, the watcher, reads the version of each followed room every ``WATCH_SECONDS``
(one store read per room, not per student: a dict lookup under a lock, or one Redis round trip, which is how a
teacher on process A reaches students on process B). A page that shows an older version is asked to rerun, once;
its rerun registers the new version. A following page names the fragment that draws it (``follower_page``'s body,
everything the room's settings decide): a new version reruns that fragment alone, and a closed room or a fragment
the session no longer holds reruns the whole page. The teacher's publish on this process wakes the
watcher at once (``changed()``), so in-process rooms do not wait for the tick; so does a publish on another process,
through the Redis store's pub/sub listener (``RoomStore.on_change``), which falls back to the tick while Redis is
away. What a following page shows can also change outside its room: a training job of this process starts or ends
(``training_jobs.Registry.when_changed``). Then ``redraw(shows)`` reruns once the body of every follower whose room
``shows`` such a job (``room_page``: the train view or trained weights), and only then: the pages are never polled
for it.

A follower's page also checks the room itself every ``room_page.CHECK_SECONDS``; a version the watcher has asked its
rerun for is left to that rerun (``pending``): a whole run of its own as well would draw the page twice.

The watcher keeps no seat: a seat is held only by a page that answers itself (``rooms.SEAT_SECONDS``; the page's
check, ``room_page.CHECK_SECONDS``), so a socket that never reads, which the watcher would go on seeing as connected
and rerunning, holds nothing after 30 s, whether the teacher changes anything or not.

How a page is rerun: ``streamlit_runtime.rerun_session``, as Streamlit does itself for ``runOnSave``: the session's
last client state (its URL and widget values), on the session's event loop. It is private API, contract-tested in
``tests/dashboard/test_streamlit_runtime.py`` against the installed Streamlit, and the live room tests
(``tests/dashboard/test_rooms_live.py``, ``tests/e2e``) fail if a pushed rerun stops arriving.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from dashboard.classroom.rooms import RoomStore
from dashboard.serve import clients, streamlit_runtime

WATCH_SECONDS = 0.5
"""The watcher reads each followed room's version this often (a change on another process shows within it)."""
STALE = -1
"""The version ``redraw`` marks a follower with: no room has it (versions start at 1), so the watcher reruns it."""
PATIENCE_SECONDS = 60.0
"""A rerun the watcher asked for is on its way this long: the page's own check leaves that version to it
(``pending``). Under a lecture hall's load the last pushed body ran up to ~50 s after the change (``bench.walk``'s
train stop at 200 students); a request Streamlit lost is caught by the check after this."""
LOG_SECONDS = 60.0
"""A room the watcher cannot read (Redis away, a bug) is logged at most once a minute, not every look."""

_LOGGER = logging.getLogger(__name__)

_followers: dict[str, dict[str, int | None]] = {}
"""Room code -> session id -> the version its page shows (None once a rerun was asked for another version)."""
_bodies: dict[str, str] = {}
"""Session id -> the fragment that draws its following page (``watch``'s ``body``), for the sessions that named one."""
_asked_at: dict[str, tuple[int, float]] = {}
"""Session id -> (the version, ``time.monotonic()``) of the rerun the watcher asked for, until the page registers."""
_stores: dict[str, RoomStore] = {}
"""Room code -> its store, for the rooms in ``_followers`` only."""
_lock = threading.Lock()
_wake = threading.Event()
_thread: threading.Thread | None = None
_logged = 0.0
"""When the watcher last logged a room it could not read (``time.monotonic``)."""


def watch(store: RoomStore, session_id: str, following: tuple[str, int] | None, body: str | None = None) -> None:
    """Every run of a page in a room: ``(code, version)`` it shows while it follows, None when it does not; ``body``,
    the id of the fragment that draws what the room's version decides (a new version reruns only it)."""
    global _thread
    with _lock:
        for code in list(_followers):
            _forget(code, session_id)
        _bodies.pop(session_id, None)
        _asked_at.pop(session_id, None)
        if following is None:
            return
        code, version = following
        _followers.setdefault(code, {})[session_id] = version
        if body is not None:
            _bodies[session_id] = body
        _stores[code] = store
        store.on_change(changed)  # another process's publish wakes the watcher too (Redis), once per store
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_watch, name="AttentionLabRoomWatcher", daemon=True)
            _thread.start()


def changed() -> None:
    """A room on this process changed (the teacher published): look now rather than at the next tick."""
    _wake.set()


def redraw(shows: Callable[[Mapping[str, object]], bool]) -> None:
    """Something a following page of this process may show changed outside its room (a training job started or
    ended): each follower of a room whose settings ``shows`` (a room the store cannot read too), and whose rerun is
    not asked for already, is marked ``STALE``; the watcher, woken now, reruns its body once (its rerun registers
    the room's version again). Followers of other rooms are not rerun: a job's start or end is not their news."""
    with _lock:
        rooms = {code: _stores[code] for code in _followers}
    picked = []
    for code, store in rooms.items():
        try:
            room = store.snapshot(code)
        except Exception:  # Redis away: rerun them, as for any room the watcher cannot read
            room = None
        if room is None or shows(room.settings):
            picked.append(code)
    with _lock:
        for code in picked:
            sessions = _followers.get(code, {})
            for session_id, shown in sessions.items():
                if shown is not None:
                    sessions[session_id] = STALE
    _wake.set()


def pending(session_id: str, version: int) -> bool:
    """The watcher has asked this session's page to rerun for room version ``version`` (or a later one), less than
    ``PATIENCE_SECONDS`` ago, and no run of the page has registered since. The page's own check then leaves the
    version to that rerun: a whole run of its own as well would draw the page twice, and the pushed body, started
    while the whole run's messages still waited to be sent, drops the body that run drew (Streamlit's
    ``ForwardMsgQueue.clear`` for a fragment run), so the student would see a page without its maps in between."""
    with _lock:
        asked = _asked_at.get(session_id)
    return asked is not None and asked[0] >= version and time.monotonic() - asked[1] < PATIENCE_SECONDS


def followers(code: str) -> int:
    """How many pages of this process follow room ``code`` (for tests and benches)."""
    with _lock:
        return len(_followers.get(code, {}))


def rerun(session_id: str, fragment_id: str | None = None) -> bool:
    """Ask session ``session_id``'s page to rerun, as it last ran (its URL, its widgets): only fragment
    ``fragment_id`` when the session still holds it, else the whole page; False: no such session."""
    return streamlit_runtime.rerun_session(session_id, fragment_id)


def _watch() -> None:
    while True:
        _wake.wait(WATCH_SECONDS)
        _wake.clear()
        _tick()


def _tick() -> None:
    """One look at every followed room. An error in one room (Redis away) neither ends the watcher nor skips the
    other rooms; it is logged (at most every ``LOG_SECONDS``), and that room's pages fall back to their own check."""
    global _logged
    with _lock:
        rooms = {code: (_stores[code], dict(sessions)) for code, sessions in _followers.items()}
    for code, (store, sessions) in rooms.items():
        try:
            _look(store, code, sessions)
        except Exception:
            if time.monotonic() - _logged >= LOG_SECONDS:
                _logged = time.monotonic()
                _LOGGER.warning("The room watcher could not look at a room", exc_info=True)


def _look(store: RoomStore, code: str, sessions: dict[str, int | None]) -> None:
    """One room: rerun the pages behind its version (or of a closed room)."""
    room = store.snapshot(code)
    for session_id, shown in sessions.items():
        if clients.alive(session_id, here=True) is False:  # the tab has gone: forget it (the room frees its seat)
            _drop(code, session_id)
            continue
        if shown is None:  # a rerun was asked for: it registers what the page shows then
            continue
        if room is not None and shown == room.version:
            continue
        body = None if room is None else _bodies.get(session_id)  # a closed room: the whole page says why
        if _asked(code, session_id, shown, -1 if room is None else room.version) and not rerun(session_id, body):
            _drop(code, session_id)


def _asked(code: str, session_id: str, shown: int, version: int) -> bool:
    """Mark a rerun asked for, for room version ``version`` (-1: the room is closed), unless the page has registered
    another version meanwhile (it reran already)."""
    with _lock:
        sessions = _followers.get(code, {})
        if sessions.get(session_id, None) != shown:
            return False
        sessions[session_id] = None
        _asked_at[session_id] = (version, time.monotonic())
        return True


def _drop(code: str, session_id: str) -> None:
    with _lock:
        _forget(code, session_id)


def _forget(code: str, session_id: str) -> None:
    """Under ``_lock``: the page no longer follows room ``code``; a room nobody follows is forgotten whole."""
    sessions = _followers.get(code, {})
    sessions.pop(session_id, None)
    _bodies.pop(session_id, None)
    _asked_at.pop(session_id, None)
    if not sessions:
        _followers.pop(code, None)
        _stores.pop(code, None)
