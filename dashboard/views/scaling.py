"""Why ÷√d_k: how far raw scores spread as d_k grows, the experiment over head widths, and the current sentence
with and without the factor.

The sidebar's "scaled" toggle turns the factor off for every view, so the heads
view shows the collapse on the class's own sentence; this view explains it.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core import Run, SpreadResult, scaling_experiment, score_spread
from dashboard.compute import computations
from dashboard.figures.layout import HEADING_ROW_PX, QUIZ_SWITCH_PX, chart_fold_px
from dashboard.figures.scaling import scaling_figures
from dashboard.figures.spread import CLAIM, spread_figure
from dashboard.page.common import (
    PLOTLY_CONFIG,
    served,
    show_code,
    show_frame,
    tokens_or_message,
    unscaled_warning,
)
from dashboard.page.map_columns import chart, show_charts
from dashboard.page.shared_figures import charts_of
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings


def render(settings: Settings, controls: Controls) -> None:
    toggle_works = bool(settings.kind.supports("unscaled"))  # else the sidebar's scaling toggle stays on, disabled
    settings = served(settings, "scaling", "turns the 1/√d_k scaling off on your sentence")
    _spread(settings.presenter)  # first the cause, the raw scores' spread; then what it does to the softmax
    st.subheader("What the spread does to the softmax", anchor=False)
    result = computations.scaling_curves()
    st.caption(
        f"For each head width d_k, {result.n_seeds} random draws of {result.t} queries and {result.t} keys with "
        "unit-variance entries; each curve is the mean over draws and rows. A dot product of two such vectors "
        "has standard deviation √d_k, so without the factor the scores spread wider as heads widen."
    )
    curves = charts_of(  # built once per width: every follower of a room draws these
        result, ("scaling", settings.config.d_k, settings.presenter), lambda: curve_figures(settings)
    )
    show_charts(curves, 2, key="scaling_chart")
    show_code(
        scaling_experiment, "result = scaling_experiment()  # the defaults: the curves do not depend on the sentence"
    )
    st.markdown(
        "- **With ÷√d_k** (solid) the largest weight and the entropy stay the same at every width: "
        "the softmax sees scores of the same spread whatever d_k is.\n"
        "- **Without it** (dashed) the largest weight climbs toward 1 and the entropy falls toward 0: "
        "each row puts almost all its weight on one key, and training gets almost no gradient through it."
    )
    run = _current_sentence(settings, controls, toggle_works)
    if run is not None:
        unscaled_warning(run, controls)


def spread_text(result: SpreadResult) -> str:
    """What the spread says about lesson 3's "a 512-dimension dot product can easily reach ±100"."""
    widest = int(result.d_ks[-1])
    std, share = float(result.std[-1]), float(result.share_beyond_100[-1])
    n = result.scores.shape[1]
    return (
        f"For q and k with unit-variance entries, q·k is a sum of d_k products of variance 1, so its standard "
        f"deviation is √d_k: measured {std:.1f} at d_k = {widest} (√{widest} = {widest**0.5:.1f}). Lesson 3 says a "
        f'512-wide dot product "can easily reach ±100": that is {CLAIM / widest**0.5:.1f} standard deviations out, '
        f"and {share:.2%} of {n:,} draws here reached it. The lesson's point holds with smaller numbers: 99 % of "
        f"raw scores at d_k = {widest} lie within ±{float(abs(result.quantiles[-1, [0, -1]]).max()):.0f}, already "
        "enough to make a softmax row one-hot. ±100 becomes easy only when q and k themselves are larger than "
        "unit variance."
    )


def curve_figures(settings: Settings) -> list[go.Figure]:
    """Largest weight and entropy against d_k, with and without ÷√d_k, the settings' d_k marked (pure: the page and
    the tour's download draw these)."""
    return scaling_figures(computations.scaling_curves(), settings.config.d_k, presenter=settings.presenter)


def spread_chart(presenter: bool) -> go.Figure:
    """The raw scores' spread against d_k, the view's first chart: on a projector, as tall as its first screen leaves
    (``layout.chart_fold_px``) under the heading above it (pure: the page and the tour's download draw it)."""
    fold_px = chart_fold_px(presenter=presenter, above_px=HEADING_ROW_PX - QUIZ_SWITCH_PX)
    return spread_figure(computations.score_spreads(), presenter=presenter, fold_px=fold_px)


def _spread(presenter: bool) -> None:
    """The raw scores' spread against d_k, with √d_k marked, answering lesson 3's "±100"."""
    st.subheader("How large do raw scores get?", anchor=False)
    result = computations.score_spreads()
    figure = charts_of(result, ("spread", presenter), lambda: spread_chart(presenter))  # built once: all draw it
    chart(figure, width="stretch", key="spread_chart", config=PLOTLY_CONFIG)
    st.caption(spread_text(result))
    show_code(score_spread, "result = score_spread()  # d_k = 16, 64, 512; 20,000 pairs q, k each")


def _current_sentence(settings: Settings, controls: Controls, toggle_works: bool = True) -> Run | None:
    """The sidebar's sentence and heads, with the factor and without it, in two numbers per case; returns the
    run the sidebar's settings computed (None after a message)."""
    c = settings.config
    tokens = tokens_or_message(settings.sentence, controls)
    if tokens is None:
        return None
    st.subheader("Your sentence", anchor=False)
    if len(tokens) == 1:
        st.info(
            "A single token has one key: its weight is 1 with or without scaling."
            + controls.hint(" Type a longer sentence.")
        )
        return None
    rows = []
    for scaled in (True, False):
        run = computations.attention_run(tokens, replace(settings.config, scaled=scaled))
        summary = computations.summary_of(run)
        rows.append(
            (
                "with ÷√d_k" if scaled else "without ÷√d_k",
                computations.mean_row_peak(run.trace.weights),
                float(summary.normalized_entropy.mean()),
            )
        )
    table = pd.DataFrame(rows, columns=["scores", "largest weight in a row", "spread (entropy ÷ log keys)"])
    heads = f"all {c.n_heads} heads" if c.n_heads > 1 else "the one head"
    show_frame(
        table,
        presenter=settings.presenter,
        formats={"largest weight in a row": "%.3f", "spread (entropy ÷ log keys)": "%.3f"},
    )
    st.caption(
        f"Means over {heads} and {len(tokens)} query rows at d_k = {c.d_model} / {c.n_heads} = {c.d_k}. "
        "Largest weight 1 and spread 0 mean one-hot; spread 1 means even."
        + (
            controls.hint(" Flip “Scale scores by 1/√d_k” in the sidebar, then open the heads view to see the maps.")
            if toggle_works
            else " The model chosen keeps the factor it was trained with"
            + (controls.hint(": choose random weights in the sidebar to flip it") + ".")
        )
    )
    return computations.attention_run(tokens, c)
