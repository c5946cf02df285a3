"""The steps view (AppTest): one panel per step with the right shape, and numbers that chain step to step.

The chain is checked with arithmetic written here on the numbers the page sends
(float32 on the wire): Q Kᵀ gives the QKᵀ map, ÷√d_k the next, a row softmax
the weights, weights · V the context, and the context sits in its head's columns
of concat. The drawn arrays are also the one core trace's, not a recomputation.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core import run, tokenize
from dashboard.state.settings import DEFAULTS
from tests.conftest import require_minilm
from tests.dashboard.charts import charts, grids, masked, softmax_rows
from tests.dashboard.conftest import make_app, no_exception

T = len(tokenize(DEFAULTS.sentence))  # 8
STEPS = [
    "step_x_chart",
    "step_qkv_chart",
    "step_qk_chart",
    "step_scaled_chart",
    "score_probe_chart",  # after the scaling step: "Why a score is high" (dashboard/page/probes.py)
    "step_weights_chart",
    "step_context_chart",
    "step_concat_chart",
    "step_heads_sum_chart",
]
F32 = dict(rtol=1e-5, atol=1e-5)
"""The page sends float32: products of ~1-sized float32 numbers agree to ~1e-6."""


def steps(**query: str):
    at = make_app(view="steps", **query).run()
    no_exception(at)
    return at


def trace(**changes):
    return run(tokenize(DEFAULTS.sentence), replace(DEFAULTS.config, **changes))


def test_each_step_has_its_panel_shape_and_equation():
    at = steps()
    c = charts(at)
    assert list(c) == STEPS  # no mask step without the causal mask: a message instead
    shapes = {key: [g.shape for g in grids(fig)] for key, fig in c.items()}
    assert shapes == {
        "step_x_chart": [(T, 64)],
        "step_qkv_chart": [(T, 16)] * 3,
        "step_qk_chart": [(T, T)],
        "step_scaled_chart": [(T, T)],
        "score_probe_chart": [],  # bars of q_c k_c, no map
        "step_weights_chart": [(T, T)],
        "step_context_chart": [(T, 16)],
        "step_concat_chart": [(T, 64), (T, 64)],
        "step_heads_sum_chart": [(T, 64)] * 5,  # 4 heads' contributions and their sum
    }
    # One equation under each of the 8 steps, the probe's sum and the sum over heads, drawn in parts that wrap on
    # a phone (page.show_equation): X 1, Q/K/V 3 + shapes, QKᵀ 1 + shapes, ÷√d_k 1, the probe's q·k and score 2,
    # no mask 1, softmax and its m_i 2, A·V 1 + shapes, concat and Y 2 + shapes, the heads' sum and d_k 2.
    assert len(at.get("latex")) == 20
    captions = " ".join(e.value for e in at.caption)
    for shape in (f"({T}, 64)", f"({T}, 16)", f"({T}, {T})"):
        assert f"Shape {shape}" in captions
    assert any("No mask" in i.value for i in at.info)


def test_the_numbers_chain_from_step_to_step():
    c = charts(steps())
    q, k, v = grids(c["step_qkv_chart"])
    [qk] = grids(c["step_qk_chart"])
    [scaled] = grids(c["step_scaled_chart"])
    [weights] = grids(c["step_weights_chart"])
    [context] = grids(c["step_context_chart"])
    concat, output = grids(c["step_concat_chart"])
    np.testing.assert_allclose(qk, q @ k.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(scaled, qk / 4, **F32)  # d_k = 16
    np.testing.assert_allclose(weights, softmax_rows(scaled), **F32)
    np.testing.assert_allclose(context, weights @ v, **F32)
    np.testing.assert_array_equal(concat[:, :16], context)  # head 1 fills columns 0-15
    # the panels hold the one trace's arrays
    tr = trace().trace
    np.testing.assert_array_equal(weights, tr.weights[0].astype(np.float32))
    np.testing.assert_array_equal(output, tr.output.astype(np.float32))
    np.testing.assert_array_equal(grids(c["step_x_chart"])[0], trace().x.astype(np.float32))


def test_the_head_selector_picks_that_heads_slice():
    at = steps(step_head="3")
    assert at.button_group(key="step_head").value == 3
    c = charts(at)
    tr = trace().trace
    q, k, v = grids(c["step_qkv_chart"])
    np.testing.assert_array_equal(q, tr.q[2].astype(np.float32))
    np.testing.assert_array_equal(k, tr.k[2].astype(np.float32))
    np.testing.assert_array_equal(v, tr.v[2].astype(np.float32))
    concat, _ = grids(c["step_concat_chart"])
    [context] = grids(c["step_context_chart"])
    np.testing.assert_array_equal(concat[:, 32:48], context)
    [box] = [s for s in c["step_concat_chart"]["layout"]["shapes"] if s["type"] == "rect"]
    assert (box["x0"], box["x1"]) == (31.5, 47.5)
    assert any("Q_{3}" in e.value for e in at.get("latex"))
    at.button_group(key="step_head").set_value(2).run()
    np.testing.assert_array_equal(grids(charts(at)["step_qkv_chart"])[0], tr.q[1].astype(np.float32))


def test_causal_mask_adds_the_mask_step_with_masked_cells_marked():
    at = steps(causal="true")
    c = charts(at)
    assert list(c) == [*STEPS[:5], "step_mask_chart", "step_mask_conventions_chart", *STEPS[5:]]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    [cover] = masked(c["step_mask_chart"])
    assert np.array_equal(cover, future)
    [scores] = grids(c["step_mask_chart"])
    assert np.isnan(scores[future]).all() and not np.isnan(scores[~future]).any()
    [weights] = grids(c["step_weights_chart"])
    assert np.isnan(weights[future]).all()
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1, rtol=1e-5)
    assert not any("No mask" in i.value for i in at.info)


def test_rope_shows_q_and_k_before_and_after_their_rotation():
    c = charts(steps(positional="rope"))
    q0, q1, k0, k1, v = grids(c["step_qkv_chart"])
    assert all(g.shape == (T, 16) for g in (q0, q1, k0, k1, v))
    # a rotation keeps every row's length; row 0 (position 0) is not turned, the others are
    np.testing.assert_allclose(np.linalg.norm(q1, axis=1), np.linalg.norm(q0, axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(k1, axis=1), np.linalg.norm(k0, axis=1), rtol=1e-5)
    np.testing.assert_array_equal(q1[0], q0[0])
    assert not np.allclose(q1[1:], q0[1:], atol=1e-3)
    [qk] = grids(c["step_qk_chart"])
    np.testing.assert_allclose(qk, q1 @ k1.T, rtol=1e-4, atol=1e-4)  # scores use the rotated Q and K


def test_scaling_off_keeps_the_scores_as_large_as_qk_and_says_so():
    at = steps(scaled="false")
    assert any("Scaling is off" in w.value for w in at.warning)
    c = charts(at)
    [qk] = grids(c["step_qk_chart"])
    [scaled] = grids(c["step_scaled_chart"])
    np.testing.assert_array_equal(scaled, qk)
    assert any(r"S \cdot 1" in e.value for e in at.get("latex"))


@pytest.mark.parametrize(
    ("query", "t", "d", "d_k"),
    [
        (dict(sentence="word"), 1, 64, 16),
        (dict(sentence=" ".join(f"w{i}" for i in range(64)), d_model="512", n_heads="16", causal="true"), 64, 512, 32),
        (dict(d_model="8", n_heads="8", positional="learned"), T, 8, 1),
        (dict(positional="sinusoidal", step_head="4"), T, 64, 16),
    ],
    ids=["one-token", "64-tokens-16-heads-causal", "d_k-1", "sinusoidal"],
)
def test_extremes_render_every_step_with_its_shape(query, t, d, d_k):
    c = charts(steps(**query))
    assert [g.shape for g in grids(c["step_x_chart"])] == [(t, d)]
    assert [g.shape for g in grids(c["step_qkv_chart"])] == [(t, d_k)] * 3
    assert [g.shape for g in grids(c["step_weights_chart"])] == [(t, t)]
    assert [g.shape for g in grids(c["step_concat_chart"])] == [(t, d), (t, d)]


def test_masked_scores_share_the_colour_range_of_steps_3_and_4():
    c = charts(steps(causal="true"))
    ranges = {key: (c[key]["layout"]["coloraxis"]["cmin"], c[key]["layout"]["coloraxis"]["cmax"]) for key in STEPS[2:4]}
    ranges["step_mask_chart"] = (
        c["step_mask_chart"]["layout"]["coloraxis"]["cmin"],
        c["step_mask_chart"]["layout"]["coloraxis"]["cmax"],
    )
    assert len(set(ranges.values())) == 1, ranges


def test_the_mask_is_drawn_as_0_1_in_the_three_conventions():
    at = steps(causal="true")
    keep, hidden, may_attend = grids(charts(at)["step_mask_conventions_chart"])
    tril = np.tril(np.ones((T, T)))  # lesson 1: 1 = keep
    np.testing.assert_array_equal(keep, tril)
    np.testing.assert_array_equal(hidden, np.triu(np.ones((T, T)), 1))  # lesson 3: True = hidden
    np.testing.assert_array_equal(may_attend, tril)  # this app: True = may attend
    text = " ".join(e.value for e in at.caption)
    assert "1 = keep" in text and "True = hidden" in text and "True = may attend" in text
    off = steps()
    assert "step_mask_conventions_chart" not in charts(off)  # no mask applied: no matrix drawn as if it were
    assert any("With the causal mask on" in e.value for e in off.caption)


@pytest.mark.parametrize("n_heads", ["1", "4", "8"])
def test_each_heads_contribution_sums_to_the_output(n_heads):
    at = steps(n_heads=n_heads)
    h = int(n_heads)
    *parts, total = grids(charts(at)["step_heads_sum_chart"])
    tr = trace(n_heads=h).trace
    d_k = 64 // h
    w_o = run(tokenize(DEFAULTS.sentence), replace(DEFAULTS.config, n_heads=h)).projections.w_o
    # head i meets rows i*d_k..(i+1)*d_k-1 of W_O, written out here
    want = [tr.context[i] @ w_o[i * d_k : (i + 1) * d_k] for i in range(h)]
    if h <= 4:  # every head drawn
        assert len(parts) == h
    else:  # the chosen head (1) and the other h - 1 added up: the figure stays small at 16 heads
        assert len(parts) == 2
        want = [want[0], np.sum(want[1:], axis=0)]
    for part, expected in zip(parts, want, strict=True):
        np.testing.assert_allclose(part, expected, **F32)
    np.testing.assert_allclose(np.sum(parts, axis=0), total, **F32)
    np.testing.assert_array_equal(total, tr.output.astype(np.float32))
    caption = " ".join(e.value for e in at.caption)
    assert "np.concatenate(heads, axis=1)" in caption and "must be added" in caption
    assert any(r"\sum_{h=1}" in e.value for e in at.get("latex"))
    assert "all 1 heads" not in caption


def test_pretrained_steps_add_the_biases_to_the_equations():
    require_minilm()
    at = steps(weights="minilm")
    latex = " ".join(e.value for e in at.get("latex"))
    assert "b_Q^{(1)}" in latex and "W_O + b_O" in latex
    assert any("plus the bias b_O" in e.value for e in at.caption)


def scripts_in_scripts(tex: str) -> list[int]:
    """Offsets in ``tex`` of a sub- or superscript (or a prime) inside another's braces: KaTeX draws it at half the
    formula's size, 14.5 px on a projector whose page text is 20 px or more."""
    groups: list[bool] = []  # the open brace groups, innermost last: True for a script's
    nested, after_script = [], False
    for i, c in enumerate(tex):
        if c in "^_'" and any(groups) and tex[i - 1] != "\\":
            nested.append(i)
        if c == "{":
            groups.append(after_script)
        elif c == "}" and groups:
            groups.pop()
        after_script = c in "^_"
    return nested


def test_scripts_in_scripts_are_found():
    old = r"e^{S_{ij} - \max_{j'} S_{ij'}}"  # every script of the exponent is inside it: S_, max_, ', S_, '
    assert [old[i] for i in scripts_in_scripts(old)] == ["_", "_", "'", "_", "'"]
    assert scripts_in_scripts(r"Q_{1} = X W_Q^{(1)},\; \sum_{h=1}^{4} Z_h") == []


@pytest.mark.parametrize("query", [{}, {"positional": "rope"}, {"alibi": "true", "causal": "true"}])
def test_no_formula_has_a_script_inside_a_script(query):
    """The softmax step read e^{S_{ij} - max_{j'} S_{ij'}}: its inner scripts were 10-14.6 px on a projector."""
    latex = [e.value for e in steps(presenter="true", **query).get("latex")]
    assert latex
    assert not [(tex, scripts_in_scripts(tex)) for tex in latex if scripts_in_scripts(tex)]
