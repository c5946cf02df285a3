"""The tiled-attention view's figures: one block of scores, and each query row's running max, sum and correction.

Pure builders: arrays in, ``go.Figure`` out (no Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import GridSpec, Panel, heatmap_grid
from dashboard.figures.labels import position_labels, span
from dashboard.figures.layout import Fonts, axis_title, fonts, scale, single_map_columns
from dashboard.figures.steps import DIVERGING, symmetric_limit

BEFORE, AFTER, CORRECTION = "#999999", "#0072B2", "#D55E00"
"""Bar colours: the state before a block (grey), after it (blue), and the correction factor (vermillion)."""
STATE_MIN_ROWS = 6
"""The running-state chart is planned at least this many rows tall: one token's was a 42 px plot, and its axis
titles, legend and tick labels overprinted each other."""
LEGEND_GAP_PX = 80
"""The legend's top, in px under the plot (x presenter scale): below the tick labels and the axis titles."""


def block_figure(
    scores: np.ndarray,
    tokens: Sequence[str],
    key_tokens: Sequence[str],
    start: int,
    *,
    limit: float | None = None,
    presenter: bool = False,
    fold_px: int | None = None,
) -> go.Figure:
    """The block's scores ``(T_q, B_c)``, keys ``start .. start + B_c - 1``; -inf (masked) cells marked as masked.

    On a projector the page says what the hatching means (``grid.MASK_NOTE``) above the chart: written in it, the
    note ran past the half-page column's edge. ``fold_px``: the height the map, its title and its key labels end
    within (``layout.chart_fold_px``)."""
    allowed = np.isfinite(scores)  # (T_q, B_c)
    stop = start + scores.shape[1]
    title = f"scores of key{'s' * (stop - start > 1)} {span(start, stop - 1)}"  # positions, as the axis labels
    z = np.where(allowed, scores, 0.0)  # (T_q, B_c)
    limit = symmetric_limit(z[allowed]) if limit is None else limit
    panel = Panel(z, tokens, key_tokens, title, allowed, first_col=start)  # keys labelled by their positions
    spec = GridSpec(
        ncols=single_map_columns(presenter),
        zmin=-limit,
        zmax=limit,
        value_name="score",
        colorscale=DIVERGING,
        presenter=presenter,
        fold_px=fold_px,
        mask_note=not presenter,
    )
    return heatmap_grid([panel], spec)


def state_figure(
    m_old: np.ndarray,
    m_new: np.ndarray,
    l_old: np.ndarray,
    l_new: np.ndarray,
    correction: np.ndarray,
    tokens: Sequence[str],
    *,
    presenter: bool = False,
) -> go.Figure:
    """Three panels over the query rows: m before and after, l before and after, and exp(m_old − m_new).

    A row with no key seen yet has m = −∞: it is left out of the m panel (a gap), and its l is 0.
    """
    s = scale(presenter)
    font = fonts(presenter, len(tokens))  # ticks >= 16 px on a projector, like every map's
    y = position_labels(tokens)  # escaped, unique per position
    data = [
        _bars(m_old, y, "before the block", BEFORE, "", True),
        _bars(m_new, y, "after the block", AFTER, "", True),
        _bars(l_old, y, "before the block", BEFORE, 2, False),
        _bars(l_new, y, "after the block", AFTER, 2, False),
        _bars(correction, y, "exp(m_old − m_new)", CORRECTION, 3, True),
    ]
    rows = max(len(tokens), STATE_MIN_ROWS)  # a few rows still get a plot tall enough for the legend below it
    height, top, bottom = int((120 + 22 * rows) * s), int(60 * s), int(40 * s)
    legend_y = -LEGEND_GAP_PX * s / (height - top - bottom)  # paper units: that many px under the plot
    layout = dict(
        barmode="group",
        height=height,
        margin=dict(l=int(90 * s), r=int(10 * s), t=top, b=bottom),
        font=dict(size=font.note),
        # below the axis titles (the toolbar shows at the top right); Plotly widens the bottom margin to hold it
        legend=dict(orientation="h", yanchor="top", y=legend_y, x=0, font=dict(size=font.note)),
        yaxis=dict(autorange="reversed", tickfont=dict(size=font.tick)),
        **_state_axes(font),
    )
    return go.Figure(data=data, layout=layout)


def _bars(values: np.ndarray, y: list[str], name: str, colour: str, axis: int | str, show: bool) -> go.Bar:
    """One running number of every query row, on x axis ``axis``; an infinite value (m = −∞) is a gap."""
    return go.Bar(
        x=[float(v) if np.isfinite(v) else None for v in values],
        y=y,
        orientation="h",
        name=name,
        marker=dict(color=colour),
        xaxis=f"x{axis}",
        yaxis="y",
        showlegend=show,
        legendgroup=name,
        hovertemplate=f"%{{y}}: {name} = %{{x:.4g}}<extra></extra>",
    )


def _state_axes(font: Fonts) -> dict:
    """The three panels' x axes side by side, a gap between them: m, l, and the correction in [0, 1]."""
    gap = 0.06
    width = (1 - 2 * gap) / 3
    return dict(
        xaxis=dict(domain=[0, width], title=axis_title("running max m", font), tickfont=dict(size=font.tick), nticks=4),
        xaxis2=dict(
            domain=[width + gap, 2 * width + gap],
            title=axis_title("running sum l", font),
            anchor="y",
            tickfont=dict(size=font.tick),
            nticks=4,
        ),
        xaxis3=dict(
            domain=[1 - width, 1],
            title=axis_title("correction", font),
            anchor="y",
            range=[0, 1.05],
            tickfont=dict(size=font.tick),
            nticks=4,
        ),
    )
