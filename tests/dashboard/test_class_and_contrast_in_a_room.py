"""The class and contrast views in a room: a following student sees the teacher's list or pair and head, drawn the
same, and none of the views' controls (the list box, the examples button, the second sentence, the pairs, the head)."""

from __future__ import annotations

import pytest

from tests.dashboard.conftest import keyed_figures, make_app, no_exception
from tests.dashboard.test_rooms import start_room, tabs  # noqa: F401  (tabs: the fixture)

CHANGES = {
    "class": [
        ("text_area", "class_text", "the cat sat on the mat\nthe dog ran home"),
        ("button_group", "class_head", 2),
    ],
    "contrast": [("text_input", "second", "The bank of the sea gave a loan"), ("button_group", "contrast_head", 3)],
}
"""What the teacher changes on each view, in order."""
SAID = {"class": "**Head 2** across 2 sentences", "contrast": "Head 3, drawn above"}
"""What the student's page then says, as the teacher's does."""


def _controls(at) -> set[str]:
    """The keys of the view's own controls on a page."""
    kinds = ("text_area", "text_input", "button_group", "button")
    keys = {w.key for kind in kinds for w in getattr(at, kind) if w.key}
    return {k for k in keys if k in ("class_text", "class_examples", "class_head", "second", "contrast_head")} | {
        k for k in keys if k.startswith("contrast_pair_")
    }


@pytest.mark.parametrize("view", sorted(CHANGES))
def test_a_following_student_sees_the_teachers_choices_without_the_controls(view, tabs):  # noqa: F811
    teacher, code, _ = start_room(tabs, view=view)
    student = tabs(make_app(room=code), "s1")
    assert _controls(teacher)
    for kind, key, value in CHANGES[view]:
        getattr(teacher, kind)(key=key).set_value(value)
        tabs(teacher, "teacher")
    tabs(student, "s1")  # the push's rerun
    no_exception(student)
    assert not _controls(student)
    ours, theirs = keyed_figures(student), keyed_figures(teacher)
    chart = f"{view}_chart"
    assert ours[chart]["data"] == theirs[chart]["data"]
    words = [m.value for m in (*student.markdown, *student.caption)]
    assert any(SAID[view] in w for w in words), words
