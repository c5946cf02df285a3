"""Predict by tapping a word (issue 34 part 4): the question kind, its buttons, its reveal figure and its CSV."""

from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np
import pytest

from core import run, tokenize
from dashboard.classroom.quiz_mechanics import questions_for
from dashboard.classroom.quiz_tap import asks_taps, tap_question
from dashboard.classroom.tally_csv import tally_csv
from dashboard.figures.quiz import tap_reveal_figure
from dashboard.state import session
from dashboard.state.settings import DEFAULT_CONFIG
from tests.dashboard.conftest import array, keyed_figures, make_app, no_exception
from tests.dashboard.test_room_quiz import downloads  # noqa: F401  (the fixture)
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (the fixture)

SENTENCES = ("The bank of the river gave a loan", "dog bites man", "the robot opens the door and the robot closes it")


@pytest.mark.parametrize("weights", ["identity", "previous"])
@pytest.mark.parametrize("sentence", SENTENCES)
def test_the_answer_is_the_argmax_of_the_real_row_and_the_choices_are_the_tokens_in_order(weights, sentence):
    r = run(tokenize(sentence), dataclasses.replace(DEFAULT_CONFIG, weights=weights, positional="learned"))
    q = tap_question(r, context=sentence)
    assert q is not None
    assert q.kind == "tap"
    assert q.choices == tuple(f"{i}·{t}" for i, t in enumerate(r.tokens))  # every token, reading order, from 0
    row = r.trace.weights[q.head, q.row]
    assert q.answer == int(np.argmax(row))
    assert q.values == tuple(float(x) for x in row)
    runner_up = np.sort(row)[-2]
    assert row[q.answer] - runner_up >= 0.1
    assert f"head {q.head + 1}," in q.text and f"“{r.tokens[q.row]}” ({q.row}·" in q.text


def test_asked_only_on_learned_or_hand_built_weights():
    assert asks_taps("identity", False) and asks_taps("previous", False)
    assert asks_taps("trained", True) and asks_taps("minilm", True)
    assert not asks_taps("random", False)
    r = run(tokenize("The bank of the river gave a loan"), dataclasses.replace(DEFAULT_CONFIG, weights="identity"))
    assert [q.kind for q in questions_for(r, learned=False, tap=True)][-1] == "tap"
    assert "tap" not in [q.kind for q in questions_for(r, learned=False, tap=False)]


def test_no_clear_row_no_question():
    r = run(tokenize("dog bites man"), dataclasses.replace(DEFAULT_CONFIG, weights="identity"))
    flat = dataclasses.replace(r, trace=dataclasses.replace(r.trace, weights=np.full_like(r.trace.weights, 1 / 3)))
    assert tap_question(flat) is None


def test_a_run_that_knows_its_words_never_answers_cls_or_sep():
    """Every row but one parks its weight on key 0, which ``word_ids`` marks as no word's ([CLS]): the question is
    the one row whose answer is a word, though the seeded order reaches others first; without ``word_ids`` key 0
    answers too."""
    r = run(tokenize("dog bites man"), dataclasses.replace(DEFAULT_CONFIG, weights="identity", n_heads=2))
    sink = np.tile(np.array([0.8, 0.1, 0.1]), (2, 3, 1))  # (h, T, T): every row on key 0
    sink[1, 2] = [0.1, 0.1, 0.8]  # head 2, row 2: on key 2, a word
    parked = dataclasses.replace(r, trace=dataclasses.replace(r.trace, weights=sink))
    answers = {tap_question(parked, context=str(c)).answer for c in range(20)}
    assert answers == {0, 2}  # without word_ids: whichever row the seeded order reaches first
    for c in range(20):
        q = tap_question(dataclasses.replace(parked, word_ids=(None, 0, 1)), context=str(c))
        assert (q.head, q.row, q.answer) == (1, 2, 2)


def test_the_reveal_names_the_layer_as_the_question_does():
    at = make_app(quiz="true", weights="trained", task="shift").run()
    no_exception(at)
    q = _to_tap(at)
    assert q.kind == "tap" and q.text.startswith(f"In layer 1, head {q.head + 1}, which word")
    at.button(key=f"quiz_tap_{q.answer}").click().run()
    at.button(key="quiz_reveal").click().run()
    no_exception(at)
    assert f"row {q.row} in layer 1, head {q.head + 1};" in " ".join(c.value for c in at.caption)


def test_the_reveal_figure_draws_the_row_and_the_picks_on_one_axis():
    row = np.array([0.1, 0.7, 0.2])
    fig = tap_reveal_figure(row, [1, 3, 0], ["<b>a</b>", "*b*", "c"], answer=1)
    bars, picks = fig.data
    assert np.allclose(bars.y, row)
    assert list(bars.x) == list(picks.x) == ["0·&lt;b&gt;a&lt;/b&gt;", "1·*b*", "2·c"]
    assert np.allclose(picks.y, [0.25, 0.75, 0.0]) and list(picks.customdata) == [1, 3, 0]
    assert fig.layout.barmode == "overlay" and picks.name == "share of the class's picks"
    assert tap_reveal_figure(row, [0, 1, 0], ["a", "b", "c"], answer=1, whose="your pick").data[1].name == (
        "share of your pick"
    )


def test_the_csv_has_the_picks_per_token():
    r = run(tokenize("dog bites man"), dataclasses.replace(DEFAULT_CONFIG, weights="identity"))
    q = tap_question(r)
    counts = [2, 5, 1]
    rows = list(
        csv.reader(io.StringIO(tally_csv([dict(text=q.text, choices=q.choices, answer=q.answer, counts=counts)])))
    )
    assert [row[1] for row in rows[1:]] == ["0·dog", "1·bites", "2·man"]
    assert [int(row[2]) for row in rows[1:]] == counts
    assert [row[3] for row in rows[1:]] == ["yes" if j == q.answer else "no" for j in range(3)]


def _to_tap(at):
    n = int(at.number_input(key="quiz_question").max)
    at.number_input(key="quiz_question").set_value(n).run()
    return at.session_state["quiz_current"]


def test_on_the_page_a_tap_picks_and_the_reveal_draws_the_row():
    at = make_app(quiz="true", weights="identity", sentence="dog *bites* man").run()
    no_exception(at)
    q = _to_tap(at)
    assert q.kind == "tap"
    buttons = [b for b in at.button if b.key and b.key.startswith("quiz_tap_")]
    assert [b.label for b in buttons] == [
        "0·dog",
        "1·\\*",
        "2·bites",
        "3·\\*",
        "4·man",
    ]  # Markdown marks escaped, in order
    buttons[q.answer].click().run()
    at.button(key="quiz_reveal").click().run()
    no_exception(at)
    assert at.text[1].value.startswith("Right: ")
    [chart] = [c for c in at.get("plotly_chart") if c.proto.id and "quiz_tap_bars" in c.proto.id]
    import json

    data = json.loads(chart.proto.spec)["data"]
    row = np.asarray(at.session_state["quiz_current"].values)
    assert np.allclose(data[0]["y"], row)
    picks = np.zeros(len(row))
    picks[q.answer] = 1
    assert np.allclose(data[1]["y"], picks)


def test_random_weights_ask_no_tap_question():
    at = make_app(quiz="true").run()
    n = int(at.number_input(key="quiz_question").max)
    kinds = []
    for i in range(1, n + 1):
        at.number_input(key="quiz_question").set_value(i).run()
        kinds.append(at.session_state["quiz_current"].kind)
    assert "tap" not in kinds


# -- in a room ----------------------------------------------------------------------------------------------------
def test_in_a_room_students_tap_the_teacher_reveals_and_the_bars_and_csv_count_the_picks(tabs, downloads):  # noqa: F811

    sentence = "dog bites man"
    r = run(tokenize(sentence), dataclasses.replace(DEFAULT_CONFIG, weights="identity"))
    n = len(questions_for(r, learned=False, tap=True))
    teacher, code, _ = start_room(tabs, quiz="true", weights="identity", sentence=sentence, quiz_question=str(n))
    question = teacher.session_state[session.QUIZ_CURRENT]
    assert question.kind == "tap"
    assert not [b for b in teacher.button if b.key and b.key.startswith("quiz_tap_")]  # the teacher does not pick
    chosen = {"s1": question.answer, "s2": (question.answer + 1) % 3, "s3": question.answer}
    students = {}
    for sid, tap in chosen.items():
        page = tabs(make_app(room=code), sid)
        no_exception(page)
        assert page.session_state[session.QUIZ_CURRENT] == question
        assert [b.label for b in page.button if b.key and b.key.startswith("quiz_tap_")] == list(question.choices)
        page.button(key=f"quiz_tap_{tap}").click()
        students[sid] = tabs(page, sid)
        no_exception(page)
    teacher.button(key="quiz_reveal").click()
    tabs(teacher, "teacher")
    no_exception(teacher)
    counts = [sum(t == j for t in chosen.values()) for j in range(3)]
    data = keyed_figures(teacher)["quiz_tap_bars"]["data"]
    assert np.allclose(array(data[0]["y"]), r.trace.weights[question.head, question.row])
    assert np.allclose(array(data[1]["y"]), np.array(counts) / 3)
    for sid, page in students.items():
        tabs(page, sid)
        no_exception(page)
        assert "quiz_tap_bars" in keyed_figures(page)  # the teacher's reveal reaches every phone
    rows = list(csv.DictReader(io.StringIO(downloads["room_tally_csv"][0])))
    assert [(row["choice"], int(row["count"])) for row in rows] == list(zip(question.choices, counts, strict=True))


def test_minilm_asks_the_tap_question_last_about_its_own_row():
    from tests.conftest import require_minilm

    require_minilm()
    at = make_app(quiz="true", weights="minilm", sentence="the cat sat on the mat because it was tired", layer="6")
    at.run()
    no_exception(at)
    q = _to_tap(at)
    assert q.kind == "tap" and q.layer == 6 and q.text.startswith(f"In layer 6, head {q.head + 1}, which word")
    assert q.answer == int(np.argmax(q.values))
    assert next(b.label for b in at.button if b.key and b.key.startswith("quiz_tap_")) == "0·\\[CLS\\]"
    assert not q.choices[q.answer].endswith(("[CLS]", "[SEP]"))  # a word: the row can be reasoned out
