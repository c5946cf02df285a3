"""The class's guesses as bars: one bar per choice, the right answer's bar marked. Pure: counts in, figure out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.figures.labels import escape
from dashboard.figures.layout import axis_title, chart_fonts, chart_height

BAR_COLOUR = "#9db4c0"
ANSWER_COLOUR = "#1a7f37"
"""Green, with a "right answer" label on its bar: the mark does not rely on colour alone."""


def tally_figure(
    choices: Sequence[str], counts: Mapping[int, int], answer: int, *, presenter: bool = False
) -> go.Figure:
    """Bars of ``counts`` (choice index -> guesses) over ``choices``; choice ``answer`` in green, labelled.

    Choice texts may hold a token the teacher typed: HTML-escaped, as every Plotly label here.
    """
    font = chart_fonts(presenter)
    labels = [f"{escape(c)} ✓" if i == answer else escape(c) for i, c in enumerate(choices)]
    y = [int(counts.get(i, 0)) for i in range(len(choices))]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=y,
            text=y,
            textposition="outside",
            textfont_size=font.hover,
            marker_color=[ANSWER_COLOUR if i == answer else BAR_COLOUR for i in range(len(choices))],
            hovertemplate="%{x}: %{y} guesses<extra></extra>",
        )
    )
    fig.update_layout(
        height=chart_height(260, presenter),
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis=dict(type="category", tickfont_size=font.tick),
        yaxis=dict(
            title=axis_title("guesses", font),
            rangemode="tozero",
            dtick=1 if max(y, default=0) < 10 else None,  # whole guesses on a small class's axis
        ),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
        title=dict(text=f"{sum(y)} guesses; ✓ the right answer", font_size=font.title, x=0.5, xanchor="center"),
    )
    return fig
