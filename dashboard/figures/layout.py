"""One layout for every figure: what a figure holds and the mode in; sizes, positions and font sizes out.

Two modes. Normal is a laptop: a 1400 px window with the sidebar open. Presenter is a 1280 x 720 projector
read from the back of a hall: its link opens with the sidebar collapsed (``dashboard/page/presenter.py``).
The server cannot know a screen's width (Streamlit sends it none), so a phone is not a third mode: it is
served by one chart per panel in ``st.columns`` (``dashboard/page/map_columns.py``), which Streamlit stacks
below 640 px, each chart then as wide as the phone. A chart planned here is therefore at least
``PHONE_PANEL_PX`` tall when it has the cells for it, so a stacked map is >= 250 px wide.

Every pixel constant and font size of a figure lives in this module; the builders in ``dashboard/figures``
draw what it plans, and a view never sizes a figure itself. Everything here is pure arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from core.tokens import MAX_TOKENS
from dashboard.figures.labels import TICK_CHARS

# ---- the two modes -------------------------------------------------------------------------------------------

PRESENTER_SCALE = 1.75
"""Presenter mode: fonts, cells and margins 1.75 times larger: panel titles 13 x 1.75 = 23 px (>= 22), tick
labels 11 x 1.75 = 19 px, never under ``PRESENTER_MIN_TICK``."""
PRESENTER_MIN_TICK = 16
"""The README's promise: on a projector, axis tick labels are at least 16 px."""
PRESENTER_MIN_TITLE = 22
"""The README's promise: on a projector, panel titles are at least 22 px."""
PAGE_PX = {False: 940, True: 1216}
"""Width of the page's main column: a 1400 px laptop window with the sidebar open (1400 - 300 sidebar -
2 x 80 padding), or a 1280 px projector with the sidebar collapsed and 32 px side padding (1280 - 2 x 32)."""
PRESENTER_FOLD_PX = 516
"""Height a presenter view's maps may fill: a 720 px projector less what is above them (Streamlit's header,
the view bar, the view's line with the class's buttons and the quiz switch: 192 px, measured in chromium by
tests/e2e/test_projector_and_phone.py) and a few pixels to spare."""
CONTROLS_ROW_PX = 160
"""A row of pickers above a view's maps on a projector (the permutation view's reordering and head), measured."""
CAPTION_ROW_PX = 40
"""A one-line caption above a view's maps on a projector: its 32 px line (20 px text) and the 8 px gap under it,
measured in chromium (tests/e2e/test_tours_on_a_projector.py holds the maps planned with it to the first screen)."""
PICKER_ROW_PX = 76
"""A row of labelled segmented controls above a view's maps on a projector (the steps view's head and first step):
the label's line, the 44 px control and the gap, measured in chromium."""
INPUT_ROW_PX = 90
"""A labelled text box or slider above a view's maps on a projector (the cross view's source sentence, the KV cache's
step): the label's line, the box and the gap, measured in chromium."""
HEADING_ROW_PX = 58
"""A subheading above a figure on a projector (a step's "5. The mask: hidden keys") and the gap, measured."""
COLOUR_BAR_ROW_PX = 68
"""A grid's colour bar drawn above its maps (``map_columns.show_grid``) on a projector, and the gap, measured."""
ALERT_ROW_PX = 100
"""A two-line warning above a view's maps on a projector ("Scaling is off: ..."): 92 px and the gap, measured."""
SWITCH_ROW_PX = 38
"""A row of switches (``st.toggle``) on a projector and the gap under it, measured in chromium."""
QUIZ_SWITCH_PX = SWITCH_ROW_PX
"""The quiz switch's row, part of the 192 px above a presenter view's maps; a view without it starts that much
higher."""
PRESENTER_GAP_PX = 8
"""Space between the page's elements on a projector (``dashboard/page/presenter.py``; Streamlit's own is 16 px)."""
COLUMN_GAP_PX = 16
"""Streamlit's gap between columns ("small", 1 rem)."""
PHONE_MAP_PX = 200
"""The narrowest a chart-wide matrix of vectors is drawn (a phone's column less its labels): its coordinate
labels are thinned for that width."""
PHONE_PANEL_PX = 275
"""A map in its own chart is planned at least this tall (when it has the cells for it): on a 390 px phone the
columns stack and each map gets the phone's width, ~360 px less its labels, and should be >= 250 px. 25 px to
spare: Plotly widens a margin for long rotated key labels (24 tokens took 12 px in chromium)."""


def scale(presenter: bool) -> float:
    """How much larger everything is drawn: ``PRESENTER_SCALE`` on a projector, 1 on a laptop."""
    return PRESENTER_SCALE if presenter else 1.0


@dataclass(frozen=True)
class Fonts:
    """Font sizes (px) of one figure."""

    tick: int
    """Axis tick labels."""
    title: int
    """Panel titles."""
    note: int
    """Colour bars, the mask note, legends, axis titles and text written in a chart."""
    hover: int
    value: int
    """Numbers written in a heatmap's cells."""


def fonts(presenter: bool, n_labels: int = 1) -> Fonts:
    """The fonts of a figure whose longest axis has ``n_labels`` labels: smaller for 25+ and 41+ tokens."""
    s = scale(presenter)
    tick = round((11 if n_labels <= 24 else 9 if n_labels <= 40 else 8) * s)
    return Fonts(
        tick=max(tick, PRESENTER_MIN_TICK) if presenter else tick,
        title=max(round(13 * s), PRESENTER_MIN_TITLE) if presenter else 13,
        note=round(12 * s),
        hover=round(13 * s),
        value=round(11 * s),
    )


def chart_fonts(presenter: bool) -> Fonts:
    """Fonts of a line or bar chart (scaling, training curves, summary bars): ticks 12 px, titles 14 px."""
    s = scale(presenter)
    return Fonts(tick=round(12 * s), title=round(14 * s), note=round(12 * s), hover=round(13 * s), value=round(11 * s))


def axis_title(text: str, font: Fonts) -> dict:
    """An axis title at the figure's ``font.note`` size, set on the title itself: Streamlit's theme template sets
    axis titles' own size (12 px), which would win over the layout's font on a projector."""
    return dict(text=text, font=dict(size=font.note))


MODEBAR_CLEAR_PX = 34
"""Top margin of a line or bar chart with its title above the plot: Plotly's toolbar (26 px) sits above it."""
LEGEND_BELOW = -0.28
"""A chart's legend hangs below its x axis title (paper coordinates), clear of the toolbar at the top right."""


def chart_height(base_px: int, presenter: bool) -> int:
    """Height of a line or bar chart planned ``base_px`` tall on a laptop."""
    return round(base_px * scale(presenter))


BAR_LABEL_CHARS = 18
"""A bar's label in a chart of choices (the class's tally) wraps at this many characters: at a projector's 21 px
about 190 px, under half of the 458 px column the tally sits in (a quiz choice is up to ~45 characters; written
under upright bars they stood 350 px tall, the longest cut at the chart's foot)."""
BAR_LINE = 1.3
"""A line of a bar's label, in its font's size."""
BAR_GAP = 1.0
"""Space between two bars' labels, in the labels' font size."""


CHART_TEXT_MIN = {False: 8, True: 14}
"""The least size of any text written in a chart (a bar's value): the README's 14 px on a projector."""
BARS_GAP = 0.1
"""Plotly's ``bargap`` of a chart of grouped upright bars (the summary's): a tenth of each group's width between
groups, so 12 heads' 48 bars are as wide as they can be."""
ROTATED_LABEL_EM = 1.32
"""A label written along an upright bar is this many times its font size across (a 19 px label's box is 25 px,
measured in chromium)."""
Y_AXIS_PX = 70
"""Left of a bar chart's plot: its y axis title and tick labels (laptop px)."""


def bar_label_px(n_bars: int, presenter: bool) -> int:
    """Font size of the value written along each of ``n_bars`` upright bars across the page: the chart's value
    size, or less, so that neighbouring labels do not touch. Under ``CHART_TEXT_MIN`` the chart hides them (the
    table beside it has the numbers): Plotly otherwise shrinks each to its bar (10.5 px for MiniLM's 12 heads)."""
    plot = PAGE_PX[presenter] - Y_AXIS_PX * scale(presenter)
    pitch = plot * (1 - BARS_GAP) / max(n_bars, 1)
    return min(chart_fonts(presenter).value, int(pitch / ROTATED_LABEL_EM))


def bars_height(lines: Sequence[int], font: Fonts) -> int:
    """Plot height (px) for horizontal bars whose labels take ``lines`` lines each, at ``font.tick``: Plotly spaces
    categories evenly, so every row is as tall as the longest label and a gap."""
    return round(len(lines) * (max(lines, default=1) * BAR_LINE + BAR_GAP) * font.tick)


# ---- how many maps to a row ----------------------------------------------------------------------------------

LAPTOP_COLUMNS = 3
"""Laptop: at most three maps to a row, each ~300 px wide in a 940 px page; four are 2 x 2."""
PRESENTER_COLUMNS = 4
"""Presenter: four maps to a row, so the default four heads, and eight as two rows, are on the first screen."""
VALUES_COLUMNS = 2
"""With numbers in the cells: two maps to a row, so a cell is wide enough for "0.12" at presenter size too."""


def map_columns(n: int, *, presenter: bool, values: bool = False, at_most: int | None = None) -> int:
    """Maps to a row for ``n`` maps drawn one chart each (a phone shows one per row whatever this says).

    ``at_most``: a figure whose panels belong together in a row of that many (the permutation's three).
    """
    if values:
        cols = VALUES_COLUMNS
    elif presenter:
        cols = PRESENTER_COLUMNS
    else:
        cols = 2 if n == 4 else LAPTOP_COLUMNS
    return max(1, min(n, cols, at_most or n))


def single_map_columns(presenter: bool) -> int:
    """Page columns a map drawn alone is planned for: half the page on a laptop, all of it on a projector."""
    return 1 if presenter else 2


def column_px(ncols: int, presenter: bool) -> int:
    """Width of one of ``ncols`` page columns: the page's width less Streamlit's gaps."""
    return round((PAGE_PX[presenter] - COLUMN_GAP_PX * (ncols - 1)) / ncols)


# ---- a grid of heatmap panels --------------------------------------------------------------------------------

PANEL_PX = {1: 520, 2: 400, 3: 280, 4: 210}
"""Largest panel height in pixels for a grid of 1, 2, 3 or 4 columns in one figure."""
PRESENTER_PANEL_PX = {1: 520, 2: 400, 3: 245}
"""Presenter panel heights (already at presenter size) for 1, 2 or 3 columns in one figure."""
MAX_COLS, PRESENTER_MAX_COLS = 4, 3
"""Panels to a row in one figure: fewer, larger ones on a projector (2 x 2 for 4 panels, 3 beyond)."""
CELL_PX = 40
"""A short sentence gets cells of at most this size: one token is a 140 px square, not a 520 px one."""
MIN_PANEL_PX = 140
LABEL_LINE = 1.05
"""A tick label needs this many times its font size along the axis: every token is labelled when its cell
is at least that tall (16 px labels in 17 px cells: a capital and a descender are 0.86 em), every other one
below."""
TITLE_PX = 24
"""Height of the row a panel's title sits in: the 13 px title and its padding; on a projector 1.3 times the
title's font."""
TICK_ANGLE = -60
"""x labels are rotated this far: a long token runs down and to the left instead of into its neighbour."""
CHAR_EM = 0.45
"""Width of one label character as a share of its font size: "4·river" measured 0.38 em a character in
chromium (Source Sans), so 0.45 leaves room for wide letters (m, w)."""
TICK_PAD_PX = 10
"""Under a panel, besides the rotated text: the tick mark (5 px) and Plotly's padding around the label."""
SIDE_MARGIN_PX = 10
"""Left and right margin of a figure; Plotly widens the left one to fit the y labels (automargin)."""
COLORBAR_PX = 90
"""Width the colour bar and its tick labels take to the right of the panels."""
NO_TICKS_PX = 10
"""Gap under a row of panels that draws no x labels (on a projector none: the page's gap separates the rows)."""
FIGURE_MARGIN_PX = 4
"""Top and bottom margin of a grid's figure (the top one larger for the mask note or the toolbar)."""
LABEL_PX_PER_CHAR, LABEL_PX_BASE = 6.5, 30
"""Width of a y label "i·token": ~6.5 px a character, plus the tick and padding."""
MODEBAR_PX = 26
"""A strip at the top of a grid of several columns for Plotly's toolbar (26 px tall, top right): it shows on
hover and on a phone's tap, and would otherwise cover the title of the right-hand panel. A one-column figure's
title is centred over its panel, clear of the toolbar (tests/e2e/test_projector_and_phone.py measures it)."""
MODEBAR_WIDTH_PX = 90
"""Width of a map chart's toolbar (three buttons, ``map_columns.MAP_CONFIG``), at the chart's top right."""
MASK_NOTE_PX = 30
"""Top margin that holds the "hatched grey = masked" note; 4 px without it."""
MAX_GAP, NARROW_GAP = 0.2, 0.04
"""Horizontal gap between panels as a share of the width: room for inner y labels (at most 0.2), or a sliver."""
COLORBAR_MIN_PX, COLORBAR_MAX_PX = 120, 320
"""The colour bar is as long as a panel, within these bounds."""
VALUES_MAX_CELLS = 10
"""Numbers are written in the cells of maps up to 10 x 10, as lesson 1 prints ``weights[:3, :3]``: "0.12" needs
~30 px at 11 px, and beyond 10 rows a laptop-sized map's cells are narrower than that."""


@dataclass(frozen=True)
class Holds:
    """What a figure of heatmaps holds, as far as its layout cares."""

    shapes: Sequence[tuple[int, int]]
    """``(T_q, T_k)`` of each panel."""
    n_labels: int
    """Most token labels on one axis (a matrix of vectors' coordinate axis is not counted: it is thinned)."""
    token_chars: int
    """Characters of the longest token label, without its position prefix (already cut to ``labels.TICK_CHARS``)."""
    ticks: Sequence[tuple[bool, bool]]
    """(x labels?, y labels?) of each panel."""
    masked: bool = False
    """Some panel has masked cells: the top margin holds a note saying what the hatching means."""
    title_chars: int = 0
    """Characters of the longest panel title ("head 1 · K/V 1")."""


@dataclass(frozen=True)
class GridPlan:
    """Where every panel of a grid goes, in pixels and paper coordinates, and its fonts: planned before drawing."""

    ncols: int
    scale: float
    fonts: Fonts
    panel_px: int
    """Width (and, for a square map, height) of the largest panel."""
    panel_h: int
    """Height of each panel: shorter than ``panel_px`` for a wide T_q x T_k map."""
    x_px: int
    """Length the x axis is planned to be drawn at: the panel's width, or for cells stretched across a chart
    the narrowest it may be (a phone's column, ``PHONE_MAP_PX``), so its labels are thinned to fit there."""
    row_top: np.ndarray
    """Pixel offset of each row of panels from the top; the last entry is the plot's height."""
    ticks: Sequence[tuple[bool, bool]]
    gap_x: float
    width: float
    """Width of one panel as a share of the figure."""
    margin_t: int
    masked: bool
    colorbar_px: int
    """Length of the colour bar."""
    title_px: float
    """Height of the row each panel's title sits in, above the panel (below it with ``title_below``)."""
    title_below: bool = False
    """Each title under its panel: small multiples with no key labels, whose titles Plotly's toolbar (at a chart's
    top right) would cover above them."""

    @property
    def plot_h(self) -> int:
        return int(self.row_top[-1])

    @property
    def height(self) -> int:
        """The figure's height: the panels, the top margin and the bottom one."""
        return self.plot_h + self.margin_t + FIGURE_MARGIN_PX

    def domains(self, k: int) -> tuple[list[float], list[float]]:
        """x and y domains (paper coordinates) of panel ``k``: its title sits just above the y domain (or just below
        it, ``title_below``)."""
        r, c = divmod(k, self.ncols)
        x0 = c * (self.width + self.gap_x)
        top = 1 - (self.row_top[r] + (0 if self.title_below else self.title_px)) / self.plot_h
        return [x0, x0 + self.width], [max(0.0, top - self.panel_h / self.plot_h), top]

    def tick_step(self, n: int, along_px: int) -> int:
        """Label every ``step``-th of ``n`` positions along ``along_px`` pixels, so that labels never touch."""
        fit = max(4, int(along_px / (self.fonts.tick * LABEL_LINE)))
        return max(1, -(-n // fit))


def grid_columns(n: int, ncols: int | None, *, presenter: bool) -> int:
    """Columns of a grid of ``n`` panels in one figure: ``ncols`` if given (the model view's overview: one column per
    head, on a projector too), else all that fit (``MAX_COLS``; on a projector 2 up to 4 panels, so 4 are 2 x 2,
    and 3 beyond)."""
    if ncols:
        return ncols
    return min(n, 2 if n <= 4 else PRESENTER_MAX_COLS) if presenter else min(n, MAX_COLS)


def label_chars(token_chars: int, longest_axis: int) -> int:
    """Characters of the longest tick text "i·token": the position's digits, the dot and the token."""
    return len(str(max(longest_axis - 1, 0))) + 1 + token_chars


def y_label_px(chars: int, font: int, s: float) -> float:
    """Width of a horizontal tick label of ``chars`` characters, with its tick mark and padding."""
    return chars * CHAR_EM * font + TICK_PAD_PX * s


def x_label_px(chars: int, font: int, s: float) -> float:
    """Height of a rotated x tick label of ``chars`` characters (its line 1.2 em high), tick mark and padding."""
    angle = math.radians(-TICK_ANGLE)
    return chars * CHAR_EM * font * math.sin(angle) + 1.2 * font * math.cos(angle) + TICK_PAD_PX * s


def title_row_px(font: Fonts, presenter: bool) -> float:
    """Height of a panel's title row: ``TITLE_PX`` on a laptop, 1.3 times the title's font on a projector."""
    return round(1.3 * font.title) if presenter else TITLE_PX


def labelled_px(n: int, font: Fonts) -> float:
    """Length of an axis on which all ``n`` tick labels of ``font`` fit without thinning."""
    return math.ceil(n * font.tick * LABEL_LINE) + 1


def _fitting_tick_font(base: Fonts, presenter: bool, longest_axis: int, panel_px: float) -> Fonts:
    """On a projector, ticks shrink (not below ``PRESENTER_MIN_TICK``) before any token loses its label."""
    if not presenter or longest_axis * base.tick * LABEL_LINE <= panel_px:
        return base
    tick = max(PRESENTER_MIN_TICK, int(panel_px / (longest_axis * LABEL_LINE)))
    return replace(base, tick=min(tick, base.tick))


def _least(base: Fonts) -> Fonts:
    """``base`` with a projector's smallest tick labels."""
    return replace(base, tick=min(base.tick, PRESENTER_MIN_TICK))


def plan_grid(
    holds: Holds,
    *,
    ncols: int | None,
    presenter: bool,
    panel_px: int | None = None,
    square: bool = True,
    width_px: int | None = None,
    colorbar: bool = True,
    fold_px: int | None = None,
    fold_rows: int = 1,
    title_below: bool = False,
) -> GridPlan:
    """Columns, panel sizes, fonts, label room and gaps for a grid of heatmaps.

    ``ncols=None``: as many as fit (``MAX_COLS``, or ``PRESENTER_MAX_COLS``). ``panel_px``: a fixed panel height
    in laptop pixels (times the scale). ``square=False`` lets cells stretch across the panel's width.
    ``width_px``: the chart's width when the page knows it (one panel per chart, in a column). ``fold_px``: the
    height that ``fold_rows`` rows of maps, their titles and one band of key labels under the last row must fit
    in (presenter mode: the projector's first screen).
    """
    n, s = len(holds.shapes), scale(presenter)
    ncols = grid_columns(n, ncols, presenter=presenter)
    longest_axis = max(max(shape) for shape in holds.shapes)
    font = fonts(presenter, holds.n_labels)
    fit_px = _column_fit_px(ncols, presenter, longest_axis)
    chars = label_chars(holds.token_chars, longest_axis)
    if width_px is not None and ncols == 1:  # one panel in a chart of known width: as wide as the labels allow
        fit_px = min(fit_px, width_px - _beside_px(chars, font.tick, s, colorbar))
    title_px = title_row_px(font, presenter)
    strip = _toolbar_strip(holds, ncols, width_px, title_below, y_label_px(chars, font.tick, s), font.title)
    if fold_px is not None:
        per_row = title_px + 2 * FIGURE_MARGIN_PX + PRESENTER_GAP_PX + (strip if ncols == 1 else 0)
        room_px = fold_px - x_label_px(chars, font.tick, s)  # one band of key labels under the last row
        fit_px = min(fit_px, _above_fold_px(room_px, fold_rows, per_row, longest_axis, font))
    px = round(panel_px * s) if panel_px else round(fit_px)
    font = _fitting_tick_font(font, presenter, longest_axis, px)
    # A wide T_q x T_k map (cross-attention: few queries, many keys) is only as tall as its rows need:
    # square cells of the size the longest axis gets, not a 1 x 4 map with 160 px cells.
    tall = max(t_q / max(t_q, t_k) for t_q, t_k in holds.shapes) if square and not panel_px else 1.0
    panel_h = max(1, round(px * tall))
    x_px = px if square else _stretched_px(width_px, ncols, presenter, _beside_px(chars, font.tick, s, colorbar))
    gap_x = _gap_x(holds, ncols, width_px, s)
    return GridPlan(
        ncols=ncols,
        scale=s,
        fonts=font,
        panel_px=px,
        panel_h=panel_h,
        x_px=x_px,
        row_top=_row_tops(holds.ticks, ncols, title_px + panel_h, x_label_px(chars, font.tick, s), presenter),
        ticks=holds.ticks,
        gap_x=gap_x,
        width=(1 - gap_x * (ncols - 1)) / ncols,
        margin_t=strip + (round(MASK_NOTE_PX * s) if holds.masked else FIGURE_MARGIN_PX),
        masked=holds.masked,
        colorbar_px=round(max(COLORBAR_MIN_PX, min(px, COLORBAR_MAX_PX * s))),
        title_px=title_px,
        title_below=title_below,
    )


def _beside_px(chars: int, tick_font: int, s: float, colorbar: bool) -> float:
    """A chart's width beside its map: the query labels, both side margins and the colour bar."""
    return y_label_px(chars, tick_font, s) + 2 * SIDE_MARGIN_PX + (COLORBAR_PX * s if colorbar else 0)


def _stretched_px(width_px: int | None, ncols: int, presenter: bool, beside_px: float) -> int:
    """Width of a map whose cells stretch (``square=False``): its column less what is beside it; on a laptop at most
    a phone's width."""
    x_px = round((width_px or PAGE_PX[presenter] / ncols) - beside_px)
    return x_px if presenter else min(x_px, PHONE_MAP_PX)


def _column_fit_px(ncols: int, presenter: bool, longest_axis: int) -> float:
    """A panel's height as ``ncols`` columns allow it, and no larger than cells of ``CELL_PX`` need."""
    s = scale(presenter)
    sizes = PRESENTER_PANEL_PX if presenter else PANEL_PX
    return min(sizes.get(ncols, sizes[max(sizes)]), max(MIN_PANEL_PX * s, CELL_PX * s * longest_axis))


def _above_fold_px(room_px: float, rows: int, per_row: float, longest_axis: int, font: Fonts) -> float:
    """The panel height at which ``rows`` rows of maps (each with ``per_row``: its title, the chart's margins, the gap
    and a chart's toolbar strip) end in ``room_px`` above the fold, as far as they can while every token keeps a label
    of the smallest size allowed (then the page scrolls)."""
    return max(room_px / rows - per_row, labelled_px(longest_axis, _least(font)))


def _toolbar_strip(
    holds: Holds, ncols: int, width_px: int | None, title_below: bool, y_labels_px: float, title_font: int
) -> float:
    """Height of the strip kept above the titles for Plotly's toolbar (top right): a grid of several columns always
    has one; a one-column chart's title starts at its panel's left edge, and one that reaches the toolbar gets it
    (8 heads' "head 1 · K/V 1" on a projector: under the toolbar). A title under its map is clear of the toolbar."""
    title_end = y_labels_px + SIDE_MARGIN_PX + holds.title_chars * CHAR_EM * title_font
    under_toolbar = not title_below and ncols == 1 and width_px is not None and title_end > width_px - MODEBAR_WIDTH_PX
    return MODEBAR_PX if ncols > 1 else MODEBAR_CLEAR_PX - FIGURE_MARGIN_PX if under_toolbar else 0


def _row_tops(
    ticks: list[tuple[bool, bool]], ncols: int, row_px: float, labels_x: float, presenter: bool
) -> np.ndarray:
    """The top of each row of maps and the bottom of the last (pixels from the top): a row is ``row_px`` (a title and
    a map) and the room for its key labels, none when no panel of the row shows them (a sliver on a laptop)."""
    n = len(ticks)
    heights = []
    for r in range(math.ceil(n / ncols)):
        x_labels = any(ticks[k][0] for k in range(r * ncols, min(n, (r + 1) * ncols)))
        heights.append(row_px + (labels_x if x_labels else 0 if presenter else NO_TICKS_PX))
    return np.concatenate([[0], np.cumsum(heights)])


def _gap_x(holds: Holds, ncols: int, width_px: int | None, s: float) -> float:
    """The gap between columns (paper fraction): room for query labels where an inner column shows them."""
    inner_y_labels = any(show_y for k, (_, show_y) in enumerate(holds.ticks) if k % ncols)
    label_px = (LABEL_PX_PER_CHAR * holds.token_chars + LABEL_PX_BASE) * s
    planned_px = width_px or PAGE_PX[False]
    return 0.0 if ncols == 1 else min(MAX_GAP, label_px / planned_px) if inner_y_labels else NARROW_GAP


def chart_panel_px(shape: tuple[int, int], *, presenter: bool) -> int | None:
    """Panel height (laptop pixels) of a ``(T_q, T_k)`` map drawn in its own chart, or None: as large as its
    column allows.

    A laptop plans it at least ``PHONE_PANEL_PX`` wide when it has the cells for it (a map with more queries
    than keys is taller than wide), so the same chart stacked on a phone is a >= 250 px map; a projector lets
    the column's width decide.
    """
    if presenter:
        return None
    t_q, t_k = shape
    wide = max(min(CELL_PX * max(shape), PHONE_PANEL_PX), MIN_PANEL_PX)
    return round(wide * max(1.0, t_q / t_k))


def chart_fold_px(*, presenter: bool, control_rows: int = 0, caption: bool = False, above_px: int = 0) -> int | None:
    """Height a page's rows of maps (one chart each) may fill under ``control_rows`` rows of pickers and, with
    ``caption``, the one line the page writes above them (what the hatching means), or None when there is no fold
    to keep. ``above_px``: what else the view draws above them on a projector (``PICKER_ROW_PX``, ``ALERT_ROW_PX``...,
    less ``QUIZ_SWITCH_PX`` for a view without the quiz switch)."""
    if not presenter:
        return None
    return PRESENTER_FOLD_PX - CONTROLS_ROW_PX * control_rows - (CAPTION_ROW_PX if caption else 0) - above_px


SMALL_MULTIPLE_PX = 64
"""Each small map of an overview of many (the model view: 12 heads to a row fit a 940 px page)."""


def outer_label_px(chars: int, font: int) -> float:
    """Width of a label of ``chars`` characters written left of a row of panels ("layer 6")."""
    return chars * CHAR_EM * font + SIDE_MARGIN_PX


def small_multiple_px(ncols: int, *, presenter: bool) -> int:
    """Panel size (laptop px) of ``ncols`` small maps to a row: ``SMALL_MULTIPLE_PX``, or what the page's width
    leaves each beside the row labels and the colour bar (on a projector, the maps grow with the type)."""
    s = scale(presenter)
    row_label = outer_label_px(len("L6"), fonts(presenter).title)
    room = PAGE_PX[presenter] - row_label - COLORBAR_PX * s - 2 * SIDE_MARGIN_PX
    each = room * (1 - NARROW_GAP) / ncols / s  # laptop px: plan_grid scales it
    return max(1, int(min(each, SMALL_MULTIPLE_PX)))


# ---- matrices of vectors (X, Q, K, V: one row per token) -----------------------------------------------------

ROW_PX = 14
"""Smallest row height of a matrix of vectors (laptop px, scaled in presenter mode): one token label (11 px
type, or 19 px in presenter mode) plus a gap, so every row keeps its label. Square cells narrower than this
would thin the labels to every other token, so a matrix whose cells would be smaller stretches them to rows
this high."""
MIN_VECTOR_PX = 40
"""Smallest panel height of a matrix of vectors: one token is still a visible strip."""


def vector_panel_px(t: int, d: int, ncols: int, *, presenter: bool) -> int:
    """Panel height (laptop px) of ``ncols`` matrices of ``t`` rows and ``d`` coordinates, drawn with cells
    stretched across the panel's width (a phone's narrow column keeps the rows, not a 4 px strip).

    Rows are as tall as the cells would be wide at the planned width, square on a laptop, but never under
    ``ROW_PX``: every row keeps its token label (d_model = 512, or any d_k on a projector).
    """
    s = scale(presenter)
    if presenter:
        cap = PRESENTER_PANEL_PX[min(ncols, PRESENTER_MAX_COLS)] / s
    else:
        cap = PANEL_PX.get(ncols, PANEL_PX[MAX_COLS])
    cell = min(CELL_PX, column_px(ncols, presenter) / s / d)  # px per coordinate if the panel is as wide as planned
    rows_px = t * max(cell, ROW_PX)
    return int(min(cap, max(MIN_VECTOR_PX, rows_px)))


# ---- the standalone colour bar -------------------------------------------------------------------------------

BAR_CHART_PX = 320
"""Width of a standalone colour bar: a horizontal strip with its title on the left, above the maps."""
BAR_STRIP_PX = 10
"""Height of a standalone colour bar's strip: it sits in the row of switches above the maps, as low as they."""
BAR_TICK_PX = 6
"""Length of a standalone colour bar's tick marks, and the gap to their labels."""


def bar_chart_px(presenter: bool) -> int:
    """Width in pixels of a standalone colour bar chart (``st.plotly_chart(width=...)``)."""
    return round(BAR_CHART_PX * scale(presenter))


# ---- one head across many sentences (the class view) ---------------------------------------------------------

CLASS_ON_SCREEN = 12
"""Sentences whose maps the class view draws: 3 rows of 4 on a projector's first screen. Every sentence, drawn or
not, counts in the pooled numbers beside them."""
CLASS_COLUMNS = {False: 2, True: 4}
"""Maps to a row in the class view's share of the page: 2 on a laptop (~340 px each, with their labels), 4 on a
projector (~220 px, small multiples: their tokens in the hover)."""
CLASS_SPLIT = (1, 3)
"""The class view's page columns: the pooled verdict, then the maps (a phone stacks them: the verdict first)."""


def class_map_px(presenter: bool) -> int:
    """Width of one map's column in the class view's share of the page (``CLASS_SPLIT``)."""
    share = CLASS_SPLIT[1] / sum(CLASS_SPLIT)
    maps_px = (PAGE_PX[presenter] - COLUMN_GAP_PX) * share
    ncols = CLASS_COLUMNS[presenter]
    return round((maps_px - COLUMN_GAP_PX * (ncols - 1)) / ncols)


def class_panel_px(n: int, *, presenter: bool) -> int | None:
    """Panel size (laptop px) of the class view's small multiples on a projector: the rows of the first
    ``CLASS_ON_SCREEN`` of ``n`` maps, each with its title row, the chart's margins and the page's gap, end above
    ``PRESENTER_FOLD_PX`` (no tick labels), and a map is no wider than its column. None on a laptop: a map with its
    labels, planned for a phone's width (``chart_panel_px``)."""
    if not presenter:
        return None
    rows = max(1, math.ceil(min(n, CLASS_ON_SCREEN) / CLASS_COLUMNS[True]))
    per_row = title_row_px(fonts(True), True) + 2 * FIGURE_MARGIN_PX + PRESENTER_GAP_PX
    tall = PRESENTER_FOLD_PX / rows - per_row
    wide = class_map_px(True) - 2 * SIDE_MARGIN_PX
    return max(1, int(min(tall, wide) / scale(True)))


MAP_TOOLBAR_PX = 94
"""Width of a map chart's toolbar (three buttons, at its top right): 80 px on a 390 px phone, 92 on a projector,
measured in chromium."""


def title_chars(width_px: int, presenter: bool, labels: bool = False) -> int:
    """Characters of a panel title that fit a chart ``width_px`` wide at the title's size: less the chart's side
    margins and, with ``labels``, the query labels left of the map (a title starts over the map's left edge) and the
    toolbar beside it; without labels the title sits under the map (``GridPlan.title_below``), clear of the toolbar."""
    font = fonts(presenter)
    beside = y_label_px(label_chars(TICK_CHARS, MAX_TOKENS), font.tick, scale(presenter)) + MAP_TOOLBAR_PX
    return max(4, int((width_px - 2 * SIDE_MARGIN_PX - (beside if labels else 0)) / (CHAR_EM * font.title)))
