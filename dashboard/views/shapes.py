"""Shapes: every tensor on the data path for the current settings, with the formula that made it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import Run
from dashboard.page import ROW_PX, run_or_message, shape_frame
from dashboard.settings import Settings


def shape_table(run: Run, settings: Settings) -> pd.DataFrame:
    """Rows of (tensor, shape, formula), read from the trace's own arrays where it holds them."""
    tr = run.trace
    d = settings.config.d_model
    w = (d, d)  # every projection is (d_model, d_model): one matrix serves all heads
    full = (tr.q.shape[-2], d)  # (T, d_model) before the head split
    rows = [
        ("X", run.x.shape, "embedding row of each token"),
    ]
    if settings.config.positional != "none":
        rows.append(("X + P", run.x.shape, f"add the {settings.config.positional} positional encoding P"))
    rows += [
        ("W_Q, W_K, W_V", w, "learned projections (random here), shared by all heads"),
        ("Q, K, V", full, "Q = X W_Q,  K = X W_K,  V = X W_V"),
        ("Q, K, V per head", tr.q.shape, "reshape to (T, h, d_k), then swap the first two axes"),
        ("Kᵀ", np.swapaxes(tr.k, -1, -2).shape, "swap the last two axes of K, per head"),
        ("scores", tr.scores.shape, "Q Kᵀ / √d_k, per head"),
    ]
    if tr.mask is not None:
        rows.append(("causal mask", tr.mask.shape, "True where key j ≤ query i; masked scores become −∞"))
    rows += [
        ("weights", tr.weights.shape, "softmax over keys: each row sums to 1"),
        ("context", tr.context.shape, "weights V, per head"),
        ("concat", tr.concat.shape, "swap back to (T, h, d_k), then reshape to (T, h·d_k)"),
        ("W_O", w, "learned output projection"),
        ("output", tr.output.shape, "concat W_O"),
    ]
    return shape_frame(rows)


def render(settings: Settings) -> None:
    run = run_or_message(settings)
    if run is None:
        return
    d, h, d_k, t = settings.config.d_model, settings.config.n_heads, settings.config.d_k, len(run.tokens)
    st.latex(rf"d_k = \frac{{d_{{model}}}}{{h}} = \frac{{{d}}}{{{h}}} = {d_k}")
    st.caption(
        f"T = {t} tokens, h = {h} heads. Scores are scaled by 1/√d_k = 1/√{d_k} = {1 / math.sqrt(d_k):.4g}. "
        "The heads are not separate matrices: one (d_model, d_model) projection is cut into h slices of d_k columns."
    )
    table = shape_table(run, settings)
    st.dataframe(table, hide_index=True, width="stretch", height=ROW_PX * (len(table) + 1) + 3)  # every row visible
