"""A following student's train view: a true line for each state of the teacher's run, and a redraw when it changes.

The teacher's page and a student's page run headless (AppTest, each with its own session id: ``test_rooms.tabs``)
on one process, around the one job registry. Its trainer waits on a gate the test opens, so "the run is training
now" or "it waits for a slot" holds while the pages are read. A page of another process is a room whose
``TEACHER_TRAINING`` names another process id. The push's rerun is recorded, not sent (no runtime here), as in
``test_push.py``.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from core.training import recommended, train
from dashboard.classroom import push, room_page
from dashboard.compute.training_jobs import PROCESS, TEACHER_TRAINING, TeacherTraining, read_teacher_training, registry
from tests.dashboard.conftest import keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

WAIT = 60
QUERY = {"view": "train", "task": "shift", "seed": "4", "train_steps": "50"}
SETTINGS = dataclasses.replace(recommended("shift"), seed=4, steps=50)
"""The model ``QUERY`` trains."""
TAKE_OVER = "turn off “Follow the teacher” and press Train"


@pytest.fixture
def gate(monkeypatch):
    """The process's registry, empty, with a trainer that waits until the test opens the gate."""
    registry.clear()
    opened = threading.Event()

    def gated(settings, **kwargs):
        opened.wait(WAIT)
        return train(settings, **kwargs)

    monkeypatch.setattr(registry(), "_trainer", gated)
    yield opened
    opened.set()
    registry.clear()


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def told(page) -> str:
    """The following page's one line about the teacher's run (plain text: no Markdown of ours either)."""
    no_exception(page)
    assert "train_button" not in [b.key for b in page.button]
    [line] = [i.value for i in page.info if i.icon == ":material/model_training:"]
    assert "**" not in line
    return line


def room_value(code: str) -> object:
    return room_page.store().snapshot(code).settings.get(TEACHER_TRAINING)


def press_train(tabs, teacher) -> None:  # noqa: F811
    teacher.button(key="train_button").click()
    tabs(teacher, "teacher")
    no_exception(teacher)


def test_a_queued_run_says_it_waits_for_a_slot(tabs, gate, monkeypatch):  # noqa: F811
    """It said "This model is training" while the job waited for one of the server's slots."""
    slots = threading.BoundedSemaphore(1)
    slots.acquire()  # every slot of the server is taken
    monkeypatch.setattr(registry(), "_slots", slots)
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    assert registry().job(SETTINGS).state == "waiting"
    assert room_value(code) == f"waiting@{PROCESS}"
    line = told(tabs(make_app(room=code), "s1"))
    assert "waiting for a free training slot" in line and "is training" not in line
    slots.release()


def test_a_training_run_says_so_and_the_room_names_its_state_and_process(tabs, gate):  # noqa: F811
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    until(lambda: registry().job(SETTINGS).state == "training", "the job did not start training")
    tabs(teacher, "teacher")  # its next whole run publishes the state
    assert room_value(code) == f"training@{PROCESS}"
    assert read_teacher_training(room_value(code)) == TeacherTraining("training", PROCESS)
    line = told(tabs(make_app(room=code), "s1"))
    assert "is training on this server now" in line and "shows the run by itself when it ends" in line


def test_a_run_cancelled_after_the_teacher_left_redraws_the_followers_and_says_so(tabs, gate, monkeypatch):  # noqa: F811
    """The teacher closed the tab: the registry cancelled the job, no page published, and the followers stayed on
    "This model is training" (and, redrawn, were told the run was on another server process)."""
    asked = []
    monkeypatch.setattr(push, "rerun", lambda session, body=None: asked.append(session) or True)
    monkeypatch.setattr(push, "_thread", type("Alive", (), {"is_alive": lambda self: True})())  # no watcher thread
    monkeypatch.setattr(push, "_tick", lambda: None)  # nor one an earlier test started: this test looks
    monkeypatch.setattr(push, "_followers", {})
    monkeypatch.setattr(push, "_stores", {})
    monkeypatch.setattr(push, "_bodies", {})
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert push.followers(code) == 1
    monkeypatch.setattr(registry(), "_alive", lambda session: False)  # every tab that pressed Train has closed
    gate.set()
    until(lambda: registry().job(SETTINGS) is None, "the job was not cancelled")
    # the job is dropped before its end is told (Registry._changed, from the training thread): wait for the telling
    until(lambda: push._followers[code].get("s1") == push.STALE, "the follower was not marked for a redraw")
    assert room_value(code) == f"training@{PROCESS}"  # the teacher's page published nothing since
    push._look(room_page.store(), code, dict(push._followers[code]))
    assert asked == ["s1"]  # the watcher reruns the follower without a new room version
    line = told(tabs(student, "s1"))
    assert "was cancelled before it ended" in line and TAKE_OVER in line


def test_a_stopped_run_shows_what_it_learned_and_how_to_train_all_of_it(tabs, gate):  # noqa: F811
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    until(lambda: registry().job(SETTINGS).state == "training", "the job did not start training")
    tabs(teacher, "teacher")  # the live fragment with its Stop button
    teacher.button(key="stop_button").click()
    tabs(teacher, "teacher")
    gate.set()
    until(lambda: not registry().job(SETTINGS).active, "the job did not stop")
    tabs(teacher, "teacher")
    assert room_value(code) == f"stopped@{PROCESS}"
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert "trained_maps" in keyed_figures(student)  # what it learned so far
    [warning] = [w.value for w in student.warning if "stopped at step" in w.value]
    assert f"To train all 50 steps yourself, {TAKE_OVER}." in warning and "its session's" in warning


def test_a_failed_run_says_its_error_as_plain_text_and_what_to_do(tabs, gate, monkeypatch):  # noqa: F811
    def failing(settings, **kwargs):
        raise RuntimeError("**boom** [x](javascript:alert(1))")

    monkeypatch.setattr(registry(), "_trainer", failing)
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    until(lambda: not registry().job(SETTINGS).active, "the job did not end")
    tabs(teacher, "teacher")
    assert room_value(code) == f"failed@{PROCESS}"
    line = told(tabs(make_app(room=code), "s1"))
    assert "failed, so it has no result" in line and "RuntimeError" in line and TAKE_OVER in line
    assert "**boom**" not in line and "](javascript" not in line  # the error's Markdown is shown as text


def test_a_run_this_process_dropped_says_so(tabs, gate, monkeypatch):  # noqa: F811
    monkeypatch.setattr(registry(), "_keep_finished", 0)  # a finished run is evicted at once
    teacher, code, _ = start_room(tabs, **QUERY)
    press_train(tabs, teacher)
    gate.set()
    until(lambda: registry().job(SETTINGS) is None, "the run was not evicted")
    line = told(tabs(make_app(room=code), "s1"))
    assert "dropped it to make room for newer runs" in line and TAKE_OVER in line
    assert "another server process" not in line
    assert registry().dropped(SETTINGS) == "evicted"


def test_a_run_on_another_process_is_told_from_one_this_process_no_longer_has(tabs, gate):  # noqa: F811
    """Both once read "on another server process": a room that says "training" and a registry without the job."""
    _, code, key = start_room(tabs, **QUERY)
    elsewhere = "0badf00d"
    assert elsewhere != PROCESS
    settings = room_page.store().snapshot(code).settings
    room_page.store().publish(code, key, {**settings, TEACHER_TRAINING: f"training@{elsewhere}"})
    student = tabs(make_app(room=code), "s1")
    line = told(student)
    assert "is on another server process (training when their page last drew" in line and TAKE_OVER in line
    room_page.store().publish(code, key, {**settings, TEACHER_TRAINING: f"trained@{PROCESS}"})  # then cleared
    line = told(tabs(student, "s1"))
    assert "This server process had the run of your teacher's settings and no longer holds it" in line
    assert "another server process" not in line and TAKE_OVER in line


def test_before_the_teacher_presses_train_the_student_is_told_what_to_do(tabs, gate):  # noqa: F811
    _, code, _ = start_room(tabs, **QUERY)
    assert room_value(code) is None
    line = told(tabs(make_app(room=code), "s1"))
    assert "Your teacher has not pressed Train for these settings yet" in line and TAKE_OVER in line


@pytest.mark.parametrize(
    ("settings", "shows"),
    [
        ({"view": "train", "task": "shift"}, True),
        ({"view": "heads", "weights": "trained", "task": "shift"}, True),
        ({"view": "heads", "weights": "random"}, False),
        ({"view": "model", "weights": "minilm"}, False),
    ],
)
def test_a_job_s_start_or_end_redraws_only_the_rooms_that_can_show_one(monkeypatch, settings, shows):
    """The registry's callback reruns the followers of rooms on the train view or trained weights: a job that any
    student of the server starts or ends would otherwise redraw a 200-student hall on the heads view (~2 s of
    server CPU each time)."""
    named = []
    monkeypatch.setattr(push, "redraw", lambda which: named.append(which(settings)))
    room_page._redraw_training_pages()
    assert named == [shows]


def test_a_follower_on_untrained_weights_is_not_told_to_press_train_it_has_not(tabs):  # noqa: F811
    """The heads view of trained weights nobody has trained: the teacher's page says to open the train view and
    press Train (a button); a following page has neither the view bar nor Train, so it says the teacher's run shows
    when it ends, or how to train it oneself, and draws no button."""
    teacher, code, _ = start_room(tabs, view="heads", weights="trained", task="shift", seed="7")
    assert teacher.button(key="open_train")  # the teacher's way on
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    [line] = [i.value for i in student.info if "not been trained" in i.value]
    assert line.startswith("Your teacher's model (shift, these settings) has not been trained yet on this server.")
    assert "turn off “Follow the teacher”, open the train view and press Train" in line
    assert not [b for b in student.button if b.key == "open_train"]
