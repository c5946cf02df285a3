"""Reading views back from an AppTest: charts by their key, heatmap grids, tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import array, heatmaps, keyed_figures


def charts(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart on the page as figure JSON, keyed by its widget key, in page order.

    A grid of maps drawn one chart each is one entry under its container's key (see ``keyed_figures``).
    """
    return keyed_figures(at)


def grid_json(grid) -> dict:
    """A ``ChartGrid``'s maps as one figure JSON: the first map's layout, every map's traces in order."""
    first, *rest = (json.loads(fig.to_json()) for fig in grid.maps)
    for fig in rest:
        first["data"].extend(fig["data"])
    return first


def grids(fig: dict) -> list[np.ndarray]:
    """The value heatmaps of a figure, in panel order (grey "masked" overlays left out)."""
    return [array(t["z"]).astype(np.float64) for t in heatmaps(fig) if t.get("name") != "masked"]


def masked(fig: dict) -> list[np.ndarray]:
    """True where each masked-cell overlay covers a cell."""
    return [~np.isnan(array(t["z"])) for t in heatmaps(fig) if t.get("name") == "masked"]


def shown_table(at: AppTest, i: int = 0):
    """The text ``st.dataframe`` number ``i`` displays, as a pandas DataFrame of strings: each number column with a
    ``column_config`` format printed as the grid prints it (printf: ``"%.3f"``), a missing value as the grid's
    placeholder, other cells as they are."""
    proto = at.dataframe[i].proto
    config = json.loads(proto.columns or "{}")
    shown = at.dataframe[i].value.copy()
    for column in shown.columns:
        form = config.get(column, {}).get("type_config", {}).get("format")
        if form is not None:
            shown[column] = [proto.placeholder if pd.isna(v) else form % v for v in shown[column]]
    return shown


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row softmax written out here, independent of core."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
