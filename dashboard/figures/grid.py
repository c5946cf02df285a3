"""A grid of heatmaps in ONE figure with ONE shared 0-1 colour scale.

Why one figure: 16 separate charts cost 16 round trips and 16 colour bars; one
figure with a grid of axes (domains set by hand, no ``make_subplots``) is a
single payload with a single colour bar, so heads are compared on the same scale.

Conventions: query tokens on the rows (row 0 at the top), key tokens on the
columns; axes are categorical with one unique label per position (``"3·river"``),
so T tokens always give T×T cells and the hover can name both tokens without a
per-cell string. Masked cells are NaN: a gap over a grey, hatched background,
and the hover says "masked" instead of a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.labels import escape, position_labels, tick_step, tick_texts

COLORSCALE = "Viridis"
"""Perceptually uniform and colour-blind safe, dark (0) to yellow (1)."""
MASK_BG = "#e4e4e4"
"""Fill under masked (NaN) cells: much lighter than the dark purple of a small weight."""
HATCH = "#a0a0a0"
"""Colour of the hatch lines drawn across masked cells."""
PANEL_PX = {1: 520, 2: 400, 3: 280, 4: 210}
"""Nominal panel height in pixels for a grid of 1, 2, 3 or 4 columns."""
MAX_COLS = 4


@dataclass(frozen=True)
class Panel:
    """One heatmap: ``z (T_q, T_k)`` values in [zmin, zmax], row and column tokens, a title.

    ``allowed (T_q, T_k)`` bool, True = may attend, or None when nothing is masked.
    Token strings are raw: the builder escapes them.
    """

    z: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str]
    title: str
    allowed: np.ndarray | None = None


def _hatch_path(allowed: np.ndarray) -> str:
    """SVG path of "/" strokes across every run of masked cells, in category-index coordinates.

    Runs follow the anti-diagonals (i + j constant), so a causal triangle costs
    about 2T strokes instead of T²/2.
    """
    t_q, t_k = allowed.shape
    masked = ~allowed
    parts = []
    for c in range(t_q + t_k - 1):
        run_start = None
        for j in range(max(0, c - t_q + 1), min(t_k, c + 1) + 1):
            inside = j <= min(t_k - 1, c) and masked[c - j, j]
            if inside and run_start is None:
                run_start = j
            elif not inside and run_start is not None:
                j0, j1 = run_start, j - 1
                parts.append(f"M{j0 - 0.5},{c - j0 + 0.5}L{j1 + 0.5},{c - j1 - 0.5}")
                run_start = None
    return "".join(parts)


def _fill_path(allowed: np.ndarray) -> str:
    """SVG path of one rectangle per row-run of masked cells: the grey under the NaN gaps."""
    parts = []
    for i, row in enumerate(~allowed):
        j = 0
        while j < row.size:
            if row[j]:
                j0 = j
                while j < row.size and row[j]:
                    j += 1
                parts.append(f"M{j0 - 0.5},{i - 0.5}H{j - 0.5}V{i + 0.5}H{j0 - 0.5}Z")
            else:
                j += 1
    return "".join(parts)


def _mask_shapes(allowed: np.ndarray, xa: str, ya: str) -> list[dict]:
    """Grey fill below the heatmap and hatch lines above it, over the masked cells only."""
    if allowed.all():
        return []
    fill = dict(type="path", xref=xa, yref=ya, path=_fill_path(allowed), fillcolor=MASK_BG, line=dict(width=0))
    hatch = dict(type="path", xref=xa, yref=ya, path=_hatch_path(allowed), line=dict(color=HATCH, width=1))
    return [fill | dict(layer="below"), hatch]


def _font_size(n: int) -> int:
    return 11 if n <= 24 else 9 if n <= 40 else 8


def _axis(domain: list[float], tokens: Sequence[str], show: bool, panel_px: int, anchor: str) -> dict:
    """A categorical axis over ``tokens`` with thinned, escaped tick labels."""
    cats = position_labels(tokens)
    size = _font_size(len(cats))
    step = tick_step(len(cats), max(4, int(panel_px / (size + 3))))
    return dict(
        domain=domain,
        anchor=anchor,
        type="category",
        categoryorder="array",
        categoryarray=cats,
        tickmode="array",
        tickvals=cats[::step],
        ticktext=tick_texts(tokens)[::step],
        showticklabels=show,
        tickfont=dict(size=size),
        showgrid=False,
        zeroline=False,
        range=[-0.5, len(cats) - 0.5],
        constrain="domain",
    )


def heatmap_grid(
    panels: Sequence[Panel],
    *,
    ncols: int | None = None,
    zmin: float = 0.0,
    zmax: float = 1.0,
    value_name: str = "weight",
    value_format: str = ".3f",
    colorscale: str = COLORSCALE,
    panel_px: int | None = None,
) -> go.Figure:
    """One figure, ``len(panels)`` heatmaps on a grid, one colour bar ``[zmin, zmax]``.

    Tick labels are drawn on the left column and bottom row, and on any panel
    whose tokens differ from its neighbour's (e.g. a reordered sentence).
    """
    n = len(panels)
    if n == 0:
        raise ValueError("heatmap_grid needs at least one panel")
    ncols = ncols or min(n, MAX_COLS)
    nrows = math.ceil(n / ncols)
    px = panel_px or PANEL_PX.get(ncols, 300)
    longest = max(len(tok) for p in panels for tok in (*p.rows, *p.cols))
    tick_px = 30 + 6 * min(longest + 3, 16)  # room for rotated tick labels under a panel
    title_px = 28
    row_px = px + tick_px + title_px
    margin_t = 34 if any(p.allowed is not None and not p.allowed.all() for p in panels) else 6
    plot_h = nrows * row_px
    height = plot_h + margin_t + 6
    gap_x = 0.04 if ncols > 1 else 0.0
    w = (1 - gap_x * (ncols - 1)) / ncols
    any_mask = margin_t > 6

    traces, layout, annotations, shapes = [], {}, [], []
    path_cache: dict[bytes, list[dict]] = {}  # heads share one mask: build its paths once
    for k, p in enumerate(panels):
        r, c = divmod(k, ncols)
        x_dom = [c * (w + gap_x), c * (w + gap_x) + w]
        top = 1 - (r * row_px + title_px) / plot_h
        y_dom = [top - px / plot_h, top]
        left_rows = panels[k - 1].rows if c > 0 else None
        below = panels[k + ncols].cols if k + ncols < n else None
        show_y = c == 0 or list(left_rows) != list(p.rows)
        show_x = below is None or list(below) != list(p.cols)
        suffix = "" if k == 0 else str(k + 1)
        xa, ya = f"x{suffix}", f"y{suffix}"
        layout[f"xaxis{suffix}"] = _axis(x_dom, p.cols, show_x, px, ya) | dict(tickangle=-60)
        y_axis = _axis(y_dom, p.rows, show_y, px, xa)
        layout[f"yaxis{suffix}"] = y_axis | dict(range=y_axis["range"][::-1], scaleanchor=xa)  # row 0 on top

        z = np.asarray(p.z, dtype=np.float32)  # (T_q, T_k); float32 keeps the payload small
        if p.allowed is not None:
            z = np.where(p.allowed, z, np.float32(np.nan))
            key = p.allowed.tobytes() + bytes(str(p.allowed.shape), "ascii")
            if key not in path_cache:
                path_cache[key] = _mask_shapes(p.allowed, "x", "y")
            shapes += [shape | dict(xref=xa, yref=ya) for shape in path_cache[key]]
        traces.append(
            dict(
                type="heatmap",
                z=z,
                x=position_labels(p.cols),
                y=position_labels(p.rows),
                xaxis=xa,
                yaxis=ya,
                coloraxis="coloraxis",
                xgap=0,
                ygap=0,
                connectgaps=False,
                hoverongaps=True,
                hovertemplate=f"query %{{y}} → key %{{x}}: %{{z:{value_format}}}<extra>{escape(p.title)}</extra>",
                hovertemplatefallback="masked",
                name=escape(p.title),
            )
        )
        annotations.append(
            dict(
                text=escape(p.title),
                xref="paper",
                yref="paper",
                x=(x_dom[0] + x_dom[1]) / 2,
                y=top,
                yanchor="bottom",
                xanchor="center",
                showarrow=False,
                font=dict(size=13),
            )
        )
    if any_mask:
        annotations.append(
            dict(
                text="hatched grey = masked: the query may not attend to this key",
                xref="paper",
                yref="paper",
                x=1,
                y=1,
                xanchor="right",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=12, color="#555"),
            )
        )
    layout |= dict(
        height=height,
        margin=dict(l=10, r=10, t=margin_t, b=6),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        coloraxis=dict(
            colorscale=colorscale,
            cmin=zmin,
            cmax=zmax,
            colorbar=dict(title=dict(text=value_name), lenmode="pixels", len=min(px, 320), y=1, yanchor="top"),
        ),
        annotations=annotations,
        shapes=shapes,
        hovermode="closest",
        showlegend=False,
    )
    return go.Figure(data=traces, layout=layout)
