"""The quiz in a room is the teacher's, and after class (issue 21, items 1 and 7), on the page (AppTest).

One AppTest page per browser tab, each with its own session id (the ``tabs`` fixture of test_rooms.py); a
student's page is rerun where its poll would rerun it. The browser's part (the live count, two students end to
end, the phone) is tests/e2e/test_room_quiz_in_browser.py.
"""

from __future__ import annotations

import csv
import io

import pytest

from dashboard.classroom import quiz_panel, room_page
from dashboard.classroom.quiz import question_id
from dashboard.classroom.tally_csv import COLUMNS, tally_csv
from dashboard.page.presenter import PRESENTER_CSS, ROOM_CODE_PX
from dashboard.state import session
from tests.dashboard.conftest import array, keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

STUDENTS = ("s1", "s2")


def in_quiz(tabs, **query):  # noqa: F811
    """A teacher's room with the quiz on, and two students on its question: (teacher, code, question, students)."""
    teacher, code, _ = start_room(tabs, quiz="true", **query)
    question = teacher.session_state[session.QUIZ_CURRENT]
    students = {sid: tabs(make_app(room=code), sid) for sid in STUDENTS}
    for page in students.values():
        no_exception(page)
        assert page.session_state[session.QUIZ_CURRENT] == question  # the teacher's question
    return teacher, code, question, students


def picks(question) -> dict[str, int]:
    """s1 picks the right answer, s2 another one."""
    return {"s1": question.answer, "s2": (question.answer + 1) % len(question.choices)}


def pick_all(tabs, students, question):  # noqa: F811
    for sid, answer in picks(question).items():
        students[sid].selectbox(key=quiz_panel.pick_key(question)).set_value(answer)
        tabs(students[sid], sid)
        no_exception(students[sid])


def texts(at) -> str:
    return " ".join(e.value for kind in ("text", "caption", "markdown") for e in at.get(kind))


def reveal_button(at):
    return [b for b in at.button if b.key == "quiz_reveal"]


# -- the teacher's quiz ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("presenter", ["false", "true"])
def test_the_teacher_reveals_without_a_guess_and_reads_no_verdict(tabs, presenter):  # noqa: F811
    teacher, code, question, _ = in_quiz(tabs, presenter=presenter)
    assert not [s for s in teacher.selectbox if s.key == quiz_panel.pick_key(question)]  # nothing to guess
    [reveal] = reveal_button(teacher)
    assert not reveal.disabled
    reveal.click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    assert "quiz_map" in keyed_figures(teacher)
    said = texts(teacher)
    assert "Not this time" not in said and "your pick" not in said and "Right:" not in said
    assert question.explanation in said
    assert room_page.store().snapshot(code).revealed == {question_id(question): question.answer}


def test_students_pick_see_it_sent_and_cannot_reveal(tabs):  # noqa: F811
    _, code, question, students = in_quiz(tabs)
    for page in students.values():
        assert not reveal_button(page)  # only the teacher reveals the class's question
        assert "Pick an answer: it goes to your teacher" in texts(page)
    pick_all(tabs, students, question)
    for page in students.values():
        assert not reveal_button(page) and "quiz_map" not in keyed_figures(page)
        assert "Your pick is sent" in texts(page)
    room = room_page.store()._load(code)  # what the room holds: one integer per student for this question
    assert room.guesses == picks(question) and all(type(a) is int for a in room.guesses.values())
    students["s2"].selectbox(key=quiz_panel.pick_key(question)).set_value(question.answer)  # a change of mind
    tabs(students["s2"], "s2")
    assert room_page.store()._load(code).guesses == {"s1": question.answer, "s2": question.answer}


def test_a_student_who_stops_following_still_cannot_reveal_the_class_question(tabs):  # noqa: F811
    _, _, question, students = in_quiz(tabs)
    page = students["s1"]
    page.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(page, "s1")
    assert page.session_state[session.QUIZ_CURRENT] == question
    assert not reveal_button(page) and "quiz_map" not in keyed_figures(page)
    page.session_state[session.QUIZ_REVEALED] = frozenset({question_id(question)})  # a page's own reveal...
    tabs(page, "s1")
    assert "quiz_map" not in keyed_figures(page)  # ...shows nothing: only the room's reveal counts


def test_the_teachers_reveal_reaches_every_students_screen(tabs):  # noqa: F811
    teacher, _, question, students = in_quiz(tabs)
    pick_all(tabs, students, question)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    for sid, page in students.items():
        tabs(page, sid)  # the reveal is a new room version: the student's poll reruns the page
        no_exception(page)
        assert "quiz_map" in keyed_figures(page)
        box = page.selectbox(key=quiz_panel.pick_key(question))
        assert box.disabled and box.value == picks(question)[sid]  # the pick stands, marked on the map
    assert "Right:" in texts(students["s1"]) and "Not this time" in texts(students["s2"])


def test_the_tally_counts_live_seats_and_sits_under_the_question(tabs, monkeypatch):  # noqa: F811
    teacher, _, question, students = in_quiz(tabs)
    pick_all(tabs, students, question)
    tabs(teacher, "teacher")
    assert "The class: 2 of 2 students picked so far" in texts(teacher)
    assert any("2 students joined" in s.value for s in teacher.success)
    assert "room_tally" not in keyed_figures(teacher)  # nothing to see before the reveal
    closed = {"s2": False}  # s2's tab closed: Streamlit's runtime says its session is gone
    monkeypatch.setattr(room_page.store(), "_alive", lambda s: closed.get(s))
    tabs(teacher, "teacher")
    assert "The class: 1 of 1 student picked so far" in texts(teacher)
    assert any("1 student joined" in s.value for s in teacher.success)
    monkeypatch.setattr(room_page.store(), "_alive", lambda s: None)
    students["s2"].selectbox(key=quiz_panel.pick_key(question)).set_value(0)
    tabs(students["s2"], "s2")  # back (its page was asleep): seated again, the pick sent again
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    figures = list(keyed_figures(teacher))
    assert figures.index("room_tally") < figures.index("quiz_map") < figures.index("heads_chart")  # under the question
    bars = keyed_figures(teacher)["room_tally"]["data"][0]
    assert bars["orientation"] == "h"  # a choice is a phrase: its label wraps beside its bar
    counts = array(bars["x"]).astype(int).tolist()
    expected = [0] * len(question.choices)
    expected[question.answer] += 1
    expected[0] += 1
    assert counts == expected
    assert [y.endswith("✓") for y in bars["y"]] == [i == question.answer for i in range(len(question.choices))]


def test_the_room_code_is_large_on_the_projector(tabs):  # noqa: F811
    assert ROOM_CODE_PX >= 48 and ".st-key-room_code h3" in PRESENTER_CSS  # measured in chromium too
    teacher, code, _ = start_room(tabs, presenter="true")
    teacher.button(key="room_show").click()
    tabs(teacher, "teacher")
    assert any(h.value == f"Room code: {code}" for h in teacher.get("subheader"))


# -- after class --------------------------------------------------------------------------------------------------
def download(at, key: str):
    [button] = [b for b in at.get("download_button") if b.proto.id.endswith(f"-{key}")]
    return button.proto


@pytest.fixture
def downloads(monkeypatch) -> dict[str, object]:
    """Key -> (data, file name) each ``st.download_button`` was last given (AppTest keeps no file after its run)."""
    given: dict[str, object] = {}
    real = room_page.st.download_button

    def spy(label, data, *args, **kwargs):
        given[kwargs["key"]] = data, kwargs.get("file_name")
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(room_page.st, "download_button", spy)
    return given


def test_the_teacher_downloads_the_tally_of_each_question(tabs, downloads):  # noqa: F811
    teacher, code, question, students = in_quiz(tabs)
    assert download(teacher, "room_tally_csv").disabled  # nothing revealed yet
    pick_all(tabs, students, question)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    teacher.button(key="quiz_next").click()  # the class moves on
    tabs(teacher, "teacher")
    second = teacher.session_state[session.QUIZ_CURRENT]
    assert question_id(second) != question_id(question)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    proto = download(teacher, "room_tally_csv")
    assert not proto.disabled
    data, name = downloads["room_tally_csv"]
    assert name == f"room_{code}_tally.csv"
    reader = csv.DictReader(io.StringIO(data))
    rows = list(reader)
    assert tuple(reader.fieldnames) == COLUMNS
    first = [r for r in rows if r["question"] == question.text]
    assert [r["choice"] for r in first] == list(question.choices)
    counted = {r["choice"]: int(r["count"]) for r in first}
    assert counted == {c: sum(p == i for p in picks(question).values()) for i, c in enumerate(question.choices)}
    assert [r["choice"] for r in first if r["right answer"] == "yes"] == [question.choices[question.answer]]
    later = [r for r in rows if r["question"] == second.text]
    assert len(later) == len(second.choices) and sum(int(r["count"]) for r in later) == 0  # no one had picked


def test_the_csv_never_hands_a_spreadsheet_a_formula():
    rows = list(csv.reader(io.StringIO(tally_csv([dict(text="=1+1", choices=["@a", "b"], answer=1, counts=[2])]))))
    assert rows == [list(COLUMNS), ["'=1+1", "'@a", "2", "no"], ["'=1+1", "b", "0", "yes"]]


def test_bring_everyone_back(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    explorers = {sid: tabs(make_app(room=code), sid) for sid in STUDENTS}
    for sid, page in explorers.items():
        page.toggle(key=room_page.FOLLOW).set_value(False)
        tabs(page, sid)
    explorers["s1"].number_input(key="seed").set_value(3)  # exploring on their own
    tabs(explorers["s1"], "s1")
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    for sid, page in explorers.items():
        tabs(page, sid)
        assert page.session_state["seed"] != 42 and page.session_state[room_page.FOLLOW] is False
    teacher.button(key="room_recall").click()
    tabs(teacher, "teacher")
    for sid, page in explorers.items():
        tabs(page, sid)  # their seat check sees the room's new recall count and reruns the page
        no_exception(page)
        assert page.session_state[room_page.FOLLOW] is True and page.session_state["seed"] == 42
    page = explorers["s2"]
    page.toggle(key=room_page.FOLLOW).set_value(False)  # once back, a student may leave again
    tabs(page, "s2")
    tabs(page, "s2")
    assert page.session_state[room_page.FOLLOW] is False


def test_a_student_who_joins_after_a_recall_may_still_explore(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    teacher.button(key="room_recall").click()
    tabs(teacher, "teacher")
    late = tabs(make_app(room=code), "late")
    late.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(late, "late")
    tabs(late, "late")
    assert late.session_state[room_page.FOLLOW] is False


def test_closing_the_room_says_what_happens_to_the_students_pages(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    teacher.number_input(key="seed").set_value(11)
    tabs(teacher, "teacher")
    student = tabs(make_app(room=code), "s1")
    assert student.session_state["seed"] == 11
    teacher.button(key="room_close").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    told = " ".join(w.value for w in teacher.warning)
    assert f"You closed room {code}" in told and "keep the view they show" in told
    tabs(student, "s1")  # its poll finds the room gone
    no_exception(student)
    said = " ".join(w.value for w in student.warning)
    assert f"Room {code} was closed by its teacher" in said and "keeps the view it had" in said
    assert student.session_state["seed"] == 11 and "heads_chart" in keyed_figures(student)  # the same page
    assert not [t for t in student.toggle if t.key == room_page.FOLLOW]  # nothing left to follow
