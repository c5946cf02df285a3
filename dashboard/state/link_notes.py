"""Say on the page when a shared link carried a value the app could not use.

``url_state`` reads the address and replaces what no control can take (the notes it leaves name the key
and the value shown); these are the rest: parameters no control reads, and settings the chosen weights
fix (its shape, or scaling left on). Notes never quote the raw URL text (it could hold Markdown or
HTML): only the key's name and values the page chose.
"""

from __future__ import annotations

import streamlit as st

from dashboard.state.settings import LINK_KEYS, Settings, fixed_shape
from dashboard.state.url_state import pending_notes


def link_notes(link: dict[str, str], s: Settings) -> list[str]:
    """One sentence per link value the settings do not use. Pure: testable without Streamlit."""
    c = s.config
    notes = []
    if unknown := sum(k not in LINK_KEYS for k in link):  # counted, never quoted: the names are the link's text
        notes.append(
            f"The link has {unknown} parameter{'s' if unknown > 1 else ''} this dashboard does not use: "
            f"{'they were' if unknown > 1 else 'it was'} ignored."
        )
    shape = {} if s.kind.ARCHITECTURE is None else fixed_shape(s.kind.ARCHITECTURE)  # what the weights fix
    fixed = [k for k in shape if k in link and link[k] != str(shape[k])]
    if fixed:
        notes.append(
            f"With weights = {s.weights}, {', '.join(fixed)} {'are' if len(fixed) > 1 else 'is'} the pretrained "
            f"model's (d_model = {c.d_model}, {c.n_heads} heads, {c.positional} positions): the link's "
            f"value{'s were' if len(fixed) > 1 else ' was'} not used."
        )
    unscaled = s.kind.supports("unscaled")
    if link.get("scaled") == "false" and not unscaled:  # url_state wrote the link's value as its widget reads it
        notes.append(f"The link turns scaling off, but with weights = {s.weights} it stays on: {unscaled.reason}")
    defaults = {"kv_heads": str(c.n_heads), "window": "0", "prefix": "0", "alibi": "false"}  # each variant off
    for key, off in defaults.items():
        support = s.kind.supports(key)
        if key in link and link[key] != off and not support:
            notes.append(f"The link sets {key}, but with weights = {s.weights} it is not used: {support.reason}")
    return notes


def show_link_notes(link: dict[str, str], s: Settings) -> None:
    """One warning with a line per unusable link value: the parser's (once), then the ones above."""
    notes = [*pending_notes(), *link_notes(link, s)]
    if notes:  # our own sentences (key names, options, values shown): safe as Markdown
        st.warning("  \n".join(notes), icon=":material/link:")
