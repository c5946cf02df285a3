"""A grid of heatmaps in ONE figure with ONE shared 0-1 colour scale.

Why one figure: 16 separate charts cost 16 round trips and 16 colour bars; one
figure with a grid of axes (domains set by hand, no ``make_subplots``) is a
single payload with a single colour bar, so heads are compared on the same scale.

Conventions: query tokens on the rows (row 0 at the top), key tokens on the
columns; axes are categorical with one unique label per position (``"3·river"``),
so T tokens always give T×T cells and the hover can name both tokens without a
per-cell string. Masked cells are NaN in the weights (a gap) and filled by a
flat grey, hatched heatmap of their own whose hover says "masked", not a number.
A matrix of vectors (X, Q, K, V: one row per token) passes ``cols=None``: its
columns are coordinates, labelled "0".."d-1", and its hover names them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.labels import TICK_CHARS, escape, position_labels, tick_step, tick_texts
from dashboard.figures.plain import colorscale as named_colorscale
from dashboard.figures.plain import plain_figure

COLORSCALE = "Viridis"
"""Perceptually uniform and colour-blind safe, dark (0) to yellow (1)."""
MASK_BG = "#e4e4e4"
"""Colour of masked cells: much lighter than the dark purple of a small weight, and hatched."""
HATCH = "#a0a0a0"
"""Colour of the hatch lines drawn across masked cells."""
PANEL_PX = {1: 520, 2: 400, 3: 280, 4: 210}
"""Largest panel height in pixels for a grid of 1, 2, 3 or 4 columns (sized for a ~900 px wide chart)."""
CELL_PX = 40
"""A short sentence gets cells of at most this size: one token is a 140 px square, not a 520 px one."""
MIN_PANEL_PX = 140
ASSUMED_WIDTH_PX = 900
"""Chart width the layout plans for (wide layout on a laptop); Plotly scales the domains to the real width."""
MAX_COLS = 4
PRESENTER_SCALE = 1.75
"""Presenter mode: every font, cell and label margin 1.75 times larger, for a projector read from the back row:
panel titles 13 x 1.75 = 23 px (>= 22), tick labels 11 x 1.75 = 19 px, and 16 px up to 40 tokens (9 x 1.75)."""
PRESENTER_PANEL_PX = {1: 520, 2: 400, 3: 245}
"""Presenter panel heights for 1, 2 or 3 columns. A projector is often only 1280 px wide: with the sidebar
collapsed (as a presenter link opens) three panels, their labels and the colour bar fill its ~1200 px, and
at 245 px the permutation view's three maps and their key labels end above 720 px, under its two pickers;
a panel planned taller than its column is wide shrinks to a square and leaves a gap."""
PRESENTER_WIDTH_PX = ASSUMED_WIDTH_PX
"""Chart width a presenter layout plans for: no wider than on a laptop (see above)."""
PRESENTER_MAX_COLS = 3
"""Fewer, larger panels: 2 per row up to 4 panels (4 heads are 2 × 2), 3 per row beyond."""


@dataclass(frozen=True)
class Panel:
    """One heatmap: ``z (T_q, T_k)`` values in [zmin, zmax], row and column tokens, a title.

    ``allowed (T_q, T_k)`` bool, True = may attend, or None when nothing is masked.
    Token strings are raw: the builder escapes them. ``cols=None``: the columns
    are the coordinates ``0..z.shape[1]-1`` of one vector per row (X, Q, K, V).
    """

    z: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str] | None
    title: str
    allowed: np.ndarray | None = None
    hover: str = "query %{y} → key %{x}"
    """What the hover says before the value; ``%{y}`` and ``%{x}`` are the row and column labels."""


def _hatch_path(allowed: np.ndarray) -> str:
    """SVG path of "/" strokes across every run of masked cells, in category-index coordinates.

    Runs follow the anti-diagonals (i + j constant), so a causal triangle costs
    about 2T strokes instead of T²/2.
    """
    t_q, t_k = allowed.shape
    masked = ~allowed
    parts = []
    for c in range(t_q + t_k - 1):
        run_start = None
        for j in range(max(0, c - t_q + 1), min(t_k, c + 1) + 1):
            inside = j <= min(t_k - 1, c) and masked[c - j, j]
            if inside and run_start is None:
                run_start = j
            elif not inside and run_start is not None:
                j0, j1 = run_start, j - 1
                parts.append(f"M{j0 - 0.5},{c - j0 + 0.5}L{j1 + 0.5},{c - j1 - 0.5}")
                run_start = None
    return "".join(parts)


def _mask_trace(allowed: np.ndarray, x: list[str], y: list[str], xa: str, ya: str, title: str) -> dict:
    """A flat grey heatmap on the masked cells only (NaN elsewhere), whose hover says "masked".

    A separate trace because a NaN weight would hover as "NaN": the weights trace
    skips its gaps (``hoverongaps=False``) and this one answers there instead.
    """
    z = np.where(allowed, np.float32(np.nan), np.float32(1))  # (T_q, T_k): 1 on masked cells
    return dict(
        type="heatmap",
        z=z,
        x=x,
        y=y,
        xaxis=xa,
        yaxis=ya,
        zmin=0,
        zmax=1,
        colorscale=[[0, MASK_BG], [1, MASK_BG]],
        showscale=False,
        hoverongaps=False,
        hovertemplate=f"query %{{y}} → key %{{x}}: masked<extra>{title}</extra>",
        name="masked",
    )


LABEL_LINE = 1.1
"""A tick label needs this many times its font size along the axis: every token is labelled when its cell
is at least that tall (19 px labels in 21 px cells), every other one below."""


def _font_size(n: int) -> int:
    return 11 if n <= 24 else 9 if n <= 40 else 8


def _labels(tokens: Sequence[str] | None, n: int) -> tuple[list[str], list[str]]:
    """(categories, tick texts) of one axis: escaped ``"i·token"``, or ``"0".."n-1"`` for vector coordinates."""
    if tokens is None:
        cats = [str(i) for i in range(n)]
        return cats, cats
    return position_labels(tokens), tick_texts(tokens)


def _axis(
    domain: list[float], labels: tuple[list[str], list[str]], show: bool, panel_px: int, anchor: str, scale: float = 1
) -> dict:
    """A categorical axis over ``labels`` (categories, tick texts) with thinned tick labels, fonts times ``scale``."""
    cats, texts = labels
    size = round(_font_size(len(cats)) * scale)
    step = tick_step(len(cats), max(4, int(panel_px / (size * LABEL_LINE))))
    # a hidden axis sends no tick labels: the model view of MiniLM at 64 pieces has 130 of them (30 KB)
    ticks = dict(tickmode="array", tickvals=cats[::step], ticktext=texts[::step]) if show else {}
    return dict(
        domain=domain,
        anchor=anchor,
        type="category",
        categoryorder="array",
        categoryarray=cats,
        **ticks,
        showticklabels=show,
        ticks="outside" if show else "",
        tickfont=dict(size=size),
        showgrid=False,
        zeroline=False,
        range=[-0.5, len(cats) - 0.5],
        constrain="domain",
    )


def _shows_ticks(panels: Sequence[Panel], ncols: int) -> list[tuple[bool, bool]]:
    """(x labels?, y labels?) per panel: left column and bottom row, or where tokens differ from a neighbour's."""
    n = len(panels)
    out = []
    for k, p in enumerate(panels):
        c = k % ncols
        show_y = c == 0 or list(panels[k - 1].rows) != list(p.rows)
        show_x = k + ncols >= n or _cols(panels[k + ncols]) != _cols(p)
        out.append((show_x, show_y))
    return out


def _cols(p: Panel) -> tuple[str, ...] | int:
    """What a panel's column labels depend on: its tokens, or its number of coordinates."""
    return p.z.shape[1] if p.cols is None else tuple(p.cols)


TITLE_PX = 24
"""Height of the row a panel's title sits in: the 13 px title and its padding."""
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
"""Gap under a row of panels that draws no x labels."""
LABEL_PX_PER_CHAR, LABEL_PX_BASE = 6.5, 30
"""Width of a y label "i·token": ~6.5 px a character, plus the tick and padding."""
MODEBAR_PX = 26
"""A strip at the top of a grid of several columns for Plotly's toolbar (26 px tall, top right): it shows on
hover and on a phone's tap, and would otherwise cover the title of the right-hand panel. A one-column figure's
title is centred over its panel, clear of the toolbar (tests/e2e/test_projector_and_phone.py measures it)."""
MASK_NOTE_PX = 30
"""Top margin that holds the "hatched grey = masked" note; 4 px without it."""
MAX_GAP, NARROW_GAP = 0.2, 0.04
"""Horizontal gap between panels as a share of the width: room for inner y labels (at most 0.2), or a sliver."""
COLORBAR_MIN_PX, COLORBAR_MAX_PX = 120, 320
"""The colour bar is as long as a panel, within these bounds."""
TITLE_FONT, NOTE_FONT, HOVER_FONT = 13, 12, 13
"""Font sizes (px) of panel titles, the colour bar and mask note, and the hover label; times the presenter scale."""
VALUES_MAX_CELLS = 10
"""Numbers are written in the cells of maps up to 10 x 10, as lesson 1 prints ``weights[:3, :3]``: "0.12" needs
~30 px at 11 px, and beyond 10 rows a laptop-sized map's cells are narrower than that."""
VALUE_FONT = 11
"""Font size (px) of the numbers in the cells; times the presenter scale."""


@dataclass(frozen=True)
class GridPlan:
    """Where every panel of a grid goes, in pixels and paper coordinates: planned before anything is drawn."""

    ncols: int
    scale: float
    """1, or ``PRESENTER_SCALE`` for a projector."""
    panel_px: int
    """Width (and, for a square map, height) of the largest panel."""
    panel_h: int
    """Height of each panel: shorter than ``panel_px`` for a wide T_q x T_k map."""
    row_top: np.ndarray
    """Pixel offset of each row of panels from the top; the last entry is the plot's height."""
    ticks: list[tuple[bool, bool]]
    """(x labels?, y labels?) per panel."""
    gap_x: float
    width: float
    """Width of one panel as a share of the figure."""
    margin_t: int
    masked: bool
    """Some panel has masked cells: the top margin holds a note saying what the hatching means."""

    @property
    def plot_h(self) -> int:
        return int(self.row_top[-1])

    def domains(self, k: int) -> tuple[list[float], list[float]]:
        """x and y domains (paper coordinates) of panel ``k``: its title sits just above the y domain."""
        r, c = divmod(k, self.ncols)
        x0 = c * (self.width + self.gap_x)
        top = 1 - (self.row_top[r] + TITLE_PX * self.scale) / self.plot_h
        return [x0, x0 + self.width], [max(0.0, top - self.panel_h / self.plot_h), top]


def plan_grid(
    panels: Sequence[Panel],
    *,
    ncols: int | None,
    panel_px: int | None,
    square: bool,
    presenter: bool,
    width_px: int | None = None,
    colorbar: bool = True,
) -> GridPlan:
    """Columns, panel sizes, label room and gaps for ``panels``; see ``heatmap_grid`` for the arguments."""
    n = len(panels)
    s = PRESENTER_SCALE if presenter else 1.0
    if presenter:
        ncols = min(ncols or min(n, 2 if n <= 4 else 3), PRESENTER_MAX_COLS)
        sizes, planned_px = PRESENTER_PANEL_PX, PRESENTER_WIDTH_PX
    else:
        ncols = ncols or min(n, MAX_COLS)
        sizes, planned_px = PANEL_PX, ASSUMED_WIDTH_PX
    longest_axis = max(max(p.z.shape) for p in panels)
    fit_px = min(sizes.get(ncols, sizes[max(sizes)]), max(MIN_PANEL_PX * s, CELL_PX * s * longest_axis))
    longest = max(len(tok) for p in panels for tok in (*p.rows, *(p.cols or [str(p.z.shape[1])])))
    # the longest tick text "i·token": position digits, the dot, the token cut to TICK_CHARS
    label_chars = len(str(longest_axis - 1)) + 1 + min(longest, TICK_CHARS)
    font = round(_font_size(longest_axis) * s)
    y_label_px = label_chars * CHAR_EM * font + TICK_PAD_PX * s
    if width_px is not None and ncols == 1:  # one panel in a chart of known width: as wide as the labels allow
        fit_px = min(fit_px, width_px - y_label_px - 2 * SIDE_MARGIN_PX - (COLORBAR_PX * s if colorbar else 0))
    px = round(panel_px * s) if panel_px else round(fit_px)
    # A wide T_q x T_k map (cross-attention: few queries, many keys) is only as tall as its rows need:
    # square cells of the size the longest axis gets, not a 1 x 4 map with 160 px cells.
    tall = max(p.z.shape[0] / max(p.z.shape) for p in panels) if square and not panel_px else 1.0
    panel_h = max(1, round(px * tall))
    angle = math.radians(-TICK_ANGLE)
    tick_px = label_chars * CHAR_EM * font * math.sin(angle) + font * math.cos(angle) + TICK_PAD_PX * s
    ticks = _shows_ticks(panels, ncols)
    row_px = []
    for r in range(math.ceil(n / ncols)):
        x_labels = any(ticks[k][0] for k in range(r * ncols, min(n, (r + 1) * ncols)))
        row_px.append(TITLE_PX * s + panel_h + (tick_px if x_labels else NO_TICKS_PX))
    any_mask = any(p.allowed is not None and not p.allowed.all() for p in panels)
    inner_y_labels = any(show_y for k, (_, show_y) in enumerate(ticks) if k % ncols)
    label_px = (LABEL_PX_PER_CHAR * min(longest, TICK_CHARS) + LABEL_PX_BASE) * s
    gap_x = 0.0 if ncols == 1 else min(MAX_GAP, label_px / planned_px) if inner_y_labels else NARROW_GAP
    return GridPlan(
        ncols=ncols,
        scale=s,
        panel_px=px,
        panel_h=panel_h,
        row_top=np.concatenate([[0], np.cumsum(row_px)]),
        ticks=ticks,
        gap_x=gap_x,
        width=(1 - gap_x * (ncols - 1)) / ncols,
        margin_t=(MODEBAR_PX if ncols > 1 else 0) + (round(MASK_NOTE_PX * s) if any_mask else 4),
        masked=any_mask,
    )


def heatmap_grid(
    panels: Sequence[Panel],
    *,
    ncols: int | None = None,
    zmin: float = 0.0,
    zmax: float = 1.0,
    value_name: str = "weight",
    value_format: str = ".3f",
    colorscale: str = COLORSCALE,
    panel_px: int | None = None,
    square: bool = True,
    presenter: bool = False,
    values: bool = False,
    colorbar: bool = True,
    width_px: int | None = None,
) -> go.Figure:
    """One figure, ``len(panels)`` heatmaps on a grid, one colour bar ``[zmin, zmax]``.

    Tick labels are drawn on the left column and bottom row, and on any panel
    whose tokens differ from its neighbour's (e.g. a reordered sentence).
    ``square=False`` lets cells stretch to fill ``panel_px`` by the panel width:
    a (T, 512) matrix of vectors would otherwise be a strip a few pixels high.
    ``presenter=True`` is for a projector: fonts, cells and margins ``PRESENTER_SCALE`` times
    larger, at most ``PRESENTER_MAX_COLS`` panels per row (an explicit ``panel_px`` is scaled too).
    ``values=True`` writes each cell's number (two decimals) in maps of at most ``VALUES_MAX_CELLS`` rows
    and columns; larger maps stay without. ``colorbar=False`` leaves the colour bar to another figure
    (``colour_bar_figure``). ``width_px``: the chart's width when the page knows it (one panel per chart).
    """
    if not panels:
        raise ValueError("heatmap_grid needs at least one panel")
    plan = plan_grid(
        panels,
        ncols=ncols,
        panel_px=panel_px,
        square=square,
        presenter=presenter,
        width_px=width_px,
        colorbar=colorbar,
    )
    s = plan.scale
    traces, layout, annotations, shapes = [], {}, [], []
    hatch_cache: dict[bytes, str] = {}
    for k, p in enumerate(panels):
        x_dom, y_dom = plan.domains(k)
        show_x, show_y = plan.ticks[k]
        suffix = "" if k == 0 else str(k + 1)
        xa, ya = f"x{suffix}", f"y{suffix}"
        x_labels, y_labels = _labels(p.cols, p.z.shape[1]), _labels(p.rows, p.z.shape[0])
        layout[f"xaxis{suffix}"] = _axis(x_dom, x_labels, show_x, plan.panel_px, ya, s) | dict(tickangle=TICK_ANGLE)
        y_axis = _axis(y_dom, y_labels, show_y, plan.panel_h, xa, s)
        # row 0 on top; a panel squeezed by a narrow chart stays under its title
        y_axis |= dict(range=y_axis["range"][::-1], constraintoward="top")
        layout[f"yaxis{suffix}"] = y_axis | (dict(scaleanchor=xa) if square else {})

        x, y, title = x_labels[0], y_labels[0], escape(p.title)
        z = np.asarray(p.z, dtype=np.float32)  # (T_q, T_k); float32 keeps the payload small
        if p.allowed is not None and not p.allowed.all():
            z = np.where(p.allowed, z, np.float32(np.nan))
            key = p.allowed.tobytes() + bytes(str(p.allowed.shape), "ascii")
            if key not in hatch_cache:  # heads share one mask: build its path once
                hatch_cache[key] = _hatch_path(p.allowed)
            shapes.append(dict(type="path", xref=xa, yref=ya, path=hatch_cache[key], line=dict(color=HATCH, width=1)))
            traces.append(_mask_trace(p.allowed, x, y, xa, ya, title))
        trace = _value_trace(z, x, y, xa, ya, title, f"{p.hover}: %{{z:{value_format}}}")
        if values and max(p.z.shape) <= VALUES_MAX_CELLS:
            # plotly.js's default text colour on a heatmap ("auto") is black or white, whichever contrasts with
            # the cell's own colour: white on Viridis' dark purple, black on its green and yellow
            trace |= dict(texttemplate="%{z:.2f}", textfont=dict(size=round(VALUE_FONT * s)))
        traces.append(trace)
        annotations.append(title_annotation(title, (x_dom[0] + x_dom[1]) / 2, y_dom[1], size=round(TITLE_FONT * s)))
    if plan.masked:
        note = "hatched grey = masked: the query may not attend to this key"
        annotations.append(title_annotation(note, 0, 1, xanchor="left", size=round(NOTE_FONT * s)))
    layout |= dict(
        height=plan.plot_h + plan.margin_t + 4,
        margin=dict(l=SIDE_MARGIN_PX, r=SIDE_MARGIN_PX, t=plan.margin_t, b=4),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        coloraxis=_colour_axis(colorscale, zmin, zmax, value_name, plan) | ({} if colorbar else dict(showscale=False)),
        hoverlabel=dict(font=dict(size=round(HOVER_FONT * s))),
        annotations=annotations,
        hovermode="closest",
        showlegend=False,
    )
    if shapes:  # no empty list: validation would drop it, and the figure stays as Plotly would write it
        layout["shapes"] = shapes
    return plain_figure(traces, layout)  # dicts as plotly.js reads them: see plain.py for why not validated


def _value_trace(z: np.ndarray, x: list[str], y: list[str], xa: str, ya: str, title: str, hover: str) -> dict:
    """The heatmap of one panel's values on the shared colour axis; NaN (masked) cells are gaps with no hover."""
    return dict(
        type="heatmap",
        z=z,
        x=x,
        y=y,
        xaxis=xa,
        yaxis=ya,
        coloraxis="coloraxis",
        connectgaps=False,
        hoverongaps=False,
        hovertemplate=f"{hover}<extra>{title}</extra>",
        name=title,
    )


def _colour_axis(colorscale: str, zmin: float, zmax: float, value_name: str, plan: GridPlan) -> dict:
    """The one colour scale every panel shares, with its bar as long as a panel."""
    s = plan.scale
    return dict(
        colorscale=named_colorscale(colorscale),
        cmin=zmin,
        cmax=zmax,
        colorbar=dict(
            title=dict(text=value_name, font=dict(size=round(NOTE_FONT * s))),
            tickfont=dict(size=round(NOTE_FONT * s)),
            lenmode="pixels",
            len=max(COLORBAR_MIN_PX, min(plan.panel_px, COLORBAR_MAX_PX * s)),
            y=1,
            yanchor="top",
        ),
    )


BAR_STEPS = 64
"""Rows of the gradient strip a standalone colour bar is drawn with: smooth to the eye at any length."""
BAR_TICKS = 6
"""Labelled values on a standalone colour bar: 0, 0.2, ..., 1 for weights."""
BAR_CHART_PX = 320
"""Width of a standalone colour bar: a horizontal strip with its title on the left, above the maps
(on a phone, too: the maps stack below it, each ~360 px wide)."""
BAR_STRIP_PX = 10
"""Height of a standalone colour bar's strip: it sits in the row of switches above the maps, as low as they."""
BAR_TICK_PX = 6
"""Length of a standalone colour bar's tick marks, and the gap to their labels."""


def bar_chart_px(presenter: bool) -> int:
    """Width in pixels of a standalone colour bar chart (``st.plotly_chart(width=...)``)."""
    return round(BAR_CHART_PX * (PRESENTER_SCALE if presenter else 1.0))


def colour_bar_figure(
    *,
    zmin: float = 0.0,
    zmax: float = 1.0,
    value_name: str = "weight",
    colorscale: str = COLORSCALE,
    presenter: bool = False,
) -> go.Figure:
    """Only a colour bar ``[zmin, zmax]``: the key to maps drawn one per chart, ``bar_chart_px`` wide.

    A chart per map lets the page lay maps out by the screen's width (``dashboard/map_columns.py``); they
    share this one bar instead of drawing one each. It is itself a heatmap, a (1, BAR_STEPS) strip of the
    values from zmin (left) to zmax, its values as tick labels underneath and its name on the left.
    """
    s = PRESENTER_SCALE if presenter else 1.0
    levels = np.linspace(zmin, zmax, BAR_STEPS, dtype=np.float32)[None, :]  # (1, BAR_STEPS)
    ticks = np.linspace(zmin, zmax, BAR_TICKS)
    font = round(NOTE_FONT * s)
    strip = dict(type="heatmap", z=levels, x=np.arange(BAR_STEPS), y=[0], coloraxis="coloraxis", hoverinfo="skip")
    name_px = round(len(value_name) * CHAR_EM * font + TICK_PAD_PX * s)
    below = round(font * 1.2 + BAR_TICK_PX * s)  # the tick marks and one line of tick labels
    layout = dict(
        height=round(BAR_STRIP_PX * s) + 4 + below,
        margin=dict(l=name_px, r=font, t=4, b=below, pad=0),
        xaxis=dict(
            range=[-0.5, BAR_STEPS - 0.5],
            tickmode="array",
            tickvals=(ticks - zmin) / (zmax - zmin) * (BAR_STEPS - 1),
            ticktext=[f"{v:.3g}" for v in ticks],
            tickfont=dict(size=font),
            ticks="outside",
            showgrid=False,
            zeroline=False,
            fixedrange=True,
        ),
        yaxis=dict(visible=False, range=[-0.5, 0.5], fixedrange=True),
        coloraxis=dict(colorscale=named_colorscale(colorscale), cmin=zmin, cmax=zmax, showscale=False),
        annotations=[
            dict(
                text=value_name,
                xref="paper",
                yref="paper",
                x=0,
                y=0.5,
                xanchor="right",
                yanchor="middle",
                xshift=-TICK_PAD_PX * s / 2,
                showarrow=False,
                font=dict(size=font),
            )
        ],
        plot_bgcolor="rgba(0,0,0,0)",
        paper_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
    )
    return plain_figure([strip], layout)


def title_annotation(text: str, x: float, y: float, *, xanchor: str = "center", size: int = 13) -> dict:
    """A text annotation in paper coordinates whose bottom edge sits at ``y``; ``text`` already escaped."""
    return dict(
        text=text,
        xref="paper",
        yref="paper",
        x=x,
        y=y,
        xanchor=xanchor,
        yanchor="bottom",
        showarrow=False,
        font=dict(size=size),
    )


PAGE_PX = {False: 940, True: 1216}
"""Width of the page's main column the charts plan for: a 1400 px laptop window with the sidebar open
(1400 - 300 sidebar - 2 x 80 padding), or a 1280 px projector in presenter mode, whose link opens with the
sidebar collapsed and 32 px side padding (1280 - 2 x 32, dashboard/presenter.py). A narrower screen
shrinks each map to its column; a phone stacks them."""
COLUMN_GAP_PX = 16
"""Streamlit's gap between columns ("small", 1 rem)."""
PHONE_PANEL_PX = 260
"""A map is planned at least this tall (when it has the cells for it): on a 390 px phone the columns stack and
each map gets the phone's width, ~360 px less its labels, and should be >= 250 px."""


@dataclass(frozen=True)
class ChartGrid:
    """Maps drawn one per chart, ``ncols`` to a row, and the one colour bar they share.

    The page puts them in ``st.columns`` (``dashboard/map_columns.py``): side by side on a laptop or projector,
    one per row on a phone, where Streamlit stacks columns. The server cannot know the screen's width;
    the browser's columns can.
    """

    maps: list[go.Figure]
    colour_bar: go.Figure
    ncols: int
    bar_px: int
    """Width of the colour bar's chart, drawn above the maps."""


def chart_grid(
    panels: Sequence[Panel],
    ncols: int,
    *,
    presenter: bool = False,
    values: bool = False,
    zmin: float = 0.0,
    zmax: float = 1.0,
    value_name: str = "weight",
    value_format: str = ".3f",
    colorscale: str = COLORSCALE,
) -> ChartGrid:
    """One figure per panel (its own title and both axes' labels), planned for a column of the page, and a bar."""
    if not panels:
        raise ValueError("chart_grid needs at least one panel")
    ncols = max(1, min(ncols, len(panels)))
    column_px = (PAGE_PX[presenter] - COLUMN_GAP_PX * (ncols - 1)) / ncols
    longest_axis = max(max(p.z.shape) for p in panels)
    fit = min(CELL_PX * longest_axis, PHONE_PANEL_PX)  # laptop-scale pixels; presenter scales them
    common = dict(zmin=zmin, zmax=zmax, value_name=value_name, value_format=value_format, colorscale=colorscale)
    maps = [
        heatmap_grid(
            [p],
            ncols=1,
            presenter=presenter,
            values=values,
            colorbar=False,
            width_px=round(column_px),
            panel_px=None if presenter else max(fit, MIN_PANEL_PX),
            **common,
        )
        for p in panels
    ]
    bar = colour_bar_figure(zmin=zmin, zmax=zmax, value_name=value_name, colorscale=colorscale, presenter=presenter)
    return ChartGrid(maps=maps, colour_bar=bar, ncols=ncols, bar_px=bar_chart_px(presenter))
