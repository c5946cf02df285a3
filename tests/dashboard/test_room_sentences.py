# ruff: noqa: F811  (the store fixtures of test_rooms, imported, are the tests' arguments)
"""Students send sentences, the teacher decides what reaches the projector (issue 34 parts 1 and 2).

The store first, each test on both backends (``test_rooms``' fixtures: the in-process store and a real
redis-server, with a fake clock): one pending sentence per tab, the sentence box's limits, the send limits with the
issue's numbers (one send per 10 s per tab; a hall of ``MAX_STUDENTS`` behind one address within 30 s, and no more),
the teacher's key to read, dismiss and clear, and everything gone with the room. Then the pages with AppTest.
"""

from __future__ import annotations

import pytest

from core import MAX_CHARS, MAX_TOKENS, tokenize
from dashboard.classroom.rooms import (
    FLOOD_SECONDS,
    IDLE_SECONDS,
    MAX_SENTENCES,
    MAX_STUDENTS,
    SEND_SECONDS,
    SENDS_PER_ADDRESS,
    Client,
    Forbidden,
    RedisRoomStore,
    RoomError,
    RoomStore,
)
from tests.dashboard.test_rooms import alive, backend, clock, open_room, store  # noqa: F401  (fixtures)

HALL = "10.9.9.9"


def seated(store: RoomStore, code: str, name: str, address: str = HALL) -> Client:
    """A student's tab, seated in room ``code``."""
    store.join(code, name)
    return Client(address, name)


def texts(store: RoomStore, code: str, key: str) -> list[str]:
    return [s.text for s in store.sentences(code, key)]


def test_one_pending_sentence_per_student_and_sending_again_replaces_it(store, clock):
    code, key = open_room(store)
    ana, ben = seated(store, code, "ana"), seated(store, code, "ben")
    store.send_sentence(code, ana, "the cat sat")
    clock.now += 1
    store.send_sentence(code, ben, "  a dog ran  ")
    clock.now += SEND_SECONDS
    store.send_sentence(code, ana, "the animal was tired")
    assert texts(store, code, key) == ["a dog ran", "the animal was tired"]  # oldest first, stripped
    [first, second] = store.sentences(code, key)
    assert first.id != second.id and "ana" not in repr(store.sentences(code, key))  # the tab as a salted hash only


@pytest.mark.parametrize(("later", "sent"), [(0.0, False), (SEND_SECONDS - 0.1, False), (SEND_SECONDS, True)])
def test_a_tab_sends_at_most_once_per_10_s(store, clock, later, sent):
    assert SEND_SECONDS == 10
    code, key = open_room(store)
    ana = seated(store, code, "ana")
    store.send_sentence(code, ana, "the first one")
    clock.now += later
    if sent:
        store.send_sentence(code, ana, "the second one")
    else:
        with pytest.raises(RoomError, match=r"send the next one in \d+ s"):
            store.send_sentence(code, ana, "the second one")
    assert texts(store, code, key) == ["the second one" if sent else "the first one"]


@pytest.mark.parametrize(("sends", "last_sent"), [(MAX_STUDENTS, True), (MAX_STUDENTS + 1, False)])
def test_a_hall_behind_one_address_sends_max_students_in_30_s_and_a_flood_beyond_is_refused(
    store, clock, sends, last_sent
):
    assert SENDS_PER_ADDRESS >= MAX_STUDENTS == 300 and FLOOD_SECONDS == 30
    code, key = open_room(store)
    start = clock.now
    for i in range(sends - 1):  # the whole hall within 30 s, every tab its own
        store.send_sentence(code, seated(store, code, f"s{i}"), f"sentence {i}")
        clock.now += (FLOOD_SECONDS - 1) / sends
    if sends > MAX_STUDENTS:
        store.leave(code, "s0")  # a seat frees: the next tab is seated, the address has sent its 300
    last = seated(store, code, "last")
    if last_sent:
        store.send_sentence(code, last, "the last one")
        assert len(store.sentences(code, key)) == sends
        return
    with pytest.raises(RoomError, match="from your network"):
        store.send_sentence(code, last, "the last one")
    assert len(store.sentences(code, key)) == MAX_STUDENTS
    clock.now = start + FLOOD_SECONDS  # the first send is 30 s old: one more may go
    store.dismiss_sentences(code, key, [store.sentences(code, key)[0].id])  # room on the list for a new tab
    store.send_sentence(code, last, "the last one")
    assert texts(store, code, key)[-1] == "the last one"


def test_a_room_holds_at_most_max_students_sentences(store, clock):
    assert MAX_SENTENCES == MAX_STUDENTS
    code, key = open_room(store)
    for i in range(MAX_SENTENCES):
        store.send_sentence(code, seated(store, code, f"s{i}", f"10.1.{i // 250}.{i % 250}"), f"sentence {i}")
    store.leave(code, "s0")
    late = seated(store, code, "late", "10.2.0.1")
    with pytest.raises(RoomError, match=f"list is full \\({MAX_SENTENCES} sentences\\)"):
        store.send_sentence(code, late, "one too many")
    clock.now += SEND_SECONDS
    store.send_sentence(code, Client("10.1.0.1", "s1"), "a replacement fits")  # s1 replaces its own
    assert len(store.sentences(code, key)) == MAX_SENTENCES
    store.dismiss_sentences(code, key, [store.sentences(code, key)[0].id])
    store.send_sentence(code, late, "now it fits")
    assert len(store.sentences(code, key)) == MAX_SENTENCES and texts(store, code, key)[-1] == "now it fits"


def box_message(text: str) -> str:
    """What the sentence box says of ``text`` (``core.tokenize``'s message, read independently of the store)."""
    with pytest.raises(ValueError) as refused:
        tokenize(text.strip())
    return str(refused.value)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\t", "x" * (MAX_CHARS + 1), " ".join(["word"] * (MAX_TOKENS + 1))],
    ids=["empty", "spaces", "tab", "too many characters", "too many tokens"],
)
def test_a_sentence_the_sentence_box_refuses_is_refused_with_its_message(store, text):
    code, key = open_room(store)
    with pytest.raises(RoomError) as refused:
        store.send_sentence(code, seated(store, code, "ana"), text)
    assert str(refused.value) == box_message(text)
    assert store.sentences(code, key) == []


@pytest.mark.parametrize("hidden", ["\x00", "\x1b", "\x7f", "\u202e", "\u200b", "\ufeff", "\n"])
def test_a_control_or_invisible_character_is_refused_and_named(store, hidden):
    code, key = open_room(store)
    with pytest.raises(RoomError, match=f"U\\+{ord(hidden):04X}"):
        store.send_sentence(code, seated(store, code, "ana"), f"the cat{hidden} sat")
    assert store.sentences(code, key) == []


@pytest.mark.parametrize(
    "text", ["<b>bold</b> <script>alert(1)</script>", "**stars** and [a link](http://x.y) `code`", "👩‍💻 codes"]
)
def test_markup_and_emoji_are_kept_exactly_as_typed(store, text):
    code, key = open_room(store)
    store.send_sentence(code, seated(store, code, "ana"), text)
    assert texts(store, code, key) == [text]


def test_only_a_seated_student_of_an_open_room_sends(store, alive):
    code, key = open_room(store)
    with pytest.raises(RoomError, match="Join the room"):
        store.send_sentence(code, Client(HALL, "never-joined"), "hello there")
    gone = seated(store, code, "gone")
    alive.known["gone"] = False  # the runtime knows its tab closed
    with pytest.raises(RoomError, match="Join the room"):
        store.send_sentence(code, gone, "hello there")
    ana = seated(store, code, "ana")
    store.close(code, key)
    with pytest.raises(RoomError, match="closed"):
        store.send_sentence(code, ana, "hello there")


def test_only_the_key_reads_dismisses_and_clears(store, clock):
    code, key = open_room(store)
    other, other_key = open_room(store)
    for name in ("ana", "ben", "cy"):
        store.send_sentence(code, seated(store, code, name), f"{name} writes")
        clock.now += 1
    for wrong in ("", "x" * 32, other_key):
        with pytest.raises(Forbidden):
            store.sentences(code, wrong)
        with pytest.raises(Forbidden):
            store.dismiss_sentences(code, wrong)
    assert texts(store, code, key) == ["ana writes", "ben writes", "cy writes"]
    store.dismiss_sentences(code, key, [store.sentences(code, key)[1].id])
    assert texts(store, code, key) == ["ana writes", "cy writes"]
    store.dismiss_sentences(code, key)
    assert store.sentences(code, key) == [] and store.sentences(other, other_key) == []


@pytest.mark.parametrize("how", ["closed", "idle"])
def test_sentences_end_with_the_room(store, clock, how):
    code, key = open_room(store)
    store.send_sentence(code, seated(store, code, "ana"), "the cat sat")
    assert store._sentences(code) and store._sends(code)
    if how == "closed":
        store.close(code, key)
    else:
        clock.now += IDLE_SECONDS + 1
        assert store.snapshot(code) is None  # found idle: closed
    assert store._sentences(code) == {} and store._sends(code) == {}
    with pytest.raises(Forbidden):
        store.sentences(code, key)


def test_redis_sentences_expire_with_the_room(redis_url):
    import redis

    store = RedisRoomStore(redis_url)
    code, key = open_room(store)
    store.send_sentence(code, seated(store, code, "ana"), "the cat sat")
    r = redis.Redis.from_url(redis_url)
    room_ttl = r.ttl(f"attention_lab:room:{code}")
    for kept in ("sentences", "sends"):
        assert 0 < room_ttl - 2 <= r.ttl(f"attention_lab:{kept}:{code}") <= room_ttl
    store.publish(code, key, {"seed": 3})  # the teacher's change: the room's time to live starts again, theirs too
    for kept in ("sentences", "sends"):
        assert IDLE_SECONDS < r.ttl(f"attention_lab:{kept}:{code}") <= IDLE_SECONDS + 60
    assert HALL not in str(r.hgetall(f"attention_lab:sends:{code}"))  # the address as a salted hash only
