"""dashboard/figures/layout.py on its own: what a figure holds and the mode in, sizes and fonts out (pure)."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures.heads import head_charts
from dashboard.figures.layout import (
    PAGE_PX,
    PRESENTER_FOLD_PX,
    PRESENTER_GAP_PX,
    PRESENTER_MIN_TICK,
    PRESENTER_MIN_TITLE,
    ROW_PX,
    Holds,
    chart_fonts,
    chart_panel_px,
    column_px,
    fonts,
    map_columns,
    plan_grid,
    vector_panel_px,
    x_label_px,
    y_label_px,
)


def holds(t: int, n: int = 1, chars: int = 5) -> Holds:
    """``n`` square T x T maps of tokens ``chars`` long, every label shown."""
    return Holds(shapes=[(t, t)] * n, n_labels=t, token_chars=chars, ticks=[(True, True)] * n)


@pytest.mark.parametrize("presenter", [False, True])
def test_panels_grow_with_the_number_of_tokens(presenter):
    sizes = [plan_grid(holds(t, 4), ncols=2, presenter=presenter).panel_px for t in (1, 3, 6, 10, 20, 64)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


@pytest.mark.parametrize("presenter", [False, True])
def test_label_room_grows_with_label_length(presenter):
    short, long = (plan_grid(holds(8, 4, chars), ncols=2, presenter=presenter) for chars in (2, 12))
    assert long.plot_h > short.plot_h  # rotated key labels hang lower
    assert long.gap_x >= short.gap_x  # query labels between the columns need more room
    font = fonts(presenter).tick
    assert x_label_px(14, font, 1) > x_label_px(4, font, 1)
    assert y_label_px(14, font, 1) > y_label_px(4, font, 1)


@pytest.mark.parametrize("n_labels", [1, 8, 24, 25, 40, 41, 64])
def test_presenter_fonts_are_no_smaller_and_meet_the_readmes_minimums(n_labels):
    normal, big = fonts(False, n_labels), fonts(True, n_labels)
    for name in ("tick", "title", "note", "hover", "value"):
        assert getattr(big, name) >= getattr(normal, name), name
    assert big.tick >= PRESENTER_MIN_TICK and big.title >= PRESENTER_MIN_TITLE
    chart = chart_fonts(True)
    assert chart.tick >= PRESENTER_MIN_TICK and chart.title >= PRESENTER_MIN_TITLE
    assert chart_fonts(False).tick < chart.tick


@pytest.mark.parametrize("t", [1, 8, 10, 30, 64])
def test_presenter_plans_at_least_the_laptop_sizes(t):
    normal = plan_grid(holds(t, 2), ncols=2, presenter=False)
    big = plan_grid(holds(t, 2), ncols=2, presenter=True)
    assert big.panel_px >= normal.panel_px and big.height > normal.height


@pytest.mark.parametrize("t", [7, 8, 10, 30, 64])
def test_a_stacked_phone_map_is_at_least_250_px(t):
    """A laptop chart is planned this tall whatever its columns: on a phone it stacks, square, that wide."""
    assert chart_panel_px((t, t), presenter=False) >= 250
    w = np.full((4, t, t), 1 / t)
    plan_px = [m.layout.yaxis.domain for m in head_charts(w, [f"w{i}" for i in range(t)]).maps]
    height = head_charts(w, [f"w{i}" for i in range(t)]).maps[0].layout.height
    assert all((top - bottom) * height >= 250 for bottom, top in plan_px)


@pytest.mark.parametrize("shape", [(8, 7), (10, 5), (3, 9)])
def test_a_stacked_phone_map_with_more_queries_than_keys_is_still_250_px_wide(shape):
    """Square cells make a T_q > T_k map taller than wide: it is planned taller, so its width stays >= 250."""
    t_q, t_k = shape
    height = chart_panel_px(shape, presenter=False)
    assert height * t_k / max(t_q, t_k) >= 250 or t_q < t_k  # a wide map is as wide as its column
    assert chart_panel_px(shape, presenter=True) is None  # a projector's columns decide


def test_a_column_is_the_page_less_the_gaps_between_columns():
    assert column_px(1, False) == PAGE_PX[False]
    assert column_px(4, True) * 4 + 3 * 16 == pytest.approx(PAGE_PX[True], abs=2)


@pytest.mark.parametrize(
    ("n", "presenter", "values", "cols"),
    [(1, False, False, 1), (4, False, False, 2), (8, False, False, 3), (4, True, False, 4), (8, True, False, 4),
     (12, True, False, 4), (8, False, True, 2), (8, True, True, 2)],
)  # fmt: skip
def test_maps_to_a_row(n, presenter, values, cols):
    assert map_columns(n, presenter=presenter, values=values) == cols
    assert map_columns(n, presenter=presenter, at_most=1) == 1


def test_lesson_2_on_a_projector_fits_two_rows_of_four_with_every_label():
    """10 tokens, 8 heads: both rows, their titles and one band of key labels within the fold, ticks >= 16 px,
    no token's label thinned away (the browser test measures the same page in chromium)."""
    tokens = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    grid = head_charts(np.full((8, 10, 10), 0.1), tokens, presenter=True)
    assert grid.ncols == 4
    top, bottom = grid.maps[0].layout, grid.maps[4].layout
    assert top.height + PRESENTER_GAP_PX + bottom.height <= PRESENTER_FOLD_PX
    assert not top.xaxis.showticklabels and bottom.xaxis.showticklabels  # the lower row names the shared keys
    for fig in (grid.maps[0], grid.maps[4]):
        assert len(fig.layout.yaxis.tickvals) == 10 and fig.layout.yaxis.tickfont.size >= PRESENTER_MIN_TICK
    assert len(bottom.xaxis.tickvals) == 10


def test_many_heads_keep_every_label_and_let_the_page_scroll():
    """12 heads are three rows: the fold would thin the labels, so the maps keep them and the page scrolls."""
    grid = head_charts(np.full((12, 10, 10), 0.1), [f"w{i}" for i in range(10)], presenter=True)
    assert all(len(m.layout.yaxis.tickvals) == 10 for m in grid.maps)


@pytest.mark.parametrize("presenter", [False, True])
def test_vector_rows_keep_a_label_height(presenter):
    for d in (4, 64, 512):
        px = vector_panel_px(8, d, 1, presenter=presenter)
        assert px >= 8 * ROW_PX  # every one of the 8 rows at least one label high
