"""Attention-weight figures: every head of one sentence, their average, and a reordering."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core import realign
from dashboard.figures.grid import ChartGrid, Panel, chart_grid, heatmap_grid


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
    return heatmap_grid(panels, presenter=presenter)


PRESENTER_HEAD_COLUMNS = 4
"""Presenter mode: four maps to a row, so the default four heads are all on a 1280 x 720 projector's first screen."""
LAPTOP_HEAD_COLUMNS = 3
"""Laptop: at most three maps to a row, each ~280 px wide in a 940 px page; four heads are 2 x 2."""
VALUES_HEAD_COLUMNS = 2
"""With numbers in the cells: two maps to a row, so a cell is wide enough for "0.12" at presenter size too."""


def head_columns(h: int, *, presenter: bool, values: bool) -> int:
    """Maps per row for ``h`` heads (a phone shows one per row whatever this says)."""
    if values:
        return min(h, VALUES_HEAD_COLUMNS)
    if presenter:
        return min(h, PRESENTER_HEAD_COLUMNS)
    return 2 if h == 4 else min(h, LAPTOP_HEAD_COLUMNS)


def head_charts(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
    values: bool = False,
) -> ChartGrid:
    """One chart per head of ``weights (h, T, T)``, each with its own row and column labels, and one colour bar.

    The heads view lays them out in columns: side by side on a laptop or projector, one per row on a phone.
    ``values=True`` writes each weight in its cell (maps up to ``grid.VALUES_MAX_CELLS`` tokens).
    """
    h, t_q, t_k = weights.shape
    if (t_q, t_k) != (len(tokens), len(tokens)):
        raise ValueError(f"weights {weights.shape} do not match {len(tokens)} tokens")
    panels = [Panel(weights[i], tokens, tokens, f"head {i + 1}", allowed) for i in range(h)]
    return chart_grid(panels, head_columns(h, presenter=presenter, values=values), presenter=presenter, values=values)


def average_figure(
    weights: np.ndarray,
    tokens: Sequence[str],
    allowed: np.ndarray | None = None,
    *,
    key_tokens: Sequence[str] | None = None,
    presenter: bool = False,
) -> go.Figure:
    """The mean over heads, ``(h, T_q, T_k) -> (T_q, T_k)``: still a distribution per row, so the 0-1 scale holds."""
    h = weights.shape[0]
    keys = tokens if key_tokens is None else key_tokens
    mean = weights.mean(axis=0)  # (h, T_q, T_k) -> (T_q, T_k)
    title = f"average over {h} head{'s' * (h > 1)}"
    return heatmap_grid([Panel(mean, tokens, keys, title, allowed)], ncols=1 if presenter else 2, presenter=presenter)


def permutation_figure(
    weights: np.ndarray,
    permuted_weights: np.ndarray,
    realigned: np.ndarray,
    tokens: Sequence[str],
    permutation: Sequence[int],
    allowed: np.ndarray | None = None,
    *,
    presenter: bool = False,
) -> go.Figure:
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
    return heatmap_grid(panels, ncols=3, presenter=presenter)  # side by side, also on a projector


MODEL_PANEL_PX = 64
"""Each small map of the model view: 12 heads side by side fit a ~900 px wide chart."""


def model_figure(
    weights: np.ndarray, tokens: Sequence[str], allowed: np.ndarray | None = None, *, presenter: bool = False
) -> go.Figure:
    """Every layer × head as a small map: ``weights (L, h, T, T)``, one row of panels per layer.

    Always one column per head, in presenter mode too (the overview is the point; the large
    map below it is the one to read from the back of the room).
    """
    n_layers, h = weights.shape[:2]
    panels = [
        Panel(weights[layer, head], tokens, tokens, f"L{layer + 1} H{head + 1}", allowed)
        for layer in range(n_layers)
        for head in range(h)
    ]
    return heatmap_grid(panels, ncols=h, panel_px=MODEL_PANEL_PX)


def single_map_figure(
    weights: np.ndarray, tokens: Sequence[str], allowed: np.ndarray | None, title: str, presenter: bool = False
) -> go.Figure:
    """One head's ``(T, T)`` map, large, with its tokens on both axes."""
    return heatmap_grid(
        [Panel(weights, tokens, tokens, title, allowed)], ncols=1 if presenter else 2, presenter=presenter
    )
