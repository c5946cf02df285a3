"""Head summary as grouped bars: per head, where its weight goes, and how spread out it is.

Every bar is a number in [0, 1], so one axis serves them all. A value core could
not compute (NaN: no previous token in a one-token sentence) gets no bar and the
text "n/a" at its foot, never a bar of height 0 that would read as "no weight".
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from core import HeadSummary
from dashboard.figures.layout import (
    BARS_GAP,
    CHART_TEXT_MIN,
    LEGEND_BELOW,
    MODEBAR_CLEAR_PX,
    axis_title,
    bar_label_px,
    chart_fonts,
    chart_height,
)

BARS = (
    ("self_weight", "on itself", "#0072B2"),
    ("previous_weight", "on the previous token", "#D55E00"),
    ("first_weight", "on the first token", "#009E73"),
    ("normalized_entropy", "spread (entropy ÷ log keys)", "#999999"),
)
"""(HeadSummary field, legend name, Okabe-Ito colour): colour-blind safe, and each bar is also labelled."""
NA = "n/a"
LABELS_TOP = {False: 1.12, True: 1.3}
"""Where the y axis ends: room above a bar of 1 for its value, written across (laptop, phone) or upright
(projector)."""


def bar_texts(values: np.ndarray) -> list[str]:
    """Bar labels: the value to two decimals, or "n/a" for NaN."""
    return [NA if math.isnan(v) else f"{v:.2f}" for v in values.tolist()]


def summary_figure(summary: HeadSummary, *, presenter: bool = False) -> go.Figure:
    """One group of four bars per head (``summary`` arrays are ``(h,)``), on a shared 0-1 axis; larger type for a
    presenter."""
    font = chart_fonts(presenter)
    h = summary.entropy.shape[-1]
    # On a projector (its width is known) each value is written along its bar, at a size its width holds: Plotly
    # shrank a label written across a narrow bar (10.5 px for 12 heads). Elsewhere (a laptop, or a phone, whose width
    # the server cannot know) Plotly fits them across, and hides what would be under the floor.
    upright = (
        dict(textangle=-90, textfont=dict(size=bar_label_px(h * len(BARS), presenter)), constraintext="none")
        if presenter
        else {}
    )
    heads = [f"head {i + 1}" for i in range(h)]
    fig = go.Figure()
    for field, name, colour in BARS:
        values = np.asarray(getattr(summary, field), dtype=float)  # (h,)
        fig.add_trace(
            go.Bar(
                x=heads,
                y=np.nan_to_num(values, nan=0.0).tolist(),
                text=bar_texts(values),
                textposition="outside",
                cliponaxis=False,
                **upright,
                name=name,
                marker=dict(color=colour),
                hovertemplate=f"%{{x}}, {name}: %{{text}}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        bargap=BARS_GAP,
        height=chart_height(380 if h <= 8 else 440, presenter),
        font=dict(size=font.note),
        margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX, b=10),
        xaxis=dict(tickfont=dict(size=font.tick)),
        yaxis=dict(
            range=[0, LABELS_TOP[presenter]],
            title=axis_title("mean over query rows", font),
            tickvals=[0, 0.25, 0.5, 0.75, 1],
            tickfont=dict(size=font.tick),
        ),
        # below the plot: the toolbar shows at the top right, over a legend there (on a phone's tap, too)
        legend=dict(orientation="h", yanchor="top", y=LEGEND_BELOW, x=0, font=dict(size=font.note)),
        uniformtext=dict(minsize=CHART_TEXT_MIN[presenter], mode="hide"),  # never a label under the floor
        paper_bgcolor="rgba(0,0,0,0)",
        hovermode="closest",
    )
    return fig
