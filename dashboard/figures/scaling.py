"""Why ÷√d_k: softmax sharpness against head width, with and without the factor, on a log d_k axis.

Built as plain dicts (``make_subplots`` and ``add_hline`` validate every call and made this small
figure cost ~45 ms a rerun; one ``go.Figure(data, layout)`` costs a few), one figure per panel.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from core import ScalingResult
from dashboard.figures.grid import title_annotation
from dashboard.figures.layout import LEGEND_BELOW, MODEBAR_CLEAR_PX, Fonts, axis_title, chart_fonts, chart_height

SCALED = "#0072B2"
"""Okabe-Ito blue: with ÷√d_k (solid)."""
UNSCALED = "#D55E00"
"""Okabe-Ito vermillion: without it (dashed, so the curves differ without colour too)."""
REFERENCE = "#888888"
CURRENT = "your d_k"
"""Name of the vertical line at the sidebar's head width."""
LABEL_FLIPS_AT = 128
"""From this d_k on, the "your d_k" label sits left of its line (to its right it would leave the panel)."""


def scaling_figures(
    result: ScalingResult, current_d_k: int | None = None, *, presenter: bool = False
) -> list[go.Figure]:
    """Two charts over d_k (log x): the mean largest weight of a row, and the mean row entropy.

    Two figures, not two panels of one, so a phone stacks them (``map_columns.show_charts``). Dotted lines
    mark the limits: a one-hot row (largest weight 1, entropy 0) and a uniform row (1/t and log t).
    ``current_d_k`` draws a vertical line at the sidebar's head width. Fonts and height from ``layout``.
    """
    font = chart_fonts(presenter)
    d_ks = [int(d) for d in result.d_ks]
    panels = [
        ("largest weight in a row", result.max_weight_scaled, result.max_weight_unscaled, 1.0,
         [(1.0, "one-hot"), (1 / result.t, "uniform")], [-0.05, 1.08]),
        ("entropy of a row (nats)", result.entropy_scaled, result.entropy_unscaled, result.uniform_entropy,
         [(0.0, "one-hot"), (result.uniform_entropy, "uniform")], [-0.1, result.uniform_entropy * 1.12]),
    ]  # fmt: skip
    figures = []
    for title, scaled, unscaled, top, limits, y_range in panels:
        data = _curves(d_ks, scaled, unscaled)
        if current_d_k is not None:  # a trace, not a shape: plotly.js misplaces shapes on a log axis
            data.append(_current_line(current_d_k, top, font))
        shapes, annotations = _limit_lines(limits, font)
        annotations.append(title_annotation(title, 0.5, 1.0, size=font.title))
        layout = dict(
            xaxis=dict(
                type="log",
                tickvals=d_ks,
                ticktext=[str(d) for d in d_ks],
                title=axis_title("d_k (log scale)", font),
                tickfont=dict(size=font.tick),  # explicit: Streamlit's theme sets its own tick size otherwise
            ),
            yaxis=dict(range=y_range, tickfont=dict(size=font.tick)),
            shapes=shapes,
            annotations=annotations,
            height=chart_height(420, presenter),
            font=dict(size=font.note),
            margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX, b=10),
            # below the plot: the toolbar shows at the top right, over a legend there (on a phone's tap, too)
            legend=dict(orientation="h", yanchor="top", y=LEGEND_BELOW, x=0, font=dict(size=font.note)),
            hovermode="closest",
            paper_bgcolor="rgba(0,0,0,0)",
        )
        figures.append(go.Figure(data=data, layout=layout))
    return figures


def _curves(d_ks: list[int], scaled: np.ndarray, unscaled: np.ndarray) -> list[dict]:
    """The two curves over d_k, with and without ÷√d_k: told apart by their dash as well as their colour."""
    return [
        dict(
            type="scatter",
            x=d_ks,
            y=[float(v) for v in y],
            mode="lines+markers",
            name=name,
            line=dict(color=colour, dash=dash, width=3),
            hovertemplate=f"d_k = %{{x}}: %{{y:.3f}}<extra>{name}</extra>",
        )
        for name, y, colour, dash in (
            ("with ÷√d_k", scaled, SCALED, "solid"),
            ("without ÷√d_k", unscaled, UNSCALED, "dash"),
        )
    ]


def _current_line(current_d_k: int, top: float, font: Fonts) -> dict:
    """A vertical line at the sidebar's d_k, from 0 to ``top``, labelled halfway up."""
    return dict(
        type="scatter",
        x=[current_d_k] * 3,
        y=[0.0, top / 2, top],
        mode="lines+text",
        # halfway up the line, beside it: clear of the limit labels at the top and bottom of the panel
        # (at d_k <= 8 a label at the top sat on "one-hot"/"uniform"), and of the x axis labels
        text=["", f"your d_k = {current_d_k}", ""],
        textposition="middle left" if current_d_k >= LABEL_FLIPS_AT else "middle right",
        textfont=dict(size=font.value),
        line=dict(color="#000000", dash="dashdot", width=1),
        name=CURRENT,
        showlegend=False,
        hovertemplate=f"your d_k = {current_d_k}<extra></extra>",
    )


def _limit_lines(limits: list[tuple[float, str]], font: Fonts) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations): a dotted horizontal line across the panel at each limit (y in data units, x in domain
    units), named above it."""
    shapes, annotations = [], []
    for y, text in limits:
        line = dict(color=REFERENCE, dash="dot", width=1)
        shapes.append(dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y, line=line))
        annotations.append(
            dict(
                text=text,
                xref="x domain",
                x=0,
                xanchor="left",
                yref="y",
                y=y,
                yanchor="bottom",  # above its line: under the line at 0 it met the x axis's labels
                showarrow=False,
                font=dict(color=REFERENCE, size=font.value),
            )
        )
    return shapes, annotations
