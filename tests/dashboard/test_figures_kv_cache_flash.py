"""The KV cache and flash figure builders on their own: arrays in, figure JSON checked, no Streamlit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import attention_mask
from dashboard.figures.flash import LEGEND_GAP_PX, block_figure, state_figure
from dashboard.figures.kv_cache import cache_figure, rows_so_far_figure
from dashboard.figures.layout import LABEL_LINE, scale
from tests.dashboard.charts import grid_json, grids, masked
from tests.dashboard.conftest import escaped

HOSTILE = ["<b>x</b>", "&amp;", "it's", "$x$"]


def as_json(fig) -> dict:
    return json.loads(fig.to_json())


def test_rows_so_far_shows_rows_up_to_t_and_greys_the_rest():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 4, 4))  # (h, T, T)
    allowed = attention_mask(4, causal=True)
    grid = rows_so_far_figure(weights, allowed, HOSTILE, 1)
    assert "a row no step has produced yet" in grid.note
    fig = grid_json(grid)
    z, hidden = grids(fig), masked(fig)
    assert len(z) == 2
    for k in range(2):
        np.testing.assert_allclose(z[k][:2][allowed[:2]], weights[k][:2][allowed[:2]])
        assert hidden[k][2:].all()  # rows 3 and 4: not decoded yet
        np.testing.assert_array_equal(hidden[k][:2], ~allowed[:2])  # rows 1-2: only the future keys
    text = json.dumps(fig)
    assert "hatched grey" not in text  # said once above the charts (the grid's note), not in every chart of a row
    assert escaped("<b>x</b>") in text and "<b>x</b>" not in text
    with pytest.raises(ValueError, match="step"):
        rows_so_far_figure(weights, allowed, HOSTILE, 4)


def test_cache_figure_draws_k_and_v_of_every_kv_head():
    rng = np.random.default_rng(1)
    k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))  # (kv_heads, t, d_k)
    grid = cache_figure(k, v, HOSTILE[:3])
    fig = grid_json(grid)
    z = grids(fig)
    assert len(z) == 4
    for got, want in zip(z, [k[0], v[0], k[1], v[1]], strict=True):
        np.testing.assert_allclose(got, want)
    titles = json.dumps([a for m in grid.maps for a in as_json(m)["layout"].get("annotations", [])])
    assert "K, K/V head 2: (3, 4)" in titles and "V, K/V head 1: (3, 4)" in titles
    with pytest.raises(ValueError, match="match"):
        cache_figure(k, v, HOSTILE[:2])


def test_cache_figure_draws_only_the_kv_heads_asked_for_titled_with_their_own_numbers():
    rng = np.random.default_rng(2)
    k, v = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))  # (kv_heads, t, d_k)
    grid = cache_figure(k, v, HOSTILE[:2], heads=[2])
    z = grids(grid_json(grid))
    assert len(z) == 2
    np.testing.assert_allclose(z[0], k[2])
    np.testing.assert_allclose(z[1], v[2])
    titles = json.dumps([a for m in grid.maps for a in as_json(m)["layout"].get("annotations", [])])
    assert "K, K/V head 3: (2, 4)" in titles and "K/V head 1" not in titles
    for bad in ([3], [-1], []):
        with pytest.raises(ValueError, match="K/V heads"):
            cache_figure(k, v, HOSTILE[:2], heads=bad)


def test_block_figure_marks_minus_infinity_as_masked():
    scores = np.array([[1.0, -np.inf], [0.5, -2.0], [-np.inf, -np.inf]])  # (T_q, B_c)
    fig = as_json(block_figure(scores, HOSTILE[:3], HOSTILE[1:3], 4))
    (z,), (hidden,) = grids(fig), masked(fig)
    np.testing.assert_array_equal(hidden, ~np.isfinite(scores))
    np.testing.assert_allclose(z[np.isfinite(scores)], scores[np.isfinite(scores)])
    assert "keys 4–5" in json.dumps(fig, ensure_ascii=False)  # the title names the positions the x labels carry
    assert fig["data"][-1]["x"] == ["4·&amp;amp;", "5·it's"]  # keys at their own positions, 4 and 5 (from 0)


def test_state_figure_draws_each_running_number_and_leaves_minus_infinity_out():
    m_old, m_new = np.array([-np.inf, 1.0]), np.array([2.0, 3.0])
    l_old, l_new = np.array([0.0, 1.5]), np.array([1.0, 1.2])
    correction = np.exp(m_old - m_new)
    fig = as_json(state_figure(m_old, m_new, l_old, l_new, correction, HOSTILE[:2]))
    xs = [trace["x"] for trace in fig["data"]]
    assert xs[0] == [None, 1.0] and xs[1] == [2.0, 3.0]
    assert xs[2] == [0.0, 1.5] and xs[3] == [1.0, 1.2]
    np.testing.assert_allclose(xs[4], [0.0, np.exp(-2.0)])
    assert all(trace["y"] == ["0·" + escaped(HOSTILE[0]), "1·" + escaped(HOSTILE[1])] for trace in fig["data"])


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("t", [1, 2, 3, 8])
def test_state_figure_of_a_few_rows_keeps_a_plot_tall_enough_for_its_legend_below(t, presenter):
    """One token's state chart was a 42 px plot with its legend 80 px under it: the axis titles, the legend and the
    tick labels overprinted (390 px phone, chromium). The plot is now at least the legend's gap tall."""
    rows = np.zeros(t)
    layout = as_json(state_figure(rows, rows, rows, rows, rows + 1, [f"w{i}" for i in range(t)], presenter=presenter))[
        "layout"
    ]
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert layout["legend"]["y"] >= -1, "the legend sits within one plot height under the plot"
    assert plot_px >= LEGEND_GAP_PX * scale(presenter)


@pytest.mark.parametrize("presenter", [False, True])
def test_a_tall_block_s_key_labels_are_thinned_to_the_width_it_is_drawn_at(presenter):
    """62 queries by 15 keys with square cells is a quarter as wide as tall: every key labelled overprinted
    (chromium, 1280 x 720 presenter and 390 x 844). The labels shown fit the drawn width, a font size each."""
    t, b = 62, 15
    scores = np.random.default_rng(3).standard_normal((t, b))
    fig = as_json(
        block_figure(scores, [f"w{i}" for i in range(t)], [f"w{i}" for i in range(b)], 0, presenter=presenter)
    )
    layout = fig["layout"]
    y0, y1 = layout["yaxis"]["domain"]
    panel_h = (y1 - y0) * (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"])
    drawn_w = panel_h * b / t  # square cells
    x = layout["xaxis"]
    assert 1 < len(x["tickvals"]) < b, "thinned, not dropped"
    assert len(x["tickvals"]) * x["tickfont"]["size"] * LABEL_LINE <= drawn_w + x["tickfont"]["size"]


def axis_title_sizes(fig: dict) -> list[tuple[str, object]]:
    """Every titled axis of a figure's layout, with its title's own font size (None: left to the theme's 12 px)."""
    layout = fig["layout"]
    return [
        (layout[k]["title"]["text"], layout[k]["title"].get("font", {}).get("size"))
        for k in sorted(layout)
        if k.startswith(("xaxis", "yaxis")) and layout[k].get("title", {}).get("text")
    ]


@pytest.mark.parametrize("presenter", [False, True])
def test_flash_and_train_axis_titles_take_the_figure_s_note_size_as_every_other_chart(presenter):
    """Their axis titles had no size of their own, so the theme's 12 px won on a projector."""
    from dashboard.figures.layout import chart_fonts, fonts
    from dashboard.figures.train import curves_figures, formation_figure

    a = np.array([0.0, 1.0])
    flash = as_json(state_figure(a, a, a, a, a, ["a", "b"], presenter=presenter))
    train = [as_json(f) for f in curves_figures([0, 1], [1.0, 0.5], [0, 1], [0.2, 0.9], 10, presenter=presenter)]
    train.append(as_json(formation_figure([0, 1], [[0.1], [0.9]], ["head 1"], presenter=presenter)))
    assert [s for _, s in axis_title_sizes(flash)] == [fonts(presenter, 2).note] * 3
    titled = [t for f in train for t in axis_title_sizes(f)]
    assert len(titled) == 3 and {s for _, s in titled} == {chart_fonts(presenter).note}
