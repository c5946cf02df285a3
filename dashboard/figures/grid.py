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
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.labels import TICK_CHARS, escape, position_labels, tick_texts
from dashboard.figures.layout import (
    BAR_STRIP_PX,
    BAR_TICK_PX,
    CHAR_EM,
    FIGURE_MARGIN_PX,
    SIDE_MARGIN_PX,
    TICK_ANGLE,
    TICK_PAD_PX,
    VALUES_MAX_CELLS,
    GridPlan,
    Holds,
    bar_chart_px,
    chart_fold_px,
    chart_panel_px,
    column_px,
    fonts,
    grid_columns,
    plan_grid,
    scale,
    single_map_columns,
)
from dashboard.figures.plain import colorscale as named_colorscale
from dashboard.figures.plain import plain_figure

COLORSCALE = "Viridis"
"""Perceptually uniform and colour-blind safe, dark (0) to yellow (1)."""
MASK_BG = "#e4e4e4"
"""Colour of masked cells: much lighter than the dark purple of a small weight, and hatched."""
HATCH = "#a0a0a0"
"""Colour of the hatch lines drawn across masked cells."""
MASK_NOTE = "hatched grey = masked: the query may not attend to this key"
"""What the hatching means: said once per figure, or once above a page's grid of one-map charts."""


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
    first_col: int = 0
    """The position of the first column's token: a block of keys that starts later in the sentence."""
    places: Sequence[str] | None = None
    """Each row's (and column's: square maps only) position as its label writes it, for rows that are not positions
    0, 1, ... of one sentence (aligned pairs of two: ``labels.pair_place``); None: counted from 0."""


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


def _labels(
    tokens: Sequence[str] | None, n: int, first: int = 0, places: Sequence[str] | None = None
) -> tuple[list[str], list[str]]:
    """(categories, tick texts) of one axis: escaped ``"i·token"`` (i from ``first``, or ``places``), or
    ``"0".."n-1"`` for vector coordinates."""
    if tokens is None:
        cats = [str(i) for i in range(n)]
        return cats, cats
    return position_labels(tokens, first, places), tick_texts(tokens, first=first, places=places)


def _axis(
    domain: list[float], labels: tuple[list[str], list[str]], show: bool, along_px: int, anchor: str, plan: GridPlan
) -> dict:
    """A categorical axis over ``labels`` (categories, tick texts), its tick labels thinned to fit ``along_px``."""
    cats, texts = labels
    step = plan.tick_step(len(cats), along_px)
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
        tickfont=dict(size=plan.fonts.tick),
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


def _masked(panels: Sequence[Panel]) -> bool:
    """Some panel has masked cells (drawn hatched)."""
    return any(p.allowed is not None and not p.allowed.all() for p in panels)


def _holds(panels: Sequence[Panel], ticks: list[tuple[bool, bool]]) -> Holds:
    """What the layout needs to know of ``panels``: their shapes, their longest label, which labels show."""
    longest = max(len(tok) for p in panels for tok in (*p.rows, *(p.cols or [str(p.z.shape[1])])))
    return Holds(
        shapes=[p.z.shape for p in panels],
        n_labels=max(max(len(p.rows), 0 if p.cols is None else len(p.cols)) for p in panels),
        token_chars=min(longest, TICK_CHARS),
        ticks=ticks,
        masked=_masked(panels),
        title_chars=max(len(p.title) for p in panels),
    )


@dataclass(frozen=True)
class GridSpec:
    """How ``heatmap_grid`` draws its panels: the colour scale, the sizes (``layout.plan_grid``) and the labels."""

    ncols: int | None = None
    """Panels to a row; None: ``layout.grid_columns`` chooses."""
    zmin: float = 0.0
    zmax: float = 1.0
    value_name: str = "weight"
    """The colour bar's title, and what the hover calls a cell's value."""
    value_format: str = ".3f"
    colorscale: str = COLORSCALE
    panel_px: int | None = None
    square: bool = True
    """False lets cells stretch to fill ``panel_px`` by the panel width: a (T, 512) matrix of vectors would
    otherwise be a strip a few pixels high."""
    presenter: bool = False
    """For a projector (``layout.plan_grid``: larger fonts, cells and margins, fewer columns)."""
    values: bool = False
    """Write each cell's number (two decimals) in maps of at most ``VALUES_MAX_CELLS`` rows and columns."""
    colorbar: bool = True
    """False leaves the colour bar to another figure (``colour_bar_figure``)."""
    width_px: int | None = None
    """``width_px``, ``fold_px``, ``fold_rows``: see ``layout.plan_grid``."""
    fold_px: int | None = None
    fold_rows: int = 1
    x_labels: bool = True
    """False: a chart above another with the same keys leaves the key labels to it."""
    y_labels: bool = True
    """False draws no query labels either (small multiples labelled outside)."""
    mask_note: bool = True
    """False: the page says what the hatching means (``MASK_NOTE``) once for many charts, so this figure neither
    writes it nor keeps the top margin for it."""
    title_below: bool = False
    """Each title under its panel (``layout.GridPlan.title_below``)."""
    title_chars: int = 0
    """The longest title of the charts drawn beside this one (``chart_grid``), so that they all keep the toolbar's
    strip or none do, and their rows align."""


def heatmap_grid(panels: Sequence[Panel], spec: GridSpec = GridSpec()) -> go.Figure:
    """One figure, ``len(panels)`` heatmaps on a grid, one colour bar ``[spec.zmin, spec.zmax]``; sizes from ``layout``.

    Tick labels are drawn on the left column and bottom row, and on any panel
    whose tokens differ from its neighbour's (e.g. a reordered sentence). A panel titled "" gets no title.
    """
    if not panels:
        raise ValueError("heatmap_grid needs at least one panel")
    plan = _plan(panels, spec)
    traces, layout, annotations, shapes = [], {}, [], []
    hatch_cache: dict[bytes, str] = {}
    for k, p in enumerate(panels):
        suffix = "" if k == 0 else str(k + 1)
        xa, ya = f"x{suffix}", f"y{suffix}"
        x_cats = _labels(p.cols, p.z.shape[1], p.first_col, p.places)
        y_cats = _labels(p.rows, p.z.shape[0], places=p.places)
        layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = _panel_axes(k, p, x_cats, y_cats, plan, spec.square)
        x, y, title = x_cats[0], y_cats[0], escape(p.title)
        z = np.asarray(p.z, dtype=np.float32)  # (T_q, T_k); float32 keeps the payload small
        if p.allowed is not None and not p.allowed.all():
            z = np.where(p.allowed, z, np.float32(np.nan))
            key = p.allowed.tobytes() + bytes(str(p.allowed.shape), "ascii")
            if key not in hatch_cache:  # heads share one mask: build its path once
                hatch_cache[key] = _hatch_path(p.allowed)
            shapes.append(dict(type="path", xref=xa, yref=ya, path=hatch_cache[key], line=dict(color=HATCH, width=1)))
            traces.append(_mask_trace(p.allowed, x, y, xa, ya, title))
        trace = _value_trace(z, x, y, xa, ya, title, f"{p.hover}: %{{z:{spec.value_format}}}")
        if spec.values and max(p.z.shape) <= VALUES_MAX_CELLS:
            # plotly.js's default text colour on a heatmap ("auto") is black or white, whichever contrasts with
            # the cell's own colour: white on Viridis' dark purple, black on its green and yellow
            trace |= dict(texttemplate="%{z:.2f}", textfont=dict(size=plan.fonts.value))
        traces.append(trace)
        if title:
            annotations.append(_panel_title(title, plan.domains(k), plan, spec.title_below))
    if plan.masked:
        annotations.append(title_annotation(MASK_NOTE, 0, 1, xanchor="left", size=plan.fonts.note, name="note"))
    layout |= _figure_layout(plan, spec, annotations)
    if shapes:  # no empty list: validation would drop it, and the figure stays as Plotly would write it
        layout["shapes"] = shapes
    return plain_figure(traces, layout)  # dicts as plotly.js reads them: see plain.py for why not validated


def _plan(panels: Sequence[Panel], spec: GridSpec) -> GridPlan:
    """The grid's sizes for ``panels`` drawn as ``spec`` says (``layout.plan_grid``), with which labels show."""
    ncols = grid_columns(len(panels), spec.ncols, presenter=spec.presenter)
    ticks = [(show_x and spec.x_labels, show_y and spec.y_labels) for show_x, show_y in _shows_ticks(panels, ncols)]
    holds = _holds(panels, ticks)
    holds = replace(holds, title_chars=max(holds.title_chars, spec.title_chars))
    return plan_grid(
        holds if spec.mask_note else replace(holds, masked=False),
        ncols=ncols,
        panel_px=spec.panel_px,
        square=spec.square,
        presenter=spec.presenter,
        width_px=spec.width_px,
        colorbar=spec.colorbar,
        fold_px=spec.fold_px,
        fold_rows=spec.fold_rows,
        title_below=spec.title_below,
    )


def _panel_axes(
    k: int,
    p: Panel,
    x_cats: tuple[list[str], list[str]],
    y_cats: tuple[list[str], list[str]],
    plan: GridPlan,
    square: bool,
) -> tuple[dict, dict]:
    """Panel ``k``'s x (keys) and y (queries, row 0 on top) axes, in its planned domain."""
    x_dom, y_dom = plan.domains(k)
    show_x, show_y = plan.ticks[k]
    suffix = "" if k == 0 else str(k + 1)
    xa, ya = f"x{suffix}", f"y{suffix}"
    t_q, t_k = p.z.shape
    # square cells: a map with fewer keys than queries is narrower than its planned panel (a flash block of 15
    # keys of 62 queries is a quarter as wide), so its key labels are thinned for the width it is drawn at
    x_along = min(plan.x_px, math.ceil(plan.panel_h * t_k / t_q)) if square else plan.x_px
    x_axis = _axis(x_dom, x_cats, show_x, x_along, ya, plan)
    x_axis |= dict(tickangle=TICK_ANGLE, constraintoward="left")  # under its title
    y_axis = _axis(y_dom, y_cats, show_y, plan.panel_h, xa, plan)
    # row 0 on top; a panel squeezed by a narrow chart stays under its title
    y_axis |= dict(range=y_axis["range"][::-1], constraintoward="top")
    return x_axis, y_axis | (dict(scaleanchor=xa) if square else {})


def _panel_title(title: str, domains: tuple[list[float], list[float]], plan: GridPlan, below: bool) -> dict:
    """A panel's title, escaped: over the map's left edge (clear of Plotly's toolbar, which shows at the chart's
    top right), or under the map."""
    x_dom, y_dom = domains
    at = title_annotation(title, x_dom[0], y_dom[0 if below else 1], xanchor="left", size=plan.fonts.title)
    return at | dict(yanchor="top") if below else at


def _figure_layout(plan: GridPlan, spec: GridSpec, annotations: list[dict]) -> dict:
    """The figure's own layout: its height and margins, the shared colour axis, the hover, the annotations."""
    colour_axis = _colour_axis(spec.colorscale, spec.zmin, spec.zmax, spec.value_name, plan)
    return dict(
        height=plan.height,
        margin=dict(l=SIDE_MARGIN_PX, r=SIDE_MARGIN_PX, t=plan.margin_t, b=FIGURE_MARGIN_PX),
        plot_bgcolor="white",
        paper_bgcolor="rgba(0,0,0,0)",
        coloraxis=colour_axis | ({} if spec.colorbar else dict(showscale=False)),
        hoverlabel=dict(font=dict(size=plan.fonts.hover)),
        annotations=annotations,
        hovermode="closest",
        showlegend=False,
    )


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
    return dict(
        colorscale=named_colorscale(colorscale),
        cmin=zmin,
        cmax=zmax,
        colorbar=dict(
            title=dict(text=value_name, font=dict(size=plan.fonts.note), side="right"),  # clear of the top tick
            tickfont=dict(size=plan.fonts.note),
            lenmode="pixels",
            len=plan.colorbar_px,
            y=plan.domains(0)[1][1],  # the first panel's top: below the toolbar's strip over the titles
            yanchor="top",
        ),
    )


BAR_STEPS = 64
"""Rows of the gradient strip a standalone colour bar is drawn with: smooth to the eye at any length."""
BAR_TICKS = 6
"""At most this many labelled values on a standalone colour bar: 0, 0.2, ..., 1 for weights."""
ROUND_STEPS = (1.0, 2.0, 2.5, 5.0)
"""A colour bar's tick step is one of these times a power of ten."""


def bar_ticks(zmin: float, zmax: float, most: int = BAR_TICKS) -> np.ndarray:
    """The multiples of the smallest round step (``ROUND_STEPS``) of which at most ``most`` lie in [zmin, zmax]:
    -0.1, -0.05, 0, 0.05, 0.1 for a difference of ±0.125, where equal sixths read -0.125, -0.075, -0.025..."""
    span = zmax - zmin
    power = 10.0 ** math.floor(math.log10(span / most))
    for step in (r * power * ten for ten in (1, 10, 100) for r in ROUND_STEPS):
        first, last = math.ceil(zmin / step - 1e-9), math.floor(zmax / step + 1e-9)
        if last - first + 1 <= most:
            return np.arange(first, last + 1) * step + 0.0  # + 0.0: no -0
    raise AssertionError("unreachable: a step of 100 times span / most leaves at most one tick")


def bar_tick_texts(ticks: np.ndarray) -> list[str]:
    """``bar_ticks``' values written with the decimals their step needs and no trailing zeros: 0, 0.2, 1; -0.05;
    29.563, 29.564 (``.3g`` wrote each of those as 29.6)."""
    step = float(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    # + 1e-6: a step of 1e-5 read from two ticks near 257 is 0.9999999997e-5, which is still five decimals
    decimals = max(0, -math.floor(math.log10(step) + 1e-6)) + 1  # one more for a step of 2.5 or 0.25
    texts = [f"{v:.{decimals}f}".rstrip("0").rstrip(".") for v in ticks]
    return ["0" if t == "-0" else t for t in texts]


def colour_bar_figure(
    *,
    zmin: float = 0.0,
    zmax: float = 1.0,
    value_name: str = "weight",
    colorscale: str = COLORSCALE,
    presenter: bool = False,
) -> go.Figure:
    """Only a colour bar ``[zmin, zmax]``: the key to maps drawn one per chart, ``layout.bar_chart_px`` wide.

    A chart per map lets the page lay maps out by the screen's width (``dashboard/page/map_columns.py``); they
    share this one bar instead of drawing one each. It is itself a heatmap, a (1, BAR_STEPS) strip of the
    values from zmin (left) to zmax, its values as tick labels underneath and its name on the left.
    """
    s = scale(presenter)
    levels = np.linspace(zmin, zmax, BAR_STEPS, dtype=np.float32)[None, :]  # (1, BAR_STEPS)
    ticks = bar_ticks(zmin, zmax)
    font = fonts(presenter).note
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
            ticktext=bar_tick_texts(ticks),
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


def title_annotation(
    text: str, x: float, y: float, *, xanchor: str = "center", size: int = 13, name: str = "title"
) -> dict:
    """A text annotation in paper coordinates whose bottom edge sits at ``y``; ``text`` already escaped.

    ``name`` says what it is ("title", or "note"): the browser tests hold titles to the presenter's 22 px.
    """
    return dict(
        name=name,
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


@dataclass(frozen=True)
class ChartGrid:
    """Maps drawn one per chart, ``ncols`` to a row, and the one colour bar they share.

    The page puts them in ``st.columns`` (``dashboard/page/map_columns.py``): side by side on a laptop or projector,
    one per row on a phone, where Streamlit stacks columns. The server cannot know the screen's width;
    the browser's columns can.
    """

    maps: list[go.Figure]
    colour_bar: go.Figure
    ncols: int
    bar_px: int
    """Width of the colour bar's chart, drawn above the maps."""
    note: str = ""
    """Said once above the maps (``MASK_NOTE`` when some map has masked cells), not in every chart."""


def chart_grid(
    panels: Sequence[Panel], ncols: int, spec: GridSpec = GridSpec(), *, control_rows: int = 0, above_px: int = 0
) -> ChartGrid:
    """One figure per panel (its own title and both axes' labels), ``ncols`` to a row of the page, and a bar.

    ``spec`` is ``heatmap_grid``'s: its colour scale, ``presenter``, ``values``, ``panel_px`` and ``square`` (matrices
    of vectors pass their own), ``width_px`` (a column's width when the maps take part of the page; default: ``ncols``
    columns of all of it) and ``y_labels=False`` (small multiples, no tick labels: the hover names both tokens; with
    their own ``panel_px``). The rest of each chart's spec is planned here. Sizes come from ``layout``: a laptop's map
    is planned tall enough to be >= 250 px when a phone stacks the columns (``layout.chart_panel_px``); a projector's
    rows of maps end above its fold, and a map above another with the same keys leaves the key labels to the one
    below (a projector never stacks the columns). ``control_rows``: rows of pickers the view puts above the maps,
    ``above_px`` whatever else it draws there (``layout.chart_fold_px``).
    """
    if not panels:
        raise ValueError("chart_grid needs at least one panel")
    ncols = max(1, ncols)  # more columns than panels: a map planned for part of the page's width
    shape = max((p.z.shape for p in panels), key=max)  # (T_q, T_k) of the largest map
    presenter, labels = spec.presenter, spec.y_labels
    note = MASK_NOTE if _masked(panels) else ""
    fold_px = chart_fold_px(presenter=presenter, control_rows=control_rows, caption=bool(note), above_px=above_px)
    each = replace(
        spec,
        ncols=1,
        panel_px=spec.panel_px or chart_panel_px(shape, presenter=presenter),
        colorbar=False,
        width_px=spec.width_px or column_px(ncols, presenter),
        fold_px=fold_px if spec.square and labels else None,
        fold_rows=-(-len(panels) // ncols),
        mask_note=False,
        title_below=not labels,
        title_chars=max(len(q.title) for q in panels),
    )
    # a projector's map above another with the same keys leaves the key labels to it
    below = [
        not presenter or k + ncols >= len(panels) or _cols(panels[k + ncols]) != _cols(p) for k, p in enumerate(panels)
    ]
    maps = [heatmap_grid([p], replace(each, x_labels=labels and shown)) for p, shown in zip(panels, below, strict=True)]
    bar = colour_bar_figure(
        zmin=spec.zmin, zmax=spec.zmax, value_name=spec.value_name, colorscale=spec.colorscale, presenter=presenter
    )
    return ChartGrid(maps=maps, colour_bar=bar, ncols=ncols, bar_px=bar_chart_px(presenter), note=note)


def single_chart(panel: Panel, spec: GridSpec = GridSpec(), *, above_px: int = 0) -> ChartGrid:
    """One map in its own chart, as wide as ``layout.single_map_columns`` page columns allow, and its bar.

    On a laptop it takes half the page (a phone stacks the columns: the whole width); on a projector all of it.
    ``spec`` and ``above_px`` as for ``chart_grid``.
    """
    return chart_grid([panel], single_map_columns(spec.presenter), spec, above_px=above_px)
