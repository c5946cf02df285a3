"""The KV cache view's figures: the causal map built one row per step, and the cached keys so far.

Pure builders: arrays in, ``go.Figure`` out (no Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.grid import Panel, heatmap_grid
from dashboard.figures.steps import vector_panel, vectors_figure


def rows_so_far_figure(
    weights: np.ndarray, allowed: np.ndarray, tokens: Sequence[str], t: int, *, presenter: bool = False
) -> go.Figure:
    """Each head's causal map ``weights (h, T, T)`` with rows ``0..t`` computed so far; later rows greyed.

    ``allowed (T, T)`` is the mask the steps used (True = may attend); a row not yet decoded is marked
    like a masked cell: no step has produced it.
    """
    h, n, _ = weights.shape
    if not 0 <= t < n:
        raise ValueError(f"step {t} is not one of the {n} tokens' steps")
    done = np.arange(n)[:, None] <= t  # (T, 1): rows decoded by step t
    shown = allowed & done  # (T, T)
    panels = [
        Panel(np.where(shown, weights[k], 0.0), tokens, tokens, f"head {k + 1}: rows 1–{t + 1}", shown)
        for k in range(h)
    ]
    return heatmap_grid(panels, presenter=presenter)


def cache_figure(
    k_cache: np.ndarray, v_cache: np.ndarray, tokens: Sequence[str], *, presenter: bool = False
) -> go.Figure:
    """The cache after one step: K and V ``(kv_heads, t, d_k)``, one panel each per K/V head, a row per token."""
    kv_heads, t, d_k = k_cache.shape
    if v_cache.shape != k_cache.shape or len(tokens) != t:
        raise ValueError(f"K {k_cache.shape}, V {v_cache.shape} and {len(tokens)} tokens do not match")
    panels = []
    for g in range(kv_heads):
        panels.append(vector_panel(k_cache[g], tokens, f"K, K/V head {g + 1}: ({t}, {d_k})"))
        panels.append(vector_panel(v_cache[g], tokens, f"V, K/V head {g + 1}: ({t}, {d_k})"))
    return vectors_figure(panels, ncols=min(len(panels), 4), presenter=presenter)
