"""The class view's figure: one head's map on each of many sentences, small multiples beside the pooled verdict."""

from __future__ import annotations

from collections.abc import Sequence

from dashboard.figures.grid import ChartGrid, GridSpec, Panel, chart_grid
from dashboard.figures.labels import one_line
from dashboard.figures.layout import CLASS_COLUMNS, class_map_px, class_panel_px, title_chars


def sentence_title(number: int, text: str, presenter: bool) -> str:
    """A map's title: the sentence's number (from 1, as the list is read) and its beginning, cut to the width of the
    class view's map column (not escaped: the builder escapes every title)."""
    head = f"{number} · "
    return head + one_line(text, title_chars(class_map_px(presenter), presenter, labels=not presenter) - len(head))


def class_charts(panels: Sequence[Panel], *, presenter: bool) -> ChartGrid:
    """One chart per sentence's map (``panels``: each ``(T, T)`` with its own tokens), ``CLASS_COLUMNS`` to a row
    of the class view's share of the page, and the 0-1 colour bar they share.

    On a laptop each map has its tokens on both axes and is planned tall enough to be >= 250 px wide on a phone,
    where the columns stack. On a projector they are small multiples without tick labels, the first
    ``layout.CLASS_ON_SCREEN`` (3 rows of 4) above the fold, titles at the presenter's size.
    """
    spec = GridSpec(
        presenter=presenter,
        width_px=class_map_px(presenter),
        panel_px=class_panel_px(len(panels), presenter=presenter),
        y_labels=not presenter,
    )
    return chart_grid(panels, CLASS_COLUMNS[presenter], spec)
