"""Attention-weight figures: every head of one sentence, their average, and a reordering."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core import realign
from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid, heatmap_grid, single_chart, title_annotation
from dashboard.figures.layout import (
    FIGURE_MARGIN_PX,
    MODEBAR_CLEAR_PX,
    fonts,
    map_columns,
    outer_label_px,
    single_map_columns,
    small_multiple_px,
)

COLUMN_LABEL_HEADS = 8
"""Up to this many heads the overview's columns read "H1".."Hh"; more (MiniLM's 12) get the numbers alone, which
fit a phone's 25 px columns where "H10" and "H11" overprint (the page's caption says columns are heads)."""


def heads_figure(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    presenter: bool = False,
) -> go.Figure:
    """One heatmap per head: ``weights (h, T_q, T_k)``, ``tokens (T_q,)`` on the rows, ``allowed (T_q, T_k)``.

    ``key_tokens (T_k,)`` label the columns; None means self-attention (the keys are ``tokens``).
    Cross-attention passes the source sentence's tokens, and the panels are T_q x T_k.
    """
    keys = tokens if key_tokens is None else key_tokens
    h, t_q, t_k = weights.shape
    if (t_q, t_k) != (len(tokens), len(keys)):
        raise ValueError(f"weights {weights.shape} do not match {len(tokens)} query and {len(keys)} key tokens")
    panels = [Panel(weights[i], tokens, keys, f"head {i + 1}", allowed) for i in range(h)]
    return heatmap_grid(panels, GridSpec(presenter=presenter))


def head_charts(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    presenter: bool = False,
    values: bool = False,
    title: str = "head {n}",
    titles: Sequence[str] | None = None,
    above_px: int = 0,
) -> ChartGrid:
    """One chart per head of ``weights (h, T_q, T_k)``, each with its own row and column labels, and one colour bar.

    The views lay them out in columns: side by side on a laptop or projector, one per row on a phone.
    ``key_tokens (T_k,)`` label the columns (cross-attention); None: the keys are ``tokens``.
    ``values=True`` writes each weight in its cell (maps up to ``layout.VALUES_MAX_CELLS`` tokens).
    ``title``: each map's title, ``{n}`` its head number from 1; ``titles`` (one per head) replaces it (the
    heads view names each head's K/V group). ``above_px``: what the view draws above the maps on a projector
    (``layout.chart_fold_px``).
    """
    keys = tokens if key_tokens is None else key_tokens
    h, t_q, t_k = weights.shape
    if (t_q, t_k) != (len(tokens), len(keys)):
        raise ValueError(f"weights {weights.shape} do not match {len(tokens)} query and {len(keys)} key tokens")
    titles = [title.format(n=i + 1) for i in range(h)] if titles is None else titles
    panels = [Panel(weights[i], tokens, keys, titles[i], allowed) for i in range(h)]
    ncols = map_columns(h, presenter=presenter, values=values)
    return chart_grid(panels, ncols, GridSpec(presenter=presenter, values=values), above_px=above_px)


def average_charts(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    presenter: bool = False,
) -> ChartGrid:
    """The mean over heads, ``(h, T_q, T_k) -> (T_q, T_k)``: still a distribution per row, so the 0-1 scale holds."""
    h = weights.shape[0]
    keys = tokens if key_tokens is None else key_tokens
    mean = weights.mean(axis=0)  # (h, T_q, T_k) -> (T_q, T_k)
    title = f"average over {h} head{'s' * (h > 1)}"
    return single_chart(Panel(mean, tokens, keys, title, allowed), GridSpec(presenter=presenter))


def permutation_charts(
    weights: np.ndarray,
    permuted_weights: np.ndarray,
    realigned: np.ndarray,
    tokens: Sequence[str],
    permutation: Sequence[int],
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
) -> ChartGrid:
    """Three maps of one head, each ``(T, T)``: original order, reordered sentence, reordered map moved back.

    ``allowed (T, T)`` is the mask in each sentence's own order (the causal mask
    is the same triangle for both); the realigned map keeps its mask moved back
    with it, so a masked cell stays marked where it lands.
    """
    permuted_tokens = [tokens[p] for p in permutation]
    realigned_allowed = None if allowed is None else realign(allowed, np.asarray(permutation))
    panels = [
        Panel(weights, tokens, tokens, "original order", allowed),
        Panel(permuted_weights, permuted_tokens, permuted_tokens, "reordered sentence", allowed),
        Panel(realigned, tokens, tokens, "reordered map, moved back", realigned_allowed),
    ]
    # side by side, under the view's row of pickers (the reordering and the head)
    return chart_grid(panels, map_columns(3, presenter=presenter), GridSpec(presenter=presenter), control_rows=1)


def model_figure(
    weights: np.ndarray, tokens: Sequence[str], allowed: np.ndarray | None = None, *, presenter: bool = False
) -> go.Figure:
    """Every layer × head as a small map: ``weights (L, h, T, T)``, one row of panels per layer.

    Outer labels only: "H1".."Hh" over the columns (the head numbers alone past ``COLUMN_LABEL_HEADS`` heads),
    "L1".."LL" left of the rows (as the maps were titled
    "L1 H1"), and no tick labels (the hover names both tokens; the large map below the overview has them),
    so nothing overprints at any size, a phone's 25 px columns included.
    Always one column per head, in presenter mode too (the overview is the point).
    """
    n_layers, h = weights.shape[:2]
    panels = [
        Panel(
            weights[layer, head],
            tokens,
            tokens,
            "",
            allowed,
            hover=f"layer {layer + 1}, head {head + 1}: %{{y}} → %{{x}}",
        )
        for layer in range(n_layers)
        for head in range(h)
    ]
    small = small_multiple_px(h, presenter=presenter)
    fig = heatmap_grid(panels, GridSpec(ncols=h, panel_px=small, presenter=presenter, x_labels=False, y_labels=False))
    size = fonts(presenter).title
    head_label = "H{}" if h <= COLUMN_LABEL_HEADS else "{}"  # 12 columns on a phone are 25 px: "H10" overprints
    marks = [title_annotation(head_label.format(head + 1), *_top_centre(fig, head), size=size) for head in range(h)]
    marks += [_row_label(f"L{layer + 1}", fig, layer * h, size) for layer in range(n_layers)]
    fig.layout.annotations = [*fig.layout.annotations, *marks]
    fig.layout.margin.l = round(outer_label_px(len(f"L{n_layers}"), size))
    # the head numbers sit over the first row, the last one under Plotly's toolbar (top right, MODEBAR_CLEAR_PX
    # tall) unless the strip above them clears it: a taller figure, the maps as large as planned
    clear = MODEBAR_CLEAR_PX + FIGURE_MARGIN_PX - fig.layout.margin.t
    if clear > 0:
        fig.layout.margin.t += clear
        fig.layout.height += clear
    return fig


def _top_centre(fig: go.Figure, k: int) -> tuple[float, float]:
    """Paper coordinates of the middle of panel ``k``'s top edge."""
    suffix = "" if k == 0 else str(k + 1)
    x0, x1 = fig.layout[f"xaxis{suffix}"].domain
    return (x0 + x1) / 2, fig.layout[f"yaxis{suffix}"].domain[1]


def _row_label(text: str, fig: go.Figure, k: int, size: int) -> dict:
    """A label left of panel ``k``, at its middle height, in the figure's left margin."""
    suffix = "" if k == 0 else str(k + 1)
    y0, y1 = fig.layout[f"yaxis{suffix}"].domain
    return title_annotation(text, 0, (y0 + y1) / 2, xanchor="right", size=size) | dict(yanchor="middle", xshift=-4)


def single_map_figure(
    weights: np.ndarray, tokens: Sequence[str], allowed: np.ndarray | None, title: str, presenter: bool = False
) -> go.Figure:
    """One head's ``(T, T)`` map, large, with its tokens on both axes and its colour bar beside it (the quiz)."""
    spec = GridSpec(ncols=single_map_columns(presenter), presenter=presenter)
    return heatmap_grid([Panel(weights, tokens, tokens, title, allowed)], spec)


def single_map_charts(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None,
    title: str,
    presenter: bool = False,
    *,
    above_px: int = 0,
) -> ChartGrid:
    """One head's ``(T, T)`` map, large, in its own chart with its tokens on both axes (the model view).
    ``above_px``: what the page draws above it on a projector, when it is the page's first map."""
    return single_chart(
        Panel(weights, tokens, tokens, title, allowed), GridSpec(presenter=presenter), above_px=above_px
    )
