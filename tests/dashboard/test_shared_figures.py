"""Figures built once per run and shared (``dashboard.page.shared_figures``): the plain figure's chart on the wire (less
the theme's defaults for trace types it has not), built once per run and mode, forgotten with the run, and pinned
to how ``st.plotly_chart`` reads a figure."""

from __future__ import annotations

import gc
import inspect
import json

import numpy as np
import plotly.tools
from streamlit.elements import plotly_chart
from streamlit.testing.v1 import AppTest

from dashboard.figures.heads import head_charts
from dashboard.page import shared_figures
from dashboard.page.shared_figures import SharedFigure, charts_of

TOKENS = ("<b>x</b>", "the", "bank", "the")


def grid(presenter: bool = False, values: bool = False):
    w = np.random.default_rng(3).random((4, 4, 4)).astype(np.float32)
    return head_charts(w / w.sum(-1, keepdims=True), TOKENS, np.tri(4, dtype=bool), presenter=presenter, values=values)


def draw_both() -> None:
    """An app: the same map drawn plain and shared, as the heads view draws it."""
    import streamlit as st

    from dashboard.page.map_columns import MAP_CONFIG
    from dashboard.page.shared_figures import SharedFigure
    from tests.dashboard.test_shared_figures import grid

    figure = grid(values=True).maps[1]
    st.plotly_chart(figure, width="stretch", key="plain", config=MAP_CONFIG)
    st.plotly_chart(SharedFigure(figure), width="stretch", key="shared", config=MAP_CONFIG)


def test_a_shared_figure_sends_the_plain_figures_chart_less_unused_trace_defaults():
    """Every byte the same but the template's defaults for trace types the figure has none of."""
    at = AppTest.from_function(draw_both).run(timeout=60)
    plain, shared = (json.loads(e.proto.spec) for e in at.get("plotly_chart"))
    assert len(at.get("plotly_chart")[0].proto.spec) > 1000  # a real map: tokens, weights, layout
    assert at.get("plotly_chart")[0].proto.config == at.get("plotly_chart")[1].proto.config
    template, trimmed = plain["layout"].pop("template"), shared["layout"].pop("template")
    assert plain == shared  # the traces and the layout, all of it
    assert trimmed["layout"] == template["layout"]  # what Streamlit's frontend themes: whole
    assert {"heatmap", "contour", "table", "scatter"} <= set(template["data"])  # Streamlit's theme, ten types
    assert trimmed["data"] == {"heatmap": template["data"]["heatmap"]}  # the figure's only trace type, as it was
    assert len(at.get("plotly_chart")[1].proto.spec) < 0.85 * len(at.get("plotly_chart")[0].proto.spec)


def test_only_the_templates_of_absent_trace_types_go():
    figure = {
        "data": [{"type": "heatmap"}, {"type": "scatter"}, {"x": [1]}],  # no type: plotly's default, scatter
        "layout": {"template": {"data": {"heatmap": [1], "scatter": [2], "table": [3]}, "layout": {"font": 4}}},
    }
    trimmed = shared_figures.without_unused_templates(figure)
    assert trimmed["layout"]["template"] == {"data": {"heatmap": [1], "scatter": [2]}, "layout": {"font": 4}}
    assert figure["layout"]["template"]["data"]["table"] == [3]  # the figure itself is left as it was
    assert shared_figures.without_unused_templates({"data": [], "layout": {}}) == {"data": [], "layout": {}}


SHARED = SharedFigure(grid().maps[0])
"""One shared figure, drawn by the app below twice (two sessions' worth)."""


def draw_shared_twice() -> None:
    import streamlit as st

    from tests.dashboard.test_shared_figures import SHARED

    st.plotly_chart(SHARED, key="one")
    st.plotly_chart(SHARED, key="two")


def test_drawing_a_shared_figure_leaves_its_dict_as_it_was():
    at = AppTest.from_function(draw_shared_twice).run(timeout=60)
    one, two = (e.proto for e in at.get("plotly_chart"))
    assert one.spec == two.spec
    made = shared_figures.without_unused_templates(grid().maps[0].to_dict())
    assert SHARED.to_dict() == made  # nothing Streamlit did changed the dict every session reads


def test_st_plotly_chart_reads_a_figure_only_through_to_dict():
    """The trick's premise, pinned: Streamlit turns a plotly figure into the dict it serialises with ``to_dict()``."""
    source = inspect.getsource(plotly_chart.PlotlyMixin.plotly_chart)
    assert "plotly.tools.return_figure_from_figure_or_data(" in source
    assert "plotly.io.to_json(figure, validate=False)" in source
    shared = SharedFigure(grid().maps[0])
    assert plotly.tools.return_figure_from_figure_or_data(shared, validate_figure=True) is shared.to_dict()


class FakeRun:
    """Stands for a cached ``core.Run``: only its identity and lifetime matter."""


def test_a_runs_charts_are_built_once_per_mode_and_shared():
    run, builds = FakeRun(), []

    def build(presenter=False):
        builds.append(presenter)
        return grid(presenter=presenter)

    first = charts_of(run, ("heads", False, False), build)
    again = charts_of(run, ("heads", False, False), build)
    projector = charts_of(run, ("heads", True, False), lambda: build(True))
    assert builds == [False, True]
    assert again is first and projector is not first
    assert all(isinstance(f, SharedFigure) for f in [*first.maps, first.colour_bar])
    assert [f.to_dict() for f in first.maps] == [
        shared_figures.without_unused_templates(f.to_dict()) for f in grid().maps
    ]
    assert first.ncols == grid().ncols and first.bar_px == grid().bar_px


def test_a_gone_runs_grids_are_forgotten_at_the_next_look_up():
    runs = [FakeRun(), FakeRun()]
    for run in runs:
        for mode in range(3):
            charts_of(run, mode, grid)
    gone = id(runs[0])
    assert all(((gone,), mode) in shared_figures._grids for mode in range(3))
    del runs[0]
    gc.collect()
    charts_of(runs[0], 0, grid)  # a look-up drops the grids of every run that has ended since the last one
    assert not any(((gone,), mode) in shared_figures._grids for mode in range(3))
    assert all(((id(runs[0]),), mode) in shared_figures._grids for mode in range(3))
