"""Figures of one head's steps: matrices of vectors (X, Q, K, V, context, concat, output) and score maps.

Signed numbers sit on a diverging scale symmetric about 0 (blue negative, white 0,
red positive: ColorBrewer RdBu, colour-blind safe); weights keep the heads' 0-1
Viridis scale. Every figure is one ``heatmap_grid``, so labels, escaping and
masked cells look exactly as in the other views.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import (
    ASSUMED_WIDTH_PX,
    CELL_PX,
    MAX_COLS,
    PANEL_PX,
    PRESENTER_MAX_COLS,
    PRESENTER_PANEL_PX,
    PRESENTER_SCALE,
    PRESENTER_WIDTH_PX,
    Panel,
    heatmap_grid,
)

DIVERGING = "RdBu_r"
"""Blue (negative) through white (0) to red (positive)."""
VECTOR_HOVER = "token %{y}, coordinate %{x}"
"""Hover of a matrix of vectors: the row is a token, the column one coordinate of its vector."""
ROW_PX = 14
"""Smallest row height (normal-mode px, scaled with the type in presenter mode): one token label (11 px type, or
19 px in presenter mode) plus a gap, so every row keeps its label. Square cells narrower than this would thin
the labels to every other token, so a matrix whose cells would be smaller stretches them to rows this high."""
MIN_VECTOR_PX = 40
"""Smallest panel height: one token is still a visible strip."""
HEAD_BOX = "#111111"
"""Outline of the chosen head's columns in the concatenated heads."""


def symmetric_limit(*arrays: np.ndarray) -> float:
    """``max |value|`` over all ``arrays``, or 1 if they are all 0: the colour range is ``[-limit, limit]``."""
    peak = max(float(np.max(np.abs(a))) if np.size(a) else 0.0 for a in arrays)
    return peak if peak > 0 else 1.0


def vector_panel(z: np.ndarray, tokens: Sequence[str], title: str) -> Panel:
    """One matrix of vectors ``(T, d)``: a row per token, a column per coordinate."""
    if z.shape[0] != len(tokens):
        raise ValueError(f"{z.shape[0]} rows do not match {len(tokens)} tokens")
    return Panel(z, tokens, None, title, hover=VECTOR_HOVER)


def vectors_figure(
    panels: Sequence[Panel],
    *,
    ncols: int | None = None,
    limit: float | None = None,
    value_name: str = "value",
    presenter: bool = False,
) -> go.Figure:
    """Matrices of vectors on one diverging scale ``[-limit, limit]`` (default: their largest |value|).

    Cells are square while they stay at least ``ROW_PX`` wide; a wider matrix
    (d_model = 512, or any d_k on a projector) stretches them to ``ROW_PX``-high rows across the panel width.
    Sizes are planned in normal-mode pixels; ``heatmap_grid`` scales them for a presenter.
    """
    if presenter:
        ncols = min(ncols or min(len(panels), PRESENTER_MAX_COLS), PRESENTER_MAX_COLS)
        width, cap = PRESENTER_WIDTH_PX / PRESENTER_SCALE, PRESENTER_PANEL_PX[ncols] / PRESENTER_SCALE
    else:
        ncols = ncols or min(len(panels), MAX_COLS)
        width, cap = ASSUMED_WIDTH_PX, PANEL_PX.get(ncols, PANEL_PX[MAX_COLS])
    t = max(p.z.shape[0] for p in panels)
    d = max(p.z.shape[1] for p in panels)
    cell = min(CELL_PX, width / ncols / d)  # px per coordinate if the panel is as wide as planned
    square = cell >= ROW_PX
    rows_px = t * (cell if square else ROW_PX)
    limit = symmetric_limit(*(p.z for p in panels)) if limit is None else limit
    return heatmap_grid(
        panels,
        ncols=ncols,
        zmin=-limit,
        zmax=limit,
        value_name=value_name,
        colorscale=DIVERGING,
        panel_px=int(min(cap, max(MIN_VECTOR_PX, rows_px))),
        square=square,
        presenter=presenter,
    )


def scores_figure(
    z: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    *,
    limit: float | None = None,
    allowed: np.ndarray | None = None,
    presenter: bool = False,
) -> go.Figure:
    """One score map ``(T_q, T_k)`` on a diverging scale; ``allowed`` marks masked cells as the heads do.

    Pass the same ``limit`` to two score maps (QKᵀ, then ÷√d_k) to see the factor shrink them.
    """
    limit = symmetric_limit(z if allowed is None else z[allowed]) if limit is None else limit
    panel = Panel(z, rows, cols, title, allowed)
    return heatmap_grid(
        [panel], ncols=2, zmin=-limit, zmax=limit, value_name="score", colorscale=DIVERGING, presenter=presenter
    )


def weights_figure(
    weights: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
) -> go.Figure:
    """One head's weights ``(T_q, T_k)`` on the heads' shared 0-1 scale, masked cells marked."""
    return heatmap_grid([Panel(weights, rows, cols, title, allowed)], ncols=2, presenter=presenter)


def concat_figure(
    concat: np.ndarray, output: np.ndarray, tokens: Sequence[str], head: int, d_k: int, *, presenter: bool = False
) -> go.Figure:
    """``concat (T, d_model)`` above ``output = concat W_O (T, d_model)``; head ``head`` (0-based) outlined.

    The head's context fills columns ``head*d_k .. (head+1)*d_k - 1`` of concat; the
    outline sits on them, in the panel's category-index coordinates.
    """
    first, last = head * d_k, (head + 1) * d_k - 1
    panels = [
        vector_panel(concat, tokens, f"concat: head {head + 1} fills columns {first}–{last}"),
        vector_panel(output, tokens, "output = concat · W_O"),
    ]
    fig = vectors_figure(panels, ncols=1, presenter=presenter)
    t = concat.shape[0]
    fig.add_shape(
        type="rect",
        xref="x",
        yref="y",
        x0=first - 0.5,
        x1=last + 0.5,
        y0=-0.5,
        y1=t - 0.5,
        line=dict(color=HEAD_BOX, width=2),
        name="head columns",
    )
    return fig


MAX_CONTRIBUTION_PANELS = 4
"""Up to this many heads, each head's contribution is drawn; beyond, the chosen head's, the others' together and
the output: the sum is the same lesson, and 16 heads of (64, 512) strips would be 4 MB of figure JSON."""


def contributions_figure(
    parts: np.ndarray, output: np.ndarray, tokens: Sequence[str], head: int = 0, *, presenter: bool = False
) -> go.Figure:
    """Each head's share ``parts (h, T, d_model)`` of the output, then ``output (T, d_model)``, on one scale.

    Panel h is ``Z_h · W_O[rows of head h]``; the last panel is the output they add up to. With more than
    ``MAX_CONTRIBUTION_PANELS`` heads, head ``head`` (0-based) is drawn alone and the others as one sum.
    """
    h, _, d_model = parts.shape
    d_k = d_model // h

    def share(i: int) -> Panel:
        return vector_panel(parts[i], tokens, f"head {i + 1}: Z{i + 1} · W_O[rows {i * d_k}–{(i + 1) * d_k - 1}]")

    if h <= MAX_CONTRIBUTION_PANELS:
        panels = [share(i) for i in range(h)]
    else:
        others = np.delete(parts, head, axis=0).sum(axis=0)  # (T, d_model): the other h - 1 heads together
        panels = [share(head), vector_panel(others, tokens, f"the other {h - 1} heads, added up")]
    panels.append(vector_panel(output, tokens, f"output = the sum of the {h} heads" if h > 1 else "output"))
    return vectors_figure(panels, ncols=1, presenter=presenter)


MASK_SCALE = "Greys"
"""0/1 matrices: white 0, black 1, as a mask printed in a notebook reads."""


def mask_conventions_figure(
    allowed: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, presenter: bool = False
) -> go.Figure:
    """One mask ``allowed (T_q, T_k)`` (True = may attend) written three ways, as 0/1 matrices side by side.

    Lesson 1 keeps where the mask is 1 (``np.tril(np.ones)``); lesson 3 hides where it is True
    (``np.triu(..., 1)``); this app, PyTorch's ``scaled_dot_product_attention`` and JAX attend where True.
    """
    keep = allowed.astype(float)  # (T_q, T_k): 1 where key j may be seen
    panels = [
        Panel(keep, rows, cols, "lesson 1: 1 = keep", hover="query %{y}, key %{x}"),
        Panel(1.0 - keep, rows, cols, "lesson 3: True = hidden", hover="query %{y}, key %{x}"),
        Panel(keep, rows, cols, "this app: True = may attend", hover="query %{y}, key %{x}"),
    ]
    return heatmap_grid(
        panels,
        ncols=3,
        zmin=0,
        zmax=1,
        value_name="entry",
        value_format=".0f",
        colorscale=MASK_SCALE,
        presenter=presenter,
    )
