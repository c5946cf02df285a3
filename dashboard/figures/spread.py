"""The spread of raw scores q·k against d_k: one box of quantiles per head width, with ±√d_k and ±100 marked.

Boxes are drawn from precomputed quantiles (``core.score_spread``), not from the samples, so the figure
sends a few numbers per width instead of thousands.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from core import SpreadResult
from dashboard.figures.layout import MODEBAR_CLEAR_PX, Fonts, axis_title, chart_fonts, chart_height
from dashboard.figures.scaling import REFERENCE, SCALED, UNSCALED

CLAIM = 100.0
"""Lesson 3: "a 512-dimension dot product can easily reach ±100"."""


def spread_figure(result: SpreadResult, *, presenter: bool = False, fold_px: int | None = None) -> go.Figure:
    """One horizontal box per d_k: the middle half (box), the middle 99 % (whiskers), the median;
    diamonds at ±√d_k, the standard deviation (the measured one in their hover); dashed lines at ±100.
    ``fold_px``: on a projector, the chart is at most this tall (``layout.chart_fold_px``).

    ``result.quantiles`` columns are ``core.scaling.SPREAD_QUANTILES``: 0.5 %, 2.5 %, 25 %, 50 %, 75 %, 97.5 %, 99.5 %.
    """
    font = chart_fonts(presenter)
    names = [f"d_k = {int(d)}" for d in result.d_ks]
    q = result.quantiles
    data = _spread_traces(result, names, font)
    shapes, annotations = _claim_lines(font)
    reach = max(CLAIM, float(abs(q).max())) * 1.1
    layout = dict(
        shapes=shapes,
        annotations=annotations,
        height=min(chart_height(90 + 70 * len(names), presenter), fold_px or math.inf),
        font=dict(size=font.note),
        margin=dict(l=10, r=10, t=MODEBAR_CLEAR_PX + round(1.3 * font.note), b=10),  # "±100" under the toolbar
        xaxis=dict(
            range=[-reach, reach],
            title=axis_title("raw score q·k (not divided by √d_k)", font),
            zeroline=True,
            tickfont=dict(size=font.tick),
        ),
        yaxis=dict(autorange="reversed", tickfont=dict(size=font.tick)),
        legend=dict(orientation="h", yanchor="top", y=-0.3, x=0, font=dict(size=font.note)),
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
    )
    return go.Figure(data=data, layout=layout)


def _spread_traces(result: SpreadResult, names: list[str], font: Fonts) -> list[dict]:
    """The measured spread, a box per d_k from ``result.quantiles``, and the theory's diamonds at ±√d_k."""
    q = result.quantiles
    roots = [math.sqrt(float(d)) for d in result.d_ks]  # theory: the standard deviation of q·k
    measured = [float(v) for v in result.std]  # the samples' own standard deviation, for the hover
    return [
        dict(
            type="box",
            orientation="h",
            y=names,
            q1=[float(v) for v in q[:, 2]],
            median=[float(v) for v in q[:, 3]],
            q3=[float(v) for v in q[:, 4]],
            lowerfence=[float(v) for v in q[:, 0]],
            upperfence=[float(v) for v in q[:, 6]],
            name="raw q·k: box = middle 50 %, whiskers = middle 99 %",
            marker=dict(color=UNSCALED),
            line=dict(color=UNSCALED),
            hoverinfo="x",
        ),
        dict(
            type="scatter",
            x=roots + [-r for r in roots],
            y=names + names,
            customdata=measured + measured,
            mode="markers",
            marker=dict(symbol="diamond", size=font.value, color=SCALED),
            name="±√d_k: one standard deviation",
            hovertemplate="%{y}: √d_k = %{x:.1f}, measured %{customdata:.1f}<extra></extra>",
        ),
    ]


def _claim_lines(font: Fonts) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations): dashed lines at lesson 3's ±100, named "±100" above the right one."""
    line = dict(color=REFERENCE, dash="dash", width=1)
    shapes = [dict(type="line", xref="x", x0=x, x1=x, yref="paper", y0=0, y1=1, line=line) for x in (-CLAIM, CLAIM)]
    annotations = [
        dict(
            text="±100",
            xref="x",
            x=CLAIM,
            yref="paper",
            y=1.0,
            yanchor="bottom",
            showarrow=False,
            font=dict(color=REFERENCE, size=font.note),
        )
    ]
    return shapes, annotations
