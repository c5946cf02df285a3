"""Positions: shift every position by the same amount. RoPE's maps stay put; absolute encodings' maps move.

``core.shift_experiment`` runs the sentence at positions 0..T-1 and at
s..s+T-1 with everything else equal. RoPE scores depend only on how far apart
two tokens are, so the maps agree to rounding; an encoding added to X gives every
token a new vector after the shift, so they do not.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from core import POSITIONAL_KINDS, causal_mask, shift_experiment
from dashboard.compute import computations
from dashboard.figures.shift import ShiftRow, shift_charts
from dashboard.page.common import choose_head, served, show_code, show_frame, tokens_or_message
from dashboard.page.map_columns import show_grid
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings, head_options

TOLERANCE = 1e-9
"""Float64 rounding of RoPE's angles leaves ~1e-15; a real dependence on absolute position is far larger."""
MAX_SHIFT = 1000
"""Large enough to leave any sentence's positions far behind; bounded so a link cannot ask for a huge table."""
DEFAULT_SHIFT = 10
SHOWN = ("rope", "sinusoidal", "learned")
"""Encodings drawn side by side: the relative one against the two absolute ones."""

WHY = {
    "rope": "RoPE turns query i by angle i·θ and key j by j·θ, so their dot product sees only the difference "
    "j − i; moving every token by the same amount leaves every difference, and so every score, as it was.",
    "sinusoidal": "The sinusoidal encoding adds the vector of position p to the token at p. After the shift each "
    "token gets another position's vector, so its query, key and scores change.",
    "learned": "The learned encoding adds row p of a table to the token at p. After the shift each token reads "
    "another row, so its query, key and scores change.",
    "none": "With no positional encoding attention sees no positions at all, so a shift cannot change it "
    "(nor can reordering the words: see the permutation view).",
}


def _available(settings: Settings) -> list[str]:
    """Encodings these head settings allow (RoPE needs an even d_k)."""
    return [
        kind
        for kind in POSITIONAL_KINDS
        if settings.config.n_heads in head_options(settings.config.d_model, kind, settings.config.weights)
    ]


def verdict(kind: str, diff: float) -> tuple[bool, str]:
    """(map unchanged?, a plain sentence for the sidebar's encoding)."""
    same = diff <= TOLERANCE
    head = (
        f"Unchanged (max |difference| {diff:.1e}, rounding). " if same else f"Changed (max |difference| {diff:.2f}). "
    )
    return same, head + WHY[kind]


def comparison(diffs: dict[str, float]) -> tuple[bool, str]:
    """(RoPE unchanged and every absolute encoding changed?, the sentence saying so) from max |difference| per kind."""
    rope = diffs["rope"]
    absolute = {kind: diffs[kind] for kind in ("sinusoidal", "learned") if kind in diffs}
    largest = max(absolute.values())
    holds = rope <= TOLERANCE and all(d > TOLERANCE for d in absolute.values())
    if holds:
        return True, (
            f"RoPE keeps the map (max |difference| {rope:.1e}, rounding); sinusoidal and learned change it "
            f"(max |difference| up to {largest:.2f}). RoPE scores depend only on how far apart two tokens are; "
            "an absolute encoding ties each token to its own position."
        )
    return False, (
        f"Unexpected here: RoPE max |difference| {rope:.1e}, absolute encodings up to {largest:.1e}. "
        "With this sentence and these settings the shift does not separate them."
    )


def render(settings: Settings, controls: Controls) -> None:
    settings = served(settings, "positions", "compares positional encodings")
    tokens = tokens_or_message(settings.sentence, controls)
    if tokens is None:
        return
    shift, k = _controls(settings, controls)
    kinds = _available(settings)
    results = {kind: computations.shift_run(tokens, shift, replace(settings.config, positional=kind)) for kind in kinds}
    _verdicts(settings, tokens, results, controls)
    shown = [
        ShiftRow(kind, results[kind].weights[k], results[kind].shifted_weights[k]) for kind in SHOWN if kind in results
    ]
    allowed = causal_mask(len(tokens)) if settings.config.causal else None
    charts = charts_of(  # built once per results, head and mask: a room's followers all draw these
        tuple(results.values()),
        ("positions", k, settings.config.causal, settings.presenter),
        lambda: shift_charts(shown, tokens, shift, allowed, presenter=settings.presenter),
    )
    show_grid(charts, key="shift_chart")
    calls = [
        f"results[{kind!r}] = shift_experiment(tokenize({settings.sentence!r}), {shift}, "
        f"{replace(settings.config, positional=kind)!r})"
        for kind in kinds
    ]
    show_code(shift_experiment, "\n".join(calls))
    st.caption(
        f"Head {k + 1}. Left: positions 0 to {len(tokens) - 1}; middle: {shift} to {shift + len(tokens) - 1}; "
        "right: |left − middle|, dark where nothing moved. Each row is one encoding, everything else as in the sidebar."
    )


def _controls(settings: Settings, controls: Controls) -> tuple[int, int]:
    """How far to shift, and which head the maps show (0-based)."""
    left, right = st.columns(2)
    shift = left.number_input(
        "Shift every position by",
        min_value=1,
        max_value=MAX_SHIFT,
        value=DEFAULT_SHIFT,
        step=1,
        key="shift",
        bind="query-params",
        help="The same sentence again, starting at this position instead of 0; nothing else changes.",
    )
    k = choose_head(
        settings.config.n_heads,
        controls,
        key="shift_head",
        bind="query-params",
        help="The maps show this head; the differences in the table are over all heads.",
        container=right,
    )
    return int(shift), k


def _verdicts(settings: Settings, tokens: tuple[str, ...], results: dict, controls: Controls) -> None:
    """Whether RoPE's maps stayed put and the absolute ones moved, in words and in a table."""
    if len(tokens) == 1:
        st.info("A single token can only attend to itself (weight 1) at any position: type a longer sentence.")
    elif "rope" in results:
        holds, sentence = comparison({kind: r.max_abs_diff for kind, r in results.items()})
        (st.success if holds else st.warning)(sentence)
    if settings.config.positional in results:
        _, sentence = verdict(settings.config.positional, results[settings.config.positional].max_abs_diff)
        st.markdown(f"**Your setting ({settings.config.positional}):** {sentence}")
    rows = [
        (kind, f"{r.max_abs_diff:.2e}", "unchanged" if r.max_abs_diff <= TOLERANCE else "changed")
        for kind, r in results.items()
    ]
    show_frame(
        pd.DataFrame(rows, columns=["positional encoding", "max |difference|, all heads", "map after the shift"]),
        presenter=settings.presenter,
    )
    if "rope" not in results:
        st.info(
            f"RoPE needs an even d_k and d_k = {settings.config.d_k} here."
            + controls.hint(" Choose another head count to compare it.")
        )
