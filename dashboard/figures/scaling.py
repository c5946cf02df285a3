"""Why ÷√d_k: softmax sharpness against head width, with and without the factor, on a log d_k axis."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core import ScalingResult
from dashboard.figures.grid import PRESENTER_SCALE

SCALED = "#0072B2"
"""Okabe-Ito blue: with ÷√d_k (solid)."""
UNSCALED = "#D55E00"
"""Okabe-Ito vermillion: without it (dashed, so the curves differ without colour too)."""
REFERENCE = "#888888"
CURRENT = "your d_k"
"""Name of the vertical line at the sidebar's head width."""


def scaling_figure(result: ScalingResult, current_d_k: int | None = None, *, presenter: bool = False) -> go.Figure:
    """Two panels over d_k (log x): the mean largest weight of a row, and the mean row entropy.

    Dotted lines mark the limits: a one-hot row (largest weight 1, entropy 0) and
    a uniform row (1/t and log t). ``current_d_k`` draws a vertical line at the
    sidebar's head width. ``presenter`` makes the type and the figure 1.5 times larger.
    """
    s = PRESENTER_SCALE if presenter else 1.0
    d_ks = [int(d) for d in result.d_ks]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("largest weight in a row", "entropy of a row (nats)"),
        horizontal_spacing=0.12,
    )
    curves = [
        (1, result.max_weight_scaled, result.max_weight_unscaled),
        (2, result.entropy_scaled, result.entropy_unscaled),
    ]
    for col, scaled, unscaled in curves:
        for name, y, colour, dash in (
            ("with ÷√d_k", scaled, SCALED, "solid"),
            ("without ÷√d_k", unscaled, UNSCALED, "dash"),
        ):
            fig.add_trace(
                go.Scatter(
                    x=d_ks,
                    y=[float(v) for v in y],
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line=dict(color=colour, dash=dash, width=3),
                    hovertemplate=f"d_k = %{{x}}: %{{y:.3f}}<extra>{name}</extra>",
                ),
                row=1,
                col=col,
            )
    limits = [
        (1, 1.0, "one-hot"),
        (1, 1 / result.t, "uniform"),
        (2, 0.0, "one-hot"),
        (2, result.uniform_entropy, "uniform"),
    ]
    for col, y, text in limits:
        fig.add_hline(
            y=y,
            line=dict(color=REFERENCE, dash="dot", width=1),
            annotation=dict(text=text, font=dict(color=REFERENCE, size=round(11 * s))),
            annotation_position="top left" if y > 0 else "bottom left",
            row=1,
            col=col,
        )
    if current_d_k is not None:
        # A trace, not add_vline: a shape on a log axis is placed and autoranged inconsistently by plotly.js.
        tops = (1.0, result.uniform_entropy)
        for col, top in zip((1, 2), tops, strict=True):
            fig.add_trace(
                go.Scatter(
                    x=[current_d_k, current_d_k],
                    y=[0.0, top],
                    mode="lines+text",
                    text=["", f"your d_k = {current_d_k}"],
                    textposition="top center",
                    textfont=dict(size=round(11 * s)),
                    line=dict(color="#000000", dash="dashdot", width=1),
                    name=CURRENT,
                    showlegend=False,
                    hovertemplate=f"your d_k = {current_d_k}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", tickvals=d_ks, ticktext=[str(d) for d in d_ks], title_text="d_k (log scale)")
    fig.update_yaxes(range=[-0.05, 1.08], row=1, col=1)
    fig.update_yaxes(range=[-0.1, result.uniform_entropy * 1.12], row=1, col=2)
    fig.update_layout(
        height=round(420 * s),
        font=dict(size=round(12 * s)),
        margin=dict(l=10, r=10, t=40, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=-0.35, x=0),
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return fig
