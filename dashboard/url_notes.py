"""Say on the page when a shared link carried a value the app could not use.

Streamlit already drops such a value and keeps the widget's default; these
notes make that visible. Notes never quote the raw URL text (it could hold
Markdown or HTML): only the key's name and numbers parsed from it.
"""

from __future__ import annotations

import streamlit as st

from core import POSITIONAL_KINDS
from dashboard.settings import D_MODELS, KEYS, MAX_HEADS, MAX_SEED, Settings, head_options

_READ_FLAG = "_link_read"


def read_link(keys: tuple[str, ...] = (*KEYS, "view")) -> dict[str, str]:
    """The query parameters the session was opened with; empty on every later rerun.

    Call it before any bound widget is created: widgets remove bad values from the URL.
    """
    if st.session_state.get(_READ_FLAG):
        return {}
    st.session_state[_READ_FLAG] = True
    return {k: st.query_params[k] for k in keys if k in st.query_params}


def _as_int(raw: str) -> int | None:
    """``raw`` as a modest integer, or None (``"abc"``, ``"NaN"``, ``"1e9"``, 30-digit numbers)."""
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    return int(text)


def _heads_note(raw: str, s: Settings) -> str | None:
    n = _as_int(raw)
    if n == s.n_heads:
        return None
    shown = f"showing {s.n_heads} heads"
    if n is None:
        return f"The link's head count (n_heads) is not a whole number: {shown}."
    if n < 1:
        return f"The link asks for {n} heads; at least 1 is needed: {shown}."
    if s.d_model % n:
        return f"The link asks for {n} heads, which do not divide d_model = {s.d_model}: {shown}."
    if n > MAX_HEADS:
        return f"The link asks for {n} heads; at most {MAX_HEADS} are drawn: {shown}."
    if n not in head_options(s.d_model, s.positional):
        return f"The link asks for {n} heads, which these settings do not allow (RoPE needs an even d_k): {shown}."
    return f"The link's head count could not be used: {shown}."


def link_notes(link: dict[str, str], s: Settings, view: str | None = None, views: tuple[str, ...] = ()) -> list[str]:
    """One sentence per link value that differs from what is shown. Pure: testable without Streamlit."""
    notes = []
    if view is not None and "view" in link and link["view"] != view:
        notes.append(f"The link's view must be one of {', '.join(views)}: showing {view}.")
    if "d_model" in link and _as_int(link["d_model"]) != s.d_model:
        notes.append(
            f"The link's d_model is not one of {', '.join(map(str, D_MODELS))}: showing d_model = {s.d_model}."
        )
    if "n_heads" in link and (note := _heads_note(link["n_heads"], s)):
        notes.append(note)
    if "causal" in link and link["causal"].strip().lower() != str(s.causal).lower():
        notes.append(f"The link's causal value must be true or false: the mask is {'on' if s.causal else 'off'}.")
    if "positional" in link and link["positional"] != s.positional:
        notes.append(
            f"The link's positional encoding must be one of {', '.join(POSITIONAL_KINDS)}: showing {s.positional}."
        )
    if "seed" in link and _as_int(link["seed"]) != s.seed:
        notes.append(f"The link's seed must be a whole number from 0 to {MAX_SEED}: showing seed {s.seed}.")
    return notes


def show_link_notes(link: dict[str, str], s: Settings, view: str | None = None, views: tuple[str, ...] = ()) -> None:
    """A warning per unusable link value."""
    for note in link_notes(link, s, view, views):
        st.warning(note, icon="🔗")
