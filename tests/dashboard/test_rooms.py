"""Rooms: only the teacher key changes a room; students follow it; limits, expiry, anonymous guesses.

The store is tested directly (``RoomStore`` with a fake clock), then the page with AppTest: the teacher's page
publishes, a student's page follows, and a forged key, a missing key and another room's key change nothing.
"""

from __future__ import annotations

import ast
import re
import secrets

import pytest

from dashboard.classroom import room_page, rooms
from dashboard.classroom.quiz import question_id
from dashboard.classroom.rooms import (
    CODE_ALPHABET,
    CODE_LENGTH,
    IDLE_SECONDS,
    MAX_ROOMS,
    MAX_STUDENTS,
    Forbidden,
    RoomError,
    RoomStore,
    normal_code,
)
from tests.conftest import ROOT
from tests.dashboard.conftest import array, keyed_figures, make_app, no_exception

SETTINGS = {"sentence": "the cat sat", "d_model": 64, "n_heads": 4, "seed": 18, "view": "heads"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock) -> RoomStore:
    return RoomStore(clock=clock)


# -- codes and keys --------------------------------------------------------------------------------------------------
def test_codes_and_keys_come_from_secrets_and_are_compared_in_constant_time():
    source = (ROOT / "dashboard" / "classroom" / "rooms.py").read_text()
    imported = {a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert "secrets" in imported and "random" not in imported
    assert "secrets.compare_digest(room.key" in source and "secrets.compare_digest(room.code" in source


def test_a_room_has_a_short_readable_code_and_a_long_key(store):
    codes = set()
    for _ in range(MAX_ROOMS):
        code, key = store.open(SETTINGS)
        assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
        assert not set(code) & set("01OI")  # no look-alikes on a projector
        assert len(key) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", key)
        codes.add(code)
    assert len(codes) == MAX_ROOMS


def test_normal_code_accepts_what_a_student_types_and_nothing_else():
    assert normal_code(" k7qx 2m ") == "K7QX2M"
    for bad in ("", "K7QX2", "K7QX2MM", "K7QX2O", "<b>x</b>", "K7QX2M&key=1"):
        assert normal_code(bad) is None


def test_a_snapshot_never_carries_the_key(store):
    code, key = store.open(SETTINGS)
    snap = store.snapshot(code)
    assert key not in repr(snap) and not hasattr(snap, "key")
    assert key not in repr(store._rooms[code])  # the dataclass repr leaves it out too


# -- only the key changes a room -------------------------------------------------------------------------------------
def wrong_keys(store: RoomStore, key: str) -> dict[str, str]:
    _, other_key = store.open(SETTINGS)
    return {
        "forged": secrets.token_urlsafe(24),
        "missing": "",
        "another room's": other_key,
        "almost": key[:-1] + ("A" if key[-1] != "A" else "B"),
    }


def test_without_the_key_nothing_changes_the_room(store):
    code, key = store.open(SETTINGS)
    store.join(code, "s1")
    store.record_guess(code, "q1", "s1", 2)
    for name, bad in wrong_keys(store, key).items():
        with pytest.raises(Forbidden):
            store.publish(code, bad, {**SETTINGS, "seed": 7})
        with pytest.raises(Forbidden):
            store.reveal(code, bad, "q1", 2)
        with pytest.raises(Forbidden):
            store.tally(code, bad, "q1")
        with pytest.raises(Forbidden):
            store.close(code, bad)
        assert not store.is_teacher(code, bad), name
    snap = store.snapshot(code)
    assert snap.settings == SETTINGS and snap.version == 1 and snap.revealed == {}


def test_the_key_of_one_room_does_not_open_another(store):
    a, key_a = store.open(SETTINGS)
    b, key_b = store.open(SETTINGS)
    assert store.is_teacher(a, key_a) and store.is_teacher(b, key_b)
    assert not store.is_teacher(a, key_b) and not store.is_teacher(b, key_a)
    with pytest.raises(Forbidden):
        store.publish(b, key_a, {"seed": 1})


def test_the_teacher_publishes_and_the_version_grows_only_on_a_change(store):
    code, key = store.open(SETTINGS)
    assert store.publish(code, key, SETTINGS) == 1  # unchanged: students' polls see nothing new
    assert store.publish(code, key, {**SETTINGS, "n_heads": 2}) == 2
    assert store.snapshot(code).settings["n_heads"] == 2
    assert store.poll(code, "anyone") == 2


def test_the_teacher_reveals_and_reads_the_tally(store):
    code, key = store.open(SETTINGS)
    for i, answer in enumerate([1, 1, 3]):
        store.join(code, f"s{i}")
        store.record_guess(code, "q", f"s{i}", answer)
    assert store.tally(code, key, "q") == {1: 2, 3: 1}
    store.reveal(code, key, "q", 3)
    assert store.snapshot(code).revealed == {"q": 3}


# -- guesses ---------------------------------------------------------------------------------------------------------
def test_one_guess_per_session_per_question_and_a_new_guess_replaces_it(store):
    code, key = store.open(SETTINGS)
    store.join(code, "s1")
    store.record_guess(code, "q", "s1", 0)
    store.record_guess(code, "q", "s1", 2)
    store.record_guess(code, "other", "s1", 1)
    assert store.tally(code, key, "q") == {2: 1}
    assert store.tally(code, key, "other") == {1: 1}


def test_a_guess_is_a_small_integer_from_a_student_in_the_room(store):
    code, _ = store.open(SETTINGS)
    with pytest.raises(RoomError):
        store.record_guess(code, "q", "not-joined", 1)
    store.join(code, "s1")
    for bad in (-1, 1000, True, 1.5, "2", None):
        with pytest.raises(RoomError):
            store.record_guess(code, "q", "s1", bad)
    for bad_question in ("", "x" * 201, 7):
        with pytest.raises(RoomError):
            store.record_guess(code, bad_question, "s1", 1)


# -- limits ----------------------------------------------------------------------------------------------------------
def test_at_most_50_rooms(store):
    for _ in range(MAX_ROOMS):
        store.open(SETTINGS)
    with pytest.raises(RoomError, match="50 open rooms"):
        store.open(SETTINGS)


def test_a_room_closes_after_3_hours_idle_and_the_teacher_keeps_it_open(store, clock):
    idle, _ = store.open(SETTINGS)
    busy, key = store.open(SETTINGS)
    clock.now += IDLE_SECONDS - 60
    store.publish(busy, key, {**SETTINGS, "seed": 1})  # the teacher acts: 3 more hours
    store.poll(idle, "student")  # students polling do not keep a room open
    clock.now += 120
    assert store.snapshot(idle) is None and store.snapshot(busy) is not None
    assert len(store) == 1
    with pytest.raises(RoomError):
        store.join(idle, "late")


def test_closed_rooms_free_their_place(store, clock):
    for _ in range(MAX_ROOMS):
        store.open(SETTINGS)
    clock.now += IDLE_SECONDS + 1
    store.open(SETTINGS)
    assert len(store) == 1


def test_at_most_200_students_and_a_closed_tab_frees_its_seat(store, clock):
    code, _ = store.open(SETTINGS)
    for i in range(MAX_STUDENTS):
        store.join(code, f"s{i}")
    store.join(code, "s0")  # already in: no new seat needed
    with pytest.raises(RoomError, match="full"):
        store.join(code, "late")
    clock.now += rooms.STUDENT_IDLE_SECONDS + 1
    for i in range(1, MAX_STUDENTS):
        store.poll(code, f"s{i}")  # everyone but s0 is still polling
    store.join(code, "late")
    assert store.snapshot(code).students == MAX_STUDENTS


# -- the page (AppTest) ----------------------------------------------------------------------------------------------
@pytest.fixture
def tabs(monkeypatch):
    """AppTests share one session id: give each page its own, as each browser tab has."""
    current = {"id": "teacher"}
    monkeypatch.setattr(room_page, "session_id", lambda: current["id"])

    def run(at, sid: str):
        current["id"] = sid
        return at.run()

    return run


def start_room(tabs, **query):
    teacher = tabs(make_app(**query), "teacher")
    teacher.button(key="room_start").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    code, key = teacher.session_state[room_page.TEACHER]
    return teacher, code, key


def test_start_a_room_keeps_the_key_in_the_session_only(tabs):
    teacher, code, key = start_room(tabs, seed="5")
    assert dict(teacher.query_params).get("room") == code
    assert all(key not in str(v) for v in teacher.query_params.values())
    assert room_page.store().snapshot(code).settings["seed"] == 5
    texts = [c.value for c in teacher.get("code")]
    assert any(key in t for t in texts)  # shown once, in the dialog's teacher link...
    teacher.button_group(key="n_heads").set_value(2)
    tabs(teacher, "teacher")
    assert not any(key in c.value for c in teacher.get("code"))  # ...and not again


def test_students_follow_the_teacher(tabs):
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert student.session_state["n_heads"] == 4
    teacher.button_group(key="n_heads").set_value(2)
    tabs(teacher, "teacher")
    teacher.number_input(key="seed").set_value(7)
    tabs(teacher, "teacher")
    tabs(student, "s1")  # what the poll's rerun does
    no_exception(student)
    assert (student.session_state["n_heads"], student.session_state["seed"]) == (2, 7)
    assert len(keyed_figures(student)["heads_chart"]["data"]) >= 2


def test_presenter_mode_stays_the_teachers(tabs):
    _, code, _ = start_room(tabs, presenter="true")
    student = tabs(make_app(room=code), "s1")
    assert student.session_state["presenter"] is False


def test_a_student_leaves_and_comes_back_with_one_click(tabs):
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    tabs(student, "s1")
    assert student.session_state["seed"] == 18  # exploring: the teacher's change does not move this page
    student.toggle(key=room_page.FOLLOW).set_value(True)
    tabs(student, "s1")
    assert student.session_state["seed"] == 42


def test_a_student_who_changes_a_control_explores_on_their_own(tabs):
    _, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    student.number_input(key="seed").set_value(3)
    tabs(student, "s1")
    assert student.session_state["seed"] == 3 and student.session_state[room_page.FOLLOW] is False
    assert room_page.store().snapshot(code).settings["seed"] == 18  # and the room is untouched


def test_the_teacher_link_reopens_the_room_and_leaves_the_address_bar(tabs):
    _, code, key = start_room(tabs)
    other_device = tabs(make_app(room=code, key=key), "teacher-2")
    no_exception(other_device)
    assert "key" not in other_device.query_params
    assert not other_device.warning  # the key is not reported as an unknown parameter
    other_device.number_input(key="seed").set_value(9)
    tabs(other_device, "teacher-2")
    assert room_page.store().snapshot(code).settings["seed"] == 9


@pytest.mark.parametrize("which", ["forged", "missing", "another room's"])
def test_a_page_without_the_right_key_cannot_change_the_room(tabs, which):
    _, code, _ = start_room(tabs)
    _, other_key = room_page.store().open(SETTINGS)
    keys = {"forged": secrets.token_urlsafe(24), "missing": None, "another room's": other_key}
    query = {"room": code} | ({} if keys[which] is None else {"key": keys[which]})
    page = tabs(make_app(**query), "intruder")
    no_exception(page)
    assert "key" not in page.query_params
    if keys[which] is not None:
        assert any("does not open the room" in w.value for w in page.warning)
    before = room_page.store().snapshot(code)
    page.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(page, "intruder")
    page.number_input(key="seed").set_value(1234)
    tabs(page, "intruder")
    page.button_group(key="n_heads").set_value(8)
    tabs(page, "intruder")
    after = room_page.store().snapshot(code)
    assert after.settings == before.settings and after.version == before.version
    assert not room_page.reveal_to_room("q", 0)  # the page's own reveal reaches no room


def test_a_typed_code_that_is_no_room_says_so_without_echoing_it(tabs):
    page = tabs(make_app(room="<b>hi</b>"), "s1")
    no_exception(page)
    assert any("6 letters and digits" in w.value for w in page.warning)
    assert all("<b>" not in w.value for w in page.warning)
    page = tabs(make_app(room="ZZZZZZ"), "s2")
    assert any("No open room" in w.value for w in page.warning)


def test_the_teacher_sees_the_class_tally_after_the_reveal(tabs):
    teacher, code, _ = start_room(tabs, quiz="true")
    question = teacher.session_state[room_page.quiz_panel.CURRENT]
    pick = room_page.quiz_panel.pick_key(question)
    students = {sid: tabs(make_app(room=code), sid) for sid in ("s1", "s2")}
    wrong = (question.answer + 1) % len(question.choices)
    for (sid, page), answer in zip(students.items(), [question.answer, wrong], strict=True):
        no_exception(page)
        assert page.session_state[room_page.quiz_panel.CURRENT] == question  # the same question as the teacher
        page.selectbox(key=pick).set_value(answer)
        tabs(page, sid)
    assert all(page.session_state[room_page.FOLLOW] for page in students.values())  # a pick is no leaving
    tabs(teacher, "teacher")
    assert "room_tally" not in keyed_figures(teacher)  # nothing before the reveal
    assert any("2 guesses so far" in c.value for c in teacher.caption)
    teacher.selectbox(key=pick).set_value(question.answer)
    tabs(teacher, "teacher")
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    bars = keyed_figures(teacher)["room_tally"]["data"][0]
    counts = array(bars["y"]).astype(int).tolist()
    assert sum(counts) == 2 and counts[question.answer] == 1 and counts[wrong] == 1
    assert bars["x"][question.answer].endswith("✓")
    assert room_page.store().snapshot(code).revealed == {question_id(question): question.answer}


def test_an_empty_box_is_the_same_whether_it_reads_none_or_empty_text():
    assert room_page._same(None, "") and room_page._same("", None) and room_page._same(4, 4)
    assert not room_page._same("", "heads") and not room_page._same(4, 2)
