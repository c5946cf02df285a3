"""Charts drawn one each, in columns: side by side on a laptop or projector, one per row on a phone.

The server cannot know how wide the browser is (Streamlit sends it no width). Its columns can: below a
640 px wide viewport (Streamlit's ``breakpoints.columns``) every column takes the whole row, so the charts
stack, each as wide as the phone. Maps share one colour bar, drawn above them. Every multi-panel view
shows its figures through this module; their sizes come from ``dashboard/figures/layout.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from dashboard.figures.grid import ChartGrid
from dashboard.page.common import PLOTLY_CONFIG, chart_config
from dashboard.page.shared_figures import SharedFigure
from dashboard.serve.streamlit_runtime import enqueue_chart

MAP_CONFIG = PLOTLY_CONFIG | {"modeBarButtons": [["toImage", "zoom2d", "resetScale2d"]]}
"""A chart's toolbar: save as PNG, zoom and reset only. Plotly's full toolbar (7 buttons, ~190 px) would cover
the title of a map ~280 px wide; three buttons stay to the right of it."""
BAR_CONFIG = {"displayModeBar": False, "staticPlot": True}
"""The colour bar is a key, not a chart: no toolbar, no hover."""


def chart(figure: go.Figure, *, width: str | int, key: str, config: dict, container=st) -> None:
    """``container.plotly_chart(figure, ...)``; a shared figure sends the JSON it was made into once. The camera
    button names the file for the view and settings (``page.chart_config``)."""
    config = chart_config(config, key)
    if isinstance(figure, SharedFigure):
        dg = None if container is st else container
        enqueue_chart(figure.to_dict(), figure.spec, width=width, key=key, config=config, dg=dg)
    else:
        container.plotly_chart(figure, width=width, key=key, config=config)


def show_colour_bar(grid: ChartGrid, key: str, container=st) -> None:
    """The colour bar ``grid``'s maps share, ``grid.bar_px`` wide, in ``container`` (e.g. a row of switches)."""
    chart(grid.colour_bar, width=grid.bar_px, key=key, config=BAR_CONFIG, container=container)


def show_charts(figures: Sequence[go.Figure], ncols: int, key: str) -> None:
    """``figures`` ``ncols`` to a row, each chart keyed ``<key>_<i>`` from 1.

    They sit in a container keyed ``key``, so ``.st-key-<key>`` finds every chart in the browser.
    """
    with st.container(key=key):
        for start in range(0, len(figures), ncols):
            columns = st.columns(ncols, gap="small")
            for i, fig in enumerate(figures[start : start + ncols]):
                with columns[i]:
                    chart(fig, width="stretch", key=f"{key}_{start + i + 1}", config=MAP_CONFIG)


def show_maps(grid: ChartGrid, key: str) -> None:
    """``grid``'s maps ``grid.ncols`` to a row, under its note if it has one (what the hatching means, once for
    all the maps); show the colour bar apart, e.g. beside the view's switches."""
    if grid.note:
        st.caption(grid.note)
    show_charts(grid.maps, grid.ncols, key)


def show_grid(grid: ChartGrid, key: str) -> None:
    """``grid``'s colour bar (keyed ``<key>_bar``), then its maps."""
    show_colour_bar(grid, key=f"{key}_bar")
    show_maps(grid, key)


def show_figure(figure: go.Figure | ChartGrid, key: str) -> None:
    """A figure as one chart keyed ``key``, or a grid of maps as ``show_grid`` draws it."""
    if isinstance(figure, ChartGrid):
        show_grid(figure, key)
    else:
        chart(figure, width="stretch", key=key, config=PLOTLY_CONFIG)
