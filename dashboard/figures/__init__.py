"""Pure figure builders: arrays and token lists in, ``go.Figure`` out, no ``st.`` call.

Every token string is HTML-escaped here before it reaches a Plotly label.
"""

from dashboard.figures.grid import COLORSCALE, GridSpec, Panel, heatmap_grid
from dashboard.figures.heads import (
    average_charts,
    heads_figure,
    model_figure,
    permutation_charts,
    single_map_charts,
    single_map_figure,
)
from dashboard.figures.labels import escape, position_labels, tick_texts

__all__ = [
    "COLORSCALE",
    "GridSpec",
    "Panel",
    "average_charts",
    "escape",
    "heads_figure",
    "heatmap_grid",
    "model_figure",
    "permutation_charts",
    "position_labels",
    "single_map_charts",
    "single_map_figure",
    "tick_texts",
]
