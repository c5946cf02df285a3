"""Training figures: the loss and held-out accuracy curves, and how each head's pattern formed.

Built as plain dicts with the panels' domains set by hand (like ``scaling``), one
``go.Figure`` each. ``at_step`` draws a vertical line at the replay's step, so the
curves and the maps above them show the same moment.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core.training.train import TARGET_ACCURACY
from dashboard.figures.grid import MAX_COLS, PRESENTER_SCALE, Panel, heatmap_grid, title_annotation
from dashboard.figures.labels import escape

LOSS = "#0072B2"
"""Okabe-Ito blue: training loss."""
ACCURACY = "#009E73"
"""Okabe-Ito bluish green: held-out accuracy."""
MARKER = "#000000"
LINE_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
"""Okabe-Ito: one colour per head's line; dashes tell layers apart without colour."""
DASHES = ("solid", "dash")
DOMAINS = ([0.0, 0.44], [0.56, 1.0])
"""x domains of two side-by-side panels."""


def layers_figure(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    panel_px: int | None = None,
    presenter: bool = False,
) -> go.Figure:
    """Every head of every layer, ``weights (L, h, T, T)``, at the heads view's size: one row of panels per layer.

    Unlike the model view's small multiples (built for 6 x 12 heads), a tiny model's 1 to 4 maps are drawn
    large enough to read each cell; more than ``MAX_COLS`` heads wrap onto further rows. ``panel_px`` sizes
    the panels for a narrower chart (half the page: the replay beside its curves).
    """
    n_layers, h = weights.shape[:2]
    panels = [
        Panel(weights[layer, head], tokens, tokens, f"layer {layer + 1}, head {head + 1}", allowed)
        for layer in range(n_layers)
        for head in range(h)
    ]
    return heatmap_grid(panels, ncols=min(h, MAX_COLS), panel_px=panel_px, presenter=presenter)


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


def curves_figure(
    loss_step: Sequence[int],
    loss: Sequence[float],
    eval_step: Sequence[int],
    eval_accuracy: Sequence[float],
    total_steps: int,
    *,
    at_step: int | None = None,
    presenter: bool = False,
) -> go.Figure:
    """Two panels over the training step: the batch loss, and the held-out token accuracy (0-1).

    The x axes run to ``total_steps`` from the start, so a live run fills the plot as it trains.
    """
    s = PRESENTER_SCALE if presenter else 1.0
    x_range = [0, max(total_steps, 1)]
    top_loss = max([*loss, 1e-9]) * 1.05
    data = [
        dict(
            type="scatter",
            x=list(loss_step),
            y=[float(v) for v in loss],
            xaxis="x",
            yaxis="y",
            mode="lines",
            line=dict(color=LOSS, width=2),
            name="training loss",
            hovertemplate="step %{x}: loss %{y:.3f}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=list(eval_step),
            y=[float(v) for v in eval_accuracy],
            xaxis="x2",
            yaxis="y2",
            mode="lines+markers",
            line=dict(color=ACCURACY, width=3),
            name="held-out accuracy",
            hovertemplate="step %{x}: %{y:.1%} of held-out tokens right<extra></extra>",
        ),
    ]
    if at_step is not None:
        data += [_vline("x", "y", at_step, top_loss), _vline("x2", "y2", at_step, 1.0)]
    target = dict(color="#888888", dash="dot", width=1)
    ticks = dict(tickfont=dict(size=round(12 * s)))  # explicit: Streamlit's theme template sets its own
    layout = dict(
        xaxis=dict(domain=DOMAINS[0], anchor="y", range=x_range, title=dict(text="step"), **ticks),
        yaxis=dict(anchor="x", range=[0, top_loss], rangemode="tozero", **ticks),
        xaxis2=dict(domain=DOMAINS[1], anchor="y2", range=x_range, title=dict(text="step"), **ticks),
        yaxis2=dict(anchor="x2", range=[0, 1.04], tickformat=".0%", **ticks),
        shapes=[
            dict(
                type="line",
                xref="x2 domain",
                x0=0,
                x1=1,
                yref="y2",
                y0=TARGET_ACCURACY,
                y1=TARGET_ACCURACY,
                line=target,
            )
        ],
        annotations=[
            title_annotation("training loss", sum(DOMAINS[0]) / 2, 1.0, size=round(14 * s)),
            title_annotation("held-out accuracy", sum(DOMAINS[1]) / 2, 1.0, size=round(14 * s)),
        ],
        height=round(300 * s),
        font=dict(size=round(12 * s)),
        margin=dict(l=10, r=10, t=34, b=10),
        showlegend=False,
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return go.Figure(data=data, layout=layout)


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
    s = PRESENTER_SCALE if presenter else 1.0
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
    ticks = dict(tickfont=dict(size=round(12 * s)))
    layout = dict(
        xaxis=dict(range=[0, max([*steps, 1])], title=dict(text="step"), **ticks),
        yaxis=dict(range=[0, 1.04], title=dict(text="mean weight"), **ticks),
        height=round(300 * s),
        font=dict(size=round(12 * s)),
        margin=dict(l=10, r=10, t=10, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return go.Figure(data=data, layout=layout)
