"""Heads: one heatmap per head on one shared 0-1 scale, and optionally their average."""

from __future__ import annotations

import streamlit as st

from core import Run
from dashboard.classroom.quiz_panel import ask
from dashboard.compute import computations
from dashboard.figures import average_charts
from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import head_charts
from dashboard.figures.labels import position
from dashboard.figures.layout import ALERT_ROW_PX, VALUES_MAX_CELLS
from dashboard.page.common import (
    computed_by,
    pretrained_examples,
    run_call,
    show_code,
    source_or_message,
    unscaled_warning,
)
from dashboard.page.downloads import download_buttons
from dashboard.page.map_columns import show_charts, show_colour_bar, show_maps
from dashboard.page.mask_words import bias_words, group_words, head_title, rule_words
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings


def _repeats(tokens: tuple[str, ...]) -> list[list[int]]:
    """Groups of positions holding the same token: ``("a", "b", "a") -> [[0, 2]]``."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        groups.setdefault(t, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def map_grid(run: Run, *, presenter: bool, values: bool = False, above_px: int = 0) -> ChartGrid:
    """One map per head of ``run``, titled "head 3 · K/V 2" when heads share K/V (pure: the page and the tour's
    download draw these). ``above_px``: what the page draws above them on a projector (a warning)."""
    titles = [head_title(run.trace, i) for i in range(run.trace.n_heads)]
    return head_charts(
        run.trace.weights,
        run.tokens,
        run.trace.mask,
        presenter=presenter,
        values=values,
        titles=titles,
        above_px=above_px,
    )


def render(settings: Settings, controls: Controls) -> None:
    if not settings.presenter:  # on a projector the examples follow the maps: nothing pushes the maps down
        pretrained_examples(settings)
    source = source_or_message(settings, controls)
    if source is None:
        return
    run, layers = source.run(settings.layer), len(source.runs())
    if ask(settings, run, controls):  # quiz mode (URL quiz=true): a question, and no map until Reveal
        return
    t = len(run.tokens)
    warned = unscaled_warning(run, controls)  # the run's scores were not divided by √d_k: say so above the maps
    on_top = st.container()  # presenter mode: the maps, first
    switches = st.container(horizontal=True, vertical_alignment="center")  # with the colour bar: maps start higher
    with switches:  # a following page: the teacher's switches, not drawn (dashboard.state.followed)
        show_average, values = _switches(t, controls)
    charts = charts_of(  # built once per run and mode: a room's followers all draw these
        run,
        ("heads", settings.presenter, values, warned),
        lambda: map_grid(
            run, presenter=settings.presenter, values=values, above_px=ALERT_ROW_PX if warned else 0
        ),  # a projector: the maps end above the fold under the warning
    )
    show_colour_bar(charts, key="heads_chart_bar", container=switches)
    if settings.presenter:  # the maps first; what the hatching means beside their colour bar, under them (a 24-token
        with on_top:  # map and its labels fill the first screen: the line above them pushed the labels off it)
            show_charts(charts.maps, charts.ncols, key="heads_chart")
        if charts.note:
            switches.caption(charts.note)
    else:
        show_maps(charts, key="heads_chart")
    st.caption(_maps_line(run, layers))
    if run.trace.group > 1:
        st.caption(f"{group_words(run.trace)} Each map's title names its K/V head.")
    show_code(computed_by(settings), f"{run_call(settings)}\nweights = result.trace.weights  # (h, T, T)")
    if show_average:
        average = average_charts(run.trace.weights, run.tokens, run.trace.mask, presenter=settings.presenter)
        show_maps(average, key="average_chart")  # on the maps' colour bar
    _notice(run, controls)
    download_buttons(run, "heads", settings)
    if settings.presenter:
        pretrained_examples(settings)


def _notice(run: Run, controls: Controls) -> None:
    """What to point at, in words that name positions, never the typed text; read from the run."""
    tokens, weights, causal = run.tokens, run.trace.weights, run.trace.mask is not None
    points = []
    if len(tokens) == 1:
        points.append(
            "A single token can only attend to itself: its one weight is 1." + controls.hint(" Type a longer sentence.")
        )
    repeats = _repeats(tokens)
    if repeats and run.positional == "none" and not causal and run.trace.bias is None:  # ALiBi's bias sees position
        where = "; ".join(" and ".join(map(position, g)) for g in repeats[:3]) + ("; ..." if len(repeats) > 3 else "")
        points.append(
            f"Positions {where} hold the same word. With no positional encoding they get identical rows "
            "and identical columns in every head: attention cannot tell them apart."
        )
    if causal:
        points.append(f"{rule_words(run.trace.mask)} Masked cells are hatched grey: their weight is 0.")
    if run.trace.bias is not None:
        points.append(bias_words(run.trace.bias))
    peak = computations.mean_row_peak(weights)
    if len(tokens) > 1:
        points.append(f"The largest weight in a row is {peak:.2f} on average (1.00 = one-hot, 1/{len(tokens)} = flat).")
    st.markdown("\n".join(f"- {p}" for p in points))


def _switches(t: int, controls: Controls) -> tuple[bool, bool]:
    """(average over heads?, values in the cells?): the teacher's switches, or on a following page the teacher's
    choice (``controls``: no switch drawn); values are offered up to ``VALUES_MAX_CELLS`` tokens."""
    show_average = controls.choice(
        "average",
        False,
        lambda: st.toggle(
            "Average over heads",
            key="average",
            bind="query-params",
            help="The mean of all heads' maps: still a distribution over keys for every query.",
        ),
    )
    values = controls.choice(
        "values",
        False,
        lambda: st.toggle(
            "Values",
            key="values",
            bind="query-params",
            disabled=t > VALUES_MAX_CELLS,
            help=f"Write each weight in its cell, as lesson 1 prints weights[:3, :3]. Up to {VALUES_MAX_CELLS} "
            f"tokens: {t} leave cells too small for a number, so hover over a cell to read it."
            if t > VALUES_MAX_CELLS
            else f"Write each weight in its cell (two decimals), as lesson 1 prints weights[:3, :3]; "
            f"up to {VALUES_MAX_CELLS} tokens.",
        ),
    )
    return show_average, values


def _maps_line(run: Run, layers: int) -> str:
    """What the maps are: how many heads of what size, which layer, what a row and a column mean, and d_k."""
    t, h, d_k = len(run.tokens), run.trace.n_heads, run.trace.q.shape[-1]
    maps = f"{h} heads, each a {t}×{t} map" if h > 1 else f"1 head: a {t}×{t} map"
    if layers > 1:  # which layer: on a projector the sidebar that chose it is collapsed
        maps = f"Layer {run.layer} of {layers}: {maps}"
    return (
        f"{maps}. Row = the query token, column = the key token it looks at; every row sums to 1. "
        f"d_k = {run.x.shape[-1]} / {h} = {d_k}."
    )
