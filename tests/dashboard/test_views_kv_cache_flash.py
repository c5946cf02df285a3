"""The kv_cache and flash views (AppTest): what they draw is the sidebar's attention, decoded or tiled.

The references are core's plain paths run here on the page's own settings: ``core.run`` with the
causal mask for the cache's rows, the run's scores for the flash blocks.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core import run, tokenize
from dashboard.state.settings import DEFAULTS
from tests.dashboard.charts import charts, grids, masked
from tests.dashboard.conftest import make_app, no_exception


def page(view: str, **query: str):
    at = make_app(view=view, **query).run()
    no_exception(at)
    return at


def plain_run(causal: bool, **config):
    tokens = tuple(tokenize(DEFAULTS.sentence))
    return tokens, run(tokens, replace(DEFAULTS.config, causal=causal, **config))


@pytest.mark.parametrize(
    "query", [{}, {"causal": "true"}, {"causal": "false"}, {"positional": "rope"}, {"n_heads": "2"}]
)
def test_cache_rows_are_the_full_causal_maps_rows(query):
    at = page("kv_cache", cache_step="3", **query)
    config = {"positional": query["positional"]} if "positional" in query else {}
    config |= {"n_heads": int(query["n_heads"])} if "n_heads" in query else {}
    _, full = plain_run(True, **config)
    fig = charts(at)["cache_rows_chart"]
    z, hidden = grids(fig), masked(fig)
    assert len(z) == full.trace.n_heads
    for k in range(full.trace.n_heads):
        seen = full.trace.mask[:3]  # rows 1-3: the keys each query may see
        np.testing.assert_allclose(z[k][:3][seen], full.trace.weights[k][:3][seen], atol=1e-12)
        np.testing.assert_array_equal(hidden[k][:3], ~seen)
        assert hidden[k][3:].all()  # rows not decoded by step 3
    (success,) = at.success
    assert "are the full causal map" in success.value and "e-1" in success.value  # e.g. 2.2e-16
    sidebar_causal = query["causal"] == "true" if "causal" in query else DEFAULTS.config.causal
    assert ("uses the causal mask" in " ".join(i.value for i in at.info)) == (not sidebar_causal)


@pytest.mark.parametrize("prefix", [0, 1, 3])
def test_a_prefix_is_said_not_applied_and_the_rows_are_causal(prefix):
    """kv_cache decodes with the causal mask alone: with a prefix in the sidebar the page says it is not applied,
    and the rows drawn are the plain causal map's, not the prefix-LM's (whose first rows see later keys)."""
    at = page("kv_cache", causal="true", prefix=str(prefix), cache_step="3")
    _, full = plain_run(True)
    z = grids(charts(at)["cache_rows_chart"])
    np.testing.assert_allclose(
        z[0][:3][full.trace.mask[:3]], full.trace.weights[0][:3][full.trace.mask[:3]], atol=1e-12
    )
    said = [i.value for i in at.info if "prefix" in i.value]
    assert len(said) == (prefix > 0) and all(f"prefix ({prefix} tokens" in s for s in said)


def test_cache_chart_shows_t_keys_and_values_per_kv_head():
    at = page("kv_cache", cache_step="5")
    _, full = plain_run(True)
    z = grids(charts(at)["cache_chart"])
    assert len(z) == 2 * full.trace.kv_heads
    np.testing.assert_allclose(z[0], full.trace.k[0][:5], atol=1e-12)  # K of K/V head 1, rows 1-5
    np.testing.assert_allclose(z[1], full.trace.v[0][:5], atol=1e-12)


@pytest.mark.parametrize("query", [{"n_heads": "16"}, {"n_heads": "16", "kv_heads": "8"}])
def test_more_than_four_kv_heads_draw_the_cache_of_the_one_picked(query):
    """16 K/V heads drew 32 cache charts under the 16 maps; now a "K/V head" picker and that head's K and V."""
    at = page("kv_cache", cache_step="5", **query)
    _, full = plain_run(True, **{k: int(v) for k, v in query.items()})
    kv_heads = full.trace.kv_heads
    assert at.button_group(key="cache_head").options == [str(g) for g in range(1, kv_heads + 1)]
    z = grids(charts(at)["cache_chart"])
    assert len(z) == 2
    np.testing.assert_allclose(z[0], full.trace.k[0][:5], atol=1e-12)
    at.button_group(key="cache_head").set_value(kv_heads).run()
    no_exception(at)
    fig = charts(at)["cache_chart"]
    z = grids(fig)
    assert len(z) == 2
    np.testing.assert_allclose(z[0], full.trace.k[kv_heads - 1][:5], atol=1e-12)  # K of the last K/V head
    np.testing.assert_allclose(z[1], full.trace.v[kv_heads - 1][:5], atol=1e-12)
    assert len(grids(charts(at)["cache_rows_chart"])) == 16  # every query head's map is still drawn


def test_up_to_four_kv_heads_draw_every_cache_and_no_picker():
    at = page("kv_cache", n_heads="16", kv_heads="4")
    assert not [b for b in at.button_group if b.key == "cache_head"]
    assert len(grids(charts(at)["cache_chart"])) == 8


@pytest.mark.parametrize(
    ("sentence", "said"),
    [
        ("hello", "The row the one step produced is the full causal map"),
        ("hello there", "The rows the 2 steps produced, stacked, are the full"),
    ],
)
def test_the_cache_says_one_step_or_several(sentence, said):
    (success,) = page("kv_cache", sentence=sentence).success
    assert said in success.value


def test_cache_memory_table_gives_the_models_bytes():
    at = page("kv_cache")
    df = at.dataframe[0].value
    rows = {name: row for name, row in zip(df["model"], df.to_dict("records"), strict=True)}
    assert rows["Llama 3 8B"]["per token"] == "128.0 KiB"
    assert rows["Llama 3 8B"]["at 32,768 tokens"] == "4.0 GiB"
    assert rows["Mistral 7B"]["at 32,768 tokens"] == rows["Mistral 7B"]["at 4,096 tokens"] == "512.0 MiB"
    assert rows["Llama 3 70B"]["without grouping, at 32,768"] == "80.0 GiB"
    assert "your settings" in rows


@pytest.mark.parametrize(
    ("block_size", "block", "head"), [("1", "1", None), ("3", "2", "1"), ("8", "1", "3"), ("3", "2", "4")]
)
def test_flash_block_is_the_runs_scores_for_those_keys(block_size, block, head):
    query = {} if head is None else {"flash_head": head}
    at = page("flash", block_size=block_size, block=block, causal="true", **query)
    tokens, full = plain_run(True)
    b, i, k = int(block_size), int(block), int(head or 1) - 1
    assert at.button_group(key="flash_head").value == k + 1
    start, stop = (i - 1) * b, min(i * b, len(tokens))
    fig = charts(at)["flash_block_chart"]
    (z,), overlays = grids(fig), masked(fig)
    want = full.trace.scores[k][:, start:stop]  # the chosen head's scaled scores of this block's keys
    allowed = full.trace.mask[:, start:stop]
    np.testing.assert_allclose(z[allowed], want[allowed], atol=1e-12)
    hidden = overlays[0] if overlays else np.zeros_like(allowed)  # no overlay when nothing is masked
    np.testing.assert_array_equal(hidden, ~allowed)
    (success,) = at.success
    assert f"B_c = {b}" in success.value and "acc / l" in success.value
    assert f"head {k + 1}'s attention output" in success.value


def test_flash_head_picker_retiles_another_head():
    at = page("flash", block_size="8", causal="false")  # no mask: every score is drawn
    before = grids(charts(at)["flash_block_chart"])[0]
    at.button_group(key="flash_head").set_value(2).run()
    no_exception(at)
    _, full = plain_run(False)
    after = grids(charts(at)["flash_block_chart"])[0]
    np.testing.assert_allclose(after, full.trace.scores[1][:, :8], atol=1e-12)
    assert not np.allclose(after, before)  # head 2's scores, not head 1's again


def test_flash_memory_table_compares_t_by_t_with_t_by_block():
    at = page("flash", block_size="2")
    df = at.dataframe[0].value
    assert list(df["T"])[1:] == ["4,096", "131,072"]
    assert list(df["plain: (T, T) scores"])[1:] == ["64.0 MiB", "64.0 GiB"]
    assert list(df["tiled: (T, B_c = 2) scores"])[1:] == ["32.0 KiB", "1.0 MiB"]
    # FlashAttention tiles the queries too: one 128 x 64 block of float32 scores, 32 KiB at any long T
    flash = df["FlashAttention: (B_r, B_c) = (128, 64) scores"]
    assert list(flash) == ["256 B", "32.0 KiB", "32.0 KiB"]  # at T = 8 the block is the 8 x 8 scores
    [caption] = [c.value for c in at.caption if c.value.startswith("Per head, float32")]
    assert "1.0 MiB at T = 131,072" in caption and "128 × 64" in caption and "32.0 KiB of scores" in caption
