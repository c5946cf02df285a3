"""The views: one module per view, each a ``render(settings, controls)`` function.

To add a view: write ``dashboard/views/<slug>.py`` with ``render(settings: Settings, controls: Controls) -> None``
(read numbers through ``dashboard.compute.computations``, draw them with ``dashboard.figures``, and ask
``controls.choice`` for any control of its own: on a following page it is the teacher's value, not drawn),
then add one ``View`` line to ``VIEWS`` below. Its slug becomes the value of the
``view`` query parameter, so ``?view=<slug>`` opens it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from dashboard.state.followed import Controls
from dashboard.state.session import set_values
from dashboard.state.settings import Settings
from dashboard.views import (
    class_heads,
    contrast,
    cross,
    flash,
    heads,
    kv_cache,
    model,
    permutation,
    positions,
    scaling,
    shapes,
    steps,
    summary,
    tokens,
    train,
)


@dataclass(frozen=True)
class View:
    slug: str
    """The selector's label and the URL value of ``view``;
    short, lower case, and never changed once links are shared."""
    render: Callable[[Settings, Controls], None]
    """The view's module's ``render``: the page calls it in one of the server's turns (``server_memory.drawing``)."""
    teaches: str
    """One line under the view selector: what this view is for."""


VIEWS: dict[str, View] = {
    v.slug: v
    for v in (
        View("tokens", tokens.render, "The tokens as the model sees them, with their positions."),
        View("heads", heads.render, "One attention map per head: who looks at whom."),
        View("model", model.render, "Every layer and head at once: the whole model's attention on one screen."),
        View("shapes", shapes.render, "Every tensor on the data path, its shape and where it comes from."),
        View(
            "permutation",
            permutation.render,
            "Reorder the words: without positions, attention only reorders its map.",
        ),
        View("steps", steps.render, "One head step by step, from X to its place in W_O, with shapes and equations."),
        View("scaling", scaling.render, "Why ÷√d_k: without it, wider heads collapse toward one-hot."),
        View("positions", positions.render, "Shift every position: RoPE's maps stay put, absolute encodings' move."),
        View("summary", summary.render, "Per head: where the weight goes (itself, previous, first) and how spread."),
        View("cross", cross.render, "Cross-attention: one sentence's queries read another sentence's keys and values."),
        View("train", train.render, "Train a tiny transformer on a task, then replay how its heads' maps formed."),
        View(
            "kv_cache",
            kv_cache.render,
            "Generation one token at a time: the KV cache grows, one row of the map per step.",
        ),
        View("flash", flash.render, "FlashAttention's tiles: the same softmax, one block of keys at a time."),
        View("class", class_heads.render, "One head on many sentences: a function, not a picture."),
        View("contrast", contrast.render, "Two sentences a word apart: which heads change, and how much."),
    )
}
DEFAULT_VIEW = "heads"


def choose_view(controls: Controls, *, drawn: bool = True) -> View:
    """The view selector (key and query parameter ``view``); returns the chosen view.

    Not bound to the URL: the page writes ``view`` itself (``dashboard/state/address.py``), so that each view change is
    an entry in the browser's history and Back returns to the view before. ``drawn=False`` (a tour's bar stands in
    for it on a projector): no selector, the view the session holds, kept for the next run that draws one.
    """
    slug = controls.choice(  # a following page: the teacher's view, no selector
        "view",
        DEFAULT_VIEW,
        lambda: _view_bar() if drawn else _kept_view(),
    )
    return VIEWS.get(slug, VIEWS[DEFAULT_VIEW])


def _view_bar() -> str:
    return st.segmented_control(
        "View",
        list(VIEWS),
        default=DEFAULT_VIEW,
        required=True,
        key="view",
        label_visibility="collapsed",
        help="Each view reads the same computation for the settings in the sidebar.",
    )


def _kept_view() -> str:
    """The session's view, written back: a widget's key that no widget drew in a run would leave the session."""
    slug = st.session_state.get("view") or DEFAULT_VIEW
    set_values(view=slug)
    return slug
