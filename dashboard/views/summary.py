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

from core import HeadSummary, head_summary
from dashboard import compute
from dashboard.figures.summary import NA, summary_figure
from dashboard.page import PLOTLY_CONFIG, run_call, run_or_message, show_code, unscaled_warning
from dashboard.settings import Settings

FOCUS = 0.5
"""A head "looks at" a place when it puts at least half its weight there on average."""
EVEN = 0.9
"""Spread at least this close to uniform (1) reads as "spread evenly"."""
COLUMNS = {
    "entropy": "entropy (nats)",
    "normalized_entropy": "spread (0 one-hot, 1 even)",
    "self_weight": "on itself",
    "previous_weight": "on the previous token",
    "first_weight": "on the first token",
}
"""HeadSummary field -> table column."""
PLACES = (("previous_weight", "the previous token"), ("self_weight", "itself"), ("first_weight", "the first token"))
"""(HeadSummary field, words). A tie goes to the first listed: in a one-token sentence (no previous token,
itself = the first token = 1) the head "looks at itself"."""


def describe(summary: HeadSummary, i: int) -> str:
    """Plain words for head ``i`` (0-based): where at least half its weight goes, or how spread it is."""
    weights = {field: float(getattr(summary, field)[i]) for field, _ in PLACES}
    known = {f: w for f, w in weights.items() if not math.isnan(w)}
    best = max(known, key=known.get) if known else None
    if best is not None and known[best] >= FOCUS:
        return f"looks at {dict(PLACES)[best]} ({known[best]:.0%})"
    spread = float(summary.normalized_entropy[i])
    if math.isnan(spread):
        return NA
    if spread >= EVEN:
        return "spreads its weight evenly"
    return "mixes several keys"


def summary_table(summary: HeadSummary) -> pd.DataFrame:
    """One row per head: the core numbers (NaN kept, for the page to show as n/a) and the words."""
    h = summary.entropy.shape[-1]
    table = pd.DataFrame({"head": np.arange(1, h + 1)})
    for field, column in COLUMNS.items():
        table[column] = np.asarray(getattr(summary, field), dtype=float)
    table["in words"] = [describe(summary, i) for i in range(h)]
    return table


def render(settings: Settings) -> None:
    run = run_or_message(settings)
    if run is None:
        return
    summary = compute.summary_of(run)
    t = len(run.tokens)
    st.caption(
        f"Means over the {t} query row{'s' * (t != 1)} of each head. Weight on itself = the diagonal, on the "
        "previous token = just left of it, on the first token = column 0. Spread is the row entropy divided by "
        "log(number of keys it may see): 0 when all weight is on one key, 1 when it is even."
    )
    unscaled_warning(settings)
    table = summary_table(summary)
    numbers = list(COLUMNS.values())
    st.dataframe(
        table.style.format({c: "{:.3f}" for c in numbers}, na_rep=NA),
        hide_index=True,
        width="stretch",
        height=35 * (len(table) + 1) + 3,  # every head visible without scrolling
    )
    st.plotly_chart(
        summary_figure(summary, presenter=settings.presenter),
        width="stretch",
        key="summary_chart",
        config=PLOTLY_CONFIG,
    )
    show_code(head_summary, f"{run_call(settings)}\nsummary = head_summary(result.trace.weights, result.trace.mask)")
    notes = []
    if t == 1:
        notes.append("One token: there is no previous token (n/a), and the only key is the token itself.")
    if settings.config.causal:
        notes.append(
            "Causal mask: the first query can only see itself, so every head puts weight 1 on the first token in "
            "row 0; rows with a single visible key are left out of the spread."
        )
    if settings.config.weights == "random":
        notes.append(
            "These weights are random: a head that looks at the previous token here does so by chance. "
            "Choose the previous-token weights in the sidebar to see a head built to do it."
        )
    st.markdown("\n".join(f"- {n}" for n in notes))
