"""Flash: the same attention, tiled. Keys in blocks of B_c; each query row keeps a running max, sum and accumulator.

Everything drawn is read from ``computations.tiled_run``: ``core.tiled.tiles`` on the chosen head of
the sidebar's run, beside the plain run's output it must equal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.tiled import FLASH_BLOCK, FLASH_HEAD_DIM, MEMORY_LENGTHS, Tile, score_memory, tiles
from dashboard.compute import computations
from dashboard.figures.flash import block_figure, state_figure
from dashboard.figures.grid import MASK_NOTE
from dashboard.figures.labels import span
from dashboard.figures.layout import INPUT_ROW_PX, QUIZ_SWITCH_PX, chart_fold_px
from dashboard.figures.steps import symmetric_limit
from dashboard.page.common import (
    PLOTLY_CONFIG,
    byte_size,
    choose_head,
    served_tokens,
    shape_text,
    show_code,
    show_frame,
)
from dashboard.page.map_columns import chart
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

EXACT = 1e-12
"""The tiled output must equal plain softmax attention to this (float64 rounding is ~1e-16)."""


CONTROLS_ABOVE_PX = INPUT_ROW_PX - QUIZ_SWITCH_PX
"""On a projector, above the block: the head, B_c and block in one row (the view draws no quiz switch)."""


def render(settings: Settings, controls: Controls) -> None:
    setup = served_tokens(settings, controls, "tiles", "recomputes one head block by block")
    if setup is None:
        return
    settings, tokens = setup
    t = len(tokens)
    places = st.columns(3, gap="medium") if settings.presenter else (st, st, st)  # a projector: one row
    head = choose_head(
        settings.config.n_heads,
        controls,
        key="flash_head",
        bind="query-params",
        help="The head tiled: each head has its own scores, so its own running max and sum, block by block.",
        container=places[0],
    )
    block = _block_size(places[1], t)
    result = computations.tiled_run(tokens, settings.config, head, block)
    n_blocks = len(result.tiles)
    b = _block(places[2], n_blocks)
    tile = result.tiles[b - 1]
    t_q = tile.scores.shape[-2]
    on_top = st.container()  # a projector: the block and the running state first, under the controls
    st.caption(
        f"Head {head + 1}, block {b} of {n_blocks}: keys {span(tile.start, tile.stop - 1)}, scores "
        f"{shape_text(tile.scores.shape)} = (T, B_c). Each query row keeps m (the largest score so far), l (the sum "
        "of exp(score − m) so far) and an accumulator of exp(score − m)·v; a larger max rescales both by "
        f"exp(m_old − m_new). This view tiles only the keys: all {t_q} query rows are in every block. FlashAttention "
        "also cuts the queries into blocks of B_r rows (the table below)."
    )
    finite = [s.scores[s.scores > -float("inf")] for s in result.tiles]
    limit = symmetric_limit(*finite)  # one colour range for every block of this head
    with on_top if settings.presenter else st.container():
        _block_charts(tile, tokens, result.run.key_tokens[tile.start : tile.stop], limit, settings.presenter)
    if result.max_diff <= EXACT:
        st.success(
            f"After the last block, acc / l is head {head + 1}'s attention output: max |difference| "
            f"{result.max_diff:.1e} from the plain softmax (float64 rounding), with B_c = {block}."
        )
    else:
        st.error(f"The tiled output differs from plain attention by up to {result.max_diff:.2e}.")
    show_code(tiles, f"blocks = list(tiles(q, k, v, mask, block={block}))  # q, k, v of head {head + 1}")
    _memory(t, block, settings.presenter)


def _block_size(where: DeltaGenerator, t: int) -> int:
    """B_c, picked from 1..t; 1 for one token (a slider needs two options: one token is one block of one key)."""
    if t <= 1:
        return 1
    return where.select_slider(
        "Block size B_c",
        options=list(range(1, t + 1)),
        value=max(1, t // 4),
        key="block_size",
        bind="query-params",
        help="How many keys one block holds.",
    )


def _block(where: DeltaGenerator, n_blocks: int) -> int:
    """The block shown, from 1; 1 when there is one."""
    if n_blocks <= 1:
        return 1
    return where.select_slider(
        "Block",
        options=list(range(1, n_blocks + 1)),
        value=1,
        key="block",
        bind="query-params",
        help=f"Step through the {n_blocks} blocks of keys; the last one gives the output.",
    )


def _block_charts(tile: Tile, tokens: Sequence[str], key_tokens: Sequence[str], limit: float, presenter: bool) -> None:
    """The block's scores (left) and each row's running state (right), side by side; on a projector the mask's
    meaning is said above them."""
    masked = presenter and not np.isfinite(tile.scores).all()
    if masked:
        st.caption(MASK_NOTE)
    left, right = st.columns(2)
    fold_px = chart_fold_px(presenter=presenter, caption=masked, above_px=CONTROLS_ABOVE_PX)
    # built once per tile (a cached run's: its tokens, keys and colour range with it): a room's followers all draw them
    scores = charts_of(
        tile,
        ("flash block", presenter),
        lambda: block_figure(
            tile.scores, tokens, key_tokens, tile.start, limit=limit, presenter=presenter, fold_px=fold_px
        ),
    )
    chart(scores, width="stretch", key="flash_block_chart", config=PLOTLY_CONFIG, container=left)
    state = charts_of(
        tile,
        ("flash state", presenter),
        lambda: state_figure(
            tile.m_old, tile.m_new, tile.l_old, tile.l_new, tile.correction, tokens, presenter=presenter
        ),
    )
    chart(state, width="stretch", key="flash_state_chart", config=PLOTLY_CONFIG, container=right)


def _memory(t: int, block: int, presenter: bool) -> None:
    """The largest score array alive: (T, T) for plain attention, (T, B_c) tiled by keys as this view does, and
    FlashAttention's (B_r, B_c) block, per head in float32."""
    rows, memory = [], [score_memory(length, block) for length in (t, *MEMORY_LENGTHS)]
    b_r, b_c = FLASH_BLOCK
    for m in memory:
        rows.append(
            {
                "T": f"{m.t:,}" + (" (this sentence)" if m.t == t else ""),
                "plain: (T, T) scores": byte_size(m.full_bytes),
                f"tiled: (T, B_c = {m.block}) scores": byte_size(m.tile_bytes),
                f"FlashAttention: (B_r, B_c) = ({b_r}, {b_c}) scores": byte_size(m.flash_bytes),
            }
        )
    longest = memory[-1]
    st.subheader("The largest array alive")
    st.caption(
        f"Per head, float32. Plain attention holds every score at once. This view's loop holds one block of keys "
        f"for every query row, T × B_c, which still grows with T: {byte_size(longest.tile_bytes)} at "
        f"T = {longest.t:,}. FlashAttention tiles the queries too: its kernel computes one block of B_r queries × "
        f"B_c keys at a time, {b_r} × {b_c} in FlashAttention-2 for head dimension {FLASH_HEAD_DIM} on an A100 or "
        f"H100: {byte_size(longest.flash_bytes)} of scores at T = {memory[-2].t:,} as at T = {longest.t:,}, small "
        "enough for a GPU's fast on-chip memory."
    )
    show_frame(pd.DataFrame(rows), presenter=presenter)  # page text on a projector: the grid's canvas is 13 px
