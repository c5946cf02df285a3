"""Maps drawn one chart each, in columns: side by side on a laptop or projector, one per row on a phone.

The server cannot know how wide the browser is (Streamlit sends it no width). Its columns can: below a
640 px wide viewport (Streamlit's ``breakpoints.columns``) every column takes the whole row, so the maps
stack, each as wide as the phone. The shared colour bar gets a narrow last column of the first row.
"""

from __future__ import annotations

import streamlit as st

from dashboard.figures.grid import ChartGrid
from dashboard.page import PLOTLY_CONFIG

MAP_CONFIG = PLOTLY_CONFIG | {"modeBarButtons": [["toImage", "zoom2d", "resetScale2d"]]}
"""A map's toolbar: save as PNG, zoom and reset only. Plotly's full toolbar (7 buttons, ~190 px) would cover
the title of a map ~280 px wide; three buttons stay to the right of it."""
BAR_CONFIG = {"displayModeBar": False, "staticPlot": True}
"""The colour bar is a key, not a chart: no toolbar, no hover."""


def show_colour_bar(grid: ChartGrid, key: str, container=st) -> None:
    """The colour bar ``grid``'s maps share, ``grid.bar_px`` wide, in ``container`` (e.g. a row of switches)."""
    container.plotly_chart(grid.colour_bar, width=grid.bar_px, key=key, config=BAR_CONFIG)


def show_maps(grid: ChartGrid, key: str) -> None:
    """``grid``'s maps ``grid.ncols`` to a row, each chart keyed ``<key>_<i>`` (show the colour bar apart).

    The maps sit in a container keyed ``key``, so ``.st-key-<key>`` finds every map in the browser.
    """
    with st.container(key=key):
        for start in range(0, len(grid.maps), grid.ncols):
            columns = st.columns(grid.ncols, gap="small")
            for i, fig in enumerate(grid.maps[start : start + grid.ncols]):
                with columns[i]:
                    st.plotly_chart(fig, width="stretch", key=f"{key}_{start + i + 1}", config=MAP_CONFIG)
