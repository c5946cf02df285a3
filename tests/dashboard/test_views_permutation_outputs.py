"""Permutation view: the output rows are compared as well as the maps, and equivariance is named."""

from __future__ import annotations

import numpy as np

from core import AttentionConfig, run, tokenize
from dashboard.state.settings import DEFAULTS
from tests.dashboard.charts import charts, grids
from tests.dashboard.conftest import make_app, no_exception


def test_output_rows_moved_back_match_and_the_page_says_equivariance():
    at = make_app(view="permutation").run()
    no_exception(at)
    original, moved_back, difference = grids(charts(at)["permutation_output_chart"])
    tokens = tokenize(DEFAULTS.sentence)
    reversed_output = run(tokens[::-1], DEFAULTS.config).trace.output  # the page's default: reverse
    np.testing.assert_allclose(moved_back, reversed_output[::-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(original, run(tokens, DEFAULTS.config).trace.output, rtol=1e-5, atol=1e-5)
    assert np.abs(difference).max() < 1e-6
    assert any("Permutation equivariance" in s.value for s in at.success)
    assert float(at.metric[1].value) < 1e-12


def test_the_causal_mask_breaks_equivariance_and_the_page_says_so():
    at = make_app(view="permutation", causal="true").run()
    no_exception(at)
    assert not any("Permutation equivariance" in s.value for s in at.success)
    assert any("Not equivariant here" in w.value for w in at.warning)
    assert float(at.metric[1].value) > 1e-3
    assert AttentionConfig().causal is False
