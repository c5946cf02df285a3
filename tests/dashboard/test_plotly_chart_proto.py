"""``dashboard.plotly_chart_proto`` builds the element ``st.plotly_chart`` builds, from a spec made once.

It goes below Streamlit's public API: these tests draw one figure both ways and compare what reaches
``DeltaGenerator._enqueue`` (the element proto, its layout, its agent description), so a Streamlit that builds the
chart differently fails here, not silently on the page.
"""

from __future__ import annotations

import inspect

from streamlit.delta_generator import DeltaGenerator
from streamlit.elements import plotly_chart as streamlit_plotly_chart
from streamlit.testing.v1 import AppTest

from dashboard.plotly_chart_proto import spec_of
from dashboard.shared_figures import SharedFigure, without_unused_templates
from tests.dashboard.test_shared_figures import grid

CALLS: dict[str, list[tuple]] = {}
"""Per app run: the ``_enqueue`` calls of each way of drawing."""


def draw(way: str, width: str | int = "stretch") -> None:
    """An app: one shared map drawn ``way`` ("streamlit": ``st.plotly_chart``; "ours": ``plotly_chart_proto``),
    inside a column as the heads view draws it; every ``_enqueue`` call of a chart recorded in ``CALLS[way]``."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    from dashboard.map_columns import MAP_CONFIG
    from dashboard.plotly_chart_proto import plotly_chart
    from dashboard.shared_figures import SharedFigure
    from tests.dashboard.test_plotly_chart_proto import CALLS, record
    from tests.dashboard.test_shared_figures import grid

    figure = SharedFigure(grid(values=True).maps[1])
    original = DeltaGenerator._enqueue
    DeltaGenerator._enqueue = record(original, CALLS.setdefault(way, []))
    try:
        with st.columns(2)[1]:
            if way == "streamlit":
                st.plotly_chart(figure, width=width, key="map", config=MAP_CONFIG)
            else:
                plotly_chart(figure.to_dict(), figure.spec, width=width, key="map", config=MAP_CONFIG)
    finally:
        DeltaGenerator._enqueue = original


def record(original, calls: list):
    def _enqueue(self, delta_type, element_proto, layout_config=None, has_one_shot_effect=False, agent_props=None):
        if delta_type == "plotly_chart":
            calls.append((element_proto.SerializeToString(deterministic=True), layout_config, has_one_shot_effect))
        return original(self, delta_type, element_proto, layout_config, has_one_shot_effect, agent_props)

    return _enqueue


def both(width: str | int = "stretch") -> tuple[tuple, tuple]:
    CALLS.clear()
    ours = AppTest.from_function(draw, args=("ours", width)).run(timeout=60)
    theirs = AppTest.from_function(draw, args=("streamlit", width)).run(timeout=60)
    assert not ours.exception and not theirs.exception
    [mine], [streamlit] = CALLS["ours"], CALLS["streamlit"]
    return mine, streamlit


def test_the_element_is_the_one_st_plotly_chart_builds_field_for_field():
    mine, streamlit = both()
    assert mine == streamlit  # proto bytes (spec, config, theme, form, id), layout, no one-shot effect
    assert len(mine[0]) > 1000  # a real map


def test_a_fixed_width_chart_too():
    """The colour bar: a width in pixels."""
    mine, streamlit = both(width=180)
    assert mine == streamlit and mine[1].width == 180


def test_the_spec_is_st_plotly_charts_json_of_the_figure():
    figure = grid().maps[0]
    assert SharedFigure(figure).spec == spec_of(without_unused_templates(figure.to_dict()))
    source = inspect.getsource(streamlit_plotly_chart.PlotlyMixin.plotly_chart)
    assert "plotly_chart_proto.spec = plotly.io.to_json(figure, validate=False)" in source
    assert "self.dg._enqueue(" in source and "_enqueue" in DeltaGenerator.__dict__


def test_a_shared_figure_is_turned_into_json_once_not_per_chart(monkeypatch):
    """The map columns send a shared figure's spec as it is; a plain figure still goes through ``st.plotly_chart``."""
    import plotly.io

    made = []
    to_json = plotly.io.to_json
    monkeypatch.setattr(plotly.io, "to_json", lambda *a, **k: made.append(1) or to_json(*a, **k))
    shared = SharedFigure(grid().maps[0])
    assert made == [1]  # built: its JSON, once
    AppTest.from_function(_draw_three, args=(shared,)).run(timeout=60)
    assert made == [1, 1]  # three charts drawn: the shared one twice (no JSON made), the plain one once


def _draw_three(shared) -> None:
    from dashboard.map_columns import MAP_CONFIG, chart
    from tests.dashboard.test_shared_figures import grid

    chart(shared, width="stretch", key="a", config=MAP_CONFIG)
    chart(shared, width="stretch", key="b", config=MAP_CONFIG)
    chart(grid().maps[0], width="stretch", key="c", config=MAP_CONFIG)
