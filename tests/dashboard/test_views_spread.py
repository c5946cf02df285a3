"""Scaling view: the spread of raw scores against d_k, with √d_k marked, answering lesson 3's "±100"."""

from __future__ import annotations

import math

import numpy as np

from core import score_spread
from tests.dashboard.charts import charts
from tests.dashboard.conftest import make_app, no_exception


def test_the_spread_figure_draws_core_quantiles_and_marks_sqrt_d_k():
    at = make_app(view="scaling").run()
    no_exception(at)
    fig = charts(at)["spread_chart"]
    box, diamonds = fig["data"]
    result = score_spread()
    np.testing.assert_allclose(box["median"], result.quantiles[:, 3])
    np.testing.assert_allclose(box["lowerfence"], result.quantiles[:, 0])
    np.testing.assert_allclose(box["upperfence"], result.quantiles[:, -1])
    roots = [math.sqrt(d) for d in result.d_ks]
    np.testing.assert_allclose(diamonds["x"], roots + [-r for r in roots])
    assert {s["x0"] for s in fig["layout"]["shapes"]} == {-100.0, 100.0}  # lesson 3's ±100
    text = " ".join(c.value for c in at.caption)
    assert "can easily reach ±100" in text and "√512 = 22.6" in text


def test_the_caption_does_not_offer_a_toggle_the_pretrained_model_disables():
    at = make_app(view="scaling", weights="minilm").run()
    no_exception(at)
    text = " ".join(c.value for c in at.caption)
    assert "Flip “Scale scores" not in text and "keeps the factor it was trained with" in text
