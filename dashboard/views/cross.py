"""Cross-attention: queries from one sentence, keys and values from another (a decoder reading an encoder).

The sidebar's sentence asks (its tokens are the rows, T_q of them); the source
sentence typed here answers (its tokens are the columns, T_k of them). So every
map is T_q × T_k, not square, and the output has one row per query token: the
source only supplies the content that is mixed in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import MAX_CHARS, MAX_TOKENS, Run, multi_head_attention
from dashboard.compute import computations
from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import head_charts
from dashboard.figures.layout import COLOUR_BAR_ROW_PX, INPUT_ROW_PX, QUIZ_SWITCH_PX
from dashboard.page.common import (
    run_call,
    scaled,
    served,
    shape_frame,
    show_code,
    show_frame,
    tokens_or_message,
)
from dashboard.page.downloads import download_buttons
from dashboard.page.map_columns import show_grid
from dashboard.page.mask_words import plain_causal, rule_words
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

DEFAULT_SOURCE = "Die Bank am Fluss gab einen Kredit"
"""The default sentence in German: a translation decoder writing the English reads it. 7 tokens against
8, so the maps are visibly not square; "bank" is in both, which the identity weights pick out."""
EMPTY_SOURCE = "Type a source sentence above: its words give the keys and values the sentence's queries read."

CAUSAL_HERE = (
    "Causal mask in cross-attention: it stays top-left aligned (tril over T_q × T_k), so query i may attend "
    "to source positions 0..i only, and a query past the end of the source sees all of it. That fits two "
    "sequences aligned position by position. A translation decoder normally uses no mask here: the whole "
    "source is known before decoding starts; its causal mask belongs to the decoder's self-attention."
)


CAUSAL_OFF = (
    "The causal mask is off: with no mask, every query reads the whole source, as a translation decoder's "
    "cross-attention does. Turned on, it would stay top-left aligned (tril over T_q × T_k)."
)


def cross_shape_table(run: Run, settings: Settings) -> pd.DataFrame:
    """Rows of (tensor, shape, formula) for cross-attention, read from the run's own arrays.

    T_q counts the sentence's tokens (queries), T_k the source's (keys and values).
    """
    tr = run.trace
    d = run.x.shape[-1]
    rows = [
        ("X (sentence)", run.x.shape, "embedding row of each query token: T_q rows"),
        ("X_src (source)", run.source_x.shape, "embedding row of each source token: T_k rows"),
    ]
    if run.positions_added:
        rows += [
            ("X + P", run.x.shape, f"{run.positional} positions 0..T_q−1"),
            ("X_src + P", run.source_x.shape, "the source's own positions 0..T_k−1"),
        ]
    rope = " (then rotated by position, RoPE)" if tr.q_unrotated is not None else ""
    rows += [
        ("W_Q, W_K, W_V", (d, d), "one set of projections for both sentences"),
        ("Q", (tr.q.shape[-2], d), "Q = X W_Q: from the sentence"),
        ("K, V", (tr.k.shape[-2], d), "K = X_src W_K,  V = X_src W_V: from the source"),
        ("Q per head", tr.q.shape, "split into h heads of d_k columns" + rope),
        ("K, V per head", tr.k.shape, "split into h heads of d_k columns" + rope),
        ("Kᵀ", np.swapaxes(tr.k, -1, -2).shape, "swap the last two axes of K, per head"),
        (
            "scores",
            tr.scores.shape,
            ("Q Kᵀ / √d_k" if scaled(tr) else "Q Kᵀ (scaling is off: no ÷√d_k)")
            + ": one row per query token, one column per source token",
        ),
    ]
    if tr.mask is not None and plain_causal(tr.mask):
        rows.append(("causal mask", tr.mask.shape, "True where source position j ≤ query position i (tril)"))
    elif tr.mask is not None:
        rows.append(("mask", tr.mask.shape, rule_words(tr.mask)))
    rows += [
        ("weights", tr.weights.shape, "softmax over the source: each row sums to 1"),
        ("context", tr.context.shape, "weights V: source content, one vector per query token"),
        ("concat", tr.concat.shape, "merge the heads back to (T_q, h·d_k)"),
        ("W_O", (d, d), "output projection"),
        ("output", tr.output.shape, "concat W_O: one row per query token, none per source token"),
    ]
    return shape_frame(rows)


def _source_tokens(controls: Controls) -> tuple[str, ...] | None:
    """The source-sentence box (key and query parameter ``source``); its tokens, or None after a message."""
    source = st.text_input(
        "Source sentence (keys and values)",
        value=DEFAULT_SOURCE,
        key="source",
        bind="query-params",
        help=f"The sentence being read, as an encoder's output is read by a decoder. Up to {MAX_TOKENS} tokens "
        f"({MAX_CHARS} characters), split like the sentence in the sidebar. The sidebar's sentence gives the queries.",
    )
    return tokens_or_message(source, controls, empty=EMPTY_SOURCE)


MAPS_ABOVE_PX = INPUT_ROW_PX + COLOUR_BAR_ROW_PX - QUIZ_SWITCH_PX
"""On a projector, above the maps: the source box and the maps' colour bar (this view draws no quiz switch)."""


def map_grid(run: Run, *, presenter: bool, above_px: int = 0) -> ChartGrid:
    """One T_q × T_k map per head of the cross-attention ``run`` (pure: the page and the tour's download)."""
    return head_charts(
        run.trace.weights, run.tokens, run.trace.mask, key_tokens=run.key_tokens, presenter=presenter, above_px=above_px
    )


def _what_is_drawn(run: Run) -> None:
    """The line on the maps' shapes, and what the mask does (read from the mask)."""
    t_q, t_k, h = len(run.tokens), len(run.key_tokens), run.trace.n_heads
    maps = f"{h} heads, each a {t_q}×{t_k} map" if h > 1 else f"1 head: a {t_q}×{t_k} map"
    st.caption(
        f"{maps}: T_q = {t_q} query token{'s' * (t_q != 1)} (the sidebar's sentence) on the rows, "
        f"T_k = {t_k} source token{'s' * (t_k != 1)} on the columns. Every row sums to 1 over the source: "
        "each query word takes a mix of the source's values."
    )
    if run.trace.mask is not None:
        said = CAUSAL_HERE if plain_causal(run.trace.mask) else rule_words(run.trace.mask)  # read from the mask
        st.info(said, icon=":material/change_history:")


def render(settings: Settings, controls: Controls) -> None:
    settings = served(settings, "cross", "reads a second sentence of your choice")
    source = _source_tokens(controls)
    tokens = tokens_or_message(settings.sentence, controls)
    if tokens is None or source is None:
        return
    try:
        run = computations.cross_run(tokens, source, settings.config)
    except ValueError as err:
        st.error(str(err))
        return
    t_q, t_k, h = len(tokens), len(source), run.trace.n_heads
    if not settings.presenter:  # on a projector the maps come first, under the source box (MAPS_ABOVE_PX)
        _what_is_drawn(run)
    charts = charts_of(  # built once per run: a room's followers all draw these
        run, ("cross", settings.presenter), lambda: map_grid(run, presenter=settings.presenter, above_px=MAPS_ABOVE_PX)
    )
    show_grid(charts, key="cross_chart")
    if settings.presenter:
        _what_is_drawn(run)
    show_code(
        multi_head_attention,
        f"{run_call(settings, source)}\nweights = result.trace.weights  # (h, T_q, T_k): kv = the source's X + P",
    )
    download_buttons(run, "cross", settings)
    st.subheader("Shapes", anchor=False)
    st.caption(f"T_q = {t_q}, T_k = {t_k}, h = {h}, d_k = {run.x.shape[-1]} / {h} = {run.trace.q.shape[-1]}.")
    table = cross_shape_table(run, settings)
    show_frame(table, presenter=settings.presenter)  # every row visible; page text on a projector
    if run.trace.mask is None:
        st.caption(CAUSAL_OFF)
