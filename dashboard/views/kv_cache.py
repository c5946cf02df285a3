"""KV cache: generation one token at a time. Step t computes q_t, k_t, v_t, appends k_t, v_t, attends over the cache.

Everything drawn is read from ``computations.cache_run``: ``core.kv_cache.decode`` on the sidebar's
sentence and weights, beside the full causal run it must equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from core.kv_cache import (
    CONTEXTS,
    MODEL_SHAPES,
    CacheShape,
    CacheStep,
    cache_bytes,
    cache_bytes_per_token,
    decode,
    multi_head_cache_bytes,
)
from dashboard.compute import computations
from dashboard.figures.kv_cache import cache_figure, rows_so_far_figure
from dashboard.figures.labels import position, positions
from dashboard.figures.layout import COLOUR_BAR_ROW_PX, INPUT_ROW_PX, QUIZ_SWITCH_PX
from dashboard.page.common import (
    byte_size,
    choose_head,
    served_tokens,
    shape_text,
    show_code,
    show_frame,
)
from dashboard.page.map_columns import show_grid
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

EXACT = 1e-12
"""The stacked rows must equal the full causal map to this (float64 rounding is ~1e-16)."""
CACHE_HEADS_DRAWN = 4
"""Up to this many K/V heads, the cache of every one is drawn (8 charts); more get a "K/V head" picker."""


MAPS_ABOVE_PX = INPUT_ROW_PX + COLOUR_BAR_ROW_PX - QUIZ_SWITCH_PX
"""On a projector, above the maps: the step's slider and the maps' colour bar (the view draws no quiz switch)."""


def render(settings: Settings, controls: Controls) -> None:
    setup = served_tokens(settings, controls, "decode", "generates one token at a time with the sidebar's projections")
    if setup is None:
        return
    settings, tokens = setup
    result = computations.cache_run(tokens, settings.config)
    steps, full = result.steps, result.full
    t = _step(len(steps))
    step = steps[t]
    kv_heads, _, d_k = step.k_cache.shape
    h = step.q.shape[0]
    if not settings.config.causal:
        st.info(
            "Generation is causal: a token cannot attend to tokens not yet generated. This view uses the causal "
            "mask whatever the sidebar's switch says."
        )
    if settings.config.prefix:  # _decoder drops it: say so, or the maps would seem to ignore the sidebar
        st.info(
            f"The sidebar's prefix ({settings.config.prefix} tokens that see each other both ways) is not applied "
            "here: a prefix token attends to tokens after it, which a decoder has not generated yet. These maps "
            "are plain causal."
        )
    on_top = st.container()  # a projector: the maps first, under the step's slider (the heads view's order)
    st.caption(_step_words(step, len(steps)))
    with on_top if settings.presenter else st.container():
        maps = charts_of(  # built once per run and step: a room's followers all draw these (the decoding is the
            full,  # run's: the same tokens, weights, heads and window; ``result`` itself is made anew each time)
            ("kv_cache rows", t, settings.presenter),
            lambda: rows_so_far_figure(
                result.stacked, full.trace.mask, tokens, t, presenter=settings.presenter, above_px=MAPS_ABOVE_PX
            ),
        )
        show_grid(maps, key="cache_rows_chart")
    if result.max_diff <= EXACT:
        n = len(steps)
        rows = "The row the one step produced is" if n == 1 else f"The rows the {n} steps produced, stacked, are"
        st.success(
            f"{rows} the full causal map: max |difference| {result.max_diff:.1e} over every head, row and key "
            "(float64 rounding)."
        )
    else:
        st.error(f"The stacked rows differ from the full causal map by up to {result.max_diff:.2e}.")
    heads = _cache_heads(kv_heads, controls)
    cache = charts_of(
        full,
        ("kv_cache cache", t, tuple(heads), settings.presenter),
        lambda: cache_figure(step.k_cache, step.v_cache, tokens[: t + 1], heads=heads, presenter=settings.presenter),
    )
    show_grid(cache, key="cache_chart")
    show_code(decode, f"steps = decode(x, projections, {h})  # x (T, d_model) = X + P of the sidebar's sentence")
    _memory(settings, h, kv_heads, d_k, result.window)


def _step_words(step: CacheStep, n: int) -> str:
    """What step ``step.t + 1`` of ``n`` did, read from its arrays: the position whose row it adds (counted from 0,
    as the map's labels) and the cached keys its mask let the queries see."""
    kv_heads, cached, d_k = step.k_cache.shape
    h = step.q.shape[0]
    seen = np.flatnonzero(step.mask[-1])  # (keys seen,): the positions query t may attend to
    over, hidden = {1: "the one cached key", 2: "both cached keys"}.get(cached, f"all {cached} cached keys"), ""
    if len(seen) < cached:
        over = f"{len(seen)} of the {cached} cached keys, positions {positions(seen)},"
        hidden = (  # a causal window of w lets a query past the first w see exactly w keys: len(seen) is w
            f" A sliding window of {len(seen)} hides the other {cached - len(seen)}: a real cache with this window "
            f"keeps only the last {len(seen)} keys."
        )
    return (
        f"Step {step.t + 1} of {n} adds the row of position {position(step.t)}: the newest token gets its queries "
        f"{shape_text(step.q.shape)} and its key and value {shape_text((kv_heads, 1, d_k))}, appended to the cache, "
        f"now {shape_text(step.k_cache.shape)} = (kv_heads, tokens so far, d_k). "
        f"{'Its query attends' if h == 1 else f'Its {h} queries attend'} over {over} "
        f"and give{'s' * (h == 1)} row {position(step.t)} of {'the' if h == 1 else 'each'} head's causal map.{hidden}"
    )


def _cache_heads(kv_heads: int, controls: Controls) -> Sequence[int]:
    """The K/V heads whose cached K and V are drawn (0-based): every one up to ``CACHE_HEADS_DRAWN``, else the one
    a "K/V head" picker chooses (16 K/V heads would be 32 charts under the 16 maps: a phone scrolls 19,000 px)."""
    if kv_heads <= CACHE_HEADS_DRAWN:
        return range(kv_heads)
    g = choose_head(
        kv_heads,
        controls,
        key="cache_head",
        bind="query-params",
        label="K/V head",
        help=f"The K/V head whose cached keys and values are drawn below: with more than {CACHE_HEADS_DRAWN} K/V "
        "heads the page draws one at a time. Every K/V head's cache grows the same way, one row per step.",
    )
    return [g]


def _step(n: int) -> int:
    """The step shown (0-based), chosen with a slider over 1..T."""
    if n == 1:
        return 0
    return (
        int(
            st.select_slider(
                "Step t",
                options=list(range(1, n + 1)),
                value=n,
                key="cache_step",
                bind="query-params",
                help="Generation step t, counted from 1: the token at position t − 1 is the newest, and the cache "
                "then holds t keys and t values.",
            )
        )
        - 1
    )


def _memory(settings: Settings, h: int, kv_heads: int, d_k: int, window: int) -> None:
    """KV-cache bytes per token and at long contexts, fp16, for real models and the run's own shapes and window."""
    yours = CacheShape("your settings", 1, h, kv_heads, d_k, window)
    rows = []
    for shape in (*MODEL_SHAPES, yours):
        rows.append(
            {
                "model": shape.name,
                "layers": shape.n_layers,
                "heads (query / K,V)": f"{shape.n_heads} / {shape.kv_heads}",
                "d_k": shape.d_k,
                "window": f"{shape.window:,}" if shape.window else "none",
                "per token": byte_size(cache_bytes_per_token(shape)),
                **{f"at {c:,} tokens": byte_size(cache_bytes(shape, c)) for c in CONTEXTS},
                f"without grouping, at {CONTEXTS[-1]:,}": byte_size(multi_head_cache_bytes(shape, CONTEXTS[-1])),
            }
        )
    st.subheader("How much memory the cache takes")
    st.caption(
        "K and V of every layer, every K/V head and every token, 2 bytes each (fp16). Grouped-query heads cache "
        "fewer K/V heads; a sliding window keeps only its last w tokens, so it saves nothing until the context "
        "is longer than the window. Shapes from the models' published configs."
    )
    show_frame(pd.DataFrame(rows), presenter=settings.presenter)  # page text on a projector (canvas: 13 px)
