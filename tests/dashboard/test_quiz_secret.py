"""The teacher's quiz keeps its secret (issue 31, part 6), on the page (AppTest).

While the teacher's question is open (asked, not revealed), a student's page in the room shows the room's page, the
question without its map, whatever the student does: Follow off, then Quiz off, a view, a reload, a download, or
leaving the room. What reveals what (``room_page.question_open``): every view of the question's run reveals some
answer, and a mechanics question's answer (random weights: which cells are 0, a row's sum, d_k, a reordering,
÷√d_k) holds for any seed or sentence with the same shapes and mask; so no view is safe and the page is held whole.
The checks below are of what the page draws: no chart, no download, no number that answers.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.classroom import quiz_panel, room_page
from dashboard.classroom.quiz import question_id
from dashboard.classroom.quiz_mechanics import KINDS
from dashboard.state import session
from dashboard.views import VIEWS
from tests.conftest import require_minilm
from tests.dashboard.conftest import keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

MINILM = dict(weights="minilm", sentence="The bank of the river.", layer="1")
"""Learned weights: the quiz asks quiz.py's questions (a named pattern, the key a row looks at most)."""


def texts(at: AppTest) -> str:
    """Every line the page writes, main page and sidebar: text, captions, Markdown, notes, toasts."""
    kinds = ("text", "caption", "markdown", "info", "warning", "success", "toast", "code")
    return " ".join(str(e.value) for kind in kinds for e in at.get(kind))


def hides(page: AppTest, question) -> None:
    """``page`` shows ``question`` and nothing its answer is read from: no chart (the map, the tally, any view's),
    no download, no explanation or verdict, and not the number a d_k question asks for."""
    no_exception(page)
    said = texts(page)
    assert question.text in said, "the question is on the page"
    assert not keyed_figures(page), f"a chart is drawn: {list(keyed_figures(page))}"
    assert not page.get("download_button"), "nothing to download"
    assert question.explanation not in said and "Right:" not in said and "Not this time" not in said
    if question.kind == "d_k":
        d_k = question.options[question.answer]
        assert f"d_k {d_k}" not in said and f"d_k = {d_k}" not in said and f"= {d_k}" not in said


def control(page: AppTest, kind: str, key: str):
    """The page's widget of ``kind`` keyed ``key``, or None when the page draws none."""
    found = [w for w in page.get(kind) if getattr(w, "key", None) == key]
    return found[0] if found else None


def quiz_room(tabs, number: int = 1, **query):  # noqa: F811
    """A teacher's room on question ``number`` of the quiz, and a student who follows it: (teacher, code, question,
    student)."""
    teacher, code, _ = start_room(tabs, quiz="true", **query)
    if number != 1:
        teacher.number_input(key=quiz_panel.NUMBER).set_value(number)
        tabs(teacher, "teacher")
    question = teacher.session_state[session.QUIZ_CURRENT]
    assert room_page.store().snapshot(code).question == question_id(question)
    student = tabs(make_app(room=code), "s1")
    hides(student, question)
    return teacher, code, question, student


def stop_following(tabs, student):  # noqa: F811
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")


QUESTIONS = [pytest.param(n, {}, id=kind) for n, kind in enumerate(KINDS, start=1)] + [
    pytest.param(n, MINILM, id=f"minilm-{n}") for n in (1, 2)
]
"""Every mechanics question of the default settings (one per kind, in ``KINDS`` order), and two of MiniLM's."""


@pytest.mark.parametrize(("number", "query"), QUESTIONS)
def test_follow_off_then_quiz_off_shows_the_question_not_the_map(tabs, number, query):  # noqa: F811
    """The issue's case: Follow off, then Quiz off, showed the hidden map."""
    if query:
        require_minilm()
    _, _, question, student = quiz_room(tabs, number, **query)
    if not query:  # the default settings answer every mechanics question: each kind is tried
        assert question.kind == KINDS[number - 1]
    stop_following(tabs, student)
    hides(student, question)
    assert control(student, "toggle", "quiz") is None, "no Quiz switch to turn off while the question is open"
    student.session_state["quiz"] = False  # what the switch would have set: the page still shows the room's
    tabs(student, "s1")
    hides(student, question)
    assert "your teacher's question is open" in texts(student).lower(), "the page says why it shows the question"


def test_no_view_shows_the_map_while_the_question_is_open(tabs):  # noqa: F811
    """Follow off, then every view: the page draws no view bar until the reveal, and then draws it again."""
    teacher, _, question, student = quiz_room(tabs)
    stop_following(tabs, student)
    for slug in VIEWS:
        bar = control(student, "segmented_control", "view")
        assert bar is None, "no view bar while the question is open"
        student.session_state["view"] = slug  # a view picked anyway: the page draws the room's
        tabs(student, "s1")
        hides(student, question)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    tabs(student, "s1")  # the reveal is a new version: the page reruns
    no_exception(student)
    assert control(student, "segmented_control", "view") is not None, "after the reveal: exploring, its view bar"
    assert keyed_figures(student), "and the view's figures"


def test_a_student_exploring_before_the_question_is_held_on_it(tabs):  # noqa: F811
    """A student who stopped following before the teacher asked (on a view that draws the weights' numbers) sees the
    question at the page's next run, not that view."""
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    stop_following(tabs, student)
    student.segmented_control(key="view").set_value("steps")
    tabs(student, "s1")
    assert keyed_figures(student), "exploring: the steps view's figures"
    teacher.toggle(key="quiz").set_value(True)
    tabs(teacher, "teacher")
    question = teacher.session_state[session.QUIZ_CURRENT]
    tabs(student, "s1")
    hides(student, question)


def test_a_reload_and_the_room_code_keep_the_question(tabs):  # noqa: F811
    """The page's address reopens the room's question, and the code box cannot leave the room until the reveal
    (out of the room, the page's own quiz has a Reveal button)."""
    teacher, code, question, student = quiz_room(tabs)
    box = student.text_input(key=room_page.ROOM)
    assert box.disabled, "a following student cannot leave the room while the question is open"
    stop_following(tabs, student)
    box = student.text_input(key=room_page.ROOM)
    assert box.disabled and box.value == code
    student.session_state["quiz"] = False
    tabs(student, "s1")
    reloaded = tabs(make_app(**{k: student.query_params[k] for k in student.query_params}), "s1")  # its address
    hides(reloaded, question)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    tabs(student, "s1")
    assert not student.text_input(key=room_page.ROOM).disabled, "after the reveal the student may leave"


def test_the_follower_line_leaves_out_d_k_while_the_question_is_open(tabs):  # noqa: F811
    number = KINDS.index("d_k") + 1
    teacher, _, question, student = quiz_room(tabs, number)
    assert question.kind == "d_k"
    d_k = question.options[question.answer]
    line = " ".join(c.value for c in student.sidebar.caption)
    assert "Following the teacher" in line and f"d_k {d_k}" not in line
    assert "Turn off" not in line and "once your teacher reveals the answer" in line, "Follow off gives no controls"
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    tabs(student, "s1")
    line = " ".join(c.value for c in student.sidebar.caption)
    assert f"d_k {d_k}" in line and "Turn off “Follow the teacher”" in line, "revealed: the line says it again"


def test_the_rooms_question_is_the_one_on_the_teachers_screen(tabs):  # noqa: F811
    """A teacher who moves to a view without the quiz asks the room nothing: its students are no longer held (the
    question stayed open with the page's last question, and the students' pages stayed on it)."""
    teacher, code, _, student = quiz_room(tabs)
    stop_following(tabs, student)
    teacher.segmented_control(key="view").set_value("steps")
    tabs(teacher, "teacher")
    assert room_page.store().snapshot(code).question is None
    tabs(student, "s1")
    no_exception(student)
    assert control(student, "segmented_control", "view") is not None, "the student explores again"


def test_the_teachers_next_question_holds_the_page_on_it(tabs):  # noqa: F811
    """Until the teacher reveals or the student joins another question: the teacher's next question is the page's."""
    teacher, _, question, student = quiz_room(tabs)
    stop_following(tabs, student)
    teacher.button(key="quiz_next").click()
    tabs(teacher, "teacher")
    second = teacher.session_state[session.QUIZ_CURRENT]
    assert question_id(second) != question_id(question)
    tabs(student, "s1")
    hides(student, second)
    assert question.text == second.text or question.text not in texts(student), "the first question has gone"


def _keep_seat_once(code: str, recall: int) -> None:
    """A page that runs an exploring student's seat check once, counting runs: a second run is its rerun."""
    import streamlit as st

    from dashboard.classroom import room_page

    st.session_state["runs"] = st.session_state.get("runs", 0) + 1
    if st.session_state["runs"] == 1:
        room_page._keep_seat(code, recall)


def test_an_exploring_page_reruns_when_the_teacher_asks(tabs, monkeypatch):  # noqa: F811
    """The exploring page's seat check (every 10 s) reruns it when a question opens, and only then: the page then
    shows the question. The check acts in its own fragment's reruns (in a whole run ``enter_room`` has just looked)."""
    monkeypatch.setattr(room_page, "fragment_rerun", lambda: True)
    teacher, code, _ = start_room(tabs)
    for asked in (False, True):
        if asked:
            teacher.toggle(key="quiz").set_value(True)
            tabs(teacher, "teacher")
        room = room_page.store().snapshot(code)
        assert (room.question is not None) is asked
        page = AppTest.from_function(_keep_seat_once, args=(code, room.recall), default_timeout=30)
        tabs(page, "s1")
        no_exception(page)
        assert page.session_state["runs"] == (2 if asked else 1)


def _follow_on_once(code: str) -> None:
    """A page whose run is a following body's rerun: what ``follow_on`` said (None: run the page whole)."""
    import streamlit as st

    from dashboard.classroom import room_page

    st.session_state["followed"] = room_page.follow_on(code) is not None


@pytest.mark.parametrize("asked_before", [False, True])
@pytest.mark.parametrize("asked_now", [False, True])
def test_a_pushed_body_runs_the_page_whole_when_the_question_opens_or_closes(tabs, asked_before, asked_now):  # noqa: F811
    """The code box, outside the body, locks while the question is open and unlocks at the reveal: a pushed body run
    that finds the question opened or closed since the page last ran whole runs it whole."""
    _, code, _ = start_room(tabs, quiz="true" if asked_now else "false")
    room = room_page.store().snapshot(code)
    assert room_page.question_open(room) is asked_now
    page = AppTest.from_function(_follow_on_once, args=(code,), default_timeout=30)
    page.session_state[room_page.RECALLED] = (code, room.recall)
    page.session_state[room_page.APPLIED] = (code, room.version, dict(room.settings))
    page.session_state[session.QUESTION_WAS_OPEN] = asked_before
    tabs(page, "s1")
    no_exception(page)
    assert page.session_state["followed"] is (asked_before == asked_now)


def test_a_control_changed_during_the_question_keeps_the_question_and_says_why(tabs):  # noqa: F811
    """A control the following page still draws, changed (here its value, as a click would set it), leaves
    following as ever; during the question the page keeps the room's question, and the note says why, not
    "exploring"."""
    _, _, question, student = quiz_room(tabs)
    student.session_state["seed"] = 3
    tabs(student, "s1")
    hides(student, question)
    told = " ".join(t.value for t in student.toast)
    assert "question is open" in told and "exploring on your own" not in told
    assert student.session_state[room_page.FOLLOW] is False, "after the reveal, the page explores"
