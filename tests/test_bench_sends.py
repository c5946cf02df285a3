"""The sends bench's own reading and verdict (bench/sends.py), and the protocol's stateful expander
(bench/protocol.py): pure functions, no server."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from streamlit.proto.Block_pb2 import Block
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.protocol import Page, encode, shown_value, widget_key
from bench.sends import TYPE_S, WITHIN_S, count_shown, meets, plan, slower
from dashboard.classroom.class_sentences import count_line


@given(st.integers(0, 10_000))
def test_the_count_is_read_from_the_pages_own_words(n: int) -> None:
    assert count_shown(["12 students in the room", count_line(n)]) == n
    assert count_shown(["12 students in the room"]) is None


def test_the_verdict_takes_each_target_at_its_limit() -> None:
    assert math.isclose(slower(1.1, 1.0), 0.1)
    assert meets(slower(1.1, 1.0), 2.0, 0)  # 10% slower and 2 s: at the targets
    assert not meets(slower(1.12, 1.0), 1.0, 0)
    assert not meets(0.0, 2.01, 0)
    assert not meets(0.0, None, 0)  # the count never showed
    assert not meets(0.0, 1.0, 1)
    assert not meets(slower(math.nan, 1.0), 1.0, 0)  # a run that measured no redraw meets nothing
    assert not meets(slower(1.0, math.nan), 1.0, 0)


@given(st.integers(0, 300), st.integers(0, 99))
def test_every_student_opens_types_and_sends_within_the_window(students: int, seed: int) -> None:
    when = plan(students, seed)
    assert sorted(when) == list(range(students))
    for opened, pressed in when.values():
        assert 0 <= opened <= pressed <= WITHIN_S
        assert pressed - opened <= TYPE_S[1]


def test_a_stateful_expander_is_a_widget_the_tab_sends() -> None:
    """The send box is an expander with ``on_change="rerun"``: the tab keeps it among the page's widgets, shows it
    as the server drew it, and sends it open as the frontend does (a bool)."""
    fm = ForwardMsg()
    fm.delta.add_block.expandable.id = "$$ID-0123abcd-class_send"
    fm.delta.add_block.expandable.expanded = False
    block: Block = fm.delta.add_block
    page = Page(elements={(0, 3): block})
    assert widget_key(block) == "class_send"
    assert page.widgets() == {"class_send": block}
    assert shown_value(block, {}) is False
    state = encode(block, True)
    assert (state.id, state.WhichOneof("value"), state.bool_value) == (block.expandable.id, "bool_value", True)
