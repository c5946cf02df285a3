"""Training figures: the loss and held-out accuracy curves, and how each head's pattern formed.

Built as plain dicts with the panels' domains set by hand (like ``scaling``), one
``go.Figure`` each. ``at_step`` draws a vertical line at the replay's step, so the
curves and the maps above them show the same moment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core.training.train import TARGET_ACCURACY
from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid, title_annotation
from dashboard.figures.labels import escape
from dashboard.figures.layout import LEGEND_BELOW, MODEBAR_CLEAR_PX, axis_title, chart_fonts, chart_height, map_columns

LOSS = "#0072B2"
"""Okabe-Ito blue: training loss."""
ACCURACY = "#009E73"
"""Okabe-Ito bluish green: held-out accuracy."""
MARKER = "#000000"
LINE_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
"""Okabe-Ito: one colour per head's line; dashes tell layers apart without colour."""
DASHES = ("solid", "dash")


def layers_charts(
    weights: np.ndarray, tokens: Sequence[str], allowed: np.ndarray | None = None, *, presenter: bool = False
) -> ChartGrid:
    """Every head of every layer, ``weights (L, h, T, T)``, one chart each at the heads view's size.

    Unlike the model view's small multiples (built for 6 x 12 heads), a tiny model's 1 to 4 maps are drawn
    large enough to read each cell, the heads of one layer to a row (a phone stacks them).
    """
    n_layers, h = weights.shape[:2]
    panels = [
        Panel(weights[layer, head], tokens, tokens, f"layer {layer + 1}, head {head + 1}", allowed)
        for layer in range(n_layers)
        for head in range(h)
    ]
    return chart_grid(panels, map_columns(h, presenter=presenter, at_most=h), GridSpec(presenter=presenter))


def _vline(xa: str, ya: str, step: int, top: float) -> dict:
    """The replay's step as a thin vertical line (a trace: it stays put when the axis rescales)."""
    return dict(
        type="scatter",
        x=[step, step],
        y=[0.0, top],
        xaxis=xa,
        yaxis=ya,
        mode="lines",
        line=dict(color=MARKER, dash="dot", width=1),
        showlegend=False,
        hovertemplate=f"replay step {step}<extra></extra>",
    )


def curves_figures(
    loss_step: Sequence[int],
    loss: Sequence[float],
    eval_step: Sequence[int],
    eval_accuracy: Sequence[float],
    total_steps: int,
    *,
    at_step: int | None = None,
    presenter: bool = False,
    fold_px: int | None = None,
) -> list[go.Figure]:
    """Two charts over the training step: the batch loss, and the held-out token accuracy (0-1).

    Two figures, not two panels of one, so a phone stacks them (``map_columns.show_charts``). The x axes run
    to ``total_steps`` from the start, so a live run fills the plot as it trains. ``fold_px``: on a projector, each
    chart is at most this tall (``layout.chart_fold_px``).
    """
    x_range = [0, max(total_steps, 1)]
    top_loss = max([*loss, 1e-9]) * 1.05
    loss_line = dict(
        type="scatter",
        x=list(loss_step),
        y=[float(v) for v in loss],
        mode="lines",
        line=dict(color=LOSS, width=2),
        name="training loss",
        hovertemplate="step %{x}: loss %{y:.3f}<extra></extra>",
    )
    accuracy_line = dict(
        type="scatter",
        x=list(eval_step),
        y=[float(v) for v in eval_accuracy],
        mode="lines+markers",
        line=dict(color=ACCURACY, width=3),
        name="held-out accuracy",
        hovertemplate="step %{x}: %{y:.1%} of held-out tokens right<extra></extra>",
    )
    target = dict(
        type="line",
        xref="x domain",
        x0=0,
        x1=1,
        yref="y",
        y0=TARGET_ACCURACY,
        y1=TARGET_ACCURACY,
        line=dict(color="#888888", dash="dot", width=1),
    )
    height = min(chart_height(300, presenter), fold_px or math.inf)
    loss_chart = _curve_chart(
        [loss_line], "training loss", x_range, dict(range=[0, top_loss], rangemode="tozero"), presenter, height
    )
    accuracy_chart = _curve_chart(
        [accuracy_line], "held-out accuracy", x_range, dict(range=[0, 1.04], tickformat=".0%"), presenter, height
    )
    accuracy_chart["layout"]["shapes"] = [target]
    if at_step is not None:
        loss_chart["data"].append(_vline("x", "y", at_step, top_loss))
        accuracy_chart["data"].append(_vline("x", "y", at_step, 1.0))
    return [go.Figure(**loss_chart), go.Figure(**accuracy_chart)]


def _curve_chart(
    data: list[dict], title: str, x_range: list[int], y_axis: dict, presenter: bool, height: float
) -> dict:
    """One curve chart's data and layout: its title above the plot, fonts from ``layout``, ``height`` px tall."""
    font = chart_fonts(presenter)
    ticks = dict(tickfont=dict(size=font.tick))  # explicit: Streamlit's theme template sets its own
    layout = dict(
        xaxis=dict(range=x_range, title=axis_title("step", font), **ticks),
        yaxis=dict(y_axis, **ticks),
        annotations=[title_annotation(title, 0.5, 1.0, size=font.title)],
        height=height,
        font=dict(size=font.note),
        margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX, b=10),
        showlegend=False,
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return dict(data=data, layout=layout)


def formation_figure(
    steps: Sequence[int],
    values: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    at_step: int | None = None,
    presenter: bool = False,
) -> go.Figure:
    """One line per head over the snapshot steps: ``values (S, n_lines)`` weights in [0, 1], ``labels (n_lines,)``.

    Each line is the weight a head puts on the key its task's pattern reads (see the page's caption).
    """
    font = chart_fonts(presenter)
    columns = list(zip(*values, strict=True)) if len(values) else [() for _ in labels]
    data = []
    for i, (label, column) in enumerate(zip(labels, columns, strict=True)):
        name = escape(label)
        data.append(
            dict(
                type="scatter",
                x=list(steps),
                y=[float(v) for v in column],
                mode="lines",
                name=name,
                line=dict(color=LINE_COLOURS[i % len(LINE_COLOURS)], dash=DASHES[i // len(LINE_COLOURS) % 2], width=3),
                hovertemplate=f"step %{{x}}: %{{y:.2f}}<extra>{name}</extra>",
            )
        )
    if at_step is not None:
        data.append(_vline("x", "y", at_step, 1.0))
    ticks = dict(tickfont=dict(size=font.tick))
    layout = dict(
        # the steps are named in the title above: an x axis title sat under the legend's first line on a phone
        xaxis=dict(range=[0, max([*steps, 1])], tickangle=0, nticks=6, **ticks),
        yaxis=dict(range=[0, 1.04], title=axis_title("mean weight", font), **ticks),
        height=chart_height(300, presenter),
        font=dict(size=font.note),
        annotations=[title_annotation("weight on the pattern's key, by training step", 0.5, 1.0, size=font.title)],
        margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX, b=10),
        # below the plot: the toolbar shows at the top right, over a legend there (on a phone's tap, too)
        legend=dict(orientation="h", yanchor="top", y=LEGEND_BELOW, x=0, font=dict(size=font.note)),
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return go.Figure(data=data, layout=layout)
