# ruff: noqa: F811  (the store fixtures of test_rooms, imported, are the tests' arguments)
"""Students send sentences, the teacher decides what reaches the projector (issue 34 parts 1 and 2).

The store first, each test on both backends (``test_rooms``' fixtures: the in-process store and a real
redis-server, with a fake clock): one pending sentence per tab, the sentence box's limits, the send limits with the
issue's numbers (one send per 10 s per tab; a hall of ``MAX_STUDENTS`` behind one address within 30 s, and no more),
the teacher's key to read, dismiss and clear, and everything gone with the room. Then the pages with AppTest.
"""

from __future__ import annotations

from unittest.mock import patch

import pytest
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core import MAX_CHARS, MAX_TOKENS, tokenize
from dashboard.classroom import class_sentences, room_page, rooms
from dashboard.classroom.rooms import (
    FLOOD_SECONDS,
    IDLE_SECONDS,
    MAX_SENTENCES,
    MAX_STUDENTS,
    SEND_SECONDS,
    SENDS_PER_ADDRESS,
    Client,
    Forbidden,
    RoomError,
)
from dashboard.state.session import SHOWN_SETTINGS, SHOWN_VIEW
from dashboard.views import class_heads
from tests.dashboard.conftest import lazy_expanders, make_app, no_exception
from tests.dashboard.test_bad_input import DRAWN
from tests.dashboard.test_hostile_app import _nodes, _strings, user_text_leaks
from tests.dashboard.test_rooms import Clock, alive, backend, clock, open_room, start_room, store, tabs, teacher_link  # noqa: F401

HALL = "10.9.9.9"


def seated(store: rooms.RoomStore, code: str, name: str, address: str = HALL) -> Client:
    """A student's tab, seated in room ``code``."""
    store.join(code, name)
    return Client(address, name)


def texts(store: rooms.RoomStore, code: str, key: str) -> list[str]:
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
    ["", "   ", "\t", "\x00\x1b", "x" * (MAX_CHARS + 1), "x" * 100_000, " ".join(["word"] * (MAX_TOKENS + 1))],
    ids=["empty", "spaces", "tab", "controls only", "too many characters", "100k", "too many tokens"],
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


KEPT = {name: text for name, text in DRAWN.items() if "\u202e" not in text}
"""The sentence box's bad-input cases it draws (``test_bad_input``), but the right-to-left override, refused here:
in the teacher's list it would show the sentence's end before its beginning."""


@pytest.mark.parametrize("text", KEPT.values(), ids=KEPT.keys())
def test_markup_emoji_and_scripts_are_kept_exactly_as_typed(store, text):
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

    store = rooms.RedisRoomStore(redis_url)
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


# -- the pages (AppTest) ---------------------------------------------------------------------------------------------
def strings(at: AppTest) -> list[str]:
    """Every text field of every element the page sent, whatever its kind (``test_hostile_app``'s walk)."""
    return [
        text
        for node in _nodes(at._tree)
        if isinstance(p := getattr(node, "proto", None), Message)
        for _, text in _strings(p)
    ]


def sent_by(code: str, *pairs: tuple[str, str]) -> None:
    """Students ``(tab, text)`` seated in room ``code`` send, each from its own address."""
    store = room_page.store()
    for i, (tab, text) in enumerate(pairs):
        store.join(code, tab)
        store.send_sentence(code, Client(f"10.3.0.{i}", tab), text)


def later(seconds: float) -> None:
    """The page's store's clock, ``seconds`` on."""
    store = room_page.store()
    now = store._clock
    store._clock = lambda: now() + seconds


def send(student: AppTest, tabs, tab: str, text: str) -> AppTest:
    student.text_input(key=class_sentences.TEXT).input(text)
    student.button(key="class_send_button").click()
    return tabs(student, tab)


def student_page(tabs, code: str, tab: str = "s1") -> AppTest:
    student = tabs(make_app(room=code), tab)
    assert list(lazy_expanders(student, class_sentences.SEND_LABEL)) == ["class_send"]
    assert class_sentences.TEXT not in [w.key for w in student.text_input]  # closed: nothing inside
    student.session_state["class_send"] = True  # the student opens "Send a sentence to your teacher"
    return tabs(student, tab)


def test_a_following_student_sends_a_sentence_and_sending_again_replaces_it(tabs):
    _, code, key = start_room(tabs)
    student = student_page(tabs, code)
    no_exception(student)
    assert student.toggle(key=room_page.FOLLOW).value is True  # a following page, in the main page, not the sidebar
    assert class_sentences.TEXT in [w.key for w in student.main.text_input]
    send(student, tabs, "s1", "the cat sat")
    assert texts(room_page.store(), code, key) == ["the cat sat"]
    assert any(m.value.startswith("Sent") for m in student.success)
    send(student, tabs, "s1", "a dog ran")  # at once: refused, the first one stays
    assert any("send the next one in" in m.value for m in student.warning)
    later(SEND_SECONDS)
    send(student, tabs, "s1", "a dog ran")
    assert texts(room_page.store(), code, key) == ["a dog ran"]
    no_exception(student)


@pytest.mark.parametrize(
    "text",
    ["   ", "the cat\x1b sat", "the cat\u202e sat", " ".join(["word"] * (MAX_TOKENS + 1))],
    ids=["whitespace", "escape", "right-to-left override", "too many tokens"],
)
def test_a_student_is_told_why_a_sentence_was_refused(tabs, text):
    _, code, key = start_room(tabs)
    student = send(student_page(tabs, code), tabs, "s1", text)
    no_exception(student)
    [warning] = student.warning
    with pytest.raises(RoomError) as refused:
        rooms._sentence(text)
    assert warning.value == str(refused.value) and "\x1b" not in warning.value and "\u202e" not in warning.value
    assert room_page.store().sentences(code, key) == []


HOSTILE = "<b>bold</b> <img src=x onerror=alert(1)> **stars** :red[red] [a link](javascript:alert(1))"


def test_the_teacher_sees_only_a_count_until_opening_then_plain_text_and_uses_dismisses_and_clears(tabs):
    teacher, code, key = start_room(tabs)
    typed = [HOSTILE, "the animal was tired", "a dog ran"]
    sent_by(code, *((f"s{i}", t) for i, t in enumerate(typed)))
    tabs(teacher, "teacher")
    no_exception(teacher)
    assert "3 sentences from the class" in [c.value for c in teacher.caption]
    assert not [s for s in strings(teacher) for t in typed if t in s]  # nothing a student typed, anywhere
    teacher.session_state["class_sentences"] = True  # the teacher opens the class's sentences
    tabs(teacher, "teacher")
    assert [t.value for t in teacher.text] == typed  # plain text, oldest first
    for t in typed:
        assert user_text_leaks(teacher, t) == []  # in no Markdown, HTML or label
    ids = [s.id for s in room_page.store().sentences(code, key)]
    teacher.button(key=f"class_dismiss_{ids[2]}").click()
    tabs(teacher, "teacher")
    assert [t.value for t in teacher.text] == typed[:2] == texts(room_page.store(), code, key)
    teacher.button(key=f"class_use_{ids[1]}").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    assert teacher.session_state[SHOWN_SETTINGS].sentence == "the animal was tired"
    assert room_page.store().snapshot(code).settings["sentence"] == "the animal was tired"  # every follower's
    assert texts(room_page.store(), code, key) == [HOSTILE]  # used: off the list
    follower = tabs(make_app(room=code), "s7")
    assert follower.session_state[SHOWN_SETTINGS].sentence == "the animal was tired"
    teacher.button(key="class_clear").click()
    tabs(teacher, "teacher")
    assert room_page.store().sentences(code, key) == [] and not teacher.text
    assert "0 sentences from the class" in [c.value for c in teacher.caption]


def test_all_in_the_class_view_puts_the_class_s_sentences_in_the_class_view_for_everyone(tabs):
    teacher, code, key = start_room(tabs)
    typed = ["the animal was tired", HOSTILE, "a dog ran to the park"]
    sent_by(code, *((f"s{i}", t) for i, t in enumerate(typed)))
    teacher.session_state["class_sentences"] = True
    tabs(teacher, "teacher")
    teacher.button(key="class_all").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    assert teacher.session_state["view"] == "class" and teacher.text_area(key="class_text").value == "\n".join(typed)
    assert dict(teacher.query_params)["view"] == "class"  # the link is the screen
    assert teacher.session_state[SHOWN_VIEW] == "class"
    assert any(f"across {len(typed)} sentences" in m.value for m in teacher.markdown)
    assert len(teacher.get("plotly_chart")) == len(typed) + 1  # a small map per sentence, and their colour bar
    assert texts(room_page.store(), code, key) == typed  # still on the list until used, dismissed or cleared
    follower = tabs(make_app(room=code), "s9")
    no_exception(follower)
    assert follower.session_state[SHOWN_VIEW] == "class" and follower.session_state["class_text"] == "\n".join(typed)


@given(st.lists(st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=MAX_CHARS), max_size=60))
@settings(max_examples=60, deadline=None)
def test_the_class_view_s_list_holds_the_first_sentences_its_box_takes(sentences):
    text, n = class_heads.list_text(sentences)
    assert text.split("\n") == sentences[:n] if n else text == ""
    assert n <= class_heads.MAX_SENTENCES and len(text) <= class_heads.MAX_TEXT
    if n < min(len(sentences), class_heads.MAX_SENTENCES):  # stopped early: the next one would not fit
        assert len(text) + 1 + len(sentences[n]) > class_heads.MAX_TEXT


def test_every_bad_input_case_the_list_takes_is_shown_as_typed_in_plain_text(tabs):
    teacher, code, _ = start_room(tabs)
    typed = list(KEPT.values())
    sent_by(code, *((f"s{i}", t) for i, t in enumerate(typed)))
    teacher.session_state["class_sentences"] = True
    tabs(teacher, "teacher")
    no_exception(teacher)
    assert [t.value for t in teacher.text] == typed
    for t in typed:
        assert user_text_leaks(teacher, t) == []


def test_presenter_mode_shows_the_count_and_no_sentence(tabs):
    teacher, code, _ = start_room(tabs, presenter="true")
    assert not [m for m in teacher.markdown if "badge[" in m.value]  # none yet: the heading row as before
    sent_by(code, ("s1", "the cat sat"), ("s2", HOSTILE))
    tabs(teacher, "teacher")
    no_exception(teacher)
    [badge] = [m for m in teacher.markdown if "badge[" in m.value]  # a pill: the words wrapped beside the buttons
    assert badge.value == ":violet-badge[:material/forum: 2]"
    assert badge.proto.help.startswith("2 sentences from the class wait.")
    assert not lazy_expanders(teacher, class_sentences.LIST_LABEL)
    assert not [s for s in strings(teacher) if "the cat sat" in s or "bold" in s]


def test_the_teacher_link_on_a_second_device_shows_the_same_list(tabs):
    _, code, key = start_room(tabs, presenter="true")
    sent_by(code, ("s1", "the cat sat"), ("s2", "a dog ran"))
    phone = tabs(make_app(**teacher_link(code, key)), "teacher-phone")
    assert phone.session_state[room_page.TEACHER] == (code, key)
    phone.session_state["class_sentences"] = True
    tabs(phone, "teacher-phone")
    no_exception(phone)
    assert [t.value for t in phone.text] == ["the cat sat", "a dog ran"]


@settings(max_examples=60, deadline=None)
@given(
    sends=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 1), st.floats(0, 12, allow_nan=False)), min_size=1, max_size=40
    ),
    dismiss_every=st.integers(2, 9),
)
def test_a_scripted_client_never_passes_the_limits_whatever_it_sends_and_when(sends, dismiss_every):
    """Any sequence of sends from 6 tabs on 2 addresses, at any times, with the teacher dismissing the oldest now and
    then: the store accepts exactly what a model of the rules written here accepts (one pending per tab, one send per
    ``SEND_SECONDS`` per tab, ``SENDS_PER_ADDRESS`` per ``FLOOD_SECONDS`` per address, ``MAX_SENTENCES`` pending),
    with the limits made small (3, 4) so that a short sequence reaches them."""
    per_address, most = 3, 4
    clock = Clock()
    store = rooms.MemoryRoomStore(clock=clock)
    code, key = open_room(store)
    pending: dict[int, str] = {}  # the model: tab -> its pending text, in the order sent
    last: dict[int, float] = {}
    sent_from: dict[int, list[float]] = {0: [], 1: []}
    with patch.multiple(rooms, SENDS_PER_ADDRESS=per_address, MAX_SENTENCES=most):
        for n, (tab, address, wait) in enumerate(sends):
            clock.now += wait
            store.join(code, f"tab{tab}")
            now, text = clock.now, f"sentence {n}"
            recent = [t for t in sent_from[address] if now - t < FLOOD_SECONDS]
            ok = (
                (tab not in last or now - last[tab] >= SEND_SECONDS)
                and len(recent) < per_address
                and (tab in pending or len(pending) < most)
            )
            try:
                store.send_sentence(code, Client(f"10.4.0.{address}", f"tab{tab}"), text)
            except RoomError:
                assert not ok, (n, tab, address)
            else:
                assert ok, (n, tab, address)
                last[tab] = now
                sent_from[address] = [*recent, now]
                pending.pop(tab, None)
                pending[tab] = text
            if n % dismiss_every == dismiss_every - 1 and pending:
                oldest = store.sentences(code, key)[0]
                store.dismiss_sentences(code, key, [oldest.id])
                del pending[next(iter(pending))]
            assert texts(store, code, key) == list(pending.values())


def test_an_address_silent_for_30_s_counts_again_from_its_next_send(store, clock):
    """Found by the property test above: the send that found its address's last sends all older than 30 s forgot
    the address after writing it, so the flood limit counted from zero at every such send."""
    code, key = open_room(store)
    with patch.object(rooms, "SENDS_PER_ADDRESS", 2):
        store.send_sentence(code, seated(store, code, "a"), "first")
        clock.now += FLOOD_SECONDS
        store.send_sentence(code, seated(store, code, "b"), "second")
        store.send_sentence(code, seated(store, code, "c"), "third")
        with pytest.raises(RoomError, match="from your network"):
            store.send_sentence(code, seated(store, code, "d"), "fourth")
    assert texts(store, code, key) == ["first", "second", "third"]
