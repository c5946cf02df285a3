"""Probe figures: every head's effect as bars or a layers × heads grid, predictions, and one score term by term.

Pure builders: arrays and token lists in, ``go.Figure`` out. Token text is HTML-escaped before it reaches a label.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.labels import escape
from dashboard.figures.layout import MODEBAR_CLEAR_PX, chart_fonts, chart_height

BLUE, ORANGE, GREY = "#0072B2", "#D55E00", "#999999"
"""Okabe-Ito: colour-blind safe; every bar also carries its number."""


def head_label(layer: int, head: int) -> str:
    """``"L1 H2"`` for 0-based indices: the name a head goes by in the tables, the charts and the URL."""
    return f"L{layer + 1} H{head + 1}"


def _layout(fig: go.Figure, height: int, presenter: bool) -> go.Figure:
    """Sizes and fonts from the one layout (``dashboard.figures.layout``): a bar chart's, larger for a presenter."""
    font = chart_fonts(presenter)
    fig.update_layout(
        height=chart_height(height, presenter),
        font=dict(size=font.note),
        margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX + font.title + font.tick, b=10),
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
        hovermode="closest",
        uniformtext=dict(minsize=8, mode="hide"),
        title_font=dict(size=font.title),
        title_yref="paper",  # the title sits on the plot, under the toolbar's strip (a phone's long title ran under it)
        title_y=1,
        title_yanchor="bottom",
        title_pad_b=font.tick,  # clear of the top tick label, which reaches half its height above the plot
    )
    fig.update_xaxes(tickfont=dict(size=font.tick), title_font=dict(size=font.note))
    fig.update_yaxes(tickfont=dict(size=font.tick), title_font=dict(size=font.note))
    return fig


def head_bars_figure(
    values: np.ndarray,
    title: str,
    axis: str,
    *,
    marked: set[tuple[int, int]] = frozenset(),
    y_range: tuple[float, float] | None = None,
    presenter: bool = False,
) -> go.Figure:
    """One bar per head of ``values (L, h)`` (layer by layer), labelled "L1 H1"...; heads in ``marked`` (0-based
    ``(layer, head)``) in orange, the others blue. ``y_range``: a fixed axis (weights: 0 to 1), else the data's."""
    n_layers, h = values.shape
    heads = [(layer, head) for layer in range(n_layers) for head in range(h)]
    flat = [float(values[layer, head]) for layer, head in heads]
    fig = go.Figure(
        go.Bar(
            x=[head_label(*lh) for lh in heads],
            y=flat,
            text=[f"{v:.2f}" for v in flat],
            textposition="outside",
            cliponaxis=False,
            marker=dict(color=[ORANGE if lh in marked else BLUE for lh in heads]),
            hovertemplate="%{x}: %{text}<extra></extra>",
        )
    )
    top = max([*flat, 0.0])
    low = min([*flat, 0.0])
    pad = 0.15 * max(top - low, 1e-9)
    fig.update_layout(
        title=dict(text=escape(title), x=0), yaxis=dict(title_text=axis, range=[low - pad * (low < 0), top + pad])
    )
    return _layout(fig, 320, presenter)


def head_grid_figure(
    values: np.ndarray, title: str, colorbar: str, *, limits: tuple[float, float], presenter: bool = False
) -> go.Figure:
    """``values (L, h)`` as a layers × heads grid, each cell written with its value (NaN: blank, "n/a" on hover)."""
    n_layers, h = values.shape
    text = [["" if math.isnan(v) else f"{v:.2f}" for v in row] for row in values.tolist()]
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=[f"H{i + 1}" for i in range(h)],
            y=[f"L{i + 1}" for i in range(n_layers)],
            text=text,
            texttemplate="%{text}",
            zmin=limits[0],
            zmax=limits[1],
            colorscale="Viridis",
            colorbar=dict(title=dict(text=colorbar, side="right")),
            hovertemplate="layer %{y}, head %{x}: %{text}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(title=dict(text=escape(title), x=0), yaxis=dict(autorange="reversed"))
    return _layout(fig, 80 + 40 * n_layers, presenter)


def predictions_figure(
    tokens: tuple[str, ...], predicted: tuple[str, ...], probability: np.ndarray, title: str, *, presenter: bool = False
) -> go.Figure:
    """One bar per position: the probability of the model's predicted next token, the token written on the bar."""
    t = len(tokens)
    fig = go.Figure(
        go.Bar(
            x=list(range(t)),
            y=[float(p) for p in probability],
            text=[escape(p) for p in predicted],
            textposition="outside",
            cliponaxis=False,
            marker=dict(color=BLUE),
            customdata=[escape(tok) for tok in tokens],
            hovertemplate="position %{x} (%{customdata}) → %{text}: p = %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(text=escape(title), x=0),
        xaxis=dict(tickvals=list(range(t)), ticktext=[escape(tok) for tok in tokens], title_text="input at position"),
        yaxis=dict(range=[0, 1.15], title_text="p(predicted next token)", tickvals=[0, 0.5, 1]),
    )
    return _layout(fig, 300, presenter)


def score_terms_figure(products: np.ndarray, title: str, *, presenter: bool = False) -> go.Figure:
    """One bar per dimension c of d_k: q_c · k_c (blue adds to the score, orange takes away)."""
    d_k = products.shape[0]
    values = [float(v) for v in products]
    fig = go.Figure(
        go.Bar(
            x=list(range(d_k)),
            y=values,
            marker=dict(color=[BLUE if v >= 0 else ORANGE for v in values]),
            text=[f"{v:.2f}" for v in values] if d_k <= 16 else None,
            textposition="outside",
            cliponaxis=False,
            hovertemplate="dimension %{x}: q·k = %{y:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(text=escape(title), x=0),
        xaxis=dict(title_text="dimension c of d_k", dtick=1 if d_k <= 16 else None),
        yaxis=dict(title_text="q_c × k_c", zeroline=True),
    )
    return _layout(fig, 300, presenter)
