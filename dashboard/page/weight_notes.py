"""Notes on the chosen weights: what each choice of W_Q, W_K, W_V, W_O promises, and the fix it may need.

The weights themselves are built in ``core.toy_weights``; this module only says,
in the dashboard's own words, which pattern each choice should draw, so a class
sees weights *make* a pattern. The texts name settings, never typed text.
"""

from __future__ import annotations

import streamlit as st

from core import AttentionConfig, Run
from dashboard.compute import computations
from dashboard.state.followed import Controls
from dashboard.state.session import set_values

WEIGHT_PROMISES = {
    "random": "Random W_Q, W_K, W_V, W_O, fixed by the seed: any pattern here is chance. "
    "A trained model learns its patterns; the two choices next to this one are built by hand.",
    "identity": "W_Q = W_K = W_V = W_O = I: a score is the dot product of two token vectors (over each head's "
    "d_k columns), built so that a token matches itself and its copies (a repeated word has the same vector). "
    "How often it does is measured on the page.",
    "previous": "A hand-built previous-token head: W_K reads a position clock, W_Q reads it turned back one "
    "step, so query i should match key i − 1, the diagonal just below the main one. "
    "It reads the clock from the learned position table; the page measures how often it finds it.",
    "minilm": "all-MiniLM-L6-v2, a pretrained BERT encoder (Apache-2.0), run by this app's own NumPy code: "
    "these heads learned their patterns from a billion sentence pairs. Its text is split into WordPiece "
    "pieces between [CLS] and [SEP].",
    "trained": "A tiny transformer trained in this page, on a synthetic task: the train view shows its heads form.",
}
"""One caption per ``core.WEIGHT_KINDS`` value: the pattern it promises and why."""

NEEDS_LEARNED = (
    "The previous-token head reads its position clock from the learned position table. With positional "
    "encoding = {positional} it has no clock to read, so the sub-diagonal fades: that is the lesson in "
    "reverse."
)
NEEDS_LEARNED_HINT = " Switch positional encoding to learned to see the pattern."
FIX_LABEL = "Use learned positions"


def needs_learned(config: AttentionConfig) -> bool:
    """True when the previous-token head is chosen without the position table it reads."""
    return config.weights == "previous" and config.positional != "learned"


def _use_learned() -> None:
    """Button callback: runs before the rerun, so the bound widget (and the URL) start from "learned"."""
    set_values(positional="learned")


def look_alike_note(run: Run) -> str:
    """What the identity weights' maps show, measured on the run."""
    share, weight = computations.look_alike_rows(run.trace.weights, run.tokens)
    d_k = run.trace.q.shape[-1]
    note = (
        f"Measured on this sentence: in {share:.0%} of the rows (every head) the largest weight is on the token "
        f"itself or a copy of it, and those keys get {weight:.2f} of the weight on average."
    )
    if share < 1:
        note += f" Each head compares only d_k = {d_k} columns, so another token's vector can line up better."
    return note


def previous_note(run: Run) -> str | None:
    """What the previous-token head's maps show, measured on the run (None for a single token)."""
    found = computations.previous_rows(run.trace.weights)
    if found is None:
        return None
    share, weight = found
    return (
        f"Measured on this sentence: in {share:.0%} of the rows after the first (every head) the largest weight is "
        f"on the previous token, which gets {weight:.2f} of the weight on average."
    )


MEASURED = {"identity": look_alike_note, "previous": previous_note}
"""Hand-built weights whose promise the page checks on the run, by the weights control's value."""


def show_weights_note(weights: str, sentence: str, config: AttentionConfig, controls: Controls) -> None:
    """On the page, above any view: what hand-built ``weights`` drew on ``sentence``, measured from the run; and
    a warning and, on a page with ``controls``, a one-click fix when the previous-token head has no clock. (The
    settings' fields: settings.py imports this module for its promises.)"""
    measure = MEASURED.get(weights)
    if measure is not None:
        try:
            run = computations.attention_run(computations.tokens_of(sentence), config)
        except ValueError:  # no usable sentence: the view says why
            run = None
        if run is not None and (note := measure(run)) is not None:
            st.caption(note)
    if not needs_learned(config):
        return
    said = NEEDS_LEARNED.format(positional=config.positional) + controls.hint(NEEDS_LEARNED_HINT)
    st.warning(said, icon=":material/schedule:")
    if controls.drawn:  # a following page: the teacher's settings, no control to change them
        st.button(FIX_LABEL, key="use_learned", on_click=_use_learned, icon=":material/build:")
