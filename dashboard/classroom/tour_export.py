"""Download this tour: one HTML file holding every step's note and charts, for a lecture with no network.

The file opens in any browser from a laptop's disk: plotly.js is in it once (``plotly.offline.get_plotlyjs``,
~4.8 MB), and each chart is its figure's JSON drawn by ``Plotly.newPlot``, interactive (hover, zoom) as on the page.
Nothing in it asks a server or the network for anything.

Each step is built as the page builds it: its address (``tours.step_address``) is read by ``url_state.read`` and
made ``Settings`` by ``settings.settings_from``; the note's ``{facts}`` are filled by ``tour_facts.fill`` from the
same computation; the charts are those the view draws, from the view's own pure functions (``VIEW_CHARTS``: the
functions its ``render`` calls), never a copy of them. A view with no entry there (a table, a training run) is said
to be on the page only. Every text from a tour file is escaped here; token text inside a figure is escaped by the
figure builders, as on the page, and the JSON writes ``<`` as ``\\u003c`` (plotly.io's encoder).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping

import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
import streamlit as st

from dashboard.classroom.tour_facts import fill
from dashboard.classroom.tours import load_tours, step_address
from dashboard.compute import computations
from dashboard.compute.source import served, source_or_message
from dashboard.figures.grid import ChartGrid
from dashboard.state import url_state
from dashboard.state.followed import OWN
from dashboard.state.settings import Settings, settings_from
from dashboard.views import cross, heads, permutation, scaling, steps

Charts = list[go.Figure]
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


def _grid(grid: ChartGrid) -> Charts:
    return [grid.colour_bar, *grid.maps]


def _heads(settings: Settings, values: Mapping[str, object]) -> Charts:
    source = source_or_message(settings, OWN)
    if source is None:
        return []
    run = source.run(settings.layer)
    return _grid(heads.map_grid(run, presenter=settings.presenter, values=bool(values["values"])))


def _cross(settings: Settings, values: Mapping[str, object]) -> Charts:
    tokens, source = computations.tokens_of(settings.sentence), computations.tokens_of(str(values["source"]))
    return _grid(cross.map_grid(computations.cross_run(tokens, source, settings.config), presenter=settings.presenter))


def _permutation(settings: Settings, values: Mapping[str, object]) -> Charts:
    source = source_or_message(settings, OWN)
    if source is None:
        return []
    seen = source.tokens()
    first, stop = seen.movable
    perm = permutation.reordering(
        seen.tokens[first:stop],
        source,
        str(values["perm_mode"]),
        seed=int(values["perm_seed"]),
        text=str(values["perm_text"]),
    )
    if perm is None:
        return []
    results = computations.permutation_runs(source, perm)
    run, result = source.run(settings.layer), results[min(settings.layer, len(results)) - 1]
    k = int(values["perm_head"]) - 1
    return _grid(permutation.map_grid(result, k, seen.tokens, run.trace.mask, presenter=settings.presenter))


def _steps(settings: Settings, values: Mapping[str, object]) -> Charts:
    source = source_or_message(settings, OWN)
    if source is None:
        return []
    head = steps.Head(source.run(settings.layer), int(values["step_head"]) - 1, settings)
    figures: Charts = []
    for step in steps.steps_of(head, steps.first_step(len(steps.step_builders(head)), values)):
        if isinstance(step.figure, ChartGrid):
            figures += _grid(step.figure)
        elif step.figure is not None:
            figures.append(step.figure)
    return figures


def _scaling(settings: Settings, values: Mapping[str, object]) -> Charts:
    settings = served(settings, "scaling", "")  # as the page: random weights of the same shape where it must
    return [scaling.spread_chart(settings.presenter), *scaling.curve_figures(settings)]  # the page's order


VIEW_CHARTS: dict[str, Callable[[Settings, Mapping[str, object]], Charts]] = {
    "heads": _heads,
    "scaling": _scaling,
    "cross": _cross,
    "permutation": _permutation,
    "steps": _steps,
}
"""View -> the charts its page draws, from the view's own pure functions; a view left out is not in the file."""


def step_page(slug: str, number: int) -> tuple[Settings, Mapping[str, object]]:
    """Step ``number`` of tour ``slug`` as the page reads it: its settings, and every key's value (the views'
    own controls too)."""
    reading = url_state.read(step_address(slug, number))
    values = reading.context or reading.values
    return settings_from(values), values


def step_charts(slug: str, number: int) -> tuple[str, Charts]:
    """The filled note and the charts of step ``number`` (from 1) of tour ``slug``."""
    settings, values = step_page(slug, number)
    note = fill(load_tours()[slug].steps[number - 1].note, settings, values)
    view = str(values["view"])
    return note, VIEW_CHARTS[view](settings, values) if view in VIEW_CHARTS else []


STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1320px; padding: 1rem 2rem; color: #222; }
section { border-top: 1px solid #ccc; padding: 0.5rem 0 1.5rem; }
.note { font-size: 1.2rem; max-width: 60rem; }
.charts { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-start; }
.missing { color: #666; font-style: italic; }
"""


def _chart_html(figure: go.Figure, div_id: str) -> str:
    return pio.to_html(
        figure, include_plotlyjs=False, full_html=False, div_id=div_id, config=PLOTLY_CONFIG, validate=False
    )


@st.cache_resource(max_entries=1, show_spinner=False)  # no arguments: one copy per process
def plotly_js() -> str:
    """plotly.js as plotly.py ships it (the version its figures are written for)."""
    return plotly.offline.get_plotlyjs()


def tour_html(slug: str) -> str:
    """The whole tour ``slug`` as one self-contained HTML page."""
    tour = load_tours()[slug]
    parts = []
    for number, step in enumerate(tour.steps, start=1):
        note, figures = step_charts(slug, number)
        view = str(step_page(slug, number)[1]["view"])
        charts = "".join(_chart_html(f, f"step{number}-chart{i}") for i, f in enumerate(figures, start=1))
        if not figures:
            missing = f"The {html.escape(view)} view has no chart in this file: open the step in Attention Lab."
            charts = f'<p class="missing">{missing}</p>'
        elif step_page(slug, number)[1].get("quiz") is True:
            asks = "In Attention Lab this step first asks the class to predict; the maps below are the answer."
            charts = f'<p class="missing">{asks}</p>{charts}'
        parts.append(
            f'<section id="step-{number}" data-charts="{len(figures)}">'
            f"<h2>{number}. {html.escape(step.title)}</h2>"
            f'<p class="note">{html.escape(note)}</p><div class="charts">{charts}</div></section>'
        )
    title = html.escape(tour.title)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{STYLE}</style><script>{plotly_js()}</script></head><body>"
        f"<h1>{title}</h1><p>{html.escape(tour.about)}</p>{''.join(parts)}"
        f"<p><small>Attention Lab, tour {html.escape(slug)}: every chart as the page drew it, "
        f"{len(tour.steps)} steps.</small></p></body></html>"
    )


def download_button() -> None:
    """While a tour is chosen, "Download this tour" (call it in the sidebar, under the tour picker): the file is
    made when the button is pressed, not on every run."""
    slug = st.session_state.get("tour")
    if slug not in load_tours():
        return
    st.download_button(
        "Download this tour",
        data=lambda: tour_html(slug).encode(),
        file_name=f"{slug}.html",
        mime="text/html",
        on_click="ignore",
        icon=":material/download:",
        key="tour_download",
        help="Every step's note and charts in one HTML file (about 5 MB) that opens in a browser with no server "
        "and no network: a lecture that survives the hall's Wi-Fi.",
    )
