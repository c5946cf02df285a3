"""The scaling view and the sidebar's "scaled" toggle (AppTest).

The curves must go the right way (unscaled: largest weight up toward 1, entropy
down toward 0; scaled: flat), be core.scaling_experiment's numbers, and the
toggle must make every view's heads collapse toward one-hot and say so.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import scaling_experiment
from dashboard.figures.scaling import CURRENT
from tests.dashboard.charts import charts
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception


def curves(fig: dict) -> dict[tuple[str, str], np.ndarray]:
    """(chart, curve name) -> y values, the charts named "x" (largest weight) and "x2" (entropy) in page order;
    the current-d_k marker left out. ``fig``: the view's two charts merged (``charts``), two curves each."""
    drawn = [t for t in fig["data"] if t["name"] != CURRENT]
    return {(("x", "x2")[i // 2], t["name"]): array(t["y"]) for i, t in enumerate(drawn)}


def test_the_curves_are_core_scaling_experiment_and_go_the_right_way():
    at = make_app(view="scaling").run()
    no_exception(at)
    fig = charts(at)["scaling_chart"]
    c = curves(fig)
    expected = scaling_experiment()
    assert array(fig["data"][0]["x"]).tolist() == list(expected.d_ks)
    np.testing.assert_array_equal(c[("x", "with ÷√d_k")], expected.max_weight_scaled)
    np.testing.assert_array_equal(c[("x", "without ÷√d_k")], expected.max_weight_unscaled)
    np.testing.assert_array_equal(c[("x2", "with ÷√d_k")], expected.entropy_scaled)
    np.testing.assert_array_equal(c[("x2", "without ÷√d_k")], expected.entropy_unscaled)

    unscaled_max, unscaled_h = c[("x", "without ÷√d_k")], c[("x2", "without ÷√d_k")]
    assert (np.diff(unscaled_max) > 0).all() and unscaled_max[-1] > 0.9  # toward one-hot
    assert (np.diff(unscaled_h) < 0).all() and unscaled_h[-1] < 0.25  # entropy toward 0
    scaled_max, scaled_h = c[("x", "with ÷√d_k")], c[("x2", "with ÷√d_k")]
    assert np.ptp(scaled_max) < 0.05 and np.ptp(scaled_h) < 0.1  # flat in d_k
    assert fig["layout"]["xaxis"]["type"] == "log"
    marks = [t for t in fig["data"] if t["name"] == CURRENT]
    assert [array(t["x"]).tolist() for t in marks] == [[16, 16, 16]] * 2  # defaults: d_k = 64 / 4, a vertical line


def test_the_sentence_table_is_sharper_without_the_factor():
    at = make_app(view="scaling").run()
    table = at.dataframe[0].value.set_index("scores")
    peak = table["largest weight in a row"]
    spread = table["spread (entropy ÷ log keys)"]
    assert peak["without ÷√d_k"] > peak["with ÷√d_k"]
    assert spread["without ÷√d_k"] < spread["with ÷√d_k"]
    assert not at.warning  # scaling is on


def row_peaks(at) -> float:
    """Mean over the heads view's maps of each row's largest weight."""
    maps = [array(t["z"]) for t in heatmaps(figures(at)[0]) if t.get("name") != "masked"]
    return float(np.mean([z.max(axis=1).mean() for z in maps]))


def test_the_toggle_makes_the_heads_collapse_and_the_heads_view_says_so():
    at = make_app(d_model="512", n_heads="1").run()  # heads view, d_k = 512
    no_exception(at)
    scaled_peak = row_peaks(at)
    assert not at.warning
    at.toggle(key="scaled").set_value(False).run()
    no_exception(at)
    assert any("Scaling is off" in w.value for w in at.warning)
    unscaled_peak = row_peaks(at)
    assert unscaled_peak > 0.9 > scaled_peak  # near one-hot at d_k = 512


@pytest.mark.parametrize("view", ["scaling", "summary", "steps", "heads"])
def test_every_weights_view_says_when_scaling_is_off(view):
    at = make_app(view=view, scaled="false").run()
    no_exception(at)
    assert at.toggle(key="scaled").value is False
    assert any("Scaling is off" in w.value for w in at.warning), view


@pytest.mark.parametrize(
    "query",
    [dict(sentence="word"), dict(sentence=" ".join(f"w{i}" for i in range(64)), d_model="512", n_heads="16")],
    ids=["one-token", "64-tokens-16-heads"],
)
def test_extremes(query):
    at = make_app(view="scaling", **query).run()
    no_exception(at)
    assert len(curves(charts(at)["scaling_chart"])) == 4
