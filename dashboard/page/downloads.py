"""Download buttons for the run a view shows: the weights as CSV, every array as .npz.

The files are built only when a button is clicked (``data`` is a callable, which
Streamlit runs on click), so a rerun never pays for a 4 MB CSV nobody asked for;
``on_click="ignore"`` keeps the click from rerunning the page. The buttons sit in
an expander drawn only while it is open (``page.opened``): every follower of a room
redraws on each change the teacher makes, and the two buttons, which few students
use, were ~10% of that redraw. The PNG of a figure is Plotly's own camera button in
the chart's mode bar.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from core import Run
from dashboard.page.common import opened
from dashboard.page.exports import file_stem, trace_npz, weights_csv
from dashboard.state.settings import Settings

CSV_NOTE = (
    "CSV: one row per head, query and key (heads from 1, positions from 0, as in the maps). A token that "
    "starts with = + - or @ is written with a leading ' so a spreadsheet shows it as text instead of "
    "running it as a formula. .npz: every array of this run, named for what it is (x_input = x_embedded + "
    "positions, scores_scaled, scores_masked, W_Q, W_K, W_V, W_O...), and every setting as JSON in settings, "
    "for numpy.load."
)
DOWNLOADS_LABEL = "Download the numbers (CSV, .npz)"


def download_buttons(run: Run, view: str, settings: Settings) -> None:
    """Two buttons, keyed ``<view>_csv`` and ``<view>_npz``, for files named by the run's short settings
    (``heads_d64_h4_full_seed18_weights.csv``, ``..._trace.npz``); the .npz carries every setting as JSON.
    They are drawn in the expander ``<view>_downloads`` while it is open."""
    if (box := opened(DOWNLOADS_LABEL, f"{view}_downloads", ":material/download:")) is None:
        return
    stem = file_stem(view, run, settings.config.seed if settings.kind.supports("seed") else None)
    about = dataclasses.asdict(settings) | {"view": view}
    with box, st.container(horizontal=True):
        st.download_button(
            "Weights (CSV)",
            data=lambda: weights_csv(run),
            file_name=f"{stem}_weights.csv",
            mime="text/csv",
            key=f"{view}_csv",
            on_click="ignore",
            icon=":material/download:",
            help="Every head's weights in long form: head, query position and token, key position and token, "
            "weight, masked.",
        )
        st.download_button(
            "All arrays (.npz)",
            data=lambda: trace_npz(run, about),
            file_name=f"{stem}_trace.npz",
            mime="application/octet-stream",
            key=f"{view}_npz",
            on_click="ignore",
            icon=":material/download:",
            help="x_embedded, positions, x_input = x_embedded + positions, W_Q, W_K, W_V, W_O (and biases), Q, K, "
            "V, scores_scaled, scores_masked, weights, context, concat, output, the mask, and every setting (JSON "
            "in settings), as saved by numpy.savez: enough to rerun every number with the lessons' code.",
        )
    box.caption(CSV_NOTE)
