"""Values the UI never sends: a client may put anything in a widget's state, and the page neither raises nor stays
broken (issue 32, part 6).

The browser sends each widget's value as a protobuf ``WidgetState``; a client with Python can send any field with any
content. Here the AppTest client is that client: ``get_widget_states`` is wrapped so that one widget's state goes out
as a hostile value (None for a required choice, NaN, ±inf, 1e308, a huge integer, the wrong field, a list, broken
JSON, an empty or huge string). The run must show no exception, and the next ordinary run must be usable (no
exception, the view's maps drawn). Before, 86 of 1,369 such reruns raised (``int(None)`` in settings.py; every
slider state in kv_cache, flash, the train view and the probes), and a wrong type for the quiz's pick box broke the
session for its later runs.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import element_tree
from streamlit.testing.v1.element_tree import Widget

from dashboard.serve.streamlit_runtime import readable
from dashboard.state.url_state import SPECS
from tests.dashboard.conftest import figures, make_app, no_exception

HOSTILE: list[tuple[str | None, object]] = [
    (None, None),  # no value at all: a cleared required choice
    ("double_value", math.nan),
    ("double_value", math.inf),
    ("double_value", -math.inf),
    ("double_value", 1e308),
    ("double_value", -1e308),
    ("int_value", 10**12),
    ("int_value", -1),
    ("bool_value", True),
    ("string_value", ""),
    ("string_value", "x" * 2000),
    ("string_value", "<script>alert(1)</script>"),
    ("string_array_value", []),
    ("string_array_value", ["a", "b", "c"]),
    ("double_array_value", [math.nan]),
    ("double_array_value", [1e308, 0.5, 2.0]),
    ("int_array_value", [1, 2, 3]),
    ("json_value", "{"),
    ("json_value", "[1, 2]"),
]
TEXT_KEYS = {s.key for s in SPECS if s.kind == "text"}
VIEWS = (
    "heads",
    "kv_cache",
    "flash",
    "permutation",
    "steps",
    "model",
    "train",
    "shapes",
    "positions",
    "class",
    "contrast",
)
"""Views with controls of their own (sliders, pickers, switches), and the heads view's quiz."""


def forged(widget_id: str, field: str | None, value: object):
    """A ``get_widget_states`` that sends ``widget_id``'s state as ``field`` = ``value`` (None: no value)."""
    real = element_tree.ElementTree.get_widget_states

    def send(self):
        states = real(self)
        for state in states.widgets:
            if state.id == widget_id:
                kept = WidgetState(id=state.id)
                if field is not None and field.endswith("array_value"):
                    getattr(kept, field).data[:] = value
                elif field is not None:
                    setattr(kept, field, value)
                state.CopyFrom(kept)
        return states

    return send


def keyed_widgets(at) -> list:
    """Every keyed widget on the page, as the client holds them."""

    def walk(node):
        for child in getattr(node, "children", {}).values():
            yield child
            yield from walk(child)

    return [w for w in walk(at._tree) if isinstance(w, Widget) and getattr(w, "key", None)]


def assert_survives(query: dict, pick, hostile: tuple[str | None, object], monkeypatch) -> None:
    at = make_app(**query).run()
    no_exception(at)
    widgets = keyed_widgets(at)
    widget = pick(widgets)
    drawn = bool(figures(at))
    with monkeypatch.context() as m:
        m.setattr(element_tree.ElementTree, "get_widget_states", forged(widget.id, *hostile))
        at.run()
    no_exception(at)
    at.run()  # the next ordinary run: the session is still usable
    no_exception(at)
    if widget.key not in TEXT_KEYS:  # any text is one a user can type: the page says what it cannot draw
        assert bool(figures(at)) == drawn, (widget.key, hostile)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(view=st.sampled_from(VIEWS), index=st.integers(min_value=0), hostile=st.sampled_from(HOSTILE))
def test_any_widget_state_a_client_sends_is_survived(view, index, hostile, monkeypatch):
    assert_survives({"view": view}, lambda widgets: widgets[index % len(widgets)], hostile, monkeypatch)


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: f"{h[0]}={str(h[1])[:12]}")
@pytest.mark.parametrize(
    ("query", "key"),
    [
        ({}, "n_heads"),  # a required segmented control: None was int(None) in settings.py
        ({"view": "kv_cache", "causal": "true"}, "cache_step"),  # the sliders
        ({"view": "flash"}, "block_size"),
        ({"view": "train", "task": "induction"}, "temperature"),
        ({"view": "heads", "quiz": "true"}, None),  # the quiz's pick box
        ({}, "seed"),
        ({}, "sentence"),
    ],
)
def test_the_cases_that_raised_before(query, key, hostile, monkeypatch):
    def pick(widgets):
        if key is None:
            return next(w for w in widgets if w.key.startswith("quiz_pick_"))
        return next(w for w in widgets if w.key == key)

    assert_survives(query, pick, hostile, monkeypatch)


def test_readable_takes_the_widgets_own_field_and_a_value_it_deserializes():
    def index(value):
        return [10, 20][int(value)]

    assert readable(WidgetState(int_value=1), "int_value", index)
    assert not readable(WidgetState(int_value=5), "int_value", index)  # IndexError: not a value it can hold
    assert not readable(WidgetState(string_value="1"), "int_value", index)  # another field
    assert not readable(WidgetState(double_value=math.nan), "double_value", float)  # NaN: no control offers it
    assert readable(WidgetState(), "int_value", lambda v: None)  # no value: the widget's own default
