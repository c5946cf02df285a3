"""Why ÷√d_k: softmax sharpness against head width, with and without the factor, on a log d_k axis.

Built as plain dicts with the two panels' domains set by hand (like ``grid``):
``make_subplots`` and ``add_hline`` validate every call and made this small
figure cost ~45 ms a rerun; one ``go.Figure(data, layout)`` costs a few.
"""

from __future__ import annotations

import plotly.graph_objects as go

from core import ScalingResult
from dashboard.figures.grid import PRESENTER_SCALE

SCALED = "#0072B2"
"""Okabe-Ito blue: with ÷√d_k (solid)."""
UNSCALED = "#D55E00"
"""Okabe-Ito vermillion: without it (dashed, so the curves differ without colour too)."""
REFERENCE = "#888888"
CURRENT = "your d_k"
"""Name of the vertical line at the sidebar's head width."""
LABEL_FLIPS_AT = 128
"""From this d_k on, the "your d_k" label sits left of its line (to its right it would leave the panel)."""
DOMAINS = ([0.0, 0.44], [0.56, 1.0])
"""x domains of the two panels: largest weight, then entropy."""


def scaling_figure(result: ScalingResult, current_d_k: int | None = None, *, presenter: bool = False) -> go.Figure:
    """Two panels over d_k (log x): the mean largest weight of a row, and the mean row entropy.

    Dotted lines mark the limits: a one-hot row (largest weight 1, entropy 0) and
    a uniform row (1/t and log t). ``current_d_k`` draws a vertical line at the
    sidebar's head width. ``presenter`` makes the type and the figure ``PRESENTER_SCALE`` times larger.
    """
    s = PRESENTER_SCALE if presenter else 1.0
    d_ks = [int(d) for d in result.d_ks]
    panels = [
        ("x", "y", "largest weight in a row", result.max_weight_scaled, result.max_weight_unscaled, 1.0),
        ("x2", "y2", "entropy of a row (nats)", result.entropy_scaled, result.entropy_unscaled, result.uniform_entropy),
    ]
    limits = {
        "x": [(1.0, "one-hot"), (1 / result.t, "uniform")],
        "x2": [(0.0, "one-hot"), (result.uniform_entropy, "uniform")],
    }
    data, shapes, annotations, layout = [], [], [], {}
    for (xa, ya, title, scaled, unscaled, top), domain in zip(panels, DOMAINS, strict=True):
        for name, y, colour, dash in (
            ("with ÷√d_k", scaled, SCALED, "solid"),
            ("without ÷√d_k", unscaled, UNSCALED, "dash"),
        ):
            data.append(
                dict(
                    type="scatter",
                    x=d_ks,
                    y=[float(v) for v in y],
                    xaxis=xa,
                    yaxis=ya,
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=xa == "x",
                    line=dict(color=colour, dash=dash, width=3),
                    hovertemplate=f"d_k = %{{x}}: %{{y:.3f}}<extra>{name}</extra>",
                )
            )
        if current_d_k is not None:  # a trace, not a shape: plotly.js misplaces shapes on a log axis
            data.append(
                dict(
                    type="scatter",
                    x=[current_d_k] * 3,
                    y=[0.0, top / 2, top],
                    xaxis=xa,
                    yaxis=ya,
                    mode="lines+text",
                    # halfway up the line, beside it: clear of the limit labels at the top and bottom of the panel
                    # (at d_k <= 8 a label at the top sat on "one-hot"/"uniform"), and of the x axis labels
                    text=["", f"your d_k = {current_d_k}", ""],
                    textposition="middle left" if current_d_k >= LABEL_FLIPS_AT else "middle right",
                    textfont=dict(size=round(11 * s)),
                    line=dict(color="#000000", dash="dashdot", width=1),
                    name=CURRENT,
                    showlegend=False,
                    hovertemplate=f"your d_k = {current_d_k}<extra></extra>",
                )
            )
        for y, text in limits[xa]:  # a horizontal line across the panel: y in data units, x in domain units
            line = dict(color=REFERENCE, dash="dot", width=1)
            shapes.append(dict(type="line", xref=f"{xa} domain", x0=0, x1=1, yref=ya, y0=y, y1=y, line=line))
            annotations.append(
                dict(
                    text=text,
                    xref=f"{xa} domain",
                    x=0,
                    xanchor="left",
                    yref=ya,
                    y=y,
                    yanchor="bottom" if y > 0 else "top",
                    showarrow=False,
                    font=dict(color=REFERENCE, size=round(11 * s)),
                )
            )
        annotations.append(
            dict(
                text=title,
                xref="paper",
                x=sum(domain) / 2,
                yref="paper",
                y=1.0,
                yanchor="bottom",
                showarrow=False,
                font=dict(size=round(14 * s)),
            )
        )
        suffix = xa[1:]
        layout[f"xaxis{suffix}"] = dict(
            domain=domain,
            anchor=ya,
            type="log",
            tickvals=d_ks,
            ticktext=[str(d) for d in d_ks],
            title=dict(text="d_k (log scale)", font=dict(size=round(12 * s))),
            tickfont=dict(size=round(12 * s)),  # explicit: Streamlit's theme sets its own tick size otherwise
        )
        y_range = [-0.05, 1.08] if xa == "x" else [-0.1, result.uniform_entropy * 1.12]
        layout[f"yaxis{suffix}"] = dict(anchor=xa, range=y_range, tickfont=dict(size=round(12 * s)))
    layout |= dict(
        shapes=shapes,
        annotations=annotations,
        height=round(420 * s),
        font=dict(size=round(12 * s)),
        margin=dict(l=10, r=10, t=40, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=-0.35, x=0),
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return go.Figure(data=data, layout=layout)
