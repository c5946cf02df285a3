"""Say on the page when a shared link carried a value the app could not use.

Streamlit already drops such a value and keeps the widget's default; these
notes make that visible. Notes never quote the raw URL text (it could hold
Markdown or HTML): only the key's name and numbers parsed from it.
"""

from __future__ import annotations

import math

import streamlit as st

from core import POSITIONAL_KINDS, AttentionConfig, head_count_problem
from core.sources import WEIGHTS
from dashboard.settings import D_MODELS, LINK_KEYS, MAX_HEADS, MAX_SEED, Settings, fixed_shape

_READ_FLAG = "_link_read"
_PENDING = "_link_pending"


def read_link() -> dict[str, str]:
    """The query parameters the session was opened with (all of them); empty on every later rerun.

    Parameters no widget reads (not in ``settings.LINK_KEYS``) are removed from the browser's URL here, once
    read, so a shared link carries only the settings. Call it before any bound widget is created: widgets
    remove bad values from the URL.
    """
    if _PENDING in st.session_state:  # the run restarted below, with the cleaned URL
        return st.session_state.pop(_PENDING)
    if st.session_state.get(_READ_FLAG):
        return {}
    st.session_state[_READ_FLAG] = True
    link = {k: st.query_params[k] for k in st.query_params}
    for k in link:
        if k not in LINK_KEYS:  # read (the note counts it), then dropped: the URL keeps only what it controls
            del st.query_params[k]
    broken = [k for k in st.query_params if _not_finite(st.query_params[k])]
    if broken:
        # Streamlit 1.67 bug: a bound integer st.number_input raises OverflowError when the URL seeds it
        # with "inf" or "1e999" (int() before its finiteness check). Widgets seed from the URL the run
        # started with, so drop those values and start the run again; the note still reports them.
        for k in broken:
            del st.query_params[k]
        st.session_state[_PENDING] = link
        st.rerun()
    return link


def _not_finite(raw: str) -> bool:
    """True for text that parses as an infinite or NaN float: ``"inf"``, ``"-Infinity"``, ``"1e999"``, ``"nan"``."""
    try:
        return not math.isfinite(float(raw))
    except ValueError:
        return False


def _as_int(raw: str) -> int | None:
    """``raw`` as a modest integer, or None (``"abc"``, ``"NaN"``, ``"1e9"``, 30-digit numbers)."""
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
        return None
    return int(text)


def _heads_note(raw: str, c: AttentionConfig) -> str | None:
    n = _as_int(raw)
    if n == c.n_heads:
        return None
    shown = f"showing {c.n_heads} heads"
    if n is None:
        return f"The link's head count (n_heads) is not a whole number: {shown}."
    if problem := head_count_problem(c.d_model, n, c.positional, c.weights):
        return f"The link's head count cannot be used ({problem[:-1]}): {shown}."
    if n > MAX_HEADS:
        return f"The link asks for {n} heads; at most {MAX_HEADS} are drawn: {shown}."
    return f"The link's head count could not be used: {shown}."


def link_notes(link: dict[str, str], s: Settings, view: str | None = None, views: tuple[str, ...] = ()) -> list[str]:
    """One sentence per link value that differs from what is shown. Pure: testable without Streamlit."""
    c = s.config
    notes = []
    if unknown := sum(k not in LINK_KEYS for k in link):  # counted, never quoted: the names are the link's text
        notes.append(
            f"The link has {unknown} parameter{'s' if unknown > 1 else ''} this dashboard does not use: "
            f"{'they were' if unknown > 1 else 'it was'} ignored."
        )
    if view is not None and "view" in link and link["view"] != view:
        notes.append(f"The link's view must be one of {', '.join(views)}: showing {view}.")
    shape = {} if s.kind.ARCHITECTURE is None else fixed_shape(s.kind.ARCHITECTURE)  # what the weights fix
    fixed = [k for k in shape if k in link and link[k] != str(shape[k])]
    if fixed:
        notes.append(
            f"With weights = {s.weights}, {', '.join(fixed)} {'are' if len(fixed) > 1 else 'is'} the pretrained "
            f"model's (d_model = {c.d_model}, {c.n_heads} heads, {c.positional} positions): the link's "
            f"value{'s were' if len(fixed) > 1 else ' was'} not used."
        )
        link = {k: v for k, v in link.items() if k not in shape}
    if "d_model" in link and _as_int(link["d_model"]) != c.d_model:
        notes.append(
            f"The link's d_model is not one of {', '.join(map(str, D_MODELS))}: showing d_model = {c.d_model}."
        )
    if "n_heads" in link and (note := _heads_note(link["n_heads"], c)):
        notes.append(note)
    if "causal" in link and link["causal"].strip().lower() != str(c.causal).lower():
        notes.append(f"The link's causal value must be true or false: the mask is {'on' if c.causal else 'off'}.")
    if "positional" in link and link["positional"] != c.positional:
        notes.append(
            f"The link's positional encoding must be one of {', '.join(POSITIONAL_KINDS)}: showing {c.positional}."
        )
    if "weights" in link and link["weights"] != s.weights:
        notes.append(f"The link's weights must be one of {', '.join(WEIGHTS)}: showing {s.weights}.")
    if "presenter" in link and link["presenter"].strip().lower() != str(s.presenter).lower():
        notes.append(
            f"The link's presenter value must be true or false: presenter mode is {'on' if s.presenter else 'off'}."
        )
    unscaled = s.kind.supports("unscaled")
    if "scaled" in link and link["scaled"].strip().lower() == "false" and not unscaled:
        notes.append(f"The link turns scaling off, but with weights = {s.weights} it stays on: {unscaled.reason}")
    elif "scaled" in link and link["scaled"].strip().lower() != str(c.scaled).lower():
        notes.append(f"The link's scaled value must be true or false: scaling is {'on' if c.scaled else 'off'}.")
    if "seed" in link and _as_int(link["seed"]) != c.seed:
        notes.append(f"The link's seed must be a whole number from 0 to {MAX_SEED}: showing seed {c.seed}.")
    return notes


def show_link_notes(link: dict[str, str], s: Settings, view: str | None = None, views: tuple[str, ...] = ()) -> None:
    """A warning per unusable link value."""
    for note in link_notes(link, s, view, views):
        st.warning(note, icon=":material/link:")
