"""Push, not poll (``dashboard.classroom.push``): the watcher reruns exactly the pages behind their room, once.

The watcher's decisions are checked here against a real store (in-process, and Redis), with the rerun itself
recorded instead of sent; the runtime API it sends through (``streamlit_runtime.rerun_session``, private) is
contract-tested in ``tests/dashboard/test_streamlit_runtime.py``. A pushed rerun arriving on a
real server, across two processes on Redis, is ``tests/dashboard/test_rooms_live.py``; in a browser,
``tests/e2e/test_room_in_browser.py``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime import Runtime

from dashboard.classroom import push
from dashboard.classroom.rooms import Client, MemoryRoomStore, RedisRoomStore
from dashboard.serve import streamlit_runtime
from tests.dashboard.conftest import subscribed


@pytest.fixture(params=["memory", "redis"])
def room(request, monkeypatch):
    """A room with one follower page ("s1") registered at the room's version, in each backend (Redis: a real
    redis-server, ``tests/conftest.py``); reruns are recorded, not sent."""
    asked = Asked()
    monkeypatch.setattr(push, "rerun", asked.rerun)
    monkeypatch.setattr(push, "_thread", object.__new__(AliveThread))  # the test drives the watcher itself
    # and no other: a watcher thread an earlier test's page started (an AppTest's room_panel) reads these rooms too,
    # woken by a Redis publish through the listener; it looks at nothing now (the tests call TICK)
    monkeypatch.setattr(push, "_tick", lambda: None)
    monkeypatch.setattr(push, "_followers", {})
    monkeypatch.setattr(push, "_stores", {})
    monkeypatch.setattr(push, "_bodies", {})
    monkeypatch.setattr(push, "_asked_at", {})
    if request.param == "memory":
        store = MemoryRoomStore(alive=lambda session: None)
    else:
        store = RedisRoomStore(request.getfixturevalue("redis_url"), alive=lambda session: None)
    code, key = store.open({"seed": 1}, Client("192.0.2.1", "teacher"))
    store.join(code, "s1")
    push.watch(store, "s1", (code, store.snapshot(code).version))
    yield store, code, key, asked
    if isinstance(store, RedisRoomStore):
        store.stopped.set()  # its listener (``watch`` started it) ends with the test


class Asked(list):
    """The sessions asked to rerun, in order; ``bodies``: the fragment each was asked for (None: the whole page)."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[str | None] = []

    def rerun(self, session_id: str, fragment_id: str | None = None) -> bool:
        self.append(session_id)
        self.bodies.append(fragment_id)
        return True


TICK = push._tick
"""The watcher's look at every room, as the tests call it (the fixture stills the module's own)."""


class AliveThread:
    def is_alive(self) -> bool:
        return True


def look(store, code):
    push._look(store, code, dict(push._followers.get(code, {})))


def test_a_page_showing_the_rooms_version_is_left_alone(room):
    store, code, _, asked = room
    look(store, code)
    assert asked == []


def test_a_change_reruns_each_follower_once_until_it_shows_the_new_version(room):
    store, code, key, asked = room
    push.watch(store, "s2", (code, store.snapshot(code).version))
    version = store.publish(code, key, {"seed": 2})
    look(store, code)
    look(store, code)  # the reruns are under way: not asked again
    assert sorted(asked) == ["s1", "s2"]
    push.watch(store, "s1", (code, version))  # s1's rerun registers the new version
    store.publish(code, key, {"seed": 3})
    look(store, code)
    assert sorted(asked) == ["s1", "s1", "s2"]  # s2 has not rerun yet: asked once, not twice


def test_a_rerun_asked_for_is_pending_for_its_version_until_the_page_registers_or_patience_runs_out(room, monkeypatch):
    """``pending`` is what the page's own check asks before it reruns the whole page (``room_page._check``): while
    the watcher's rerun for that version is on its way, the check leaves it to it."""
    store, code, key, _ = room
    first = store.snapshot(code).version
    assert not push.pending("s1", first)  # showing the room's version: nothing asked
    version = store.publish(code, key, {"seed": 2})
    assert not push.pending("s1", version)  # the watcher has not looked yet: the check reruns the page itself
    now = [1000.0]
    monkeypatch.setattr(push.time, "monotonic", lambda: now[0])
    look(store, code)
    assert push.pending("s1", version) and push.pending("s1", first)
    newer = store.publish(code, key, {"seed": 3})
    assert not push.pending("s1", newer)  # asked for an older version than the one the check sees
    now[0] += push.PATIENCE_SECONDS - 0.1
    assert push.pending("s1", version)
    now[0] += 0.2
    assert not push.pending("s1", version)  # Streamlit lost the request: the check catches it now
    now[0] -= 0.2
    push.watch(store, "s1", (code, version))  # the pushed run registered: what it drew is the check's to judge
    assert not push.pending("s1", version)


def test_a_rerun_asked_for_a_closed_room_is_pending_for_no_version(room):
    store, code, key, _ = room
    version = store.snapshot(code).version
    store.close(code, key)
    look(store, code)
    assert not push.pending("s1", version)  # the check reruns the page (it sees no room, and says why)


def test_a_page_that_stops_following_is_forgotten(room):
    store, code, key, asked = room
    push.watch(store, "s1", None)  # the student turned Follow off (or left the room)
    store.publish(code, key, {"seed": 2})
    look(store, code)
    assert asked == [] and push.followers(code) == 0


def test_a_closed_room_reruns_its_pages_so_they_say_why(room):
    store, code, key, asked = room
    store.close(code, key)
    look(store, code)
    assert asked == ["s1"]


def test_a_tab_that_has_gone_is_dropped_and_never_rerun(room, monkeypatch):
    store, code, key, asked = room
    monkeypatch.setattr(push.clients, "alive", lambda session, **_: False)
    store.publish(code, key, {"seed": 2})
    look(store, code)
    assert asked == [] and push.followers(code) == 0


def test_the_watcher_neither_keeps_nor_takes_a_seat_however_often_it_reruns_a_page(room, monkeypatch):
    """Issue 32: the watcher told the room every 10 s that each connected follower was there, so a socket that never
    read kept its seat for as long as it stayed open. A seat is the page's own answer to keep (``room_page._check``)."""
    store, code, key, asked = room
    store.leave(code, "s1")  # as if the seat had been freed while the page was away
    seen = []
    monkeypatch.setattr(store, "poll", lambda *a: seen.append(a))
    monkeypatch.setattr(store, "join", lambda *a: seen.append(a))
    for seed in range(2, 6):
        store.publish(code, key, {"seed": seed})
        look(store, code)
        push.watch(store, "s1", (code, store.snapshot(code).version))  # its rerun registers the version it drew
    assert asked == ["s1"] * 4 and seen == [] and store.students(code) == 0


def test_a_new_version_reruns_the_body_a_follower_named_and_the_whole_page_of_one_that_named_none(room):
    store, code, key, asked = room
    push.watch(store, "s2", (code, store.snapshot(code).version), "body-2")
    store.publish(code, key, {"seed": 2})
    look(store, code)
    assert dict(zip(asked, asked.bodies, strict=True)) == {"s1": None, "s2": "body-2"}


def test_a_closed_room_reruns_a_followers_whole_page_not_its_body(room):
    store, code, key, asked = room
    push.watch(store, "s1", (code, store.snapshot(code).version), "body-1")
    store.close(code, key)
    look(store, code)
    assert asked == ["s1"] and asked.bodies == [None]  # the page says the room closed: its room section too


def test_a_follower_who_lost_its_seat_gets_the_new_version_as_any_other(room):
    """Its page's own check (every ``room_page.CHECK_SECONDS``) finds the seat gone and says so; the watcher only
    draws the teacher's change."""
    store, code, key, asked = room
    push.watch(store, "s1", (code, store.snapshot(code).version), "body-1")
    store.publish(code, key, {"seed": 2})
    store.leave(code, "s1")
    look(store, code)
    assert asked == ["s1"] and asked.bodies == ["body-1"]


def test_a_page_that_stops_following_forgets_its_body(room):
    store, code, _, _ = room
    push.watch(store, "s1", (code, store.snapshot(code).version), "body-1")
    push.watch(store, "s1", None)
    assert push._bodies == {}


def test_a_redraw_reruns_the_bodies_of_the_rooms_it_names_once_without_a_new_version(room, monkeypatch):
    """A training job of this process started or ended (``Registry.when_changed``): every follower's body in a room
    whose settings ``shows`` reruns once, the watcher woken now; a page whose rerun is under way is not asked twice,
    and the followers of another room (a lecture hall on the heads view) are not rerun at all."""
    store, code, _, asked = room
    version = store.snapshot(code).version
    push.watch(store, "s2", (code, version), "body-2")
    push.watch(store, "s3", (code, version), "body-3")
    push._followers[code]["s3"] = None  # its rerun was asked for already
    other, _ = store.open({"seed": 2}, Client("192.0.2.2", "teacher 2"))
    store.join(other, "s4")
    push.watch(store, "s4", (other, store.snapshot(other).version), "body-4")

    class Woken(threading.Event):
        woke = False

        def set(self) -> None:
            self.woke = True
            super().set()

    monkeypatch.setattr(push, "_wake", Woken())
    push.redraw(lambda settings: settings.get("seed") == 1)
    assert push._wake.woke
    for _ in range(2):  # the second look: the reruns are under way, not asked again
        look(store, code)
        look(store, other)
    assert dict(zip(asked, asked.bodies, strict=True)) == {"s1": None, "s2": "body-2"} and len(asked) == 2
    push.watch(store, "s1", (code, version))  # s1's rerun registers the room's version again
    look(store, code)
    assert len(asked) == 2


class Sessions:
    """Streamlit's session manager as ``clients.alive`` reads it: ``active`` are connected, ``stored`` wait for a
    reconnect; any other session it no longer knows (closed, not resumable, or evicted from its store)."""

    def __init__(self, active=(), stored=()) -> None:
        self.active, self.stored = set(active), set(stored)

    def is_active_session(self, session_id: str) -> bool:
        return session_id in self.active

    def get_session_info(self, session_id: str):
        return object() if session_id in self.active | self.stored else None


@pytest.fixture
def runtime(monkeypatch):
    """A running server whose session manager is a ``Sessions``: set ``.active`` / ``.stored`` per test."""
    sessions = Sessions()
    monkeypatch.setattr(streamlit_runtime, "sessions", lambda: sessions)
    return sessions


@pytest.mark.parametrize("stored", [False, True], ids=["closed", "waiting for a reconnect"])
def test_a_session_the_server_no_longer_runs_gives_its_seat_back(room, runtime, stored):
    # A closed tab's session that cannot be resumed is forgotten by Streamlit at once (and a stored one after 2 min,
    # or sooner past 128): the watcher forgets it, and reruns nothing for it.
    store, code, _, asked = room
    runtime.stored = {"s1"} if stored else set()
    look(store, code)
    assert push.followers(code) == 0 and asked == []
    assert code not in push._stores  # nothing kept for a room nobody follows


def test_a_connected_follower_is_kept(room, runtime):
    store, code, _, asked = room
    runtime.active = {"s1"}
    look(store, code)
    assert push.followers(code) == 1 and asked == [] and store.students(code) == 1


def test_a_room_nobody_follows_any_more_is_forgotten_with_its_store(room):
    store, code, _, _ = room
    push.watch(store, "s1", None)
    assert code not in push._followers and code not in push._stores


def test_a_room_the_watcher_cannot_read_is_logged_and_the_other_rooms_still_looked_at(room, monkeypatch, caplog):
    store, code, key, asked = room
    broken = MemoryRoomStore(alive=lambda session: None)
    other, _ = broken.open({"seed": 1}, Client("192.0.2.2", "teacher-2"))
    monkeypatch.setattr(broken, "snapshot", lambda code: (_ for _ in ()).throw(ConnectionError("Redis away")))
    push.watch(broken, "s9", (other, 1))
    store.publish(code, key, {"seed": 2})
    monkeypatch.setattr(push, "_logged", 0.0)
    for _ in range(3):  # every look fails for that room: logged once, not three times
        TICK()
    assert asked == ["s1"]  # the readable room's follower is still rerun
    warnings = [r for r in caplog.records if r.name == push.__name__]
    assert len(warnings) == 1 and "Redis away" in (warnings[0].exc_text or "")


def test_a_publish_on_another_process_wakes_this_processs_watcher_at_once(redis_url, monkeypatch):
    """Pub/sub: process B's watcher learns of A's publish now, not at its next ``WATCH_SECONDS`` tick (0-0.5 s)."""
    import redis

    woke = threading.Event()
    monkeypatch.setattr(push, "changed", woke.set)
    monkeypatch.setattr(push, "_thread", object.__new__(AliveThread))
    monkeypatch.setattr(push, "_followers", {})
    monkeypatch.setattr(push, "_stores", {})
    teacher_side, student_side = RedisRoomStore(redis_url), RedisRoomStore(redis_url)
    code, key = teacher_side.open({"seed": 1}, Client("192.0.2.1", "teacher"))
    student_side.join(code, "s1")
    push.watch(student_side, "s1", (code, 1))  # a follower's run on B: B's store listens from now on
    try:
        assert subscribed(redis.Redis.from_url(redis_url))
        woke.clear()
        teacher_side.publish(code, key, {"seed": 2})
        assert woke.wait(5)
    finally:
        student_side.stopped.set()


class FakeSession:
    """An ``AppSession`` as ``push.rerun`` uses it: its client state, its fragments, its event loop (called now)."""

    def __init__(self, fragments) -> None:
        self._client_state = ClientState(query_string="room=ABC234", fragment_id="check")
        self.fragments = set(fragments)
        self.asked: list[ClientState] = []

    def has_fragment(self, fragment_id: str) -> bool:
        return fragment_id in self.fragments

    def request_rerun(self, state: ClientState) -> None:
        self.asked.append(state)

    def _call_soon_on_event_loop(self, callback) -> None:
        callback()


@pytest.mark.parametrize(("held", "sent"), [({"body"}, "body"), (set(), "")])
def test_rerun_asks_for_the_body_while_the_session_holds_it_else_the_whole_page(monkeypatch, held, sent):
    session = FakeSession(held)
    info = SimpleNamespace(session=session)
    manager = SimpleNamespace(get_active_session_info=lambda sid: info if sid == "s1" else None)
    monkeypatch.setattr(streamlit_runtime, "sessions", lambda: manager)
    assert push.rerun("s1", "body") and not push.rerun("gone", "body")
    (state,) = session.asked
    assert state.fragment_id == sent and state.query_string == "room=ABC234" and not state.is_auto_rerun


def test_without_a_runtime_nothing_is_rerun():
    assert not Runtime.exists() and push.rerun("any") is False
