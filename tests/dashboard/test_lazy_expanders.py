"""The code expanders ("The code behind this") and the downloads are drawn only while open (``page.opened``).

Every follower of a room reruns its whole page on each change the teacher makes, so what a page draws that nobody
opened is paid for by every student on every change. A closed expander sends its label and nothing inside it; an
opened one its code or its buttons, on every run after, through a change of the settings; and opening one leaves
the page where it was: a follower keeps following.
"""

from __future__ import annotations

from core import scaled_dot_product_attention
from dashboard.classroom import room_page
from dashboard.page.common import CODE_LABEL, code_key, source_lines
from dashboard.page.downloads import DOWNLOADS_LABEL
from tests.dashboard.conftest import keyed_figures, lazy_expanders, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)


def test_closed_expanders_send_their_labels_and_no_code_or_download_button():
    at = make_app(view="heads").run()
    no_exception(at)
    assert list(lazy_expanders(at, DOWNLOADS_LABEL)) == ["heads_downloads"]
    assert len(lazy_expanders(at, CODE_LABEL)) == 1
    assert all(not e.children for e in at.expander)  # closed: nothing inside
    assert not at.get("code") and not at.get("download_button")


def test_an_opened_expander_draws_its_contents_and_stays_open_through_a_change():
    at = make_app(view="heads").run()
    [code] = lazy_expanders(at, CODE_LABEL)
    at.session_state["heads_downloads"] = True  # what the browser's click sends
    at.run()
    assert {b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")} == {"heads_csv", "heads_npz"}
    assert not at.get("code")  # the other one is still closed
    at.session_state[code] = True
    at.run()
    assert len(at.get("code")) == 2  # the call, then the function
    at.number_input(key="seed").set_value(42).run()  # the call changes, the key does not
    no_exception(at)
    assert len(at.get("code")) == 2 and len(at.get("download_button")) == 2
    assert "seed=42" in at.get("code")[0].value.replace(" ", "")
    at.session_state[code] = False
    at.run()
    assert not at.get("code") and len(at.get("download_button")) == 2


def test_every_step_has_its_own_code_key():
    """The steps view shows lines of the same function in two steps: each step's expander has a key of its own."""
    scores = source_lines(scaled_dot_product_attention, "output = weights @ v")
    assert code_key(scaled_dot_product_attention) != code_key(scaled_dot_product_attention, scores)
    assert code_key(scaled_dot_product_attention, scores) == code_key(scaled_dot_product_attention, scores)
    at = make_app(view="steps", causal="true").run()
    no_exception(at)
    keys = list(lazy_expanders(at, CODE_LABEL))
    assert len(keys) == 11 == len([e for e in at.expander if e.label == CODE_LABEL])  # none shares a key
    assert all(k.replace("_", "").isalnum() for k in keys)  # also the expander's CSS class, st-key-<key>
    assert not at.get("code")


def test_a_follower_who_opens_the_code_keeps_following_and_it_stays_open(tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, seed="7")
    student = tabs(make_app(room=code), "s1")
    no_exception(student)
    assert not student.get("code") and not student.get("download_button")
    [key] = lazy_expanders(student, CODE_LABEL)
    student.session_state[key] = True
    student.session_state["heads_downloads"] = True
    tabs(student, "s1")
    no_exception(student)
    assert student.session_state[room_page.FOLLOW] and student.toggle(key=room_page.FOLLOW).value
    assert len(student.get("code")) == 2 and len(student.get("download_button")) == 2
    teacher.number_input(key="seed").set_value(42)
    tabs(teacher, "teacher")
    tabs(student, "s1")  # what the push's rerun does
    no_exception(student)
    assert "seed 42" in " ".join(c.value for c in student.sidebar.caption)  # still following
    assert keyed_figures(student)["heads_chart"]["data"] == keyed_figures(teacher)["heads_chart"]["data"]
    assert len(student.get("code")) == 2 and len(student.get("download_button")) == 2
    assert "seed=42" in student.get("code")[0].value.replace(" ", "")
