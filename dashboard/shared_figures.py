"""Figures built once per run and shared by every session that draws it: a room's followers above all.

A speed trick, kept apart from the figure builders it wraps. Profiled (``python -m bench.follower --profile``), a
follower's redraw spent most of its CPU on work every other follower repeated for the same picture: building the
maps (plotly's validating constructors) and, inside ``st.plotly_chart``, ``Figure.to_dict()``, which deep-copies
the figure and base64-encodes its arrays, once per chart per session. Two hundred students of one room draw one
picture; here it is built and turned into plotly's JSON-ready dict once.

- The key is the run itself: ``dashboard.compute`` caches runs with ``st.cache_resource``, so every session with the
  same settings (every follower of a room version) holds the same ``Run`` object. An entry lives as long as that
  run does (``weakref.finalize``), and no run holds more than ``MODES`` of them (presenter mode, the Values switch).
- A ``SharedFigure`` is a ``go.Figure`` whose ``to_dict()`` returns that one dict, never a copy. ``st.plotly_chart``
  reads a figure only through ``to_dict()`` (``plotly.tools.return_figure_from_figure_or_data``) and only reads the
  dict; ``tests/dashboard/test_shared_figures.py`` pins both and checks the chart Streamlit sends is the same, byte
  for byte, as the plain figure's.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Hashable

import plotly.graph_objects as go

from dashboard.figures.grid import ChartGrid
from dashboard.plotly_chart_proto import spec_of

MODES = 4
"""Shared grids kept per run: the page's ways to draw one run (presenter or not, values written or not)."""


class SharedFigure(go.Figure):
    """A built figure as plotly's dict, made once: ``to_dict()`` hands every session the same dict to read, and
    ``spec`` the JSON string the chart element carries (``plotly_chart_proto``: sent as it is, not remade)."""

    def __init__(self, figure: go.Figure) -> None:
        self._shared = without_unused_templates(figure.to_dict())  # no go.Figure.__init__: it would copy it again
        self._spec = spec_of(self._shared)

    def to_dict(self) -> dict:
        return self._shared

    @property
    def spec(self) -> str:
        return self._spec


def without_unused_templates(figure: dict) -> dict:
    """``figure`` (a ``Figure.to_dict()``) without its template's defaults for trace types it has no trace of.

    Streamlit's plotly theme gives every figure defaults for ten trace types (candlestick, contour, table,
    waterfall...): about 2 kB of a 6 kB heatmap's JSON, sent to every follower on every change. Plotly applies
    ``layout.template.data[type]`` only to traces of that type, and Streamlit's frontend themes
    ``layout.template.layout`` (kept whole), so the chart draws the same without them."""
    template = figure.get("layout", {}).get("template")
    if not isinstance(template, dict) or not isinstance(template.get("data"), dict):
        return figure
    used = {trace.get("type", "scatter") for trace in figure.get("data", ())}
    data = {kind: traces for kind, traces in template["data"].items() if kind in used}
    return figure | {"layout": figure["layout"] | {"template": template | {"data": data}}}


def shared_grid(grid: ChartGrid) -> ChartGrid:
    """``grid`` with every chart a ``SharedFigure``."""
    return dataclasses.replace(
        grid, maps=[SharedFigure(f) for f in grid.maps], colour_bar=SharedFigure(grid.colour_bar)
    )


_grids: dict[int, dict[Hashable, ChartGrid]] = {}
_lock = threading.Lock()


def _forget(run_id: int) -> None:
    with _lock:
        _grids.pop(run_id, None)


def charts_of(run: object, mode: Hashable, build: Callable[[], ChartGrid]) -> ChartGrid:
    """The grid ``build()`` makes for ``run`` drawn in ``mode``: built by the first session to ask, then shared."""
    with _lock:
        known = _grids.get(id(run))
        grid = None if known is None else known.get(mode)
    if grid is not None:
        return grid
    grid = shared_grid(build())  # outside the lock: two sessions may both build it once; both are equal
    with _lock:
        if id(run) not in _grids:
            _grids[id(run)] = {}
            weakref.finalize(run, _forget, id(run))
        modes = _grids[id(run)]
        if len(modes) >= MODES:
            modes.pop(next(iter(modes)))
        modes[mode] = grid
    return grid
