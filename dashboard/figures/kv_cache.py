"""The KV cache view's figures: the causal map built one row per step, and the cached keys so far.

Pure builders: arrays in, a ``ChartGrid`` out (one figure per map; no Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid
from dashboard.figures.layout import map_columns
from dashboard.figures.steps import vector_panel, vectors_charts

MASK_AND_FUTURE = "hatched grey = masked: a key the query may not see, or a row no step has produced yet"
"""What the hatching means on the rows-so-far maps (the grid's note, written once above them)."""
KV_PAIRS_TO_A_ROW = 2
"""The cache's panels to a row: K beside V of one K/V head, and at most two heads (four panels)."""


def rows_so_far_figure(
    weights: np.ndarray,
    allowed: np.ndarray,
    tokens: Sequence[str],
    t: int,
    *,
    presenter: bool = False,
    above_px: int = 0,
) -> ChartGrid:
    """Each head's causal map ``weights (h, T, T)`` with rows ``0..t`` computed so far; later rows greyed.

    ``allowed (T, T)`` is the mask the steps used (True = may attend); a row not yet decoded is marked
    like a masked cell: no step has produced it. ``above_px``: what the view draws above the maps on a projector.
    """
    h, n, _ = weights.shape
    if not 0 <= t < n:
        raise ValueError(f"step {t} is not one of the {n} tokens' steps")
    done = np.arange(n)[:, None] <= t  # (T, 1): rows decoded by step t
    shown = allowed & done  # (T, T)
    panels = [
        Panel(np.where(shown, weights[k], 0.0), tokens, tokens, f"head {k + 1}", shown)  # short: clear of the toolbar
        for k in range(h)
    ]
    ncols = map_columns(h, presenter=presenter)
    grid = chart_grid(panels, ncols, GridSpec(presenter=presenter), above_px=above_px)  # one chart per head
    return replace(grid, note=MASK_AND_FUTURE)  # said once above the maps: the hatching also marks future rows


def cache_figure(
    k_cache: np.ndarray,
    v_cache: np.ndarray,
    tokens: Sequence[str],
    *,
    heads: Sequence[int] | None = None,
    presenter: bool = False,
) -> ChartGrid:
    """The cache after one step: K and V ``(kv_heads, t, d_k)``, one panel each per K/V head, a row per token.

    ``heads``: the K/V heads drawn (0-based, each titled with its own number); None: every one.
    """
    kv_heads, t, d_k = k_cache.shape
    if v_cache.shape != k_cache.shape or len(tokens) != t:
        raise ValueError(f"K {k_cache.shape}, V {v_cache.shape} and {len(tokens)} tokens do not match")
    heads = range(kv_heads) if heads is None else heads
    if not heads or not all(0 <= g < kv_heads for g in heads):
        raise ValueError(f"K/V heads {list(heads)} are not among the cache's {kv_heads}")
    panels = []
    for g in heads:
        panels.append(vector_panel(k_cache[g], tokens, f"K, K/V head {g + 1}: ({t}, {d_k})"))
        panels.append(vector_panel(v_cache[g], tokens, f"V, K/V head {g + 1}: ({t}, {d_k})"))
    return vectors_charts(panels, at_most=2 * KV_PAIRS_TO_A_ROW, presenter=presenter)  # one chart per matrix
