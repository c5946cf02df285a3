"""The contrast view's figures: one head's map on each sentence of a minimal pair, and their difference.

The two maps share the heads' 0-1 scale; the difference (second − first, on the aligned tokens) sits on a diverging
scale centred at 0 (``steps.DIVERGING``: blue where the second sentence gives less weight, red where it gives more),
symmetric about 0 up to its largest |difference|. Three charts to a row (a phone stacks them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid
from dashboard.figures.steps import DIVERGING, symmetric_limit

DIFFERENCE_NAME = "second − first"
"""The difference map's title and its colour bar's name."""


@dataclass(frozen=True)
class ContrastCharts:
    """The first map, the second and their difference, three charts to a row, and their two colour bars."""

    maps: ChartGrid
    """All three charts (``ncols`` 3), with the weights' colour bar and the hatching's note."""
    difference_bar: go.Figure
    limit: float
    """The difference's scale runs from ``-limit`` to ``limit``."""


def contrast_charts(first: Panel, second: Panel, difference: Panel, *, presenter: bool) -> ContrastCharts:
    """``first`` and ``second``: one head's map on each sentence (0-1); ``difference``: ``(n, n)`` second − first
    on the aligned cells (``allowed``: where both sentences' masks let the query see the key)."""
    seen = difference.z if difference.allowed is None else np.where(difference.allowed, difference.z, 0.0)
    limit = symmetric_limit(seen)
    weights = chart_grid([first, second], 3, GridSpec(presenter=presenter))
    scale = GridSpec(
        zmin=-limit,
        zmax=limit,
        value_name=DIFFERENCE_NAME,
        value_format="+.3f",
        colorscale=DIVERGING,
        presenter=presenter,
    )
    change = chart_grid([replace(difference, title=difference.title or DIFFERENCE_NAME)], 3, scale)
    maps = replace(weights, maps=[*weights.maps, *change.maps], note=weights.note or change.note)
    return ContrastCharts(maps, change.colour_bar, limit)
