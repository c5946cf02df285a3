"""Figures of one head's steps: matrices of vectors (X, Q, K, V, context, concat, output) and score maps.

Signed numbers sit on a diverging scale symmetric about 0 (blue negative, white 0,
red positive: ColorBrewer RdBu, colour-blind safe); weights keep the heads' 0-1
Viridis scale. Every figure is one ``heatmap_grid``, so labels, escaping and
masked cells look exactly as in the other views.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid, heatmap_grid, single_chart
from dashboard.figures.layout import grid_columns, map_columns, vector_panel_px

DIVERGING = "RdBu_r"
"""Blue (negative) through white (0) to red (positive)."""
VECTOR_HOVER = "token %{y}, coordinate %{x}"
"""Hover of a matrix of vectors: the row is a token, the column one coordinate of its vector."""
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
    """Matrices of vectors in ONE figure on one diverging scale ``[-limit, limit]`` (default: their largest
    |value|), ``ncols`` to a row (the KV cache's K and V side by side); ``vectors_charts`` draws one chart each.
    Sizes from ``layout.vector_panel_px``: cells stretch across the panel, rows keep their labels.
    """
    ncols = grid_columns(len(panels), ncols, presenter=presenter)
    return heatmap_grid(panels, replace(vectors_spec(panels, ncols, limit, value_name, presenter), ncols=ncols))


def vectors_charts(
    panels: Sequence[Panel],
    *,
    at_most: int | None = None,
    columns: int | None = None,
    limit: float | None = None,
    value_name: str = "value",
    presenter: bool = False,
) -> ChartGrid:
    """Matrices of vectors ``(T, d)``, one chart each (a phone stacks them), on one diverging scale
    ``[-limit, limit]`` (default: their largest |value|).

    ``at_most``: panels to a row on a laptop or projector (Q, K and V: three; concat above output: one).
    ``columns``: the page columns to plan for when there are fewer panels (Z alone in a third of the page).
    Sizes from ``layout.vector_panel_px``: cells stretch across the chart, rows keep their labels.
    """
    ncols = columns or map_columns(len(panels), presenter=presenter, at_most=at_most)
    return chart_grid(panels, ncols, vectors_spec(panels, ncols, limit, value_name, presenter))


def vectors_spec(
    panels: Sequence[Panel], ncols: int, limit: float | None, value_name: str, presenter: bool
) -> GridSpec:
    """Matrices of vectors ``(T, d)``, ``ncols`` to a row: one diverging scale ``[-limit, limit]`` (None: their
    largest |value|), and cells stretched across panels sized by ``layout.vector_panel_px``."""
    t = max(p.z.shape[0] for p in panels)
    d = max(p.z.shape[1] for p in panels)
    limit = symmetric_limit(*(p.z for p in panels)) if limit is None else limit
    return GridSpec(
        zmin=-limit,
        zmax=limit,
        value_name=value_name,
        colorscale=DIVERGING,
        panel_px=vector_panel_px(t, d, ncols, presenter=presenter),
        square=False,
        presenter=presenter,
    )


def scores_charts(
    z: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    *,
    limit: float | None = None,
    allowed: np.ndarray | None = None,
    value_name: str = "score",
    presenter: bool = False,
    above_px: int = 0,
) -> ChartGrid:
    """One score map ``(T_q, T_k)`` in its own chart on a diverging scale; ``allowed`` marks masked cells as the
    heads do. ``above_px``: what the page draws above it on a projector (``layout.chart_fold_px``).

    Pass the same ``limit`` to two score maps (QKᵀ, then ÷√d_k) to see the factor shrink them.
    """
    limit = symmetric_limit(z if allowed is None else z[allowed]) if limit is None else limit
    panel = Panel(z, rows, cols, title, allowed)
    spec = GridSpec(zmin=-limit, zmax=limit, value_name=value_name, colorscale=DIVERGING, presenter=presenter)
    return single_chart(panel, spec, above_px=above_px)


PENALTY = "Blues_r"
"""Dark blue (the most negative) to white (0): a bias that only ever lowers a score."""


def bias_charts(
    bias: np.ndarray, *labels, allowed: np.ndarray | None = None, presenter: bool = False, above_px: int = 0
) -> ChartGrid:
    """A bias added to the scores ``(T_q, T_k)``, masked cells marked as the heads do (their bias is never used);
    ``labels``: rows, columns and title, as for ``scores_charts``.

    ALiBi's bias only ever lowers a score: the scale runs from the lowest cell the mask lets through to 0, dark to
    white, with no colour for a reward.
    """
    seen = bias if allowed is None else bias[allowed]
    panel = Panel(bias, *labels, allowed)
    limit = symmetric_limit(seen)
    spec = GridSpec(zmin=-limit, zmax=0.0, value_name="bias", colorscale=PENALTY, presenter=presenter)
    return single_chart(panel, spec, above_px=above_px)


def weights_charts(
    weights: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
    above_px: int = 0,
) -> ChartGrid:
    """One head's weights ``(T_q, T_k)`` in its own chart on the heads' shared 0-1 scale, masked cells marked."""
    return single_chart(Panel(weights, rows, cols, title, allowed), GridSpec(presenter=presenter), above_px=above_px)


def concat_charts(
    concat: np.ndarray, output: np.ndarray, tokens: Sequence[str], head: int, d_k: int, *, presenter: bool = False
) -> ChartGrid:
    """``concat (T, d_model)`` above ``output = concat W_O (T, d_model)``; head ``head`` (0-based) outlined.

    The head's context fills columns ``head*d_k .. (head+1)*d_k - 1`` of concat; the
    outline sits on them, in the panel's category-index coordinates.
    """
    first, last = head * d_k, (head + 1) * d_k - 1
    panels = [
        vector_panel(concat, tokens, f"concat: head {head + 1} fills columns {first}–{last}"),
        vector_panel(output, tokens, "output = concat · W_O"),
    ]
    charts = vectors_charts(panels, at_most=1, presenter=presenter)
    t = concat.shape[0]
    charts.maps[0].add_shape(
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
    return charts


MAX_CONTRIBUTION_PANELS = 4
"""Up to this many heads, each head's contribution is drawn; beyond, the chosen head's, the others' together and
the output: the sum is the same lesson, and 16 heads of (64, 512) strips would be 4 MB of figure JSON."""


def contributions_charts(
    parts: np.ndarray, output: np.ndarray, tokens: Sequence[str], head: int = 0, *, presenter: bool = False
) -> ChartGrid:
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
    return vectors_charts(panels, at_most=1, presenter=presenter)


MASK_SCALE = "Greys"
"""0/1 matrices: white 0, black 1, as a mask printed in a notebook reads."""


def mask_conventions_charts(
    allowed: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, presenter: bool = False
) -> ChartGrid:
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
    spec = GridSpec(zmin=0, zmax=1, value_name="entry", value_format=".0f", colorscale=MASK_SCALE, presenter=presenter)
    return chart_grid(panels, map_columns(3, presenter=presenter), spec)
