"""The reveal of a mechanics question (``dashboard.classroom.quiz_mechanics``): the maps its answer was read from.

``quiz_panel`` shows the verdict and the explanation, then calls ``show_mechanics``. What each kind draws:

- ``zero``, ``row-sum``: the head's map (masked cells hatched grey), keyed ``quiz_map``;
- ``reorder``: the map and the reordered one moved back to the original order, side by side (``quiz_maps``);
- ``width``: map A and map B, softmax of the raw scores at both widths (``quiz_maps``);
- ``d_k``: nothing more (the explanation gives q's shape).
"""

from __future__ import annotations

import streamlit as st

from core import Run, realign
from dashboard.classroom.quiz import Question
from dashboard.classroom.quiz_mechanics import reordered_weights, reordering, width_maps
from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import single_map_charts
from dashboard.figures.layout import single_map_columns
from dashboard.page.map_columns import show_charts, show_colour_bar, show_grid
from dashboard.state.settings import Settings


def show_mechanics(settings: Settings, run: Run, question: Question) -> None:
    """The figures behind ``question``'s answer, drawn from ``run`` (the one the question was computed from)."""
    tokens, mask, presenter = run.tokens, run.trace.mask, settings.presenter
    head = question.head
    if question.kind in ("zero", "row-sum"):
        grid = single_map_charts(run.trace.weights[head], tokens, mask, f"head {head + 1}", presenter)
        show_grid(grid, key="quiz_map")  # its own chart: a phone's whole width
    elif question.kind == "reorder":
        perm = reordering(run.tokens)
        moved_back = realign(reordered_weights(run, perm), perm)[head]  # (T, T) in the original order
        st.caption("Left: this run's map. Right: the map of the reordered tokens, each row and column moved back.")
        _two_maps(
            single_map_charts(run.trace.weights[head], tokens, mask, f"head {head + 1}", presenter),
            single_map_charts(moved_back, tokens, mask, f"head {head + 1}, reordered, moved back", presenter),
            presenter,
        )
    elif question.kind == "width":
        narrow, wide, a, b = width_maps(run)
        _two_maps(
            single_map_charts(a, tokens, mask, f"map A: d_k = {narrow}, no ÷√d_k", presenter),
            single_map_charts(b, tokens, mask, f"map B: d_k = {wide}, no ÷√d_k", presenter),
            presenter,
        )


def _two_maps(first: ChartGrid, second: ChartGrid, presenter: bool) -> None:
    """Two maps side by side (stacked on a phone), one chart each, under the 0-1 colour bar they share."""
    show_colour_bar(first, key="quiz_maps_bar")
    show_charts([*first.maps, *second.maps], single_map_columns(presenter), key="quiz_maps")
