"""Head summary: one line per head, so a teacher can say "head 3 looks at the previous token".

Numbers are ``core.head_summary`` of the run's own weights and mask (means over
query rows). A value with no row to average (the previous token of a one-token
sentence) is NaN in core and "n/a" on the page.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import PATTERNS, HeadSummary, Run, head_summary
from core.head_summary import NAMED_SHARE, ROW_WEIGHT, named_shares
from core.sources import ModelSource
from dashboard.compute import computations
from dashboard.figures.summary import NA, summary_figure
from dashboard.page.common import (
    PLOTLY_CONFIG,
    run_call,
    show_code,
    show_frame,
    source_or_message,
    unscaled_warning,
)
from dashboard.page.map_columns import chart
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

EVEN = 0.9
"""Spread at least this close to uniform (1) reads as "spreads its weight evenly" (a head with no named pattern)."""
COLUMNS = {
    "entropy": "entropy (nats)",
    "normalized_entropy": "spread (0 one-hot, 1 even)",
    "self_weight": "on itself",
    "previous_weight": "on the previous token",
    "next_weight": "on the next token",
    "first_weight": "on the first token",
    "same_word_weight": "on the rest of its word",
}
"""HeadSummary field -> table column (the last only for WordPiece pieces, where words can split)."""
PLACES = {
    "previous-token": "the previous token",
    "next-token": "the next token",
    "first-token sink": "the first token",
    "self": "itself",
    "same-word": "the rest of its word",
}
"""Named pattern (``core.PATTERNS``) -> where such a head looks, in words."""
METRIC = {p.name: p.metric for p in PATTERNS}


def describe(summary: HeadSummary, i: int, named: tuple[tuple[str, float], ...]) -> str:
    """Plain words for head ``i`` (0-based) that met the named patterns ``named`` ((name, share of rows), the
    largest share first): the name is stated with its evidence."""
    if named:
        name, share = named[0]
        return f"in {share:.0%} of its rows, most weight on {PLACES[name]}: a {name} head"
    spread = float(summary.normalized_entropy[i])
    if math.isnan(spread):
        return NA
    if spread >= EVEN:
        return "spreads its weight evenly"
    return "mixes several keys"


def summary_table(summary: HeadSummary, pieces: bool = False) -> pd.DataFrame:
    """One row per head: the core numbers (NaN kept, for the page to show as n/a) and the words."""
    h = summary.entropy.shape[-1]
    table = pd.DataFrame({"head": np.arange(1, h + 1)})
    for field, column in COLUMNS.items():
        values = np.asarray(getattr(summary, field), dtype=float)
        if pieces or field != "same_word_weight":  # only WordPiece (MiniLM) splits a word into pieces
            table[column] = values
    words = [describe(summary, i, named) for i, named in enumerate(named_shares(summary))]
    table.insert(1, "in words", words)  # next to the head number: the column a class reads first
    return table


def rows_words(first: int, last: int) -> str:
    """Query rows ``first`` to ``last`` in words: "rows 1–7", "row 1", or "no row" (one token has no previous)."""
    if last < first:
        return "no row"
    return f"row {first}" if first == last else f"rows {first}–{last}"


def render(settings: Settings, controls: Controls) -> None:
    source = source_or_message(settings, controls)
    if source is None:
        return
    run = source.run(settings.layer)
    summary = computations.summary_of(run)
    t = len(run.tokens)
    on_top = st.container()  # a projector: the table first, under the view's line (the heads view's order)
    st.caption(_columns_line(t))
    unscaled_warning(run, controls)
    table = summary_table(summary, pieces=run.word_ids is not None)
    numbers = [c for c in COLUMNS.values() if c in table]
    with on_top if settings.presenter else st.container():
        show_frame(  # every head visible without scrolling
            table,
            presenter=settings.presenter,
            formats={c: "%.3f" for c in numbers},
            na=NA,
            key="summary_table",
            column_config={"in words": st.column_config.TextColumn("in words", width="large")},  # read in full
        )
    figure = charts_of(  # built once per run: a room's followers all draw it
        run, ("summary", settings.presenter), lambda: summary_figure(summary, presenter=settings.presenter)
    )
    chart(figure, width="stretch", key="summary_chart", config=PLOTLY_CONFIG)
    show_code(head_summary, f"{run_call(settings)}\nsummary = head_summary(result.trace.weights, result.trace.mask)")
    notes = _notes(run, source, controls)
    st.markdown("\n".join(f"- {n}" for n in notes))


def _columns_line(t: int) -> str:
    """What each column of the table means, over which rows of ``t`` it is a mean, and when a head is named."""
    twice = (
        " One key can count in two columns (row 1's previous token is the first token), so a head's columns can add "
        "up to more than 1."
        if t > 1
        else ""
    )
    return (
        f"Each column is a mean over query rows of each head: on itself (the diagonal) and on the first token "
        f"(column 0) over {'all ' * (t > 1)}{rows_words(0, t - 1)}; on the previous token over "
        f"{rows_words(1, t - 1)} (row 0 has none); on the next token over {rows_words(0, t - 2)} (the last row has "
        f"none).{twice} Spread is the row entropy "
        "divided by log(number of keys it may see): 0 when all weight is on one key, 1 when it is even. A head is "
        f"named for a pattern when in more than {NAMED_SHARE:.0%} of its rows more than {ROW_WEIGHT:g} of the weight "
        "goes there; the share of rows is stated with the name (core.head_summary gives each reason)."
    )


def _notes(run: Run, source: ModelSource, controls: Controls) -> list[str]:
    """What else holds for this run: one token, a first row that sees only itself, learned or random weights."""
    t = len(run.tokens)
    notes = []
    if t == 1:
        notes.append("One token: there is no previous token (n/a), and the only key is the token itself.")
    if run.trace.mask is not None and run.trace.mask[0].sum() == 1:  # read from the mask: a prefix widens row 0
        notes.append(
            "The mask lets the first query see only itself, so every head puts weight 1 on the first token in "
            "row 0; rows with a single visible key are left out of the spread."
        )
    if source.LEARNED:
        # by position, not by its text: this is Markdown, and a token is never written into Markdown
        first = " A first-token head parks its weight on position 0, the first token." if t > 1 else ""
        notes.append(
            f"These are the layer {run.layer} heads of {source.label}: whatever pattern they show, they learned.{first}"
        )
    if source.chance:
        notes.append(
            "These weights are random: a head that looks at the previous token here does so by chance."
            + controls.hint(" Choose the previous-token weights in the sidebar to see a head built to do it.")
        )
    return notes
