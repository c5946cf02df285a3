"""Shapes: every tensor on the data path for the current settings, with the formula that made it.

A batch of B sequences (the ``batch`` control, as lesson 2's ``MultiHeadAttention`` takes ``(B, T, d_model)``)
is computed for real by ``core.run_batch`` on B copies of the sentence, so every shape is read from an array.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import AttentionTrace, Run, run_batch
from core.pipeline import EMBEDDED
from dashboard.page.common import input_words, run_call, run_or_message, scaled, shape_frame, show_code, show_frame
from dashboard.page.mask_words import group_words, plain_causal, rule_words
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

WEIGHT_WORDS = {
    "random": "learned projections (random here, fixed by the seed), shared by all heads",
    "identity": "learned projections (the identity matrix here, built by hand), shared by all heads",
    "previous": "learned projections (built by hand here to find the previous token), shared by all heads",
    "minilm": "learned projections (the pretrained MiniLM's, with a bias each), shared by all heads",
    "trained": "learned projections (trained in the train view), shared by all heads",
}
"""What W_Q, W_K, W_V are for each choice of weights: the shapes table never says "random" when they are not."""


MAX_BATCH = 8
"""Lesson 2's test uses a batch of 2; 8 is enough to see the axis without a long wait."""
OUTPUT_WORDS = {
    "random": "output projection (random here, fixed by the seed)",
    "identity": "output projection (the identity matrix here)",
    "previous": "output projection (built by hand here)",
    "minilm": "output projection (the pretrained MiniLM's, with a bias)",
    "trained": "output projection (trained in the train view)",
}
"""What W_O is for each choice of weights, in the words of ``WEIGHT_WORDS``."""


def shape_table(run: Run, settings: Settings, batch: AttentionTrace | None = None) -> pd.DataFrame:
    """Rows of (tensor, shape, formula), read from the trace's own arrays where it holds them.

    ``batch`` (``core.run_batch``'s trace of B copies) replaces the single run's arrays: every activation
    gains its leading B axis, the weights do not.
    """
    tr = run.trace if batch is None else batch
    b = () if batch is None else batch.q.shape[:1]  # (B,) or nothing
    d_model, h, d_k = run.x.shape[-1], tr.n_heads, tr.q.shape[-1]
    w = (d_model, d_model)  # every projection is (d_model, d_model): one matrix serves all heads
    t = tr.q.shape[-2]
    full = (*b, t, d_model)  # (B, T, d_model) before the head split
    split = (*b, t, h, d_k)  # (B, T, h, d_k): after the reshape, before the transpose
    if run.input_from != EMBEDDED:
        rows = [("X", full, f"the hidden state entering layer {run.layer}: {input_words(run)}")]
    else:
        rows = [("X", full, "embedding row of each token" + (", for each of the B sequences" if b else ""))]
        if run.positions_added:
            rows.append(("X + P", full, f"add the {run.positional} positional encoding P"))
    scores = "Q Kᵀ / √d_k, per head" if scaled(tr) else "Q Kᵀ, per head (scaling is off: no ÷√d_k)"
    if tr.q_unrotated is not None:
        scores = scores.replace("Q Kᵀ", "RoPE-rotated Q Kᵀ")
    biases = run.projections is not None and run.projections.b_q is not None
    swap = "swap the T and h axes" + (" (transpose(0, 2, 1, 3))" if b else "")
    if tr.group == 1:
        rows += [
            ("W_Q, W_K, W_V", w, WEIGHT_WORDS[settings.weights]),
            ("Q, K, V", full, "Q = X W_Q,  K = X W_K,  V = X W_V" + (" (+ biases)" if biases else "")),
            ("Q, K, V split", split, "reshape: cut each row of d_model into h pieces of d_k"),
            ("Q, K, V per head", tr.q.shape, swap),
        ]
    else:
        rows += _grouped_rows(tr, w, full, split, swap, WEIGHT_WORDS[settings.weights], biases)
    rows += [
        ("Kᵀ", np.swapaxes(tr.keys_per_head, -1, -2).shape, "swap the last two axes of K, per head"),
        ("scores", tr.scores.shape, scores),
    ]
    if tr.bias is not None:
        rows.append(("ALiBi bias", tr.bias.shape, "−m_h × distance per head, added to the scaled scores"))
    if tr.mask is not None:
        rows.append(
            (
                "causal mask" if plain_causal(tr.mask) else "mask",
                tr.mask.shape,
                f"{rule_words(tr.mask)} Masked scores become −∞.",
            )
        )
    rows += [
        ("weights", tr.weights.shape, "softmax over keys: each row sums to 1"),
        ("context", tr.context.shape, "weights V, per head"),
        ("context, swapped back", split, "swap the h and T axes again"),
        ("concat", tr.concat.shape, f"reshape to {'(B, T, h·d_k)' if b else '(T, h·d_k)'}: the heads side by side"),
        ("W_O", w, OUTPUT_WORDS[settings.weights]),
        ("output", tr.output.shape, "concat W_O" + (" + b_O" if biases else "")),
    ]
    return shape_frame(rows)


def _grouped_rows(
    tr: AttentionTrace, w: tuple, full: tuple, split: tuple, swap: str, words: str, biases: bool
) -> list[tuple]:
    """Q's rows and K, V's rows apart: K and V have kv_heads heads, then are repeated to h (``repeat_kv``)."""
    *b, kv, t_k, d_k = tr.k.shape
    d_kv = kv * d_k
    plus = " (+ biases)" if biases else ""
    return [
        ("W_Q", w, words),
        ("W_K, W_V", (w[0], d_kv), f"{kv} K/V heads of d_k = {d_k} columns: (d_model, kv_heads·d_k)"),
        ("Q", full, "Q = X W_Q" + plus),
        ("K, V", (*b, t_k, d_kv), "K = X W_K,  V = X W_V" + plus),
        ("Q split", split, "reshape: cut each row of d_model into h pieces of d_k"),
        ("K, V split", (*b, t_k, kv, d_k), "reshape: cut each row into kv_heads pieces of d_k"),
        ("Q per head", tr.q.shape, swap),
        ("K, V per K/V head", tr.k.shape, swap + ": (kv_heads, T, d_k), what a KV cache keeps"),
        (
            "K, V repeated",
            tr.keys_per_head.shape,
            f"repeat_kv: each K/V head copied for the {tr.group} query heads that share it, (h, T, d_k)",
        ),
    ]


def _saving(tr: AttentionTrace, d_model: int) -> str:
    """What grouping K and V saves, in parameters and in cache, read from K's shape."""
    h, kv, d_k = tr.n_heads, tr.kv_heads, tr.k.shape[-1]
    params, full = 2 * d_model * kv * d_k, 2 * d_model * h * d_k  # W_K and W_V together
    return (
        f"{group_words(tr)} W_K and W_V hold {params:,} weights instead of {full:,}, and a KV cache keeps "
        f"2 × {kv} × {d_k} = {2 * kv * d_k:,} numbers per token and layer instead of 2 × {h} × {d_k} = "
        f"{2 * h * d_k:,}: {h // kv}× less. The repeat to (h, T, d_k) costs no weights: it copies, or, in a fast "
        "kernel, just reads the same K/V head for every query head of its group."
    )


def render(settings: Settings, controls: Controls) -> None:
    run = run_or_message(settings, controls)
    if run is None:
        return
    tr, t = run.trace, len(run.tokens)
    d_model, h, d_k = run.x.shape[-1], tr.n_heads, tr.q.shape[-1]
    top = st.columns(2, vertical_alignment="center") if settings.presenter else (st, st)  # a projector: one row
    top[0].latex(rf"d_k = \frac{{d_{{model}}}}{{h}} = \frac{{{d_model}}}{{{h}}} = {d_k}")
    scaling = (
        f"Scores are scaled by 1/√d_k = 1/√{d_k} = {1 / math.sqrt(d_k):.4g}."
        if scaled(tr)
        else f"Scaling is off: the scores are Q Kᵀ times {tr.scale:.3g}, not divided by √d_k."
    )
    b = _batch_size(top[1])
    batch = run_batch(run, b) if b > 1 else None
    batched = f"B = {b} copies of the sentence as one batch, " if b > 1 else ""
    on_top = st.container()  # a projector: the table first, under the formula and the batch box
    st.caption(
        f"{batched}T = {t} tokens, h = {h} head{'s' * (h != 1)}. {scaling} "
        "The heads are not separate matrices: one (d_model, d_model) projection is cut into h slices of d_k columns."
    )
    table = shape_table(run, settings, batch)
    with on_top if settings.presenter else st.container():  # every row visible; page text on a projector
        show_frame(table, presenter=settings.presenter, key="shapes_table")
    if tr.group > 1:
        st.caption(_saving(tr, d_model))
    if batch is not None:
        show_code(run_batch, f"{run_call(settings)}\nbatch = run_batch(result, {b})  # every array gains a B axis")


def _batch_size(container=st) -> int:
    """The batch control: how many sequences go through at once (B), in ``container``."""
    return int(
        container.number_input(
            "Batch size B",
            min_value=1,
            max_value=MAX_BATCH,
            value=1,
            step=1,
            key="batch",
            bind="query-params",
            help="Sequences processed at once, as lesson 2's MultiHeadAttention takes (B, T, d_model). The page "
            "runs B copies of the sentence; every activation gains a leading B axis, the weights do not.",
        )
    )
