"""The views: one module per view, each a ``render(settings)`` function.

To add a view: write ``dashboard/views/<slug>.py`` with ``render(settings: Settings) -> None``
(read numbers through ``dashboard.compute``, draw them with ``dashboard.figures``),
then add one ``View`` line to ``VIEWS`` below. Its slug becomes the value of the
``view`` query parameter, so ``?view=<slug>`` opens it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from dashboard.settings import Settings
from dashboard.views import heads, permutation, shapes, tokens


@dataclass(frozen=True)
class View:
    slug: str
    """URL value of ``view``; never change it once links are shared."""
    title: str
    render: Callable[[Settings], None]
    teaches: str
    """One line under the view selector: what this view is for."""


VIEWS: dict[str, View] = {
    v.slug: v
    for v in (
        View("tokens", "Tokens", tokens.render, "The tokens as the model sees them, with their positions."),
        View("heads", "Heads", heads.render, "One attention map per head: who looks at whom."),
        View("shapes", "Shapes", shapes.render, "Every tensor on the data path, its shape and where it comes from."),
        View(
            "permutation",
            "Permutation",
            permutation.render,
            "Reorder the words: without positions, attention only reorders its map.",
        ),
    )
}
DEFAULT_VIEW = "heads"


def choose_view() -> View:
    """The view selector (key and query parameter ``view``); returns the chosen view."""
    slug = st.segmented_control(
        "View",
        list(VIEWS),
        default=DEFAULT_VIEW,
        required=True,
        format_func=lambda s: VIEWS[s].title,
        key="view",
        bind="query-params",
        label_visibility="collapsed",
        help="Each view reads the same computation for the settings in the sidebar.",
    )
    return VIEWS.get(slug, VIEWS[DEFAULT_VIEW])
