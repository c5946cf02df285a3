"""Figures built once per run and shared (``dashboard.page.shared_figures``): the plain figure's chart on the wire (less
the theme's defaults for trace types it has not), built once per run and mode, forgotten with the run, and pinned
to how ``st.plotly_chart`` reads a figure; the steps view's figures, each keyed by all its build reads besides the
run, sent as the plain figures and built by no second session."""

from __future__ import annotations

import gc
import inspect
import json
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import plotly.tools
from streamlit.elements import plotly_chart
from streamlit.runtime.state.common import user_key_from_element_id
from streamlit.testing.v1 import AppTest

from dashboard.compute import computations
from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import head_charts
from dashboard.page import shared_figures
from dashboard.page.shared_figures import SharedFigure, charts_of
from dashboard.state.settings import DEFAULTS
from dashboard.views import steps
from tests.dashboard.conftest import make_app, no_exception

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


# --- the steps view ----------------------------------------------------------------------------------------------

STEPS_PAGES = (
    {},
    {"step_head": "2"},  # another head of the same run
    {"step_head": "2", "presenter": "true"},  # the same head on a projector
    {"step_head": "2", "presenter": "true", "first_step": "3"},  # QKᵀ first: it leaves room for the pickers
    {"step_head": "2", "presenter": "true", "probe_query": "5", "probe_key": "2"},
    {"step_head": "2", "presenter": "true", "probe_query": "5", "probe_key": "3"},
    {"step_head": "2", "presenter": "true", "probe_query": "6", "probe_key": "3"},
    {"causal": "true", "positional": "rope", "step_head": "3"},  # the mask and its conventions; Q, K before RoPE
    {"causal": "true", "positional": "rope", "step_head": "4", "first_step": "2"},
    {"causal": "true", "alibi": "true", "kv_heads": "2", "step_head": "3", "first_step": "4"},  # GQA, ALiBi's bias
    {"causal": "true", "alibi": "true", "kv_heads": "2", "step_head": "4", "first_step": "4"},
)
"""Steps pages drawn in turn in one process: each differs from one before it, on the same run, by one thing a figure
is built from (the head, the projector, the first step, the probe's positions), so a key that left it out would
hand a page the figure an earlier page built."""


def sent_specs(at: AppTest) -> dict[str, dict]:
    """Every chart the page sent, by its widget key: its spec as the browser reads it."""
    return {user_key_from_element_id(e.proto.id): json.loads(e.proto.spec) for e in at.get("plotly_chart")}


def steps_page(query: dict[str, str]) -> AppTest:
    at = make_app(view="steps", **query).run()
    no_exception(at)
    return at


def test_the_steps_view_sends_the_charts_its_plain_figures_make(monkeypatch):
    """Every chart of the steps view, shared, is the plain figure's (less the theme's unused trace defaults), page
    after page on the same run: RoPE, ALiBi, a causal mask or none, grouped K/V heads, a projector, a later first
    step, the probe's positions."""
    shared_figures._grids.clear()
    shared = [sent_specs(steps_page(query)) for query in STEPS_PAGES]
    monkeypatch.setattr(shared_figures, "charts_of", lambda run, key, build: build())  # sharing off: plain figures
    for query, sent in zip(STEPS_PAGES, shared, strict=True):
        plain = sent_specs(steps_page(query))
        assert len(plain) >= 12, query  # the colour bars and maps of every step, the probe's bars
        assert list(sent) == list(plain), query
        for chart, spec in plain.items():
            assert sent[chart] == shared_figures.without_unused_templates(spec), (query, chart)


class Counted:
    """``build`` wrapped, counting its calls."""

    def __init__(self, build):
        self.build, self.calls = build, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.build(*args, **kwargs)


def test_a_second_session_on_the_same_steps_builds_no_figure(monkeypatch):
    """The follower's redraw: with another session's figures for the same run and choices, no plotly figure is made
    (``go.Figure.__init__``, which every builder ends in, is never called) and every chart is a shared one."""
    query = {"causal": "true", "alibi": "true", "positional": "rope", "kv_heads": "2", "step_head": "3"}
    query |= {"presenter": "true", "probe_query": "4", "probe_key": "1"}
    shared_figures._grids.clear()
    made = Counted(go.Figure.__init__)
    monkeypatch.setattr(go.Figure, "__init__", lambda self, *a, **k: made(self, *a, **k))
    first = steps_page(query)
    assert made.calls > 0  # the first session builds them
    made.calls = 0
    second = steps_page(query)
    assert made.calls == 0
    assert sent_specs(second) == sent_specs(first)
    assert len(sent_specs(second)) >= 12


def test_each_choice_a_steps_figure_reads_has_its_own_shared_figure():
    """The same run, one choice changed at a time: each step's figure is another one, the plain figure built with
    that choice; asked again with the same choices, the same object."""
    run = computations.attention_run(computations.tokens_of(DEFAULTS.sentence), replace(DEFAULTS.config, causal=True))
    projector = replace(DEFAULTS, presenter=True)

    def figures(head: steps.Head, start: int = 1) -> dict[str, object]:
        return {s.key: s.figure for s in steps.steps_of(head, start)}

    base = steps.Head(run, 0, DEFAULTS, share=True)
    variants = {
        "head": replace(base, k=1),
        "presenter": replace(base, settings=projector),
    }
    shared_figures._grids.clear()
    first = figures(base)
    assert figures(base) == first and all(first[key] is figures(base)[key] for key in first)
    for choice, head in variants.items():
        other = figures(head)
        plain = figures(replace(head, share=False))
        for key, figure in other.items():
            assert figure is not first[key], (choice, key)
            assert dicts(figure) == dicts(plain[key]), (choice, key)
    later = figures(replace(base, settings=projector), start=3)  # QKᵀ first, on a projector: room above it
    plain = figures(replace(base, settings=projector, share=False), start=3)
    assert all(dicts(later[key]) == dicts(plain[key]) for key in later)
    assert dicts(later["step_qk_chart"]) != dicts(figures(replace(base, settings=projector))["step_qk_chart"])


def dicts(figure) -> list[dict]:
    """A figure's or a grid's charts as the dicts a shared figure holds."""
    charts = [figure.colour_bar, *figure.maps] if isinstance(figure, ChartGrid) else [figure]
    return [shared_figures.without_unused_templates(c.to_dict()) for c in charts]
