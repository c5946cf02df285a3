"""The class view: one head across many sentences, drawn as small multiples, and its pattern pooled over them.

A head is a function, not a picture: a previous-token head does the same on every sentence anyone types. The
sentences are the teacher's list (one per line: the teacher's "All in the class view" puts the class's sentences
there, ``classroom/class_sentences.py``), or the built-in examples; a trained model reads no typed text, so
it shows its task's held-out sequences. ``show_class(settings, controls, sentences)`` takes a list from elsewhere
(a room's sentences) as its last argument. Beside the maps, the head's patterns with the rows of every sentence pooled
(``core.across``): the same per-row rule the app names heads by, with the share of rows stated, and a head named on
a sentence but not across them is said to be so.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from core import MAX_CHARS, MAX_TOKENS
from core.across import OneMap, PooledPattern, pooled_patterns
from core.head_summary import NAMED_SHARE, ROW_WEIGHT
from core.sources import ModelSource
from dashboard.compute import computations
from dashboard.compute.source import weights_source
from dashboard.figures.across import class_charts, sentence_title
from dashboard.figures.grid import Panel
from dashboard.figures.layout import CLASS_ON_SCREEN, CLASS_SPLIT
from dashboard.page.common import choose_head, show_code, show_frame
from dashboard.page.map_columns import show_charts, show_colour_bar
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.session import set_values
from dashboard.state.settings import Settings

BUILT_IN = (
    "The bank of the river gave a loan",
    "the cat sat on the mat because it was tired",
    "the teacher praised the students because they worked hard",
    "A robot opens the door and walks into the room",
    "We read the book before the film came out",
    "She planted tomatoes in the garden last spring",
    "The old bridge shook when the heavy truck crossed it",
    "My brother plays the piano every evening after dinner",
    "Rain fell all night, so the streets were flooded",
    "The children laughed at the clown's silly hat",
    "Birds sing early in the morning near our window",
    "He forgot his umbrella and got wet on the way home",
)
"""The built-in examples: twelve everyday sentences of 7 to 11 words, as many as a projector shows at once."""
DEFAULT_TEXT = "\n".join(BUILT_IN)
"""The sentence list's default: the built-in examples, one per line."""
MAX_SENTENCES = 40
"""Sentences read from the typed list (the lines after them are left out, and the page says so)."""
MAX_TEXT = MAX_SENTENCES * 100
"""The list box's length limit: 40 lines of 100 characters."""
EXAMPLES = CLASS_ON_SCREEN
"""A trained model's held-out sequences shown (it reads no typed text)."""
HEAD_HELP = "The head drawn on every sentence, in the layer chosen in the sidebar."
Read = tuple[int, str, computations.SentenceMaps]
"""An input read: its number (from 1, as listed), its text (a title shows its beginning) and its maps."""
NOUNS = {True: ("sentence", "sentences"), False: ("sequence", "sequences")}
"""What the inputs are called: typed sentences, or a trained model's sequences."""


def render(settings: Settings, controls: Controls) -> None:
    show_class(settings, controls)


def show_class(settings: Settings, controls: Controls, sentences: Sequence[str] | None = None) -> None:
    """One head of the settings' weights across ``sentences`` (a room's list), or across the typed list (None)."""
    source = weights_source(settings, controls)
    if source is None:
        return
    arch = source.architecture()
    layer = min(max(settings.layer, 1), arch.n_layers)
    on_top = st.container()  # presenter mode: the maps and the verdict first, the controls under them
    head = choose_head(
        arch.n_heads,
        controls,
        key="class_head",
        bind="query-params",
        help="The head drawn on every sentence, in the layer chosen.",
    )
    typed = bool(source.supports("sentences"))
    if sentences is None and typed:
        sentences = _typed_list(controls)
    with on_top if settings.presenter else st.container():
        if typed:
            read = _read(source, sentences or ())
        else:  # a trained model: its task's held-out sequences
            read = [(i + 1, " ".join(m.tokens), m) for i, m in enumerate(computations.example_maps(source, EXAMPLES))]
            st.caption(f"{source.supports('sentences').reason} Here: {len(read)} sequences of its held-out set.")
        if not read:
            return
        _draw(source, settings, read, layer, head, typed)


def _typed_list(controls: Controls) -> list[str]:
    """The list box (key and query parameter ``class_text``, one sentence per line) and its Built-in examples button;
    the non-blank lines, in order."""
    text = controls.choice(
        "class_text",
        DEFAULT_TEXT,
        lambda: st.text_area(
            "Sentences, one per line",
            value=DEFAULT_TEXT,
            max_chars=MAX_TEXT,
            key="class_text",
            bind="query-params",
            help=f"Up to {MAX_SENTENCES} sentences, each up to {MAX_TOKENS} tokens ({MAX_CHARS} characters). "
            "Each line is one sentence, read through the sidebar's weights; blank lines are skipped.",
        ),
    )
    if controls.drawn:
        st.button("Built-in examples", key="class_examples", on_click=_built_in, icon=":material/restart_alt:")
    return [line for line in str(text).splitlines() if line.strip()]


def list_text(sentences: Sequence[str]) -> tuple[str, int]:
    """The list box's text for ``sentences`` (one per line, the first ``MAX_SENTENCES`` that fit in ``MAX_TEXT``
    characters), and how many it holds."""
    kept: list[str] = []
    for text in sentences[:MAX_SENTENCES]:
        if sum(len(t) + 1 for t in kept) + len(text) > MAX_TEXT:
            break
        kept.append(text)
    return "\n".join(kept), len(kept)


def _built_in() -> None:
    """Button callback: the list goes back to the built-in examples (before the widgets, so the box shows them)."""
    set_values(class_text=DEFAULT_TEXT)


def _read(source: ModelSource, sentences: Sequence[str]) -> list[Read]:
    """(number from 1, text, maps) of each sentence the weights can read; the others, and those past ``MAX_SENTENCES``,
    are said to be left out (by number and reason, never by their text)."""
    if not sentences:
        st.info("No sentence: type one per line in the box, or press Built-in examples.", icon=":material/edit_note:")
        return []
    read, refused = [], []
    for number, text in enumerate(sentences[:MAX_SENTENCES], 1):
        try:
            read.append((number, text, computations.sentence_maps(source, text)))
        except ValueError as err:  # core's message names numbers only, never the text
            refused.append(f"Sentence {number} is left out: {err}")
    if len(sentences) > MAX_SENTENCES:
        refused.append(f"Only the first {MAX_SENTENCES} sentences are read: {len(sentences) - MAX_SENTENCES} left out.")
    for line in refused:
        st.warning(line, icon=":material/block:")
    return read


def _draw(
    source: ModelSource,
    settings: Settings,
    read: list[Read],
    layer: int,
    head: int,
    typed: bool,
) -> None:
    """The verdict beside the maps (a phone: above them), then the table per sentence and the code."""
    one, many = NOUNS[typed]
    layers = source.architecture().n_layers
    numbers = [n for n, _, _ in read]
    pooled = pooled_patterns([OneMap(m.weights[layer - 1, head], m.mask, m.word_ids) for _, _, m in read])
    shown = read[:CLASS_ON_SCREEN]
    panels = [
        Panel(m.weights[layer - 1, head], m.tokens, m.tokens, sentence_title(n, text, settings.presenter), m.mask)
        for n, text, m in shown
    ]
    charts = charts_of(  # built once per sentences' maps and head: a room's followers all draw these
        tuple(m.weights for _, _, m in shown),
        ("class", layer, head, settings.presenter, tuple((n, text) for n, text, _ in shown)),
        lambda: class_charts(panels, presenter=settings.presenter),
    )
    which = f"Layer {layer}, head {head + 1}" if layers > 1 else f"Head {head + 1}"
    verdict, drawn = st.columns(CLASS_SPLIT, gap="small")
    with verdict:
        st.markdown(f"**{which}** across {len(read)} {one if len(read) == 1 else many}")
        st.markdown("\n".join(f"- {line}" for line in verdict_lines(pooled, numbers, one, many)))
        if source.chance:
            st.caption("These weights are random: a pattern here is chance, on every sentence alike or not.")
        show_colour_bar(charts, key="class_chart_bar")
        if charts.note:
            st.caption(charts.note)
    with drawn:
        shown = min(len(read), CLASS_ON_SCREEN)
        if len(read) > shown:
            st.caption(f"The first {shown} of {len(read)} {many} are drawn; the numbers beside them count all.")
        show_charts(charts.maps, charts.ncols, key="class_chart")
    st.caption(
        f"The rule the app names heads by, with the rows of every {one} counted together: a row shows a pattern when "
        f"more than {ROW_WEIGHT:g} of its weight goes to the pattern's key, and a head is named for it when more than "
        f"{NAMED_SHARE:.0%} of its rows do. A {one} counts as many rows as it has tokens (the previous token is "
        f"measured from row 1, the next up to the last row but one)."
    )
    show_frame(per_sentence(numbers, [len(m.tokens) for _, _, m in read], pooled), presenter=settings.presenter)
    show_code(
        pooled_patterns,
        f"maps = [OneMap(source.reads(s)[{layer - 1}].trace.weights[{head}], mask, word_ids) for s in {many}]\n"
        "pooled = pooled_patterns(maps)",
    )


def numbers_words(numbers: Sequence[int]) -> str:
    """Sentence numbers in words: "3", "3 and 5", "2, 4, 7 and 3 more"."""
    shown = [str(n) for n in numbers[:3]]
    rest = len(numbers) - len(shown)
    if rest:
        return f"{', '.join(shown)} and {rest} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def verdict_lines(pooled: Sequence[PooledPattern], numbers: Sequence[int], one: str, many: str) -> list[str]:
    """The pooled verdict for inputs numbered ``numbers``: a line per pattern named across them or on any one of
    them; first, when none is named across them, that none is and the closest."""
    lines = []
    for p in pooled:
        rows = f"{p.share:.0%} of {p.rows_measured} rows, over {p.sentences} {one if p.sentences == 1 else many}"
        on_own = [numbers[i] for i in p.named_on]
        if p.named:
            alone = "" if len(on_own) == p.sentences else f" (named on {len(on_own)} of them on its own)"
            lines.append(f"**{p.name}**: {rows}{alone}.")
        elif on_own:
            where = f"{one if len(on_own) == 1 else many} {numbers_words(on_own)}"
            lines.append(
                f"**{p.name}** on {where} ({len(on_own)} of {len(numbers)}), but not across them: {rows}. "
                f"Named on one {one}, it is not that head across the class."
            )
    if not any(p.named for p in pooled):
        measured = [p for p in pooled if p.rows_measured]
        closest = max(measured, key=lambda p: p.share) if measured else None
        near = f" The closest: {closest.name}, {closest.share:.0%} of {closest.rows_measured} rows." if closest else ""
        lines.insert(0, f"No pattern across the {many}: none shows in more than {NAMED_SHARE:.0%} of the rows.{near}")
    return lines


def per_sentence(numbers: Sequence[int], tokens: Sequence[int], pooled: Sequence[PooledPattern]) -> pd.DataFrame:
    """One row per input: its number, its token count, and per pattern measured anywhere the share of its rows that
    show it (n/a where none is measured)."""
    columns = {"number": list(numbers), "tokens": list(tokens)}
    for p in pooled:
        if p.rows_measured:
            shares = zip(p.shares, p.measured, strict=True)
            columns[p.name] = ["n/a" if n == 0 else f"{share:.0%}" for share, n in shares]
    return pd.DataFrame(columns)  # made whole: a column added at a time cost ~1 ms each, per student following
