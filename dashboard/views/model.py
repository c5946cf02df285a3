"""The model view: every layer × head at once as small maps (as BertViz's model view), and one picked large.

Works for any model with layers: the pretrained MiniLM (6 × 12), a model trained in
the train view (1-2 layers), and the random or hand-built weights (1 layer). Rows are
layers, columns heads; the shared 0-1 colour scale makes heads comparable at a glance.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from core import head_summary
from core.head_summary import named_shares, pattern_label
from dashboard.classroom.quiz_panel import ask
from dashboard.compute.source import source_or_message
from dashboard.figures import model_figure, single_map_charts
from dashboard.figures.grid import ChartGrid
from dashboard.figures.heads import head_charts
from dashboard.figures.layout import PICKER_ROW_PX, SWITCH_ROW_PX
from dashboard.figures.train import layers_charts
from dashboard.page.common import (
    choose_head,
    computed_by,
    pretrained_examples,
    run_call,
    show_code,
)
from dashboard.page.map_columns import show_charts, show_colour_bar, show_figure, show_grid
from dashboard.page.probes import ablation_panel, induction_panel
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings

LARGE_MAPS = 8
"""Up to this many maps in all (a trained model's 2 layers of 1 to 4 heads), the overview draws each as large as
the heads view's, one chart each; more (MiniLM's 72) are small multiples on one screen. 2 maps of 24 tokens as
small multiples were 64 px on a laptop, 110 px on a projector, their "H1" over the page's middle."""


def _what_is_shown(n_layers: int, h: int, t: int, layer: int | None, large: bool, controls: Controls) -> str:
    """The line over the maps: how many, of what size, how they are laid out; ``layer``: one layer shown alone."""
    maps = f"map{'s' * (h > 1)} of {t}×{t}"
    if layer is not None and n_layers > 1 and not controls.drawn and not large:  # the switch it did not choose
        return (
            f"Layer {layer} of {n_layers}, the teacher's: {h} head {maps}. This page shows one layer at a time: "
            f"all {n_layers * h} maps at once are too small for a phone. Hover a cell for its tokens and weight."
        )
    if layer is not None and n_layers > 1:
        return f"Layer {layer} of {n_layers}: {h} head {maps}. Hover a cell for its tokens and weight."
    if layer is not None:
        return f"{h} head {maps}. Hover a cell for its tokens and weight."
    where = (
        "each titled with its layer and head" if large else "rows are layers (the first at the top), columns are heads"
    )
    phone = "" if large else " On a phone they are too small to read: turn on One layer at a time."
    return (
        f"{n_layers} layers × {h} head{'s' * (h > 1)} = {n_layers * h} map{'s' * (n_layers * h > 1)} of {t}×{t}: "
        f"{where}. Hover a cell for its tokens and weight.{phone}"
    )


def _switches(n_layers: int, large: bool, controls: Controls) -> tuple[bool, bool]:
    """The view's switches in one row: (one head, one layer). A following page draws neither: the teacher's one head,
    and one layer at a time whenever the model has too many maps for one screen (``large`` False: MiniLM's 72 are
    ~25 px each on a phone), the teacher's layer; the projector, the teacher's page, keeps the whole grid."""
    with st.container(horizontal=True):
        one_head = controls.choice(
            "one_head",
            False,
            lambda: st.toggle(
                "One head at a time",
                key="one_head",
                bind="query-params",
                help="Show only the head chosen below, large, with its tokens: no small maps of every head.",
            ),
        )
        one_layer = (
            n_layers == 1
            or (not controls.drawn and not large)
            or controls.choice(
                "one_layer",
                False,
                lambda: st.toggle(
                    "One layer at a time",
                    key="one_layer",
                    bind="query-params",
                    disabled=bool(one_head),
                    help="Show only the sidebar's layer, each head as a large map with its tokens (one per row on a "
                    "phone), instead of every layer at once as small maps.",
                ),
            )
        )
    return bool(one_head), bool(one_layer)


def render(settings: Settings, controls: Controls) -> None:
    if not settings.presenter:  # on a projector the examples follow the maps: nothing pushes the maps down
        pretrained_examples(settings)
    source = source_or_message(settings, controls)
    if source is None:
        return
    runs = source.runs()
    if ask(settings, runs[min(settings.layer, len(runs)) - 1], controls):  # quiz mode: no map until Reveal
        return
    n_layers, h = len(runs), runs[0].trace.n_heads
    mask = runs[0].trace.mask
    large = n_layers * h <= LARGE_MAPS  # a tiny trained model: maps to read, not small multiples
    one_head, one_layer = _switches(n_layers, large, controls)
    layer = min(settings.layer, n_layers)
    if not one_head:
        _overview(settings, runs, layer if one_layer else None, large, controls)
        st.subheader("One head, large", anchor=False)
    if n_layers > 1 and not one_head:  # one head alone: its title names its layer
        chosen = "the teacher's" if not controls.drawn else "change it with the sidebar's Layer control"
        st.caption(f"Layer {layer} of {n_layers}: {chosen}.")
    k = choose_head(h, controls, key="head", bind="query-params", help="The head to open large, in the layer chosen.")
    run = runs[layer - 1]
    title = f"layer {layer}, head {k + 1}"
    above = SWITCH_ROW_PX + PICKER_ROW_PX if one_head else 0  # the view's switches, the head picker
    charts = charts_of(  # built once per run and head: a room's followers all draw these (the mask is the model's)
        run,
        ("model head", k, title, settings.presenter, above),
        lambda: single_map_charts(run.trace.weights[k], run.tokens, mask, title, settings.presenter, above_px=above),
    )
    if one_head and settings.presenter:  # the map first, what the hatching means and the colour bar under it
        show_charts(charts.maps, charts.ncols, key="model_head_chart")
        show_colour_bar(charts, key="model_head_chart_bar")
        if charts.note:
            st.caption(charts.note)
    else:
        show_grid(charts, key="model_head_chart")
    if one_head:
        show_code(computed_by(settings), f"{run_call(settings)}\nweights = result.trace.weights  # (h, T, T)")
    [named] = named_shares(head_summary(run.trace.weights[k : k + 1], mask, run.word_ids))
    show_code(named_shares, f"named = named_shares(head_summary(weights[{layer - 1}, {k}:{k + 1}], mask, word_ids))")
    if named:
        labels = " and a ".join(pattern_label(name, share) for name, share in named)
        rest = "" if named[0][1] == 1 else " Its other rows do something else: the map shows what each row does."
        st.markdown(f"**Layer {layer}, head {k + 1}** is a {labels} head, by the summary's per-row rule.{rest}")
    else:
        st.markdown(f"**Layer {layer}, head {k + 1}** has none of the named patterns (see the summary view).")
    ablation_panel(settings, source)  # or one line saying why this source cannot
    if source.supports("logits"):  # a model trained to predict tokens: the induction diagnostic applies
        induction_panel(settings, source)
    if settings.presenter:
        pretrained_examples(settings)


def _overview(settings: Settings, runs, layer: int | None, large: bool, controls: Controls) -> None:
    """Every layer's heads (``layer`` None), or one layer's, under the line that says what is drawn."""
    n_layers, h, t = len(runs), runs[0].trace.n_heads, runs[0].trace.weights.shape[-1]
    tokens, mask = runs[0].tokens, runs[0].trace.mask
    st.caption(_what_is_shown(n_layers, h, t, layer, large, controls))

    def build() -> ChartGrid | go.Figure:  # the layers' maps stacked only here: a follower's redraw copies none
        weights = np.stack([r.trace.weights for r in runs])  # (L, h, T, T)
        if layer is not None:
            title = f"layer {layer}, head {{n}}" if n_layers > 1 else "head {n}"
            return head_charts(weights[layer - 1], tokens, mask, presenter=settings.presenter, title=title)
        if large:
            return layers_charts(weights, tokens, mask, presenter=settings.presenter)
        return model_figure(weights, tokens, mask, presenter=settings.presenter)

    # built once per model's runs and layer: a room's followers all draw these
    show_figure(charts_of(tuple(runs), ("model", layer, large, settings.presenter), build), key="model_chart")
    show_code(computed_by(settings), f"{run_call(settings)}\nweights = result.trace.weights  # (h, T, T)")
