"""Shapes: every tensor on the data path for the current settings, with the formula that made it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import Run
from dashboard.page import ROW_PX, run_or_message, shape_frame
from dashboard.settings import Settings

WEIGHT_WORDS = {
    "random": "learned projections (random here, fixed by the seed), shared by all heads",
    "identity": "learned projections (the identity matrix here, built by hand), shared by all heads",
    "previous": "learned projections (built by hand here to find the previous token), shared by all heads",
    "minilm": "learned projections (the pretrained MiniLM's, with a bias each), shared by all heads",
    "trained": "learned projections (trained in the train view), shared by all heads",
}
"""What W_Q, W_K, W_V are for each choice of weights: the shapes table never says "random" when they are not."""


def shape_table(run: Run, settings: Settings) -> pd.DataFrame:
    """Rows of (tensor, shape, formula), read from the trace's own arrays where it holds them."""
    tr, c = run.trace, settings.config
    w = (c.d_model, c.d_model)  # every projection is (d_model, d_model): one matrix serves all heads
    full = (tr.q.shape[-2], c.d_model)  # (T, d_model) before the head split
    if c.weights == "minilm":
        rows = [("X", run.x.shape, f"the hidden state entering layer {settings.layer} (positions already added)")]
    else:
        rows = [("X", run.x.shape, "embedding row of each token")]
        if c.positional not in ("none", "rope"):
            rows.append(("X + P", run.x.shape, f"add the {c.positional} positional encoding P"))
    scores = "Q Kᵀ / √d_k, per head" if c.scaled else "Q Kᵀ, per head (scaling is off: no ÷√d_k)"
    if c.positional == "rope" and c.weights != "minilm":
        scores = scores.replace("Q Kᵀ", "RoPE-rotated Q Kᵀ")
    rows += [
        ("W_Q, W_K, W_V", w, WEIGHT_WORDS[c.weights]),
        ("Q, K, V", full, "Q = X W_Q,  K = X W_K,  V = X W_V" + (" (+ biases)" if c.weights == "minilm" else "")),
        ("Q, K, V per head", tr.q.shape, "reshape to (T, h, d_k), then swap the first two axes"),
        ("Kᵀ", np.swapaxes(tr.k, -1, -2).shape, "swap the last two axes of K, per head"),
        ("scores", tr.scores.shape, scores),
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
    c, t = settings.config, len(run.tokens)
    st.latex(rf"d_k = \frac{{d_{{model}}}}{{h}} = \frac{{{c.d_model}}}{{{c.n_heads}}} = {c.d_k}")
    scaling = (
        f"Scores are scaled by 1/√d_k = 1/√{c.d_k} = {1 / math.sqrt(c.d_k):.4g}."
        if c.scaled
        else "Scaling is off: the scores are Q Kᵀ as they come, not divided by √d_k."
    )
    st.caption(
        f"T = {t} tokens, h = {c.n_heads} heads. {scaling} "
        "The heads are not separate matrices: one (d_model, d_model) projection is cut into h slices of d_k columns."
    )
    table = shape_table(run, settings)
    st.dataframe(table, hide_index=True, width="stretch", height=ROW_PX * (len(table) + 1) + 3)  # every row visible
