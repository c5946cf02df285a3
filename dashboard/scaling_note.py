"""The note every weights view shows when the sidebar's "scaled" toggle is off.

A module of its own so that any view can import it (the heads view, the steps,
the summary) without importing another view.
"""

from __future__ import annotations

import math

import streamlit as st

from dashboard.settings import Settings


def unscaled_warning(settings: Settings) -> None:
    """Say so on the page when the sidebar's scaling toggle is off; nothing when it is on."""
    if not settings.scaled:
        st.warning(
            f"Scaling is off: the scores are QKᵀ, not QKᵀ ÷ √d_k = QKᵀ ÷ {math.sqrt(settings.d_k):.3g}. "
            "Scores √d_k times larger make each softmax row collapse toward one-hot. "
            "Turn “Scale scores by 1/√d_k” back on in the sidebar to compare.",
            icon=":material/warning:",
        )
