"""What the hatching means is said once: above a page's grid of one-map charts, not over every map.

In presenter mode the line "hatched grey = masked" above each of trained induction's 24 x 24 maps pushed the key
labels to the projector's bottom edge; now the grid carries the note once, the page writes it once above the
maps, and the maps' rows are planned under that one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures.grid import MASK_NOTE, GridSpec, Panel, chart_grid, heatmap_grid
from dashboard.figures.layout import CAPTION_ROW_PX, PRESENTER_FOLD_PX, chart_fold_px
from tests.dashboard.conftest import make_app


def panels(n: int, t: int, *, causal: bool) -> list[Panel]:
    rng = np.random.default_rng(0)
    allowed = np.tril(np.ones((t, t), dtype=bool)) if causal else None  # (T, T)
    tokens = [f"t{i}" for i in range(t)]
    return [
        Panel(z=rng.random((t, t)), rows=tokens, cols=tokens, title=f"head {k + 1}", allowed=allowed) for k in range(n)
    ]


def notes(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations if a.name == "note"]


@pytest.mark.parametrize("presenter", [False, True])
def test_a_grid_of_masked_maps_says_it_once_not_in_each_chart(presenter):
    grid = chart_grid(panels(4, 24, causal=True), 2, GridSpec(presenter=presenter))
    assert grid.note == MASK_NOTE
    assert all(notes(fig) == [] for fig in grid.maps)
    plain = chart_grid(panels(4, 24, causal=False), 2, GridSpec(presenter=presenter))
    assert plain.note == ""
    # no chart keeps the room the note took: a masked map's top margin is an unmasked one's
    assert [f.layout.margin.t for f in grid.maps] == [f.layout.margin.t for f in plain.maps]


def test_one_figure_of_many_panels_keeps_its_own_note():
    fig = heatmap_grid(panels(4, 6, causal=True))
    assert notes(fig) == [MASK_NOTE]
    assert notes(heatmap_grid(panels(4, 6, causal=False))) == []


def test_on_a_projector_the_rows_of_maps_are_planned_under_the_note():
    assert chart_fold_px(presenter=True, caption=True) == PRESENTER_FOLD_PX - CAPTION_ROW_PX
    assert chart_fold_px(presenter=False, caption=True) is None
    masked = chart_grid(panels(2, 12, causal=True), 2, GridSpec(presenter=True))  # 12 tokens: the fold sets the size
    plain = chart_grid(panels(2, 12, causal=False), 2, GridSpec(presenter=True))
    # the page's line above the maps is taken from their height, not pushed below the fold
    assert plain.maps[0].layout.height - masked.maps[0].layout.height == pytest.approx(CAPTION_ROW_PX, abs=2)


def test_the_page_says_it_once_per_grid_of_maps():
    at = make_app(view="heads", weights="trained", task="induction", presenter="true").run()
    assert not at.exception
    said = [c.value for c in at.caption if MASK_NOTE in c.value]
    assert said == [MASK_NOTE]
    at = make_app(view="heads", causal="false").run()
    assert not [c for c in at.caption if MASK_NOTE in c.value]
