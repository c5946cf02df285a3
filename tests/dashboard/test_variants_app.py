"""The sidebar's variant controls (kv_heads, window, prefix, alibi) through the URL: each value reaches the run
the page draws, the combinations say what they do, and a value a source cannot use is refused with a reason."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from core import alibi_bias, attention_mask
from tests.dashboard.charts import charts, grids, masked
from tests.dashboard.conftest import make_app, no_exception


def texts(at) -> str:
    kinds = ("caption", "warning", "info", "markdown", "subheader")
    return (
        "\n".join(e.value for kind in kinds for e in getattr(at, kind))
        + "\n"
        + "\n".join(str(v) for frame in at.dataframe for v in frame.value.to_numpy().ravel())
    )


def test_every_variant_control_is_url_bound_with_help():
    at = make_app(kv_heads="2", window="3", prefix="2", alibi="true", causal="true").run()
    no_exception(at)
    assert at.sidebar.segmented_control(key="kv_heads").value == 2
    assert at.sidebar.number_input(key="window").value == 3
    assert at.sidebar.number_input(key="prefix").value == 2
    assert at.sidebar.toggle(key="alibi").value is True
    for widget in (at.sidebar.number_input(key="window"), at.sidebar.number_input(key="prefix")):
        assert widget.help
    assert at.sidebar.toggle(key="alibi").help and "replaces position embeddings" in at.sidebar.toggle(key="alibi").help


def test_grouped_heads_reach_the_shapes_view_with_the_repeat_and_the_saving():
    at = make_app(view="shapes", kv_heads="2").run()  # d_model 64, 4 heads, d_k 16, 8 tokens
    no_exception(at)
    table = dict(zip(at.dataframe[0].value["tensor"], at.dataframe[0].value["shape"], strict=True))
    assert table["W_K, W_V"] == "(64, 32)" and table["K, V per K/V head"] == "(2, 8, 16)"
    assert table["K, V repeated"] == "(4, 8, 16)"
    assert "4,096 weights instead of 8,192" in texts(at) and "2× less" in texts(at)


def test_heads_view_titles_each_map_with_its_kv_head():
    at = make_app(kv_heads="2").run()
    no_exception(at)
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]  # one chart per map
    titles = [a["text"] for fig in charts for a in fig["layout"].get("annotations", [])]
    assert {"head 1 · K/V 1", "head 2 · K/V 1", "head 3 · K/V 2", "head 4 · K/V 2"} <= set(titles)
    assert "heads 1–2 read K/V head 1; heads 3–4 read K/V head 2" in texts(at)


def test_window_with_prefix_draws_that_mask_and_says_its_rule():
    at = make_app(view="steps", causal="true", window="2", prefix="3").run()
    no_exception(at)
    [cover] = masked(charts(at)["step_mask_chart"])  # (8, 8): True where the chart greys a cell out
    np.testing.assert_array_equal(~cover, attention_mask(8, causal=True, window=2, prefix=3))
    assert "A prefix of 3: the first 3 tokens see each other both ways; every later query i sees keys i−1..i" in texts(
        at
    )


def test_prefix_without_causal_changes_nothing_and_the_page_says_so():
    at = make_app(view="steps", prefix="3").run()
    no_exception(at)
    assert "the prefix changes nothing" in "\n".join(c.value for c in at.sidebar.caption)
    assert "No mask" in texts(at) and "a prefix alone changes nothing" in texts(at)


def test_alibi_draws_its_bias_as_a_step():
    at = make_app(view="steps", alibi="true", causal="true", step_head="2").run()
    no_exception(at)
    [z] = grids(charts(at)["step_bias_chart"])  # (8, 8): head 2's bias, on the cells the causal mask lets through
    seen = np.tril(np.ones((8, 8), dtype=bool))
    np.testing.assert_allclose(z[seen], alibi_bias(4, 8)[1][seen], rtol=0, atol=1e-12)
    assert np.isnan(z[~seen]).all()  # above the diagonal +m·(j − i) is never used: not drawn
    assert "slopes m = 1/4, 1/16, 1/64, 1/256" in texts(at)


def test_alibi_with_a_position_table_says_it_replaces_them():
    at = make_app(alibi="true", positional="sinusoidal").run()
    assert "meant with positional = none" in "\n".join(c.value for c in at.sidebar.caption)


def test_kv_heads_not_dividing_n_heads_falls_back_with_a_note():
    at = make_app(kv_heads="3").run()
    no_exception(at)
    assert at.sidebar.segmented_control(key="kv_heads").value == 4
    assert any("kv_heads must be one of 1, 2, 4: showing kv_heads = 4" in w.value for w in at.warning)


def test_hand_built_weights_refuse_grouping_with_a_reason():
    at = make_app(weights="identity", kv_heads="2").run()
    no_exception(at)
    assert at.sidebar.segmented_control(key="kv_heads").disabled
    assert any("no grouped form" in w.value for w in at.warning)


def test_alibi_on_minilm_is_refused_with_a_reason():
    from tests.conftest import require_minilm

    require_minilm()
    at = make_app(weights="minilm", alibi="true").run()
    no_exception(at)
    assert at.sidebar.toggle(key="alibi").disabled
    assert any("ALiBi's bias: it is not in its weights" in w.value for w in at.warning)


def test_steps_name_the_shared_kv_head_in_every_step():
    at = make_app(view="steps", kv_heads="2", step_head="3").run()  # head 3 reads K/V head 2
    no_exception(at)
    latex = "\n".join(e.value for e in at.get("latex"))
    assert "K_{2} = X W_K^{(2)}" in latex and "K_{2}^{\\top}" in latex and "A\\,V_{2}" in latex
    assert "K_{3}" not in latex and "V_{3}" not in latex


def test_kv_cache_view_decodes_with_the_window_alibi_and_grouped_heads_exactly():
    from core import tokenize
    from dashboard.compute import computations
    from dashboard.state.settings import DEFAULTS

    config = replace(DEFAULTS.config, kv_heads=2, window=3, prefix=2, alibi=True)
    cached = computations.cache_run(tuple(tokenize(DEFAULTS.sentence)), config)
    assert cached.steps[-1].k_cache.shape == (2, 8, 16) and cached.max_diff <= 1e-12
    assert cached.full.trace.bias is not None and not cached.full.trace.mask[0, 1]  # causal, no prefix
    at = make_app(view="kv_cache", kv_heads="2", window="3", alibi="true").run()
    no_exception(at)
