"""The grid builders skip Plotly's validation (dashboard/figures/plain.py): here every one is validated.

Rebuilding a figure through ``go.Figure(fig.to_dict())`` runs Plotly's full
validation and coercion; it raises on an unknown property or a bad value, and
any value Plotly would have coerced (a colour scale name, a tuple) changes the JSON.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.figures import (
    GridSpec,
    Panel,
    average_charts,
    heads_figure,
    heatmap_grid,
    model_figure,
    permutation_charts,
)
from dashboard.figures.across import class_charts
from dashboard.figures.contrast import contrast_charts
from dashboard.figures.plain import colorscale, plain_figure
from dashboard.figures.shift import ShiftRow, shift_charts
from dashboard.figures.steps import concat_charts, scores_charts, vectors_charts, weights_charts

TOKENS = ["<b>x</b>", "the", "bank", "the", "supercalifragilisticexpialidocious"]
T = len(TOKENS)


def _weights(h: int, t_q: int = T, t_k: int = T) -> np.ndarray:
    w = np.random.default_rng(h).random((h, t_q, t_k)).astype(np.float32)
    return w / w.sum(axis=-1, keepdims=True)


def _builders():
    causal = np.tri(T, dtype=bool)
    w = _weights(4)
    vectors = np.random.default_rng(1).standard_normal((T, 16))
    yield "heads", heads_figure(w, TOKENS, causal)
    yield "heads, presenter", heads_figure(_weights(16), TOKENS, presenter=True)
    yield "cross", heads_figure(_weights(2, 2, T), TOKENS[:2], key_tokens=TOKENS)
    yield "average", average_charts(w, TOKENS, causal).maps[0]
    yield "permutation", permutation_charts(w[0], w[1], w[2], TOKENS, [4, 3, 2, 1, 0], causal, presenter=True).maps[1]
    yield "model", model_figure(np.stack([w, w]), TOKENS, causal, presenter=True)
    yield "vectors", vectors_charts([Panel(vectors, TOKENS, None, "X")]).maps[0]
    yield "scores", scores_charts(vectors[:, :T], TOKENS, TOKENS, "QK^T", allowed=causal).maps[0]
    yield "weights", weights_charts(w[0], TOKENS, TOKENS, "head 1", causal).maps[0]
    yield "concat", concat_charts(vectors, vectors, TOKENS, 1, 4).maps[0]
    yield "colour bar", concat_charts(vectors, vectors, TOKENS, 1, 4).colour_bar
    yield "shift", shift_charts([ShiftRow("rope", w[0], w[1])], TOKENS, 3, causal).maps[2]
    yield "grid, stretched", heatmap_grid([Panel(vectors, TOKENS, None, "V")], GridSpec(square=False, panel_px=200))
    small = [Panel(w[k], TOKENS, TOKENS, f"{k + 1} · <i>a</i> sentence", causal) for k in range(4)]
    yield "class, presenter", class_charts(small, presenter=True).maps[0]  # small multiples: titles under the maps
    yield "class", class_charts(small, presenter=False).maps[1]
    places = ["0", "1/2", "2/3", "3/4", "4/5"]
    difference = Panel(w[1] - w[0], TOKENS, TOKENS, "", causal, places=places)
    pair = contrast_charts(small[0], small[1], difference, presenter=False)
    yield "contrast, difference", pair.maps.maps[2]
    yield "contrast, difference bar", pair.difference_bar


BUILT = dict(_builders())


@pytest.mark.parametrize("name", list(BUILT))
def test_figure_passes_plotly_validation_unchanged(name):
    fig = BUILT[name]
    validated = go.Figure(fig.to_dict())  # raises ValueError on any invalid property or value
    assert json.loads(validated.to_json()) == json.loads(fig.to_json())


def test_an_invalid_property_would_be_caught():
    """The check above can fail: a misspelt property and a wrong value type both raise."""
    for trace in (dict(type="heatmap", z=[[1.0]], colour="red"), dict(type="heatmap", z=[[1.0]], zmin="low")):
        with pytest.raises(ValueError):
            go.Figure(plain_figure([trace], {}).to_dict())


def test_named_colour_scales_are_expanded_as_plotly_expands_them():
    fig = go.Figure(layout=dict(coloraxis=dict(colorscale="RdBu_r")))  # validated: Plotly expands the name
    expected = json.loads(fig.to_json())["layout"]["coloraxis"]["colorscale"]
    got = colorscale("RdBu_r")
    assert [c for _, c in got] == [c for _, c in expected]
    np.testing.assert_allclose([p for p, _ in got], [p for p, _ in expected], rtol=0, atol=1e-12)
    assert colorscale("RdBu_r") is not colorscale("RdBu_r")  # each figure gets its own list
