"""The lean follower page: a student who follows draws no settings widgets, yet shows the teacher's maps with the
teacher's values; "Follow the teacher" off gives the controls back, starting from the teacher's settings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core import AttentionConfig
from dashboard.classroom import follower_page, push, room_page
from dashboard.classroom.tours import load_tours
from dashboard.state.settings import SETTING_KEYS, Settings
from dashboard.state.url_state import address_text, read, settings_at
from dashboard.views import VIEWS
from tests.conftest import require_minilm
from tests.dashboard.conftest import keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

SIDEBAR_KEYS = SETTING_KEYS
"""Every settings widget of the full sidebar."""


def drawn(at, key: str) -> bool:
    return any(getattr(w, "key", None) == key for w in _walk(at.sidebar))


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def charts(at) -> dict:
    """The page's charts by key, as Plotly JSON."""
    return keyed_figures(at)


def test_a_follower_page_has_no_settings_widgets_and_the_teachers_maps(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, seed="7", n_heads="2", sentence="the cat sat on the mat", causal="true")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert not [k for k in SIDEBAR_KEYS if drawn(student, k)]  # no sentence box, no seed, no toggles
    assert drawn(student, room_page.FOLLOW) and drawn(student, "room")  # the room bar and the way back
    tabs(teacher, "teacher")
    ours, theirs = charts(student), charts(teacher)
    assert "heads_chart" in ours and ours["heads_chart"]["data"] == theirs["heads_chart"]["data"]
    line = " ".join(c.value for c in student.sidebar.caption)
    assert "seed 7" in line and "6 tokens" in line and "2 heads of d_k 32" in line and "masked" in line


def test_a_follower_follows_the_teachers_next_change(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    tabs(student, "s1")  # what the push's rerun does
    no_exception(student)
    assert charts(student)["heads_chart"]["data"] == charts(teacher)["heads_chart"]["data"]
    assert "seed 42" in " ".join(c.value for c in student.sidebar.caption)


def test_a_following_page_marks_the_version_its_body_drew_to_the_end(tabs):  # noqa: F811
    """The page's 30 s check compares the room with what the body drew to its end (``room_page.DRAWN``), not with
    the version a run applied: a body run Streamlit cut short (10% of 100 students per change in bench.load
    --classroom) applied its version and drew part of it, and the old check then saw nothing to redraw."""
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    first = room_page.store().snapshot(code).version
    assert student.session_state[room_page.DRAWN] == (code, first)
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    newer = room_page.store().snapshot(code).version
    assert newer != first and student.session_state[room_page.DRAWN] == (code, first)  # not drawn yet
    tabs(student, "s1")
    assert student.session_state[room_page.DRAWN] == (code, newer)


def _check_once(code: str) -> None:
    """A page that runs the following page's check (``room_page._check``) in its first run only, counting runs: a
    second run is the check's ``st.rerun(scope="app")``."""
    import streamlit as st

    from dashboard.classroom import room_page

    st.session_state["runs"] = st.session_state.get("runs", 0) + 1
    if st.session_state["runs"] == 1:
        room_page._check(code)


@pytest.mark.parametrize(
    ("pushed", "drew_it", "closed", "pending", "reruns"),
    [
        (True, False, False, False, True),  # a pushed body applied the new version but Streamlit ended it early
        (True, True, False, False, False),  # the body drew it: nothing to redraw
        (False, False, False, False, False),  # a whole run: the body draws after the check
        (False, True, True, False, False),  # a whole run asks nothing (issue 32): a room closed since, push reruns it
        (True, True, True, False, True),
        (True, False, False, True, False),  # the watcher's rerun for the version is on its way: left to it
        (True, True, True, True, True),  # a closed room is said at once, whatever the watcher asked
    ],
)
def test_the_pages_check_reruns_a_page_its_body_did_not_draw_to_the_end(
    tabs,  # noqa: F811
    monkeypatch,
    pushed,
    drew_it,
    closed,
    pending,
    reruns,
):
    """The 30 s check compares the room with what the body drew to its end (``DRAWN``), not with what a cut-short
    run applied (``APPLIED``, here the newest version either way): compared with ``APPLIED``, the first case passes
    no rerun, and the student showed the change only at the teacher's next one. A version the watcher has asked a
    rerun for (``push.pending``) is left to that rerun: a whole run as well drew the page twice under load, and the
    pushed body dropped the body that whole run drew before it was sent."""
    asked: list[tuple[str, int]] = []
    monkeypatch.setattr(push, "pending", lambda session, version: asked.append((session, version)) or pending)
    teacher, code, key = start_room(tabs)
    first = room_page.store().snapshot(code).version
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    room = room_page.store().snapshot(code)
    assert room.version != first
    if closed:
        room_page.store().close(code, key)
    monkeypatch.setattr(room_page, "fragment_rerun", lambda: pushed)
    page = AppTest.from_function(_check_once, args=(code,), default_timeout=30)
    page.session_state[room_page.APPLIED] = (code, room.version, dict(room.settings))
    page.session_state[room_page.DRAWN] = (code, room.version if drew_it else first)
    tabs(page, "s1")
    no_exception(page)
    assert page.session_state["runs"] == (2 if reruns else 1)
    assert [v for _, v in asked] == ([room.version] if pushed and not drew_it and not closed else [])


def _follow_on_once(code: str) -> None:
    """A page whose run is a following body's rerun: ``follow_on`` reads the room; the test reads what it said."""
    import streamlit as st

    from dashboard.classroom import room_page

    state = room_page.follow_on(code)
    st.session_state["followed"] = None if state is None else state.room.version


@pytest.mark.parametrize("reason", [None, "closed", "teacher", "follow off", "brought back", "explored"])
def test_a_body_rerun_runs_the_page_whole_for_each_thing_only_a_whole_run_shows(tabs, reason):  # noqa: F811
    """``follow_on`` keeps a pushed body run only while nothing outside the body changed: a closed room, this browser
    now the room's teacher, Follow turned off, "Bring everyone back" and a control the student changed each make it
    return None (the page then runs whole, and says so). Otherwise it applies the room's newest settings."""
    teacher, code, key = start_room(tabs)
    shown = room_page.store().snapshot(code)  # what the student's page drew last
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    room = room_page.store().snapshot(code)
    assert shown.settings["seed"] != 42
    page = AppTest.from_function(_follow_on_once, args=(code,), default_timeout=30)
    page.session_state[room_page.RECALLED] = (code, room.recall)
    page.session_state[room_page.APPLIED] = (code, shown.version, dict(shown.settings))
    page.session_state["seed"] = shown.settings["seed"]
    if reason == "closed":
        room_page.store().close(code, key)
    elif reason == "teacher":
        page.session_state[room_page.TEACHER] = (code, key)
    elif reason == "follow off":
        page.session_state[room_page.FOLLOW] = False
    elif reason == "brought back":
        room_page.store().recall_students(code, key)
    elif reason == "explored":
        page.session_state["seed"] = 3
    tabs(page, "s1")
    no_exception(page)
    assert page.session_state["followed"] == (None if reason else room.version)
    if reason is None:  # the newest settings are the page's
        assert page.session_state["seed"] == 42 and page.session_state[room_page.APPLIED][1] == room.version


def test_stopping_following_gives_the_controls_back_at_the_teachers_settings(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, seed="7", n_heads="2")
    student = tabs(make_app(room=code), "s1")
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")
    no_exception(student)
    assert all(drawn(student, k) for k in ("sentence", "seed", "n_heads", "causal", "weights"))
    assert student.number_input(key="seed").value == 7 and student.button_group(key="n_heads").value == 2
    assert charts(student)["heads_chart"]["data"] == charts(teacher)["heads_chart"]["data"]
    student.number_input(key="seed").set_value(3)  # and the controls work
    tabs(student, "s1")
    assert student.number_input(key="seed").value == 3
    assert room_page.store().snapshot(code).settings["seed"] == 7


def settings_of_values(values: dict) -> Settings:
    """The settings of a page whose controls hold ``values`` (by key; the rest at their defaults)."""
    return settings_at({k: address_text(v) for k, v in values.items()})


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"d_model": 128, "n_heads": 8, "positional": "rope", "causal": True, "seed": 3, "kv_heads": 2, "window": 3},
        {"weights": "minilm", "layer": 4, "sentence": "the river bank", "seed": 9},
        {"weights": "previous", "scaled": False, "alibi": True, "prefix": 2, "causal": True},
    ],
)
def test_settings_of_the_sidebars_defaults_and_values(values):
    """What a page with these values shows, written out by hand from the sidebar's rules."""
    settings = settings_of_values(values)
    if not values:
        assert settings == Settings()
        return
    assert settings.sentence == values.get("sentence", Settings.sentence)
    c = settings.config
    if values.get("weights") == "minilm":
        assert (c.d_model, c.n_heads, c.positional, settings.layer) == (384, 12, "learned", 4)
    elif values.get("weights") == "previous":
        assert not c.scaled or not settings.kind.supports("unscaled")
        assert c.alibi is bool(settings.kind.supports("alibi"))
    else:
        assert c == AttentionConfig(
            d_model=128, n_heads=8, positional="rope", causal=True, seed=3, kv_heads=2, window=3, weights="random"
        )


def test_the_teacher_line_reads_the_run():
    settings = settings_of_values({"sentence": "a b c", "n_heads": 2, "seed": 5})
    run = follower_page._run(settings)
    assert run is not None and len(run.tokens) == 3
    line = follower_page.teacher_line(settings, run)
    assert "3 tokens" in line and "2 heads of d_k 32" in line and "seed 5" in line and "no mask" in line
    assert follower_page.settings_line(settings) == line  # made once per settings: the same line


def test_the_teacher_line_of_the_pretrained_model_reads_its_layer():
    require_minilm()
    settings = settings_of_values({"weights": "minilm", "layer": 4, "sentence": "the river bank"})
    run = follower_page._run(settings)
    assert run is not None and run.layer == 4
    line = follower_page.teacher_line(settings, run)
    assert "12 heads of d_k 32" in line and "d_model 384" in line and "layer 4" in line


def test_a_line_made_while_minilm_failed_gets_its_facts_after_try_again(monkeypatch):
    """The line was cached on the settings: made while MiniLM could not load, it stayed without facts for good."""
    require_minilm()
    from core.pretrained import WeightsNotFound
    from dashboard.compute import computations

    settings = settings_of_values({"weights": "minilm", "layer": 3, "sentence": "the cat sat"})

    def offline(_directory, **_):
        raise WeightsNotFound("offline")

    computations.minilm_or_error.clear()
    with monkeypatch.context() as patched:
        patched.setattr(computations, "load_minilm", offline)
        assert isinstance(computations.minilm(), str)
        assert "d_model" not in follower_page.settings_line(settings)  # the choices only: no run to read
    computations.minilm_or_error.clear()  # what "Try again" does
    line = follower_page.settings_line(settings)
    assert "12 heads of d_k 32" in line and "layer 3" in line


def test_a_sentence_the_views_refuse_gives_the_choices_only():
    settings = settings_of_values({"sentence": "   "})
    assert follower_page._run(settings) is None
    assert follower_page.settings_line(settings).startswith("Following the teacher: random weights, seed 18.")


@pytest.mark.parametrize("known", [{}, {"seed": 3, "d_model": 128, "weights": "minilm"}, {"n_heads": 3}])
def test_an_address_with_nothing_new_reads_as_nothing(known):
    """``read_address`` skips ``read`` when nothing in the address is new: what it uses of the reading is empty."""
    r = read({}, known)
    assert (r.values, r.problems, r.ignored, r.unknown) == ({}, {}, (), 0)


def _all_keys(at) -> set[str]:
    return {k for root in (at.main, at.sidebar) for node in _walk(root) if (k := getattr(node, "key", None))}


CONTROLS = ("view", "tour", "average", "values", "quiz", "tour_step", "tour_back", "tour_next", "welcome_open")
"""Controls a follower cannot use without leaving following: none is drawn on a following page."""


def test_a_follower_page_draws_no_controls_it_cannot_use(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    assert {"view", "tour", "average", "values", "quiz"} <= _all_keys(teacher)  # the teacher's page has them
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert not set(CONTROLS) & _all_keys(student)
    assert not [b for b in student.button if b.label == "Welcome"]
    assert [h.value for h in student.sidebar.header] == ["Attention Lab"]  # once: the lean sidebar's top
    assert drawn(student, room_page.FOLLOW) and drawn(student, "room")  # the way back to the controls


def test_the_teachers_switches_and_view_show_on_a_following_page(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, sentence="the cat sat")
    student = tabs(make_app(room=code), "s1")
    teacher.toggle(key="values").set_value(True)
    teacher.toggle(key="average").set_value(True)
    tabs(teacher, "teacher")
    tabs(student, "s1")  # the push's rerun
    no_exception(student)
    ours, theirs = charts(student), charts(teacher)
    assert "average_chart" in ours and ours["average_chart"] == theirs["average_chart"]
    assert ours["heads_chart"] == theirs["heads_chart"] and "text" in str(ours["heads_chart"]["data"])  # values
    teacher.button_group(key="view").set_value("steps")
    tabs(teacher, "teacher")
    tabs(student, "s1")
    no_exception(student)
    teaches = [c.value for c in student.main.caption][:1]
    assert teaches and teaches == [c.value for c in teacher.main.caption][:1]  # the steps view's line, not heads'
    assert "heads_chart" not in charts(student)


def test_stopping_following_gives_the_switches_back_at_the_teachers_values(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, sentence="the cat sat")
    teacher.toggle(key="values").set_value(True)
    tabs(teacher, "teacher")
    student = tabs(make_app(room=code), "s1")
    assert "values" not in _all_keys(student)
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")
    no_exception(student)
    assert student.toggle(key="values").value is True and student.button_group(key="view").value == "heads"
    assert charts(student)["heads_chart"] == charts(teacher)["heads_chart"]


def test_a_follower_reads_the_teachers_tour_step_without_its_buttons(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs)
    slug = next(iter(load_tours()))
    teacher.selectbox(key="tour").set_value(slug)
    tabs(teacher, "teacher")
    teacher.button(key="tour_next").click()
    tabs(teacher, "teacher")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    notes = [m.value for m in student.main.markdown if "step 2 of" in m.value]
    teachers = [m.value for m in teacher.main.markdown if m.value.startswith("**2. ")]
    assert len(notes) == 1 and len(teachers) == 1
    assert notes[0].split("\n", 1)[1] == teachers[0].split("\n", 1)[1]  # the same note, read from the same run
    tour = load_tours()[slug]
    assert notes[0].startswith(f"**{tour.title}, step 2 of {len(tour.steps)}: {tour.steps[1].title}**")
    assert teachers[0].startswith(f"**2. {tour.steps[1].title}**")
    assert not {"tour_back", "tour_next", "tour_end", "tour_step"} & _all_keys(student)


def test_a_following_page_says_in_the_page_which_room_it_follows(tabs):  # noqa: F811
    """A phone's sidebar is collapsed: the page itself, not only the sidebar, says that it follows room CODE."""
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert any(f"Following room {code}" in c.value for c in student.main.caption)
    tabs(teacher, "teacher")
    assert not any("Following room" in c.value for c in [*teacher.main.caption, *teacher.sidebar.caption])
    student.toggle(key=room_page.FOLLOW).set_value(False)  # exploring on their own: no longer following
    tabs(student, "s1")
    no_exception(student)
    assert not any("Following room" in c.value for c in [*student.main.caption, *student.sidebar.caption])


def captions_in_a_row(block) -> list[str]:
    """The captions drawn inside a horizontal container (a row beside other elements), at any depth."""
    from streamlit.proto.Block_pb2 import Block as BlockProto
    from streamlit.testing.v1.element_tree import Block

    found = []
    for child in block.children.values():
        if isinstance(child, Block):
            flex = getattr(child.proto, "flex_container", None)  # columns and expanders carry their own message
            row = flex is not None and flex.direction == BlockProto.FlexContainer.Direction.HORIZONTAL
            found += [c.value for c in child.caption] if row else captions_in_a_row(child)
    return found


def test_a_presenters_following_page_says_it_under_the_heading_row_not_squeezed_beside_it(tabs):  # noqa: F811
    """On a projector the heading, Share with the class and the line shared one row: beside the flash view's long
    heading the line was a column of five lines pushing the view down."""
    _, code, _ = start_room(tabs)
    student = tabs(make_app(room=code, presenter="true"), "s1")
    no_exception(student)
    assert any(f"Following room {code}" in c.value for c in student.main.caption)
    assert not [c for c in captions_in_a_row(student.main) if "Following room" in c]


@pytest.mark.parametrize("value, shown", [(None, 1), ("x", 1), (float("nan"), 1), ("2", 2), (2.0, 2), (99, -1), (0, 1)])
def test_a_following_page_shows_a_tour_step_for_any_value_the_room_holds(tabs, value, shown):  # noqa: F811
    """tour_bar did ``int(number)`` on the room's value: None or text crashed the follower's page."""
    _, code, key = start_room(tabs)
    slug = next(iter(load_tours()))
    n = len(load_tours()[slug].steps)
    settings = dict(room_page.store().snapshot(code).settings)
    room_page.store().publish(code, key, settings | {"tour": slug, "tour_step": value})
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    step = shown if shown > 0 else n
    assert [m.value for m in student.main.markdown if f"step {step} of {n}:" in m.value]


def test_the_followed_keys_are_each_url_key_once_and_the_quiz_question():
    keys = room_page.FOLLOWED_KEYS
    assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
    assert "quiz_question" in keys and not {"room", "presenter"} & set(keys)


def test_a_presenters_following_page_has_no_share_with_the_class(tabs):  # noqa: F811
    """Its dialog gave a following student the room's view as a plain link: who scanned it did not follow the room,
    and sharing the room is the teacher's (the teacher's "Room CODE" button)."""
    teacher, code, _ = start_room(tabs, presenter="true")
    assert "share_button" in _all_keys(teacher) and "room_show" in _all_keys(teacher)
    student = tabs(make_app(room=code, presenter="true"), "s1")
    no_exception(student)
    assert not {"share_button", "room_show", "room_start"} & _all_keys(student)
    student.toggle(key=room_page.FOLLOW).set_value(False)  # exploring on their own: their view is theirs to share
    tabs(student, "s1")
    no_exception(student)
    assert "share_button" in _all_keys(student) and not {"room_show", "room_start"} & _all_keys(student)


def test_try_one_on_a_following_page_opens_the_example_to_explore(tabs):  # noqa: F811
    """The example's sentence and layer were overwritten by the teacher's as the page stopped following: the student
    got the teacher's sentence at the example's head, a map showing no such pattern."""
    require_minilm()
    from dashboard.page.common import PRETRAINED_EXAMPLES

    _, code, _ = start_room(tabs, weights="minilm", sentence="the cat sat", layer="1")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    sentence, layer, head, _ = PRETRAINED_EXAMPLES[1]
    student.button(key="example_1").click()
    tabs(student, "s1")
    no_exception(student)
    assert student.session_state[room_page.FOLLOW] is False  # exploring on their own, and told so
    assert any("exploring on your own" in t.value for t in student.toast)
    assert student.text_input(key="sentence").value == sentence and student.session_state["layer"] == layer
    assert student.session_state["head"] == head
    assert room_page.store().snapshot(code).settings["sentence"] == "the cat sat"  # the teacher's stays


def test_keep_the_beginning_on_a_following_page_keeps_it_to_explore(tabs):  # noqa: F811
    """The same overwrite as Try one's: the kept beginning went back to the teacher's refused sentence."""
    from core.tokens import fitting_prefix
    from tests.dashboard.test_long_text import PARAGRAPH

    teacher, code, _ = start_room(tabs)
    teacher.text_input(key="sentence").set_value(PARAGRAPH)
    tabs(teacher, "teacher")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    student.button(key="sentence_keep").click()
    tabs(student, "s1")
    no_exception(student)
    assert student.session_state[room_page.FOLLOW] is False
    assert student.text_input(key="sentence").value == fitting_prefix(PARAGRAPH) and "heads_chart" in charts(student)


def test_the_flash_block_sliders_show_the_teachers_block_and_explore_when_moved(tabs):  # noqa: F811
    """Kept on a following page: they hold the teacher's block, and moving one is the student's own look, said so."""
    teacher, code, _ = start_room(tabs, view="flash", sentence="the cat sat on the mat again and again")
    teacher.select_slider(key="block").set_value(3)
    tabs(teacher, "teacher")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert student.select_slider(key="block").value == 3
    assert charts(student)["flash_block_chart"] == charts(teacher)["flash_block_chart"]
    student.select_slider(key="block").set_value(2)
    tabs(student, "s1")
    no_exception(student)
    assert student.session_state[room_page.FOLLOW] is False
    assert any("exploring on your own" in t.value for t in student.toast)
    assert student.select_slider(key="block").value == 2 and any("block 2 of" in c.value for c in student.caption)
    assert student.text_input(key="sentence").value == "the cat sat on the mat again and again"
    assert room_page.store().snapshot(code).settings["block"] == 3  # the teacher's stays


def test_a_following_page_has_no_train_button_and_shows_the_teachers_run(tabs):  # noqa: F811
    """Its Train button made the student the owner of the class's run (the teacher's page then only watched it and
    could not stop it), and a following page never learnt that the teacher's run started or ended."""
    import dataclasses
    import time

    from core.training import recommended
    from dashboard.compute.training_jobs import registry

    registry.clear()
    try:
        teacher, code, _ = start_room(tabs, view="train", task="shift", seed="4", train_steps="50")
        student = tabs(make_app(room=code), "s1")
        no_exception(student)
        assert "train_button" not in _all_keys(student) and "train_button" in _all_keys(teacher)
        assert any("has not pressed Train" in i.value for i in student.info)
        version = room_page.store().snapshot(code).version
        teacher.button(key="train_button").click()
        tabs(teacher, "teacher")
        assert room_page.store().snapshot(code).version > version  # the followers are pushed a rerun
        tabs(student, "s1")
        no_exception(student)
        assert "train_button" not in _all_keys(student)
        line = " ".join(i.value for i in student.info)
        assert (
            "is training on this server now" in line
            or "waiting for a free" in line
            or "trained_maps" in charts(student)
        )
        settings = dataclasses.replace(recommended("shift"), seed=4, steps=50)
        deadline = time.monotonic() + 60
        while registry().job(settings).active:
            assert time.monotonic() < deadline, "training did not finish"
            time.sleep(0.05)
        version = room_page.store().snapshot(code).version
        tabs(teacher, "teacher")  # what the teacher's live fragment does as the run ends
        assert room_page.store().snapshot(code).version > version
        tabs(student, "s1")
        no_exception(student)
        assert charts(student)["trained_maps"] == charts(teacher)["trained_maps"]
        registry.clear()  # this process no longer holds the run the room names: the page says so, not "elsewhere"
        tabs(student, "s1")
        no_exception(student)
        assert any("no longer holds it" in i.value for i in student.info)
        assert "train_button" not in _all_keys(student)
    finally:
        registry.clear()


def test_a_follower_sees_the_teachers_permutation_as_it_changes(tabs):  # noqa: F811
    """perm_mode, perm_seed and perm_text are the teacher's on a following page, through each change (a seed the
    teacher's shuffle widget dropped while in reverse comes back with it)."""
    teacher, code, _ = start_room(tabs, view="permutation", sentence="the cat sat on the mat")
    student = tabs(make_app(room=code), "s1")
    steps = [
        ("perm_mode", "shuffle"),
        ("perm_seed", 5),
        ("perm_mode", "reverse"),
        ("perm_mode", "shuffle"),
        ("perm_mode", "retype"),
        ("perm_text", "mat the on sat cat the"),
        ("perm_mode", "shuffle"),
        ("perm_seed", 9),
    ]
    for key, value in steps:
        if key == "perm_mode":
            teacher.button_group(key=key).set_value(value)
        elif key == "perm_text":
            teacher.text_input(key=key).set_value(value)
        else:
            teacher.number_input(key=key).set_value(value)
        tabs(teacher, "teacher")
        tabs(student, "s1")  # the push's rerun
        no_exception(student)
        assert student.session_state[room_page.FOLLOW] is True, key
        ours, theirs = charts(student), charts(teacher)
        drawn = (key, value) != ("perm_mode", "retype")  # retyping starts with an empty box: no maps yet
        assert drawn == ({"permutation_chart", "permutation_output_chart"} <= set(theirs)), (key, value)
        assert set(ours) == set(theirs) and all(ours[k]["data"] == theirs[k]["data"] for k in theirs), (key, value)
        assert student.session_state["perm_mode"] == teacher.session_state["perm_mode"]


def test_following_again_then_stopping_gives_the_teachers_new_settings_not_the_old_exploration(tabs):  # noqa: F811
    """Stopping keeps only what the leaving click changed (``url_state.settle``): a value the student explored
    before following again is not kept over the teacher's."""
    teacher, code, _ = start_room(tabs, seed="7")
    student = tabs(make_app(room=code), "s1")
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")
    student.number_input(key="seed").set_value(3)  # exploring on their own
    tabs(student, "s1")
    student.toggle(key=room_page.FOLLOW).set_value(True)
    tabs(student, "s1")
    teacher.number_input(key="seed").set_value(11)
    tabs(teacher, "teacher")
    tabs(student, "s1")
    student.toggle(key=room_page.FOLLOW).set_value(False)
    tabs(student, "s1")
    no_exception(student)
    assert student.number_input(key="seed").value == 11
    assert charts(student)["heads_chart"]["data"] == charts(teacher)["heads_chart"]["data"]


def test_the_view_s_line_shares_one_row_with_the_teacher_key_component(tabs):  # noqa: F811
    """Off a projector class_bar draws at most the zero-height teacher-key component (a follower's later runs:
    nothing): in a container of its own under the view's line it took one of Streamlit's 16 px gaps above
    "Following room CODE", empty or not (a phone's first screen; measured in chromium by
    tests/e2e/test_room_quiz_in_browser.py). The line shares the container's row instead, with no element added."""
    _, code, _ = start_room(tabs)
    student = tabs(make_app(room=code, view="heads"), "s1")
    no_exception(student)
    assert VIEWS["heads"].teaches in captions_in_a_row(student.main)
    assert not [c for c in captions_in_a_row(student.main) if "Following room" in c]  # under the row, as before


def test_heads_8_on_the_teachers_page_is_multi_head_on_every_students_page_too(tabs):  # noqa: F811
    """Students read "sharing 2 K/V heads" in their sidebars when the teacher clicked Heads 8 (K/V heads kept their
    old value): the room took the teacher's widget values, not the address the teacher's page showed."""
    teacher, code, _ = start_room(tabs)
    student = tabs(make_app(room=code), "s1")
    teacher.button_group(key="n_heads").set_value(8)
    tabs(teacher, "teacher")
    tabs(student, "s1")
    no_exception(student)
    line = " ".join(c.value for c in student.sidebar.caption)
    assert "8 heads" in line and "K/V" not in line, line
    assert student.session_state["_settings_shown"] == teacher.session_state["_settings_shown"]


def test_a_following_page_says_what_the_teachers_weights_need_without_the_button_that_changes_them(tabs):  # noqa: F811
    """The previous-token weights without learned positions: the teacher's page warns and offers the fix; a
    follower's warns without telling to switch a control it has not, and draws no button (it would change a setting
    of a page that follows)."""
    teacher, code, _ = start_room(tabs, weights="previous")
    assert [b for b in teacher.button if b.key == "use_learned"]
    assert "Switch positional encoding" in teacher.warning[0].value
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    [warning] = student.warning
    assert "learned" in warning.value and "Switch positional encoding" not in warning.value
    assert not [b for b in student.button if b.key == "use_learned"]
