"""The quiz's reveal: the hidden map with the right answer and the student's pick marked, and a pattern's
metric per head against core's threshold. Pure: arrays in, ``go.Figure`` (or the map's ``ChartGrid``) out.

Marks differ in line style as well as colour (colour-blind safe): the right answer is a solid box, the
pick a dashed one, the query's row a thin dotted outline.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import single_map_charts
from dashboard.figures.labels import position_labels
from dashboard.figures.layout import axis_title, chart_fonts, chart_height, scale

ANSWER_COLOUR = "#ff1f8f"
"""Deep pink: away from every colour of Viridis (purple, blue, green, yellow), so it shows on any cell."""
PICK_COLOUR = "#ff7a00"
"""Orange, dashed: the student's pick, distinct from the answer in colour and in line style."""
ROW_COLOUR = "#ffffff"
BAR_COLOUR = "#9aa0a6"
"""The heads that are not the answer: neutral grey."""


def _box(col: int, row: int, colour: str, width: float, dash: str) -> dict:
    """A rectangle around cell (row, col) of the first panel, in category coordinates (index ± 0.5)."""
    return dict(
        type="rect",
        xref="x",
        yref="y",
        x0=col - 0.5,
        x1=col + 0.5,
        y0=row - 0.5,
        y1=row + 0.5,
        line=dict(color=colour, width=width, dash=dash),
        fillcolor="rgba(0,0,0,0)",
        layer="above",
    )


def marked_map_charts(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None,
    title: str,
    *,
    row: int,
    answer: int,
    pick: int | None,
    presenter: bool = False,
) -> ChartGrid:
    """One head's map ``weights (T, T)`` in its own chart (a phone's whole width: ``single_map_charts``), with
    query ``row`` outlined, the ``answer`` key's cell in a solid box and the ``pick`` key's cell (if another) in
    a dashed one."""
    grid = single_map_charts(weights, tokens, allowed, title, presenter)
    [fig] = grid.maps
    s = scale(presenter)
    t = weights.shape[-1]
    shapes = [
        dict(
            type="rect",
            xref="x",
            yref="y",
            x0=-0.5,
            x1=t - 0.5,
            y0=row - 0.5,
            y1=row + 0.5,
            line=dict(color=ROW_COLOUR, width=1.5 * s, dash="dot"),
            fillcolor="rgba(0,0,0,0)",
            layer="above",
        )
    ]
    if pick is not None and pick != answer:
        shapes.append(_box(pick, row, PICK_COLOUR, 3 * s, "dash"))
    shapes.append(_box(answer, row, ANSWER_COLOUR, 4 * s, "solid"))
    fig.update_layout(shapes=list(fig.layout.shapes) + shapes)  # keeps the mask's hatching
    return grid


def pattern_bars_figure(
    values: Sequence[float],
    threshold: float,
    *,
    answer: int,
    pick: int | None,
    metric: str,
    presenter: bool = False,
) -> go.Figure:
    """One bar per head: its pattern metric ``values (h,)``, the threshold as a dashed line, the answer's bar
    in the answer colour, the pick's bar outlined dashed."""
    s, font = scale(presenter), chart_fonts(presenter)
    h = len(values)
    heads = [f"head {k + 1}" for k in range(h)]
    colours = [ANSWER_COLOUR if k == answer else BAR_COLOUR for k in range(h)]
    outline = [PICK_COLOUR if k == pick and pick != answer else "rgba(0,0,0,0)" for k in range(h)]
    fig = go.Figure(
        go.Bar(
            x=heads,
            y=[0.0 if not np.isfinite(v) else float(v) for v in values],
            marker=dict(color=colours, line=dict(color=outline, width=3 * s)),
            hovertemplate="%{x}: %{y:.2f}<extra></extra>",
        )
    )
    fig.add_hline(
        y=threshold,
        line=dict(color="#333333", dash="dash", width=1.5 * s),
        annotation_text=f"core's threshold {threshold:g}",
        annotation_position="top left",
        annotation_font_size=font.note,
    )
    fig.update_layout(
        height=chart_height(260, presenter),
        margin=dict(l=10, r=10, t=10, b=10),
        yaxis=dict(range=[0, 1], title=axis_title(metric, font), tickfont_size=font.tick),
        xaxis=dict(tickfont_size=font.tick, type="category"),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
    )
    return fig


def tap_reveal_figure(
    row: Sequence[float],
    picks: Sequence[int],
    tokens: Sequence[str],
    *,
    answer: int,
    whose: str = "the class's picks",
    presenter: bool = False,
) -> go.Figure:
    """The tap question's reveal: the real row ``row (T_k,)`` as bars (the answer's in the answer colour) and, on
    the same token axis, the class's picks ``picks (T_k,)`` (counts) as narrow orange bars of their share of all
    picks, each labelled with its count. Tokens are escaped and prefixed with their position (``labels``)."""
    s, font = scale(presenter), chart_fonts(presenter)
    labels = position_labels(tokens)
    counts = [int(c) for c in picks]
    total = sum(counts)
    weights = [0.0 if not np.isfinite(v) else float(v) for v in row]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=labels,
            y=weights,
            name="weight in the row",
            marker=dict(color=[ANSWER_COLOUR if j == answer else BAR_COLOUR for j in range(len(weights))]),
            hovertemplate="%{x}: weight %{y:.2f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[c / total if total else 0.0 for c in counts],
            name=f"share of {whose}",
            width=0.35,
            marker=dict(color=PICK_COLOUR, line=dict(color="#333333", width=1 * s)),
            text=[str(c) if c else "" for c in counts],
            textposition="outside",
            textfont_size=font.note,
            customdata=counts,
            hovertemplate="%{x}: %{customdata} picks (%{y:.0%})<extra></extra>",
        )
    )
    fig.update_layout(
        barmode="overlay",
        height=chart_height(260, presenter),
        margin=dict(l=10, r=10, t=10, b=10),
        yaxis=dict(range=[0, 1.1], title=axis_title("weight · share of picks", font), tickfont_size=font.tick),
        xaxis=dict(tickfont_size=font.tick, type="category"),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        legend=dict(orientation="h", x=0, y=-0.3, yanchor="top", font_size=font.note),  # below: clear of the toolbar
    )
    return fig
