"""Figure builders on their own: arrays in, figure JSON checked, no Streamlit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dashboard.figures import Panel, average_charts, heads_figure, heatmap_grid, permutation_charts
from dashboard.figures.grid import (
    BAR_TICKS,
    ROUND_STEPS,
    _hatch_path,
    bar_tick_texts,
    bar_ticks,
    colour_bar_figure,
)
from dashboard.figures.labels import TICK_CHARS, tick_step
from tests.dashboard.charts import grid_json
from tests.dashboard.conftest import array, escaped, heatmaps

HOSTILE = [
    "<b>x</b>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">y</a>',
    "&amp;",
    "it's",
    "$x$",
    "a<br>b",
]


def random_weights(h: int, t_q: int, t_k: int | None = None, seed: int = 0) -> np.ndarray:
    """Rows that sum to 1, like softmax output: (h, T_q, T_k)."""
    rng = np.random.default_rng(seed)
    w = rng.random((h, t_q, t_k or t_q))
    return w / w.sum(axis=-1, keepdims=True)


def as_json(fig) -> dict:
    return json.loads(fig.to_json())


def weight_maps(fig: dict) -> list[dict]:
    """Heatmaps on the shared colour axis: one per panel (the grey "masked" traces excluded)."""
    return [t for t in heatmaps(fig) if t.get("coloraxis") == "coloraxis"]


@pytest.mark.parametrize("h", [1, 2, 4, 8, 16])
def test_one_heatmap_per_head_of_t_by_t_cells(h):
    tokens = ["the", "cat", "the", "mat", "."]  # "the" repeats: still 5 rows and 5 columns
    w = random_weights(h, 5)
    fig = as_json(heads_figure(w, tokens))
    maps = weight_maps(fig)
    assert len(maps) == h
    for k, trace in enumerate(maps):
        z = array(trace["z"])
        assert z.shape == (5, 5)
        np.testing.assert_allclose(z, w[k], rtol=1e-6)  # float32 on the wire
        assert len(set(trace["x"])) == 5 and len(set(trace["y"])) == 5


def test_one_shared_colour_scale_from_0_to_1():
    fig = as_json(heads_figure(random_weights(4, 6), list("abcdef")))
    axis = fig["layout"]["coloraxis"]
    assert (axis["cmin"], axis["cmax"]) == (0, 1)
    assert "colorscale" in axis
    colours = [c for _, c in axis["colorscale"]]
    assert colours[0].lower() == "#440154" and colours[-1].lower() == "#fde725"  # viridis ends
    for trace in weight_maps(fig):
        assert trace["coloraxis"] == "coloraxis"
        assert "colorscale" not in trace


def test_hover_names_query_key_and_weight():
    fig = as_json(heads_figure(random_weights(1, 3), ["a", "b", "c"]))
    [trace] = weight_maps(fig)
    template = trace["hovertemplate"]
    assert template.index("%{y}") < template.index("→") < template.index("%{x}") < template.index("%{z")
    assert trace["y"] == ["0·a", "1·b", "2·c"]


def test_causal_mask_blanks_exactly_the_strict_upper_triangle():
    t = 6
    allowed = np.tri(t, dtype=bool)
    w = random_weights(2, t) * allowed
    w /= w.sum(axis=-1, keepdims=True)
    fig = as_json(heads_figure(w, list("abcdef"), allowed))
    maps = weight_maps(fig)
    masked = [tr for tr in heatmaps(fig) if tr.get("name") == "masked"]
    assert len(maps) == 2 and len(masked) == 2
    upper = np.triu(np.ones((t, t), dtype=bool), k=1)
    for trace in maps:
        z = array(trace["z"])
        assert np.isnan(z[upper]).all() and not np.isnan(z[~upper]).any()
        assert trace["hoverongaps"] is False  # the masked trace answers the hover there
    for trace in masked:
        z = array(trace["z"])
        assert (z[upper] == 1).all() and np.isnan(z[~upper]).all()
        assert "masked" in trace["hovertemplate"]
        assert "coloraxis" not in trace  # its own flat grey, not a low weight on the shared scale
    assert len(fig["layout"]["shapes"]) == 2  # one hatch path per panel


def test_no_mask_no_masked_trace():
    fig = as_json(heads_figure(random_weights(3, 4), list("abcd"), np.ones((4, 4), dtype=bool)))
    assert len(heatmaps(fig)) == 3
    assert not fig["layout"].get("shapes")


def test_hatch_strokes_follow_anti_diagonals_of_the_masked_cells():
    allowed = np.tri(3, dtype=bool)  # masked: (0, 1), (0, 2), (1, 2)
    path = _hatch_path(allowed)
    # one "/" stroke per anti-diagonal run, corner to corner in (column, row) coordinates
    assert path == "M0.5,0.5L1.5,-0.5" + "M1.5,0.5L2.5,-0.5" + "M1.5,1.5L2.5,0.5"


@pytest.mark.parametrize("token", HOSTILE)
def test_tokens_are_escaped_in_every_label(token):
    tokens = [token, "ok", token]
    allowed = np.tri(3, dtype=bool)
    figs = [
        heads_figure(random_weights(2, 3), tokens, allowed),
    ]
    grids = [
        average_charts(random_weights(2, 3), tokens),
        permutation_charts(*random_weights(3, 3), tokens, [2, 0, 1], allowed),
    ]
    for data in [
        *map(as_json, figs),
        *(as_json(m) for g in grids for m in g.maps),
    ]:  # to_json writes "<" as \u003c: decode first
        for text in all_strings(data):
            for raw in ("<b>", "<img", "<a ", "<br>"):
                assert raw not in text, (raw, text)
            assert not text.startswith("$"), text  # plotly.js would typeset it as LaTeX
        labels = [s for tr in heatmaps(data) for s in (*tr["x"], *tr["y"])]
        assert f"0·{escaped(token)}" in labels
        for name, axis in data["layout"].items():
            if name.startswith(("xaxis", "yaxis")):
                assert all("<" not in s for s in axis.get("ticktext", []))  # hidden axes have none


def all_strings(obj) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in all_strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in all_strings(v)]
    return []


def test_long_tokens_are_cut_in_ticks_but_whole_in_hover():
    long = "supercalifragilisticexpialidocious"
    fig = as_json(heads_figure(random_weights(1, 2), [long, "x"]))
    [trace] = weight_maps(fig)
    assert trace["x"][0] == f"0·{long}"
    tick = fig["layout"]["xaxis"]["ticktext"][0]
    assert tick.startswith("0·super") and tick.endswith("…") and len(tick) == len("0·") + TICK_CHARS


def test_64_tokens_16_heads_thin_the_ticks_and_stay_under_2_mb():
    t, h = 64, 16
    tokens = [f"w{i}" for i in range(t)]
    fig = heads_figure(random_weights(h, t), tokens, np.tri(t, dtype=bool))
    size = len(fig.to_json())
    assert size < 2_000_000, size
    data = json.loads(fig.to_json())
    assert len(weight_maps(data)) == h
    x_axes = [a for name, a in data["layout"].items() if name.startswith("xaxis")]
    shown = [a for a in x_axes if a["showticklabels"]]
    assert shown and all(4 <= len(a["tickvals"]) < t for a in shown)
    assert all("tickvals" not in a for a in x_axes if not a["showticklabels"])  # hidden axes send no ticks
    assert all(len(tr["x"]) == t for tr in heatmaps(data))


def test_tick_labels_only_on_outer_panels_when_tokens_are_shared():
    fig = as_json(heads_figure(random_weights(8, 3), list("abc")))  # 4 columns x 2 rows
    layout = fig["layout"]
    shown_y = [layout[f"yaxis{'' if k == 0 else k + 1}"]["showticklabels"] for k in range(8)]
    shown_x = [layout[f"xaxis{'' if k == 0 else k + 1}"]["showticklabels"] for k in range(8)]
    assert shown_y == [True, False, False, False, True, False, False, False]
    assert shown_x == [False] * 4 + [True] * 4


def test_panels_are_square_and_inside_the_figure():
    fig = as_json(heads_figure(random_weights(5, 4), list("abcd")))  # 4 + 1 panels: a ragged last row
    layout = fig["layout"]
    for k in range(5):
        s = "" if k == 0 else str(k + 1)
        x0, x1 = layout[f"xaxis{s}"]["domain"]
        y0, y1 = layout[f"yaxis{s}"]["domain"]
        assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        assert layout[f"yaxis{s}"]["scaleanchor"] == f"x{s}"
        assert layout[f"yaxis{s}"]["range"][0] > layout[f"yaxis{s}"]["range"][1]  # row 0 on top


def test_average_is_the_mean_of_heads():
    w = random_weights(4, 5)
    [trace] = weight_maps(grid_json(average_charts(w, list("abcde"))))
    np.testing.assert_allclose(array(trace["z"]), w.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(array(trace["z"]).sum(axis=1), 1, rtol=1e-5)


def test_permutation_figure_shows_the_reordered_sentence_in_its_own_order():
    tokens = ["man", "bites", "dog"]
    perm = [2, 1, 0]
    w, pw, back = random_weights(3, 3)
    grid = permutation_charts(w, pw, back, tokens, perm)
    original, permuted, realigned = weight_maps(grid_json(grid))
    assert permuted["y"] == ["0·dog", "1·bites", "2·man"]
    assert original["y"] == realigned["y"] == ["0·man", "1·bites", "2·dog"]
    np.testing.assert_allclose(array(permuted["z"]), pw, rtol=1e-6)
    assert grid.ncols == 3  # side by side on a laptop and a projector
    reordered = as_json(grid.maps[1])["layout"]["yaxis"]
    assert reordered["showticklabels"] and reordered["ticktext"] == ["0·dog", "1·bites", "2·man"]  # its own rows


def test_realigned_mask_moves_with_the_map():
    allowed = np.tri(3, dtype=bool)
    w, pw, back = random_weights(3, 3)
    *_, realigned = weight_maps(grid_json(permutation_charts(w, pw, back, ["a", "b", "c"], [2, 0, 1], allowed)))
    z = array(realigned["z"])
    inverse = np.argsort([2, 0, 1])
    np.testing.assert_array_equal(np.isnan(z), ~allowed[inverse][:, inverse])


def test_non_square_panels_for_cross_attention():
    w = random_weights(2, 3, 5)
    panels = [Panel(w[k], ["a", "b", "c"], list("vwxyz"), f"head {k + 1}") for k in range(2)]
    fig = as_json(heatmap_grid(panels))
    for trace in weight_maps(fig):
        assert array(trace["z"]).shape == (3, 5)
        assert len(trace["x"]) == 5 and len(trace["y"]) == 3


def test_empty_grid_is_refused_and_shape_mismatch_too():
    with pytest.raises(ValueError):
        heatmap_grid([])
    with pytest.raises(ValueError):
        heads_figure(random_weights(2, 3), ["a", "b"])


def test_tick_step():
    assert tick_step(10, 20) == 1
    assert tick_step(64, 16) == 4
    assert tick_step(64, 20) == 4  # 64 / 4 = 16 labels <= 20


def test_quotes_reach_plotly_as_quotes():
    """plotly.js decodes only a few named entities (amp, lt, gt, ...): an escaped &quot; was drawn literally."""
    from dashboard.figures import position_labels

    assert position_labels(['"a"', "it's", "<b>&"]) == ['0·"a"', "1·it's", "2·&lt;b&gt;&amp;"]


# -- the class and contrast views' figures -----------------------------------------------------------------------------
def test_the_class_view_s_small_multiples_title_each_map_under_it_and_label_none_on_a_projector():
    from dashboard.figures.across import class_charts, sentence_title
    from dashboard.figures.layout import CLASS_COLUMNS, class_map_px, title_chars

    w = np.full((3, 5, 5), 0.2)
    panels = [Panel(w[k], list("abcde"), list("abcde"), f"{k + 1} · s") for k in range(3)]
    for presenter in (True, False):
        grid = class_charts(panels, presenter=presenter)
        assert grid.ncols == CLASS_COLUMNS[presenter] and len(grid.maps) == 3
        layout = grid.maps[0].to_dict()["layout"]
        [title] = [a for a in layout["annotations"] if a["name"] == "title"]
        bottom, top = layout["yaxis"]["domain"]
        if presenter:  # small multiples: the toolbar sits at the top right, so the title goes under the map
            assert (title["y"], title["yanchor"]) == (bottom, "top")
            assert not layout["xaxis"]["showticklabels"] and not layout["yaxis"]["showticklabels"]
        else:
            assert (title["y"], title["yanchor"]) == (top, "bottom")
            assert layout["xaxis"]["showticklabels"] and layout["yaxis"]["showticklabels"]
        long = sentence_title(7, "word " * 40 + "\u202e\x00<b>", presenter)
        assert long.startswith("7 · word word") and long.endswith("…")
        assert len(long) <= title_chars(class_map_px(presenter), presenter, labels=not presenter)
    assert sentence_title(2, "a\u202eb\u200bc\x1bd 👩\u200d👧", False) == "2 · a b c d 👩\u200d👧"  # joiner kept


def test_the_contrast_difference_is_centred_at_0_over_the_cells_both_sentences_see():
    from dashboard.figures.contrast import DIFFERENCE_NAME, contrast_charts
    from dashboard.figures.steps import DIVERGING

    a, b = np.full((3, 3), 1 / 3), np.eye(3)
    diff = b - a
    seen = np.tri(3, dtype=bool)
    diff_seen = np.where(seen, diff, 9.0)  # a masked cell's value must not set the scale
    charts = contrast_charts(
        Panel(a, list("xyz"), list("xyz"), "first"),
        Panel(b, list("xwz"), list("xwz"), "second"),
        Panel(diff_seen, ["x", "y/w", "z"], ["x", "y/w", "z"], "", seen, places=["0", "1", "2"]),
        presenter=False,
    )
    assert len(charts.maps.maps) == 3 and charts.limit == pytest.approx(np.abs(diff[seen]).max())
    layout = charts.maps.maps[2].to_dict()["layout"]
    assert layout["coloraxis"]["cmin"] == -layout["coloraxis"]["cmax"] == -charts.limit
    assert layout["coloraxis"]["colorscale"][0][1] == _scale_start(DIVERGING)
    [title] = [a["text"] for a in layout["annotations"] if a["name"] == "title"]
    assert title == DIFFERENCE_NAME
    trace = next(t for t in charts.maps.maps[2].to_dict()["data"] if t.get("name") != "masked")
    assert list(trace["y"]) == ["0·x", "1·y/w", "2·z"]


def _scale_start(name: str) -> str:
    from dashboard.figures.plain import colorscale

    return colorscale(name)[0][1]


def test_an_aligned_pair_s_label_carries_both_positions_and_both_tokens():
    from dashboard.figures.labels import pair_place, pair_token, position_labels, tick_texts

    places = [pair_place(i, j) for i, j in ((0, 0), (1, 2), (4, 3))]
    tokens = [pair_token(a, b) for a, b in (("the", "the"), ("<b>", "cat"), ("sat", "sat"))]
    assert places == ["0", "1/2", "4/3"] and tokens == ["the", "<b>/cat", "sat"]
    assert position_labels(tokens, places=places) == ["0·the", "1/2·&lt;b&gt;/cat", "4/3·sat"]
    assert tick_texts(tokens, places=places) == ["0·the", "1/2·&lt;b&gt;/cat", "4/3·sat"]


@given(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.floats(1e-6, 2e3, allow_nan=False, allow_infinity=False),
)
@example(zmin=858.9999999999999, span=1e-06)  # the last tick is 1 ulp above zmax (found by CI at stop 37)
@example(zmin=256.984375, span=6.103515625e-05)  # the step read from two ticks is 0.9999999997e-5 (same)
def test_a_colour_bar_s_ticks_are_round_steps_inside_its_range(zmin, span):
    """2 to ``BAR_TICKS`` ticks within [zmin, zmax], each a multiple of one step of 1, 2, 2.5 or 5 times a power of
    ten (0 among them when the range holds it), the finest such step that fits; their labels distinct, and each
    label the tick's value to a hundredth of the step."""
    zmax = zmin + span
    ticks = bar_ticks(zmin, zmax)
    assert 2 <= len(ticks) <= BAR_TICKS
    # A tick is a whole multiple of the step times the step, so it is exact only to a few ulps of its size: 859.000001
    # lies 1 ulp above a zmax of 858.9999999999999 + 1e-6, and 1e-5 read from two ticks near 257 is 0.9999999997e-5.
    ulps = 4 * np.spacing(max(abs(zmin), abs(zmax)))
    assert ticks[0] >= zmin - 1e-9 * span - ulps and ticks[-1] <= zmax + 1e-9 * span + ulps
    power = 10.0 ** math.floor(math.log10(float(ticks[1] - ticks[0])) + 1e-6)
    [step] = [r * power for r in ROUND_STEPS if math.isclose(ticks[1] - ticks[0], r * power, rel_tol=1e-6)]
    np.testing.assert_allclose(np.diff(ticks), step, rtol=1e-6)
    np.testing.assert_allclose(ticks / step, np.round(ticks / step), atol=1e-9 * max(1.0, abs(zmin)) / step)
    if zmin <= 0 <= zmax:
        assert 0.0 in ticks
    finer = [r * power / 10 for r in ROUND_STEPS] + [r * power for r in ROUND_STEPS]
    smaller = max(f for f in finer if f < step * (1 - 1e-9))
    assert math.floor(zmax / smaller + 1e-9) - math.ceil(zmin / smaller - 1e-9) + 1 > BAR_TICKS
    texts = bar_tick_texts(ticks)
    assert len(set(texts)) == len(texts)
    np.testing.assert_allclose([float(t) for t in texts], ticks, rtol=0, atol=step / 100)


def test_the_difference_bar_reads_round_values():
    """The contrast view's ±0.125 difference: -0.1 to 0.1 by 0.05, not sixths of the range (-0.0748, 0.0249...);
    the weights' bar 0 to 1 by 0.2."""
    fig = colour_bar_figure(zmin=-0.125, zmax=0.125, value_name="second − first", colorscale="RdBu_r")
    assert list(fig.layout.xaxis.ticktext) == ["-0.1", "-0.05", "0", "0.05", "0.1"]
    assert list(colour_bar_figure().layout.xaxis.ticktext) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
