"""Minimal pairs: two sentences a word or two apart, one head's maps on both and their difference, every head
ranked by how much its map changed.

The first sentence is the sidebar's; the second is typed here (``show_contrast(settings, controls, second)`` takes
one from elsewhere, a student's, as its last argument). Tokens are aligned by ``core.contrast.align``, and the page
says how. For a built-in pair that carries a reference ("it" is the animal when it is tired, the street when it is
wide), the page measures where the pronoun's row puts its weight between the two nouns in each sentence, and says
whether any head resolves the reference by the rule stated with it, or that none does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from core import MAX_CHARS, MAX_TOKENS
from core.contrast import (
    Alignment,
    Reference,
    ReferenceReading,
    align,
    difference,
    mean_change,
    read_reference,
    row_change,
)
from core.head_summary import SPECIFIC
from core.sources import ModelSource
from dashboard.compute import computations
from dashboard.compute.source import weights_source
from dashboard.figures.contrast import DIFFERENCE_NAME, contrast_charts
from dashboard.figures.grid import GridSpec, Panel, chart_grid
from dashboard.figures.labels import pair_place, pair_token, position, positions
from dashboard.page.common import EMPTY_SENTENCE, choose_head, opened, served, show_code, show_frame
from dashboard.page.map_columns import BAR_CONFIG, chart, show_grid, show_maps
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.session import set_values
from dashboard.state.settings import DEFAULTS, Settings

DEFAULT_SECOND = "The bank of the city gave a loan"
"""The second sentence's default: the sidebar's default sentence with "river" made "city" (the bank's other sense)."""
EMPTY_SECOND = "Type a second sentence above: the same sentence with a word or two changed."


@dataclass(frozen=True)
class Pair:
    """A built-in pair: a button's label, both sentences, and the reference it tests (None: none)."""

    label: str
    first: str
    second: str
    reference: Reference | None = None


PAIRS = (
    Pair(
        "“it”: too tired, too wide",
        "The animal didn't cross the street because it was too tired",
        "The animal didn't cross the street because it was too wide",
        Reference("it", "animal", "street"),
    ),
    Pair(
        "“it”: too big, too small",
        "The trophy didn't fit in the suitcase because it was too big",
        "The trophy didn't fit in the suitcase because it was too small",
        Reference("it", "trophy", "suitcase"),
    ),
    Pair("bank: river, city", DEFAULTS.sentence, DEFAULT_SECOND),
    Pair("a word more", "the cat sat on the mat", "the black cat sat on the mat"),
)
"""The built-in pairs. The first two are Winograd schemas: one word changes what "it" refers to."""
SHOWN_HEADS = 10
"""Rows of a ranking shown at once; the rest behind "All N heads"."""
HEAD_HELP = "The head whose maps are drawn, in the layer chosen in the sidebar. The ranking below covers every head."


def render(settings: Settings, controls: Controls) -> None:
    show_contrast(settings, controls)


def show_contrast(settings: Settings, controls: Controls, second: str | None = None) -> None:
    """The sidebar's sentence against ``second`` (a student's), or against the one typed here (None)."""
    chosen = settings.weights
    settings = served(settings, "sentences", "compares two typed sentences")  # a trained model: random weights
    source = weights_source(settings, controls)
    if source is None:
        return
    arch = source.architecture()
    layer = min(max(settings.layer, 1), arch.n_layers)
    on_top = st.container()  # presenter mode: the three maps first, the controls under them
    if not settings.presenter:
        _pair_buttons(controls)
    if second is None:
        second = controls.choice(
            "second",
            DEFAULT_SECOND,
            lambda: st.text_input(
                "Second sentence (the sidebar's is the first)",
                value=DEFAULT_SECOND,
                key="second",
                bind="query-params",
                help=f"The sidebar's sentence with a word or two changed. Up to {MAX_TOKENS} tokens "
                f"({MAX_CHARS} characters), read through the same weights.",
            ),
        )
    head = choose_head(arch.n_heads, controls, key="contrast_head", bind="query-params", help=HEAD_HELP)
    if settings.presenter:
        _pair_buttons(controls)
    with on_top if settings.presenter else st.container():
        first_maps = _maps(source, settings.sentence, EMPTY_SENTENCE)
        second_maps = _maps(source, str(second), EMPTY_SECOND)
        if first_maps is None or second_maps is None:
            return
        chance = source.chance and settings.weights == chosen  # served random weights: the note above said so
        _draw(settings, first_maps, second_maps, layer, head, str(second), chance)


def _pair_buttons(controls: Controls) -> None:
    """One button per built-in pair: it sets the sidebar's sentence and the second (before the widgets); none on a
    following page."""
    if not controls.drawn:
        return
    st.caption("Try a pair:")
    with st.container(horizontal=True):
        for i, pair in enumerate(PAIRS):
            st.button(pair.label, key=f"contrast_pair_{i}", on_click=_open_pair, args=(pair,))


def _open_pair(pair: Pair) -> None:
    """Button callback: runs before the rerun, so the bound widgets (and the address) start from the pair."""
    set_values(sentence=pair.first, second=pair.second)


def _maps(source: ModelSource, text: str, empty: str) -> computations.SentenceMaps | None:
    """``text`` read through the weights, or None after saying why not (``empty`` for blank text)."""
    if not text.strip():
        st.info(empty)
        return None
    try:
        return computations.sentence_maps(source, text)
    except ValueError as err:  # core's message names numbers only, never the text
        st.error(str(err))
        return None


def alignment_words(alignment: Alignment, t_first: int, t_second: int) -> str:
    """How the tokens were aligned, with the positions that differ or have no partner (never the tokens)."""
    if alignment.by_position:
        return f"Both sentences have {t_first} tokens: aligned position by position."
    alone = []
    if alignment.first_only:
        alone.append(f"position{'s' * (len(alignment.first_only) > 1)} {positions(alignment.first_only)} of the first")
    if alignment.second_only:
        alone.append(
            f"position{'s' * (len(alignment.second_only) > 1)} {positions(alignment.second_only)} of the second"
        )
    without = f" No partner: {' and '.join(alone)}." if alone else ""
    return (
        f"The first sentence has {t_first} tokens, the second {t_second}: aligned by matching equal tokens in order "
        "(Python's difflib, longest matching blocks first), and a run of tokens replaced by as many paired in order; "
        f"{len(alignment.pairs)} pairs.{without} A label i/j is position i of the first and j of the second."
    )


def _draw(
    settings: Settings,
    first: computations.SentenceMaps,
    second: computations.SentenceMaps,
    layer: int,
    head: int,
    second_text: str,
    chance: bool,
) -> None:
    alignment = align(first.tokens, second.tokens)
    which = head_name(layer, head, first.weights.shape[0])
    st.caption(alignment_words(alignment, len(first.tokens), len(second.tokens)))
    w_a, w_b = first.weights[layer - 1, head], second.weights[layer - 1, head]  # (T_a, T_a), (T_b, T_b)
    panels = (
        Panel(w_a, first.tokens, first.tokens, "first sentence", first.mask),
        Panel(w_b, second.tokens, second.tokens, "second sentence", second.mask),
    )
    if not alignment.pairs:
        st.warning("No token of one sentence is paired with one of the other: there is no change to measure.")
        show_grid(chart_grid(list(panels), 3, GridSpec(presenter=settings.presenter)), key="contrast_chart")
        return
    a, b = alignment.first, alignment.second
    places = [pair_place(i, j) for i, j in alignment.pairs]
    tokens = [pair_token(first.tokens[i], second.tokens[j]) for i, j in alignment.pairs]
    allowed = None
    if first.mask is not None or second.mask is not None:
        seen_a = np.ones_like(w_a, dtype=bool) if first.mask is None else first.mask
        seen_b = np.ones_like(w_b, dtype=bool) if second.mask is None else second.mask
        allowed = seen_a[np.ix_(a, a)] & seen_b[np.ix_(b, b)]  # (n, n): both queries may see the key
    charts = charts_of(  # built once per the two sentences' maps and head (their tokens, masks and alignment with
        (first.weights, second.weights),  # them): a room's followers all draw these
        ("contrast", layer, head, settings.presenter),
        lambda: contrast_charts(
            *panels,
            Panel(difference(w_a, w_b, alignment), tokens, tokens, DIFFERENCE_NAME, allowed, places=places),
            presenter=settings.presenter,
        ),
    )
    with st.container(horizontal=True, vertical_alignment="center"):
        chart(charts.maps.colour_bar, width=charts.maps.bar_px, key="contrast_chart_bar", config=BAR_CONFIG)
        chart(charts.difference_bar, width=charts.maps.bar_px, key="contrast_difference_bar", config=BAR_CONFIG)
    show_maps(charts.maps, key="contrast_chart")
    st.caption(
        f"{which}: the first sentence's map, the second's, and second − first on the {len(alignment.pairs)} aligned "
        f"tokens, on a scale centred at 0 from −{charts.limit:.3g} to +{charts.limit:.3g} (red: the second sentence "
        "gives that key more weight from that query; blue: less)."
    )
    if chance:
        st.caption("These weights are random: a head that changes here does so by chance, not by meaning.")
    _ranking(first, second, alignment, layer, head, places, settings.presenter)
    pair = next((p for p in PAIRS if (p.first, p.second) == (settings.sentence.strip(), second_text.strip())), None)
    if pair is not None and pair.reference is not None:
        _reference(pair.reference, first, second, settings.presenter)
    show_code(
        row_change,
        f"first, second = source.reads({settings.sentence!r}), source.reads({second_text!r})\n"
        "alignment = align(first[0].tokens, second[0].tokens)\n"
        "change = mean_change(weights_first, weights_second, alignment)  # (L, h): every head",
    )


def head_name(layer: int, head: int, n_layers: int) -> str:
    """ "Layer 4, head 2" (``head`` from 0), or "Head 2" for a one-layer model."""
    return f"Layer {layer}, head {head + 1}" if n_layers > 1 else f"Head {head + 1}"


def head_names(n_layers: int, h: int) -> pd.DataFrame:
    """The layer and head of each of ``n_layers * h`` heads, in the order ``(L, h)`` arrays ravel (from 1)."""
    layers, heads = np.divmod(np.arange(n_layers * h), h)
    table = pd.DataFrame({"layer": layers + 1, "head": heads + 1})
    return table if n_layers > 1 else table[["head"]]


def ranking_table(change: np.ndarray, rows: np.ndarray, places: Sequence[str]) -> pd.DataFrame:
    """Every head by ``change (L, h)`` (the largest first), with its largest row change and that row's position
    (``rows (L, h, n)``, ``places (n,)``)."""
    n_layers, h = change.shape
    table = head_names(n_layers, h)
    flat_rows = rows.reshape(n_layers * h, -1)  # (L·h, n)
    table["mean change"] = change.ravel()
    table["largest row change"] = flat_rows.max(axis=-1)
    table["at row"] = [places[i] for i in flat_rows.argmax(axis=-1)]
    order = np.argsort(-change.ravel(), kind="stable")
    table = table.iloc[order].reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table


def _ranking(first, second, alignment, layer: int, head: int, places: Sequence[str], presenter: bool) -> None:
    change = mean_change(first.weights, second.weights, alignment)  # (L, h)
    rows = row_change(first.weights, second.weights, alignment)  # (L, h, n)
    table = ranking_table(change, rows, places)
    n_layers, h = change.shape
    total = n_layers * h
    st.subheader(f"Every head, ranked by how much its map changed ({total})", anchor=False)
    st.caption(
        f"The measure: for each of the {len(alignment.pairs)} aligned query rows, the total variation between its "
        "two distributions over keys, ½ Σ|p − q| over the aligned keys plus all the weight either row puts on a key "
        "without a partner (0: the same row; 1: no weight in common); a head's change is the mean over those rows."
    )
    rank = int(np.flatnonzero(np.argsort(-change.ravel(), kind="stable") == (layer - 1) * h + head)[0]) + 1
    which = head_name(layer, head, n_layers)
    st.markdown(f"{which}, drawn above, ranks {rank} of {total}: a mean change of {change[layer - 1, head]:.3f}.")
    _top_and_all(table, {"mean change": "%.3f", "largest row change": "%.3f"}, "ranked", presenter)


def reading_table(reading: ReferenceReading, reference: Reference) -> pd.DataFrame:
    """Every head, the largest shift first: the pronoun's weights on both nouns in both sentences, the shift, the
    specificity in each sentence and whether it resolves the reference."""
    n_layers, h = reading.shift.shape
    table = head_names(n_layers, h)
    word, one, other = reference.word, reference.first, reference.second
    columns = {
        f"first: {word} → {one}": reading.first_on_first,
        f"first: {word} → {other}": reading.first_on_second,
        f"second: {word} → {one}": reading.second_on_first,
        f"second: {word} → {other}": reading.second_on_second,
        "shift": reading.shift,
        f"specific to {word} (first, {one})": reading.specific_first,
        f"specific to {word} (second, {other})": reading.specific_second,
    }
    for name, values in columns.items():
        table[name] = np.asarray(values).ravel()
    table["resolves"] = np.where(reading.resolves.ravel(), "yes", "no")
    return table.iloc[np.argsort(-reading.shift.ravel(), kind="stable")].reset_index(drop=True)


def reference_verdict(reading: ReferenceReading, reference: Reference) -> list[str]:
    """What the numbers show about the reference, and nothing more: the heads that resolve it, or that none does;
    the heads whose order of the two nouns flips the way the sentences mean, short of the specificity bar; and the
    head that moves the word furthest the way the sentences mean, with its numbers."""
    word, one, other = (f"“{w}”" for w in (reference.word, reference.first, reference.second))
    n_layers, h = reading.shift.shape
    a1, a2, b1, b2 = (
        np.ravel(x)
        for x in (reading.first_on_first, reading.first_on_second, reading.second_on_first, reading.second_on_second)
    )
    spec_a, spec_b, shift = np.ravel(reading.specific_first), np.ravel(reading.specific_second), np.ravel(reading.shift)

    def names(ks: np.ndarray) -> str:
        named = [name_of(int(k), n_layers, h) for k in ks[:3]]
        return "; ".join(named) + (f"; and {len(ks) - 3} more" if len(ks) > 3 else "")

    resolving = np.flatnonzero(np.ravel(reading.resolves))
    flips = np.flatnonzero((a1 > a2) & (b2 > b1) & ~np.ravel(reading.resolves))
    lines = []
    if resolving.size:
        verb = "resolve" if resolving.size > 1 else "resolves"
        said = f"{resolving.size} of the {shift.size} heads {verb} the reference by this rule"
        lines.append(f"{said}: {names(resolving)}.")
    else:
        lines.append(f"No head of the {shift.size} resolves the reference by this rule.")
    if flips.size:
        closest = flips[np.argmax(np.minimum(spec_a, spec_b)[flips])]
        lines.append(
            f"{flips.size} {'heads give' if flips.size > 1 else 'head gives'} {one} more of the weight of {word} than "
            f"{other} in the first sentence and {other} more than {one} in the second ({names(flips)}), short of the "
            f"specificity bar in one sentence or both (the closest, {name_of(int(closest), n_layers, h)}: "
            f"{spec_a[closest]:.2f} and {spec_b[closest]:.2f})."
        )
    elif not resolving.size:
        lines.append(
            f"No head gives {one} more of the weight of {word} in the first sentence and {other} more in the second."
        )
    best = int(np.argmax(shift))
    short = []
    if a1[best] <= a2[best]:
        short.append(f"in the first it gives {other} at least as much as {one}")
    if b2[best] <= b1[best]:
        short.append(f"in the second it still gives {one} at least as much as {other}")
    lines.append(
        f"The largest shift, {shift[best]:+.2f}, is {name_of(best, n_layers, h)}'s: {word} gives {one} "
        f"{a1[best]:.2f} and {other} {a2[best]:.2f} in the first sentence, {b1[best]:.2f} and {b2[best]:.2f} in the "
        "second" + (f"; but {' and '.join(short)}." if short else ".")
    )
    return lines


def name_of(k: int, n_layers: int, h: int) -> str:
    """Head ``k`` of the ``(L, h)`` heads raveled, in words: "layer 4, head 2", or "head 2" for one layer."""
    return f"layer {k // h + 1}, head {k % h + 1}" if n_layers > 1 else f"head {k + 1}"


def _reference(reference: Reference, first, second, presenter: bool) -> None:
    reading = read_reference(
        reference, first.tokens, second.tokens, first.weights, second.weights, first.mask, second.mask
    )
    word, one, other = (f"“{w}”" for w in (reference.word, reference.first, reference.second))
    st.subheader(f"Where {word} looks: {one} or {other}", anchor=False)
    if reading is None:
        st.info(f"{word}, {one} and {other} are not each one token found once in both sentences here: not measured.")
        return
    (q_a, q_b), (n1_a, n2_a), (n1_b, n2_b) = reading.query, reading.nouns_first, reading.nouns_second
    st.caption(
        f"Measured for every head: the weight the row of {word} (position {position(q_a)} in the first sentence, "
        f"{position(q_b)} in the second) puts on {one} (key {position(n1_a)}; {position(n1_b)}) and on {other} "
        f"(key {position(n2_a)}; {position(n2_b)}). The shift is ({one} − {other}) in the first sentence minus the "
        f"same in the second: positive when {word} moves towards {one} in the first and towards {other} in the "
        f"second, as the sentences mean. A head resolves the reference when, in each sentence, the noun meant gets "
        f"more of the weight of {word} than the other, and the head is specific to {word} there: that weight minus the "
        f"mean weight the other rows give the noun is at least {SPECIFIC:g}, the rule for any “X looks at Y” this "
        "app states."
    )
    st.markdown("\n".join(f"- {line}" for line in reference_verdict(reading, reference)))
    table = reading_table(reading, reference)
    formats = {c: "%+.3f" if c == "shift" else "%.3f" for c in table.columns if c not in ("layer", "head", "resolves")}
    show_frame(table.head(SHOWN_HEADS), presenter=presenter, formats=formats)
    total = len(table)
    if total > SHOWN_HEADS and (
        box := opened(f"All {total} heads, by shift", "contrast_reference_all", ":material/list:")
    ):
        with box:
            show_frame(table, presenter=presenter, formats=formats)


def _top_and_all(table: pd.DataFrame, formats: dict[str, str], order: str, presenter: bool) -> None:
    """The first ``SHOWN_HEADS`` rows of a table of every head, and all of them behind an expander."""
    show_frame(table.head(SHOWN_HEADS), presenter=presenter, formats=formats)
    total = len(table)
    key = f"contrast_all_{order.replace(' ', '_')}"
    if total > SHOWN_HEADS and (box := opened(f"All {total} heads, {order}", key, ":material/list:")):
        with box:
            show_frame(table, presenter=presenter, formats=formats)
