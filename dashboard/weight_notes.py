"""Notes on the chosen weights: what each choice of W_Q, W_K, W_V, W_O promises, and the fix it may need.

The weights themselves are built in ``core.toy_weights``; this module only says,
in the dashboard's own words, which pattern each choice should draw, so a class
sees weights *make* a pattern. The texts name settings, never typed text.
"""

from __future__ import annotations

import streamlit as st

from core import AttentionConfig

WEIGHT_PROMISES = {
    "random": "Random W_Q, W_K, W_V, W_O, fixed by the seed: any pattern here is chance. "
    "A trained model learns its patterns; the two choices next to this one are built by hand.",
    "identity": "W_Q = W_K = W_V = W_O = I: a score is the dot product of two token vectors, so each token "
    "looks mostly at itself and at every copy of itself (a repeated word lights up its twin).",
    "previous": "A hand-built previous-token head: W_K reads a position clock, W_Q reads it turned back one "
    "step, so query i matches key i − 1 and every head draws the diagonal just below the main one. "
    "It reads the clock from the learned position table.",
    "minilm": "all-MiniLM-L6-v2, a pretrained BERT encoder (Apache-2.0), run by this app's own NumPy code: "
    "these heads learned their patterns from a billion sentence pairs. Its text is split into WordPiece "
    "pieces between [CLS] and [SEP].",
    "trained": "A tiny transformer trained in this page, on a synthetic task: open the train view and press Train "
    "to watch its heads form.",
}
"""One caption per ``core.WEIGHT_KINDS`` value: the pattern it promises and why."""

NEEDS_LEARNED = (
    "The previous-token head reads its position clock from the learned position table. With positional "
    "encoding = {positional} it has no clock to read, so the sub-diagonal fades: that is the lesson in "
    "reverse. Switch positional encoding to learned to see the pattern."
)
FIX_LABEL = "Use learned positions"


def needs_learned(config: AttentionConfig) -> bool:
    """True when the previous-token head is chosen without the position table it reads."""
    return config.weights == "previous" and config.positional != "learned"


def _use_learned() -> None:
    """Button callback: runs before the rerun, so the bound widget (and the URL) start from "learned"."""
    st.session_state["positional"] = "learned"


def show_weights_note(config: AttentionConfig) -> None:
    """On the page, above any view: a warning and a one-click fix when the previous-token head has no clock."""
    if not needs_learned(config):
        return
    st.warning(NEEDS_LEARNED.format(positional=config.positional), icon=":material/schedule:")
    st.button(FIX_LABEL, key="use_learned", on_click=_use_learned, icon=":material/build:")
