"""Figures built once per run and shared (``dashboard.shared_figures``): the same chart on the wire as the plain
figure, built once per run and mode, forgotten with the run, and pinned to how ``st.plotly_chart`` reads a figure."""

from __future__ import annotations

import gc
import inspect

import numpy as np
import plotly.tools
from streamlit.elements import plotly_chart
from streamlit.testing.v1 import AppTest

from dashboard import shared_figures
from dashboard.figures.heads import head_charts
from dashboard.shared_figures import MODES, SharedFigure, charts_of

TOKENS = ("<b>x</b>", "the", "bank", "the")


def grid(presenter: bool = False, values: bool = False):
    w = np.random.default_rng(3).random((4, 4, 4)).astype(np.float32)
    return head_charts(w / w.sum(-1, keepdims=True), TOKENS, np.tri(4, dtype=bool), presenter=presenter, values=values)


def draw_both() -> None:
    """An app: the same map drawn plain and shared, as the heads view draws it."""
    import streamlit as st

    from dashboard.map_columns import MAP_CONFIG
    from dashboard.shared_figures import SharedFigure
    from tests.dashboard.test_shared_figures import grid

    figure = grid(values=True).maps[1]
    st.plotly_chart(figure, width="stretch", key="plain", config=MAP_CONFIG)
    st.plotly_chart(SharedFigure(figure), width="stretch", key="shared", config=MAP_CONFIG)


def test_a_shared_figure_sends_the_plain_figures_chart_byte_for_byte():
    at = AppTest.from_function(draw_both).run(timeout=60)
    plain, shared = (e.proto for e in at.get("plotly_chart"))
    assert plain.spec == shared.spec and plain.config == shared.config
    assert len(plain.spec) > 1000  # a real map: tokens, weights, layout


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
    assert SHARED.to_dict() == grid().maps[0].to_dict()  # nothing Streamlit did changed the dict every session reads


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
    assert [f.to_dict() for f in first.maps] == [f.to_dict() for f in grid().maps]
    assert first.ncols == grid().ncols and first.bar_px == grid().bar_px


def test_no_run_keeps_more_than_its_modes_and_a_gone_run_is_forgotten():
    run = FakeRun()
    for mode in range(MODES + 3):
        charts_of(run, mode, grid)
    assert len(shared_figures._grids[id(run)]) == MODES
    key = id(run)
    del run
    gc.collect()
    assert key not in shared_figures._grids
