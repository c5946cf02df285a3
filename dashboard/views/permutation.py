"""Permutation: reorder the words and compare the maps position by position.

Without positional encoding and without a mask, self-attention is permutation
equivariant: the reordered sentence's map is the original map with its rows and
columns reordered, so moving it back gives the original to rounding (~1e-16).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from core import POSITIONAL_KINDS, AttentionConfig, PermutationResult, Run
from core.pipeline import realign_rows
from core.sources import ModelSource
from dashboard.compute import computations
from dashboard.figures import permutation_charts
from dashboard.figures.grid import ChartGrid
from dashboard.figures.steps import vector_panel, vectors_charts
from dashboard.page.common import (
    choose_head,
    permutation_code,
    served,
    show_code,
    show_frame,
    source_or_message,
    tokens_or_message,
)
from dashboard.page.map_columns import show_grid
from dashboard.page.mask_words import moved, plain_causal, rule_words, sees_order
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import MAX_SEED, Settings, head_options

TOLERANCE = 1e-9
"""Float64 rounding leaves ~1e-16; any real dependence on order is many orders of magnitude larger."""
MODES = ("reverse", "shuffle", "retype")
"""Labels and URL values of ``perm_mode``: backwards, a seeded shuffle, or the same words typed in another order."""

SAME = "Same map, reordered. Attention alone cannot see word order: moving the words only moves rows and columns."
WHY_POSITIONS = (
    "A positional encoding adds a different vector at each position, so a word that moves gets a different "
    "vector, and its queries, keys and values change."
)
WHY_ROPE = (
    "RoPE rotates each query and key by its position, so a score depends on how far apart two words are, "
    "and reordering changes those distances."
)
WHY_MASK = (
    "The causal mask depends on positions: query i sees keys 0..i only, so after reordering a word sees a "
    "different set of words."
)
WHY_OTHER_MASK = "The mask depends on positions, so after reordering a word sees a different set of words:"
WHY_ALIBI = (
    "ALiBi's bias depends on positions: it lowers each score by m·|i − j|, the distance between query and key, and "
    "this reordering changes distances."
)
SAME_DISTANCES = (
    "Same map, reordered, yet {who} relative order. {what} {depend} the distance |i − j| between query and key, and "
    "this reordering keeps every distance (a reversal does: |(T−1−i) − (T−1−j)| = |i − j|). A shuffle changes "
    "distances, and the maps differ."
)
"""The maps match, but the run does see positions: through what reads only |i − j| (ALiBi's bias, a window both
ways), which this reordering keeps."""
WHY_ALIBI_ROW = (
    "ALiBi lowers each score by m·|i − j|, the distance between two words: it sees how far apart they are, not "
    "where they stand. A shuffle changes distances and the maps; a reversal keeps every distance, and they match."
)


def _choose_permutation(tokens: tuple[str, ...], source: ModelSource, controls: Controls) -> tuple[int, ...] | None:
    """The reordering widgets; returns a permutation of 0..T-1 of the movable ``tokens``, or None after a message.

    Retyped text is split as ``source`` splits its input (words, or WordPiece pieces).
    """
    mode = st.segmented_control(
        "Reordering",
        MODES,
        default="reverse",
        required=True,
        key="perm_mode",
        bind="query-params",
        help="reverse: read the sentence backwards; shuffle: a random order with its own seed; "
        "retype: type the same words in another order yourself.",
    )
    if mode == "shuffle":
        seed = st.number_input(
            "Shuffle seed",
            min_value=0,
            max_value=MAX_SEED,
            value=0,
            key="perm_seed",
            bind="query-params",
            help="Its own seed: it changes the shuffle, not the model.",
        )
        return reordering(tokens, source, mode, seed=int(seed))
    if mode == "retype":
        typed_text = st.text_input(
            "The same words in another order",
            key="perm_text",
            bind="query-params",
            help='e.g. "dog bites man" for "man bites dog". It must use exactly the same words.',
        )
        if not typed_text.strip():
            st.info("Type the sentence's words in another order (for example backwards) to compare.")
            return None
        if tokens_or_message(typed_text, controls) is None:
            return None
        perm = reordering(tokens, source, mode, text=typed_text)
        if perm is None:
            typed = source.tokens_of(typed_text)
            st.warning(
                f"That is not a rearrangement of the sentence: it has {len(typed)} tokens against "
                f"{len(tokens)}, or different words. Use each word of the sentence exactly once."
            )
        return perm
    return reordering(tokens, source, mode)


def reordering(
    tokens: tuple[str, ...], source: ModelSource, mode: str, *, seed: int = 0, text: str = ""
) -> tuple[int, ...] | None:
    """The permutation of the movable ``tokens`` that ``mode`` makes (``perm_mode``: reverse; shuffle with its own
    ``seed``; retype ``text``, split as ``source`` splits its input), or None for a retyping that is not one (pure:
    the page's controls and the tour's download read it)."""
    if mode == "shuffle":
        return computations.random_permutation(len(tokens), seed)
    if mode == "retype":  # as the model splits it: words, or the pieces between [CLS] and [SEP]
        return computations.typed_permutation(tokens, source.tokens_of(text))
    return computations.reverse_permutation(len(tokens))


def _pickers(tokens: tuple[str, ...], source: ModelSource, controls: Controls) -> tuple[int, tuple[int, ...] | None]:
    """The head (0-based) and the reordering, side by side, so the maps start on a projector's first screen."""
    left, right = st.columns([2, 1])
    k = choose_head(
        source.runs()[0].trace.n_heads,
        controls,
        key="perm_head",
        bind="query-params",
        help="The difference below is over all heads; the maps show this one.",
        container=right,
    )
    with left:
        return k, _choose_permutation(tokens, source, controls)


def _maps(
    result: PermutationResult, k: int, tokens: tuple[str, ...], settings: Settings, mask: np.ndarray | None
) -> None:
    """Head ``k``'s three maps: the original order, the reordered sentence, and its map moved back."""
    charts = charts_of(  # built once per result and head: a room's followers all draw these (the result is the
        result,  # source's and the reordering's: its tokens and mask with it)
        ("permutation", k, settings.presenter),
        lambda: map_grid(result, k, tokens, mask, presenter=settings.presenter),
    )
    show_grid(charts, key="permutation_chart")


def map_grid(
    result: PermutationResult, k: int, tokens: tuple[str, ...], mask: np.ndarray | None, *, presenter: bool
) -> ChartGrid:
    """Head ``k``'s three maps (pure: the page and the tour's download draw these); ``mask`` (T, T) is the run's
    own, whichever rule made it."""
    return permutation_charts(
        result.weights[k],
        result.permuted_weights[k],
        result.realigned[k],
        tokens,
        tuple(int(p) for p in result.permutation),
        mask,
        presenter=presenter,
    )


def _reads_positions(run: Run) -> bool:
    """True when something in the run besides an encoding reads where words stand: ALiBi's bias, or a mask that
    some reordering changes."""
    mask = run.trace.mask
    return run.trace.bias is not None or (mask is not None and sees_order(mask))


def _same_words(run: Run) -> str:
    """Why the maps match, from what the run gives attention about positions: nothing, or a bias and a mask that
    read only the distance between query and key (the only way a reordering can leave them unchanged)."""
    if not _reads_positions(run):
        return SAME
    bias, mask = run.trace.bias, run.trace.mask
    masked = mask is not None and sees_order(mask)
    alibi = "ALiBi lowers each score by m·|i − j|."
    who, what, depend = {
        (True, False): ("ALiBi sees", alibi, "It depends only on"),
        (False, True): ("the mask sees", rule_words(mask), "It depends only on"),
        (True, True): ("ALiBi and the mask see", f"{alibi} {rule_words(mask)}", "Both depend only on"),
    }[bias is not None, masked]
    return SAME_DISTANCES.format(who=who, what=what, depend=depend)


def _verdict(diff: float, run: Run, perm: tuple[int, ...]) -> tuple[bool, str]:
    """(order visible?, one plain sentence saying why), from how the run gave positions, its mask and its bias,
    and which of them this reordering ``perm`` (of all T positions) changes."""
    bias = run.trace.bias
    if diff <= TOLERANCE:
        return False, _same_words(run)
    reasons = {"none": [], "rope": [WHY_ROPE]}.get(run.positional, [WHY_POSITIONS])
    mask = run.trace.mask
    if mask is not None and moved(mask, perm):
        reasons.append(WHY_MASK if plain_causal(mask) else f"{WHY_OTHER_MASK} {rule_words(mask)}")
    reasons += [WHY_ALIBI] if bias is not None and moved(bias, perm) else []
    return True, "Different maps: word order now matters. " + " ".join(reasons)


def _breakers(tokens: tuple[str, ...], perm: tuple[int, ...], config: AttentionConfig) -> pd.DataFrame:
    """The same reordering under the symmetric setting and under each thing that breaks it."""
    bare = replace(config, positional="none", causal=False, window=0, prefix=0, alibi=False)  # nothing sees order
    cases = [("no positional encoding, no mask", bare)]
    cases += [
        (f"{kind} positional encoding", replace(bare, positional=kind))
        for kind in POSITIONAL_KINDS
        if kind != "none" and config.n_heads in head_options(config.d_model, kind)  # RoPE needs an even d_k
    ]
    cases += [("causal mask", replace(bare, causal=True)), ("ALiBi's bias", replace(bare, alibi=True))]
    rows = []
    for label, cfg in cases:
        diff = computations.permutation_run(tokens, perm, cfg).max_abs_diff
        rows.append((label, f"{diff:.2e}", "yes" if diff > TOLERANCE else "no"))
    return pd.DataFrame(rows, columns=["setting", "max |difference|", "order visible?"])


def render(settings: Settings, controls: Controls) -> None:
    settings = served(settings, "permutation", "reorders the sidebar's sentence")
    source = source_or_message(settings, controls)
    if source is None:
        return
    seen = source.tokens()
    tokens, (first, stop) = seen.tokens, seen.movable
    if stop - first < 2:
        st.info("Reordering needs at least two tokens that can move: type a longer sentence.")
        return
    k, perm = _pickers(tokens[first:stop], source, controls)
    if perm is None:
        return
    if perm == tuple(range(stop - first)):
        st.info("This reordering leaves every word in place: pick another one to see anything move.")
    results = computations.permutation_runs(source, perm)  # one per layer
    run, result = source.run(settings.layer), results[min(settings.layer, len(results)) - 1]
    _maps(result, k, tokens, settings, run.trace.mask)
    whole = (*range(first), *(first + p for p in perm), *range(stop, len(tokens)))  # of all T positions
    visible, sentence = _verdict(result.max_abs_diff, run, whole)
    every = "all heads" if run.trace.n_heads > 1 else "the one head"
    where = f"layer {run.layer}, {every}" if len(results) > 1 else every
    st.metric(f"max |original − moved back|, {where}", f"{result.max_abs_diff:.2e}")
    (st.warning if visible else st.success)(sentence)
    if (first, stop) != (0, len(tokens)):
        st.caption(
            f"{tokens[0]} and {tokens[-1]} stay first and last, where the model always has them; the "
            "pieces between move."
        )
    _show_permutation_code(settings, perm)
    _outputs(result, tokens, settings.presenter, _reads_positions(run))
    if len(results) > 1:
        rows = [(f"layer {i + 1}", f"{r.max_abs_diff:.2e}") for i, r in enumerate(results)]
        show_frame(pd.DataFrame(rows, columns=["layer", "max |difference|"]), presenter=settings.presenter)
    if settings.kind.supports("positions"):  # the same reordering with the other encodings and the mask
        st.subheader("What breaks the symmetry")
        st.caption(
            "The same reordering under each setting alone: no window, prefix or ALiBi unless the row names it; "
            "the weights, d_model, heads and seed as in the sidebar."
        )
        show_frame(_breakers(tokens, perm, settings.config), presenter=settings.presenter)
        st.markdown(f"- {WHY_POSITIONS}\n- {WHY_ROPE}\n- {WHY_MASK}\n- {WHY_ALIBI_ROW}")


def _show_permutation_code(settings: Settings, perm: tuple[int, ...]) -> None:
    """The call that computed the comparison: the source's own permutation experiment in core."""
    if (code := permutation_code(settings)) is not None:
        function, call = code
        show_code(function, call(settings, perm))


EQUIVARIANT = (
    "Permutation equivariance: the output of the reordered sentence is the original output with its rows "
    "reordered the same way, attention(P X) = P attention(X). Each word keeps its own output vector, wherever "
    "it stands; moved back, the rows match to rounding."
)
EQUAL_DISTANCES = (
    "The same output rows, moved: attention(P X) = P attention(X) for this reordering, because it keeps every "
    "distance |i − j|, the only thing about positions this run reads. A reordering that changes distances changes "
    "the output too."
)
NOT_EQUIVARIANT = (
    "Not equivariant here: moved back, the reordered sentence's output rows differ from the original's, so "
    "attention(P X) ≠ P attention(X). Order reaches the output, not only the maps."
)


def _outputs(result: PermutationResult, tokens: tuple[str, ...], presenter: bool, sees: bool) -> None:
    """The output rows compared as the maps are: original, reordered and moved back, and their difference.
    ``sees``: the run reads positions (ALiBi's bias, a window), so equal rows hold for this reordering only."""
    st.subheader("The output rows", anchor=False)
    same = result.output_diff <= TOLERANCE
    st.metric("max |original output − moved-back output|", f"{result.output_diff:.2e}")
    (st.success if same else st.warning)((EQUAL_DISTANCES if sees else EQUIVARIANT) if same else NOT_EQUIVARIANT)

    def build() -> ChartGrid:
        difference = abs(result.output - result.realigned_output)  # (T, d_model)
        panels = [
            vector_panel(result.output, tokens, "output of the sentence"),
            vector_panel(result.realigned_output, tokens, "output of the reordered sentence, rows moved back"),
            vector_panel(difference, tokens, "|difference|"),
        ]
        return vectors_charts(panels, at_most=1, presenter=presenter)

    charts = charts_of(result, ("permutation outputs", presenter), build)  # once for a room's followers
    show_grid(charts, key="permutation_output_chart")
    show_code(realign_rows, "moved_back = realign_rows(permuted_run.trace.output, permutation)  # (T, d_model)")
