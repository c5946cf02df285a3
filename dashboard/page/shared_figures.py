"""Figures built once per run and shared by every session that draws it: a room's followers above all.

A speed trick, kept apart from the figure builders it wraps. Profiled (``python -m bench.follower --profile``), a
follower's redraw spent most of its CPU on work every other follower repeated for the same picture: building the
maps (plotly's validating constructors) and, inside ``st.plotly_chart``, ``Figure.to_dict()``, which deep-copies
the figure and base64-encodes its arrays, once per chart per session. Two hundred students of one room draw one
picture; here it is built and turned into plotly's JSON-ready dict once.

- The key is the run itself and everything else the figure is built from (``shared``: the heads view's drawing mode;
  the steps view's step, head, projector and first step; the score probe's positions): ``compute.computations``
  shares its cached runs, so every session with the same settings (every follower of a room version) holds the same
  ``Run`` object. The grids and figures are kept in a
  ``dashboard.compute.bounded_cache`` (16 maps of 64 x 64 with their values written: 2.5 MB), built by the first session
  that asks while the others wait for it, and forgotten with their run (``weakref.finalize``).
- A ``SharedFigure`` is a ``go.Figure`` whose ``to_dict()`` returns that one dict, never a copy. ``st.plotly_chart``
  reads a figure only through ``to_dict()`` (``plotly.tools.return_figure_from_figure_or_data``) and only reads the
  dict; ``tests/dashboard/test_shared_figures.py`` pins both and checks the chart Streamlit sends is the same, byte
  for byte, as the plain figure's.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import deque
from collections.abc import Callable, Hashable
from typing import TypeVar

import plotly.graph_objects as go

from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB
from dashboard.figures.grid import ChartGrid
from dashboard.serve.streamlit_runtime import spec_of


class SharedFigure(go.Figure):
    """A built figure as plotly's dict, made once: ``to_dict()`` hands every session the same dict to read, and
    ``spec`` the JSON string the chart element carries (``streamlit_runtime.enqueue_chart``: sent as it is, not
    remade)."""

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


F = TypeVar("F", ChartGrid, go.Figure)

_grids = bounded_cache.BoundedCache("dashboard.page.shared_figures.grids", max_bytes=32 * MB)
"""(id of the run, key) -> its grid or figure."""
_watched: set[int] = set()
"""Ids of the runs whose end is watched (``weakref.finalize``), so each is watched once."""
_gone: deque[int] = deque()
"""Ids of runs that have ended, whose grids go at the next look-up, before any new run can be looked up by the id.
A finalizer only notes the id: it runs wherever the run's last reference went, perhaps under a cache's lock."""
_lock = threading.Lock()


def _forget(run_id: int) -> None:
    _gone.append(run_id)


def shared(run: object, key: Hashable, build: Callable[[], F]) -> F:
    """What ``build()`` makes for ``run`` as ``key`` names it, built by the first session to ask, then shared: a
    ``ChartGrid`` with every chart a ``SharedFigure``, or a figure as one ``SharedFigure``.

    ``key`` must name everything ``build`` reads besides the run (the head, the drawing mode, a probe's positions...)
    and which figure it is (its first item: the view or panel): two builds with the same key draw one figure."""
    with _lock:
        while _gone:
            gone = _gone.popleft()
            _grids.discard_where(lambda cached, gone=gone: cached[0] == gone)
            _watched.discard(gone)
        if id(run) not in _watched:
            _watched.add(id(run))
            weakref.finalize(run, _forget, id(run))
    return _grids.get((id(run), key), lambda: _shared(build()))


def _shared(built: F) -> F:
    return shared_grid(built) if isinstance(built, ChartGrid) else SharedFigure(built)


def charts_of(run: object, mode: Hashable, build: Callable[[], ChartGrid]) -> ChartGrid:
    """The grid ``build()`` makes for ``run`` drawn in ``mode``: built by the first session to ask, then shared."""
    return shared(run, mode, build)
