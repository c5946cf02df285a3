"""The steps, shift and summary figure builders on their own: arrays in, figure JSON checked, no Streamlit."""

from __future__ import annotations

import html
import json
import math

import numpy as np
import pytest

from core import HeadSummary, ScalingResult
from dashboard.figures.grid import GridSpec, Panel, heatmap_grid
from dashboard.figures.scaling import CURRENT, scaling_figures
from dashboard.figures.shift import ShiftRow, shift_charts
from dashboard.figures.steps import (
    concat_charts,
    scores_charts,
    symmetric_limit,
    vector_panel,
    vectors_charts,
    weights_charts,
)
from dashboard.figures.summary import BARS, summary_figure
from tests.dashboard.charts import grid_json
from tests.dashboard.conftest import array, heatmaps

HOSTILE = ["<b>x</b>", "&amp;", "it's", "$x$", "a<br>b"]


def as_json(fig) -> dict:
    return json.loads(fig.to_json())


def axis(fig: dict, name: str, k: int) -> dict:
    return fig["layout"][f"{name}axis{'' if k == 0 else k + 1}"]


# --- heatmap_grid: matrices of vectors -------------------------------------------------------------


def test_a_vector_panel_has_token_rows_and_coordinate_columns():
    z = np.arange(12.0).reshape(3, 4)  # (T, d)
    fig = as_json(heatmap_grid([vector_panel(z, ["a", "b", "a"], "X")], GridSpec(zmin=-12, zmax=12)))
    [trace] = heatmaps(fig)
    assert trace["y"] == ["0·a", "1·b", "2·a"]
    assert trace["x"] == ["0", "1", "2", "3"]
    assert axis(fig, "x", 0)["ticktext"] == ["0", "1", "2", "3"]
    assert trace["hovertemplate"].startswith("token %{y}, coordinate %{x}: ")
    np.testing.assert_array_equal(array(trace["z"]), z)


def test_attention_maps_keep_their_query_key_hover():
    fig = as_json(heatmap_grid([Panel(np.eye(2), ["a", "b"], ["a", "b"], "head 1")]))
    [trace] = heatmaps(fig)
    assert trace["hovertemplate"].startswith("query %{y} → key %{x}: ")
    assert trace["x"] == ["0·a", "1·b"]


def test_square_false_drops_the_square_cell_constraint():
    panel = vector_panel(np.zeros((2, 8)), ["a", "b"], "X")
    assert axis(as_json(heatmap_grid([panel])), "y", 0)["scaleanchor"] == "x"
    assert "scaleanchor" not in axis(as_json(heatmap_grid([panel], GridSpec(square=False))), "y", 0)


def test_vector_panel_refuses_a_row_count_that_is_not_the_token_count():
    with pytest.raises(ValueError, match="3 rows do not match 2 tokens"):
        vector_panel(np.zeros((3, 4)), ["a", "b"], "X")


# --- vectors_figure and score maps -------------------------------------------------------------------


def test_vectors_share_one_diverging_scale_symmetric_about_zero():
    q = np.array([[1.0, -3.0], [0.5, 2.0]])
    k = np.array([[0.1, 0.2], [-0.4, 0.0]])
    fig = grid_json(vectors_charts([vector_panel(q, "ab", "Q"), vector_panel(k, "ab", "K")]))
    ca = fig["layout"]["coloraxis"]
    assert (ca["cmin"], ca["cmax"]) == (-3.0, 3.0)
    assert ca["colorscale"][0][1] == "rgb(5,48,97)"  # RdBu reversed: blue for negative
    assert all(t["coloraxis"] == "coloraxis" for t in heatmaps(fig))


def test_symmetric_limit_of_zeros_is_one():
    assert symmetric_limit(np.zeros((2, 2))) == 1.0
    assert symmetric_limit(np.array([[-5.0, 2.0]]), np.array([[4.0]])) == 5.0


@pytest.mark.parametrize(("t", "d"), [(8, 16), (8, 64), (8, 512), (64, 512)])
def test_matrices_of_vectors_stretch_their_cells_across_the_chart(t, d):
    """No square-cell constraint: on a phone's narrow column the rows keep their height, not a 4 px strip."""
    fig = grid_json(vectors_charts([vector_panel(np.ones((t, d)), [f"w{i}" for i in range(t)], "X")]))
    y = axis(fig, "y", 0)
    assert "scaleanchor" not in y
    height = fig["layout"]["height"]
    assert 40 <= height <= 900  # never a few-pixel strip, never taller than a screen


def test_scores_figure_uses_the_given_limit_and_marks_masked_cells():
    z = np.array([[1.0, 9.0], [-2.0, 0.5]])
    allowed = np.tri(2, dtype=bool)
    fig = grid_json(scores_charts(z, "ab", "ab", "masked scores", limit=4.0, allowed=allowed))
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (-4.0, 4.0)
    [masked] = [t for t in heatmaps(fig) if t.get("name") == "masked"]
    assert np.isnan(array(masked["z"])[allowed]).all() and (array(masked["z"])[~allowed] == 1).all()
    [scores] = [t for t in heatmaps(fig) if t.get("name") != "masked"]
    assert np.isnan(array(scores["z"])[0, 1])  # the masked score is a gap, not a small number


def test_scores_figure_default_limit_ignores_masked_scores():
    z = np.array([[1.0, 100.0], [-2.0, 0.5]])
    fig = grid_json(scores_charts(z, "ab", "ab", "s", allowed=np.tri(2, dtype=bool)))
    assert fig["layout"]["coloraxis"]["cmax"] == 2.0


def test_weights_figure_is_on_the_heads_0_1_viridis_scale():
    w = np.array([[1.0, 0.0], [0.3, 0.7]])
    fig = grid_json(weights_charts(w, "ab", "ab", "head 2: weights"))
    ca = fig["layout"]["coloraxis"]
    assert (ca["cmin"], ca["cmax"]) == (0, 1)
    assert ca["colorscale"][0][1].lower() == "#440154"  # viridis, not the diverging scale
    np.testing.assert_allclose(array(heatmaps(fig)[0]["z"]), w)


@pytest.mark.parametrize("head", [0, 2])
def test_concat_outlines_exactly_the_heads_columns(head):
    t, h, d_k = 3, 4, 2
    concat = np.arange(t * h * d_k, dtype=float).reshape(t, h * d_k)
    fig = grid_json(concat_charts(concat, -concat, ["a", "b", "c"], head, d_k))
    c, o = heatmaps(fig)
    np.testing.assert_array_equal(array(c["z"]), concat)
    np.testing.assert_array_equal(array(o["z"]), -concat)
    [box] = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert (box["x0"], box["x1"]) == (head * d_k - 0.5, (head + 1) * d_k - 0.5)
    assert (box["y0"], box["y1"]) == (-0.5, t - 0.5)
    assert (box["xref"], box["yref"]) == ("x", "y")  # on the concat panel, not the output
    titles = json.dumps(fig["layout"]["annotations"], ensure_ascii=False)
    assert f"columns {head * d_k}–{(head + 1) * d_k - 1}" in titles


@pytest.mark.parametrize("token", HOSTILE)
def test_tokens_are_escaped_in_vector_and_score_figures(token):
    tokens = [token, "ok"]
    figs = [
        vectors_charts([vector_panel(np.ones((2, 3)), tokens, "X")]),
        scores_charts(np.ones((2, 2)), tokens, tokens, "s"),
        concat_charts(np.ones((2, 4)), np.ones((2, 4)), tokens, 1, 2),
        shift_charts([ShiftRow("rope", np.eye(2), np.eye(2))], tokens, 3),
    ]
    for data in map(grid_json, figs):
        labels = [s for tr in heatmaps(data) for s in tr["y"]]
        assert f"0·{html.escape(token, quote=False)}" in labels  # quotes reach plotly.js as quotes (labels.escape)
        assert "<b>" not in json.dumps(data) and "<br>" not in json.dumps(data).replace("<extra>", "")


def test_presenter_mode_makes_step_figures_larger():
    panels = [vector_panel(np.ones((4, 8)), "abcd", "Q")]
    small, large = grid_json(vectors_charts(panels)), grid_json(vectors_charts(panels, presenter=True))
    assert large["layout"]["height"] > small["layout"]["height"]
    assert axis(large, "y", 0)["tickfont"]["size"] > axis(small, "y", 0)["tickfont"]["size"]


# --- shift figure --------------------------------------------------------------------------------


def test_shift_figure_has_three_panels_per_encoding_and_the_absolute_difference():
    a, b = np.array([[1.0, 0.0], [0.25, 0.75]]), np.array([[1.0, 0.0], [0.75, 0.25]])
    rows = [ShiftRow("rope", a, a), ShiftRow("sinusoidal", a, b)]
    fig = grid_json(shift_charts(rows, ["x", "y"], 5))
    maps = heatmaps(fig)
    assert len(maps) == 6
    titles = [t["name"] for t in maps]
    assert titles == [
        "rope: positions 0–1",
        "rope: positions 5–6",
        "rope: |difference|",
        "sinusoidal: positions 0–1",
        "sinusoidal: positions 5–6",
        "sinusoidal: |difference|",
    ]
    assert (array(maps[2]["z"]) == 0).all()
    np.testing.assert_allclose(array(maps[5]["z"]), [[0, 0], [0.5, 0.5]])
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (0, 1)


def test_shift_figure_refuses_maps_of_the_wrong_size():
    with pytest.raises(ValueError, match="do not match 3 tokens"):
        shift_charts([ShiftRow("rope", np.eye(2), np.eye(2))], ["a", "b", "c"], 1)


# --- scaling figure ------------------------------------------------------------------------------


def fake_scaling() -> ScalingResult:
    d = np.array([4, 16, 64])
    return ScalingResult(
        d_ks=d,
        max_weight_scaled=np.array([0.3, 0.31, 0.3]),
        max_weight_unscaled=np.array([0.5, 0.8, 0.95]),
        entropy_scaled=np.array([2.0, 2.0, 2.0]),
        entropy_unscaled=np.array([1.5, 0.6, 0.1]),
        t=8,
        n_seeds=4,
    )


def test_scaling_figure_plots_both_curves_on_a_log_d_k_axis():
    result = fake_scaling()
    figs = [as_json(f) for f in scaling_figures(result, current_d_k=16)]
    curves = {("x", "x2")[i]: [t for t in f["data"] if t.get("name") != CURRENT] for i, f in enumerate(figs)}
    assert [len(c) for c in curves.values()] == [2, 2]
    by = {(axis, t["name"]): t for axis, c in curves.items() for t in c}
    np.testing.assert_allclose(array(by[("x", "with ÷√d_k")]["y"]), result.max_weight_scaled)
    np.testing.assert_allclose(array(by[("x", "without ÷√d_k")]["y"]), result.max_weight_unscaled)
    np.testing.assert_allclose(array(by[("x2", "with ÷√d_k")]["y"]), result.entropy_scaled)
    np.testing.assert_allclose(array(by[("x2", "without ÷√d_k")]["y"]), result.entropy_unscaled)
    assert [f["layout"]["xaxis"]["type"] for f in figs] == ["log", "log"]
    assert by[("x", "with ÷√d_k")]["line"]["dash"] != by[("x", "without ÷√d_k")]["line"]["dash"]  # not colour only
    # the reference lines: one-hot (1, 0) and uniform (1/t, log t)
    levels = sorted(round(s["y0"], 6) for f in figs for s in f["layout"]["shapes"])
    assert levels == sorted(round(v, 6) for v in (0.0, 1 / 8, 1.0, math.log(8)))


def test_scaling_figure_marks_the_current_d_k_in_both_panels():
    figs = [as_json(f) for f in scaling_figures(fake_scaling(), current_d_k=64)]
    marks = [t for f in figs for t in f["data"] if t.get("name") == CURRENT]
    assert len(marks) == 2
    assert all(array(t["x"]).tolist() == [64, 64, 64] for t in marks)  # a vertical line, labelled halfway up
    assert all(t["text"] == ["", "your d_k = 64", ""] for t in marks)
    assert not [t for f in scaling_figures(fake_scaling()) for t in as_json(f)["data"] if t.get("name") == CURRENT]


# --- summary figure ------------------------------------------------------------------------------


def test_summary_figure_has_four_bars_per_head_and_n_a_for_nan():
    s = HeadSummary(
        entropy=np.array([0.0, 1.0]),
        normalized_entropy=np.array([np.nan, 0.5]),
        self_weight=np.array([1.0, 0.2]),
        previous_weight=np.array([np.nan, 0.7]),
        first_weight=np.array([1.0, 0.1]),
    )
    fig = as_json(summary_figure(s))
    assert [t["name"] for t in fig["data"]] == [name for _, name, _ in BARS]
    for trace, (field, _, _) in zip(fig["data"], BARS, strict=True):
        values = getattr(s, field)
        assert trace["x"] == ["head 1", "head 2"]
        np.testing.assert_allclose(array(trace["y"]), np.nan_to_num(values))
        assert trace["text"] == ["n/a" if math.isnan(v) else f"{v:.2f}" for v in values]
    assert fig["layout"]["yaxis"]["range"][0] == 0 and fig["layout"]["yaxis"]["range"][1] > 1


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("width", [16, 64, 512])
def test_vector_strips_label_every_token_in_both_modes(presenter, width):
    """Rows stay at least a label high (presenter mode scales both), so no token loses its label."""
    tokens = [f"t{i}" for i in range(8)]
    z = np.random.default_rng(width).standard_normal((8, width))
    fig = grid_json(vectors_charts([vector_panel(z, tokens, "X")], presenter=presenter))
    y = fig["layout"]["yaxis"]
    assert len(y["tickvals"]) == 8
    row_px = (y["domain"][1] - y["domain"][0]) * (fig["layout"]["height"] - 8) / 8  # plot height, less margins
    assert row_px >= y["tickfont"]["size"], (row_px, y["tickfont"]["size"])
