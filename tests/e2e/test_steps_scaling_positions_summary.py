"""Steps, scaling, positions and summary views in a real browser, one interaction each.

Values are read from what plotly.js drew (each heatmap's calcdata, each bar
trace's drawn points), after a click or a typed value went through the server.
The conftest's ``page`` fixture fails any test during which an ``stException``
element appeared or the page threw.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from bench.streamlit_server import wait_heatmaps, wait_idle
from tests.dashboard.conftest import make_app
from tests.e2e.dom import choose_segment, flip_toggle, heads_z, type_text

pytestmark = pytest.mark.e2e

# Drawn heatmaps of one chart, on a colour axis (value maps; the grey "masked" overlays have none).
_DRAWN = """(chart) => [...document.querySelectorAll(chart + ' g.hm')]
    .filter((g) => g.querySelector('image') && g.__data__ && g.__data__[0].trace.coloraxis)
    .map((g) => g.__data__[0])
    .map((cd) => ({name: cd.trace.name,
                   z: Array.from(cd.z, (row) => Array.from(row, (v) => (Number.isFinite(v) ? v : null)))}))"""
# Drawn bars per trace of one chart: {trace name: number of bars drawn}.
_BARS = """(chart) => Object.fromEntries([...document.querySelectorAll(chart + ' g.trace.bars')]
    .map((g) => [g.__data__[0].trace.name, g.querySelectorAll('g.point path').length]))"""


def chart(key: str) -> str:
    return f".st-key-{key} .js-plotly-plot"


def drawn(page, key: str) -> dict[str, np.ndarray]:
    """Panel name -> the grid plotly.js drew for it (NaN in a gap)."""
    return {d["name"]: np.array(d["z"], dtype=np.float64) for d in page.evaluate(_DRAWN, chart(key))}


def wait_drawn(page, key: str, n: int, timeout: float = 60) -> None:
    """Until chart ``key`` shows exactly ``n`` value heatmaps."""
    page.wait_for_function(f"(chart) => ({_DRAWN})(chart).length === {n}", arg=chart(key), timeout=timeout * 1000)


def until(check, timeout: float = 30) -> None:
    """Poll ``check()`` until it is true: plotly.js redraws a moment after the script run ends."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the page did not change as expected"
        time.sleep(0.1)


def open_view(page, url: str, query: str) -> None:
    page.goto(f"{url}/?{query}")
    wait_idle(page)


def test_steps_head_selector_redraws_every_step(page, server):
    open_view(page, server, "view=steps")
    wait_drawn(page, "step_qkv_chart", 3)
    sent = len(make_app(view="steps").run().get("plotly_chart"))  # the script's charts: one per panel (layout)
    until(lambda: page.locator("[data-testid='stPlotlyChart']").count() == sent)  # every chart it sends is drawn
    before = drawn(page, "step_qkv_chart")["Q1"]
    choose_segment(page, "step_head", "2")
    until(lambda: "Q2" in drawn(page, "step_qkv_chart"))
    assert "step_head=2" in page.url
    qkv = drawn(page, "step_qkv_chart")
    q, k = qkv["Q2"], qkv["K2"]
    assert q.shape == (8, 16) and not np.allclose(q, before)
    [qk] = drawn(page, "step_qk_chart").values()
    np.testing.assert_allclose(qk, q @ k.T, rtol=1e-4, atol=1e-4)  # the drawn steps chain


def test_scaling_toggle_collapses_the_heads(page, server):
    open_view(page, server, "view=scaling&d_model=512&n_heads=1")
    page.locator(chart("scaling_chart")).first.wait_for()
    flip_toggle(page, "scaled")
    page.locator("[data-testid='stAlert']", has_text="Scaling is off").wait_for()
    assert "scaled=false" in page.url
    choose_segment(page, "view", "heads")
    wait_heatmaps(page, 1)
    page.locator("[data-testid='stAlert']", has_text="Scaling is off").wait_for()
    [weights] = heads_z(page)
    assert weights.max(axis=1).mean() > 0.9  # d_k = 512 unscaled: nearly one-hot rows


def test_positions_shift_leaves_rope_and_moves_sinusoidal(page, server):
    open_view(page, server, "view=positions")
    wait_drawn(page, "shift_chart", 9)
    type_text(page, "shift", "3")
    until(lambda: "rope: positions 3–10" in drawn(page, "shift_chart"))
    assert "shift=3" in page.url
    maps = drawn(page, "shift_chart")
    assert maps["rope: |difference|"].max() < 1e-6
    assert maps["sinusoidal: |difference|"].max() > 1e-3
    assert maps["learned: |difference|"].max() > 1e-3


def test_summary_follows_the_head_count(page, server):
    open_view(page, server, "view=summary")
    page.wait_for_function(f"(chart) => Object.keys(({_BARS})(chart)).length === 4", arg=chart("summary_chart"))
    assert set(page.evaluate(_BARS, chart("summary_chart")).values()) == {4}
    choose_segment(page, "n_heads", "8")
    until(lambda: set(page.evaluate(_BARS, chart("summary_chart")).values()) == {8})
    assert page.locator("[data-testid='stDataFrame']").count() == 1
