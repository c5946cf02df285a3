"""The class's guesses as bars: one bar per choice, the right answer's bar marked. Pure: counts in, figure out."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.figures.labels import escape
from dashboard.figures.layout import BAR_LABEL_CHARS, MODEBAR_CLEAR_PX, axis_title, bars_height, chart_fonts

BAR_COLOUR = "#9db4c0"
ANSWER_COLOUR = "#1a7f37"
"""Green, with a "right answer" label on its bar: the mark does not rely on colour alone."""


def choice_label(choice: str, right: bool) -> str:
    """A choice's bar label: wrapped at ``BAR_LABEL_CHARS`` (a long word broken too), each line HTML-escaped after
    the wrap (an entity is never split), the right answer ending in " ✓"."""
    lines = textwrap.wrap(f"{choice} ✓" if right else choice, BAR_LABEL_CHARS) or [""]
    return "<br>".join(escape(line) for line in lines)


def tally_figure(
    choices: Sequence[str], counts: Mapping[int, int], answer: int, *, presenter: bool = False
) -> go.Figure:
    """Horizontal bars of ``counts`` (choice index -> guesses), the choices top to bottom in their order, each
    label wrapped beside its bar (a quiz choice is a phrase: under upright bars it stood on end); choice
    ``answer`` in green, labelled.

    Choice texts may hold a token the teacher typed: HTML-escaped, as every Plotly label here.
    """
    font = chart_fonts(presenter)
    labels = [choice_label(c, i == answer) for i, c in enumerate(choices)]
    x = [int(counts.get(i, 0)) for i in range(len(choices))]
    total, most = sum(x), max(x, default=0)
    top = MODEBAR_CLEAR_PX + font.title
    bottom = 3 * font.tick  # the count axis and its title
    fig = go.Figure(
        go.Bar(
            x=x,
            y=labels,
            orientation="h",
            text=x,
            textposition="outside",
            cliponaxis=False,
            textfont_size=font.hover,
            marker_color=[ANSWER_COLOUR if i == answer else BAR_COLOUR for i in range(len(choices))],
            hovertemplate="%{y}: %{x} guesses<extra></extra>",
        )
    )
    fig.update_layout(
        height=top + bottom + bars_height([label.count("<br>") + 1 for label in labels], font),
        margin=dict(l=10, r=10 + 2 * font.hover, t=top, b=10),  # the right: room for the longest bar's count
        yaxis=dict(type="category", autorange="reversed", tickfont_size=font.tick, automargin=True),
        xaxis=dict(
            title=axis_title("guesses", font),
            tickfont_size=font.tick,
            rangemode="tozero",
            range=[0, max(1, most) * 1.15],
            dtick=1 if most < 10 else None,  # whole guesses on a small class's axis
        ),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
        title=dict(
            text=f"{total} guess{'es' if total != 1 else ''}; ✓ the right answer",
            font_size=font.title,
            x=0.5,
            xanchor="center",
            yref="paper",  # on the plot, under the toolbar's strip (on a phone it ran under the toolbar)
            y=1,
            yanchor="bottom",
            pad_b=font.tick // 2,
        ),
    )
    return fig
