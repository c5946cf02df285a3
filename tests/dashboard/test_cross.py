"""The cross view (AppTest): T_q x T_k maps, the shapes table with T_q and T_k, what causal means there,
the source box validated like the sentence, and hostile source text kept literal."""

from __future__ import annotations

import numpy as np
import pytest

from core import MAX_TOKENS, run, tokenize
from dashboard.figures import heads_figure
from dashboard.figures.layout import CELL_PX
from dashboard.state.settings import DEFAULTS
from dashboard.views.cross import DEFAULT_SOURCE
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception
from tests.dashboard.test_hostile_app import CANARY, MARKUP, check_figure_escapes_tokens, labels, user_text_leaks


def cross_maps(at) -> list[np.ndarray]:
    """Each head's weights in the cross chart (the grey "masked" overlays left out)."""
    [fig] = figures(at)
    return [array(t["z"]) for t in heatmaps(fig) if t.get("coloraxis")]


def open_cross(**query: str):
    at = make_app(view="cross", **query).run()
    no_exception(at)
    return at


def test_default_pair_draws_one_t_q_by_t_k_map_per_head_with_the_source_on_the_columns():
    at = open_cross()
    queries, source = tokenize(DEFAULTS.sentence), tokenize(DEFAULT_SOURCE)
    assert len(queries) != len(source)  # the default pair shows the maps are not square
    [fig] = figures(at)
    maps = [t for t in heatmaps(fig) if t.get("coloraxis")]
    assert len(maps) == DEFAULTS.config.n_heads
    expected = run(queries, DEFAULTS.config, source=source).trace.weights  # (h, T_q, T_k), straight from core
    for k, trace in enumerate(maps):
        assert trace["y"] == labels(queries) and trace["x"] == labels(source)
        z = array(trace["z"])
        assert z.shape == (len(queries), len(source))
        np.testing.assert_allclose(z, expected[k], rtol=1e-6)  # float32 on the wire
        np.testing.assert_allclose(z.sum(axis=1), 1, rtol=1e-5)  # a distribution over the source
    assert any(f"{len(queries)}×{len(source)} map" in c.value for c in at.caption)


def test_shapes_table_follows_t_q_and_t_k():
    at = open_cross(sentence="a b c", source="v w x y z", d_model="32", n_heads="2", causal="true")
    table = at.dataframe[0].value.set_index("tensor")["shape"].to_dict()
    assert table == {  # worked out by hand: T_q = 3, T_k = 5, d_model = 32, h = 2, d_k = 16
        "X (sentence)": "(3, 32)",
        "X_src (source)": "(5, 32)",
        "W_Q, W_K, W_V": "(32, 32)",
        "Q": "(3, 32)",
        "K, V": "(5, 32)",
        "Q per head": "(2, 3, 16)",
        "K, V per head": "(2, 5, 16)",
        "Kᵀ": "(2, 16, 5)",
        "scores": "(2, 3, 5)",
        "causal mask": "(3, 5)",
        "weights": "(2, 3, 5)",
        "context": "(2, 3, 16)",
        "concat": "(3, 32)",
        "W_O": "(32, 32)",
        "output": "(3, 32)",
    }


def test_shapes_table_adds_each_sides_positions():
    at = open_cross(sentence="a b", source="x y z", positional="sinusoidal")
    table = at.dataframe[0].value.set_index("tensor")["shape"].to_dict()
    assert table["X + P"] == "(2, 64)" and table["X_src + P"] == "(3, 64)"


@pytest.mark.parametrize(("sentence", "source"), [("a b c d e f", "x y z"), ("a b", "v w x y z")])
def test_causal_is_the_top_left_tril_and_the_page_says_what_it_means(sentence, source):
    at = open_cross(sentence=sentence, source=source, causal="true")
    t_q, t_k = len(sentence.split()), len(source.split())
    future = np.triu(np.ones((t_q, t_k), dtype=bool), k=1)  # source position j > query position i
    for z in cross_maps(at):
        assert np.array_equal(np.isnan(z), future)
        np.testing.assert_allclose(np.nansum(z, axis=1), 1, rtol=1e-5)
    [info] = at.info
    assert "top-left" in info.value and "0..i" in info.value and "no mask" in info.value


def test_without_the_mask_the_page_still_says_what_causal_would_mean():
    at = open_cross()
    assert not at.info
    assert any("top-left" in c.value and "no mask" in c.value for c in at.caption)
    assert not any(np.isnan(z).any() for z in cross_maps(at))


def test_identity_weights_find_the_word_both_sentences_share():
    """The default pair shares "bank": with W_Q = W_K = I, the query "bank" looks hardest at the source's "bank"."""
    at = open_cross(weights="identity")
    queries, source = tokenize(DEFAULTS.sentence), tokenize(DEFAULT_SOURCE)
    i, j = queries.index("bank"), source.index("bank")
    for z in cross_maps(at):
        assert z[i].argmax() == j and z[i, j] > 0.5


@pytest.mark.parametrize(
    ("source", "kind", "words"),
    [
        ("", "info", "Type a source sentence"),
        ("  \t ", "info", "Type a source sentence"),
        ("\x00\u200b", "error", "nothing to analyse"),
        (" ".join(["w"] * (MAX_TOKENS + 1)), "error", f"limit is {MAX_TOKENS}"),
        ("x" * 5000, "error", "characters"),
    ],
    ids=["empty", "blank", "invisible", "65-tokens", "5000-chars"],
)
def test_a_bad_source_gets_the_same_clear_message_as_a_bad_sentence(source, kind, words):
    at = open_cross(source=source)
    shown = [m.value for m in getattr(at, kind)]
    assert any(words in m for m in shown), shown
    assert not figures(at)


def test_a_bad_sentence_is_reported_in_the_cross_view_too():
    at = open_cross(sentence=" ".join(["w"] * (MAX_TOKENS + 1)))
    assert any(f"limit is {MAX_TOKENS}" in e.value for e in at.error)
    assert not figures(at)


@pytest.mark.parametrize(
    "query",
    [
        dict(sentence="hello", source="bonjour", n_heads="1"),
        dict(
            sentence=" ".join(f"q{i}" for i in range(MAX_TOKENS)),
            source=" ".join(f"k{i}" for i in range(MAX_TOKENS)),
            d_model="512",
            n_heads="16",
            causal="true",
            positional="learned",
        ),
        dict(sentence="one", source=" ".join(f"k{i}" for i in range(MAX_TOKENS)), positional="rope", causal="true"),
    ],
    ids=["1x1", "64x64-16-heads-causal", "1x64-rope-causal"],
)
def test_extremes(query):
    at = open_cross(**query)
    assert not at.error
    t_q, t_k = len(query["sentence"].split()), len(query["source"].split())
    maps = cross_maps(at)
    assert len(maps) == int(query.get("n_heads", DEFAULTS.config.n_heads))
    assert all(z.shape == (t_q, t_k) for z in maps)
    assert at.dataframe[0].value.set_index("tensor").loc["weights", "shape"] == f"({len(maps)}, {t_q}, {t_k})"


def test_a_link_restores_the_source_and_typing_a_new_one_redraws():
    at = open_cross(source="le chat")
    assert at.text_input(key="source").value == "le chat"
    assert all(z.shape == (8, 2) for z in cross_maps(at))
    at.text_input(key="source").input("un deux trois quatre").run()
    no_exception(at)
    assert all(z.shape == (8, 4) for z in cross_maps(at))


def test_hostile_source_text_stays_literal_and_escaped():
    source = f"{CANARY} " + " ".join(MARKUP.values())
    sentence = f"{CANARY} <b>bold</b> [x](javascript:alert(1))"
    at = open_cross(source=source, sentence=sentence)
    assert not at.error
    assert not user_text_leaks(at, CANARY)
    for raw in MARKUP.values():
        assert not user_text_leaks(at, raw), raw
    [fig] = figures(at)
    check_figure_escapes_tokens(fig, tokenize(sentence) + tokenize(source))
    assert heatmaps(fig)[0]["x"] == labels(tokenize(source))
    assert heatmaps(fig)[0]["y"] == labels(tokenize(sentence))


def test_cross_run_agrees_with_self_attention_when_the_source_is_the_sentence():
    """Same sentence on both sides, no mask: cross-attention is self-attention, map for map."""
    at = open_cross(source=DEFAULTS.sentence)
    self_weights = run(tokenize(DEFAULTS.sentence), DEFAULTS.config).trace.weights
    for k, z in enumerate(cross_maps(at)):
        np.testing.assert_allclose(z, self_weights[k], rtol=1e-6)


def _panel_px(fig, axis: str) -> float:
    """A panel's planned extent along ``axis`` ("y": pixels of its domain in the figure's height)."""
    lo, hi = fig.layout[axis].domain
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b  # domains are fractions of the plot area
    return (hi - lo) * plot_h


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 4), (3, 5), (2, 64), (64, 3)])
def test_heads_figure_puts_the_keys_on_the_columns_and_sizes_rows_to_fit(t_q, t_k):
    rng = np.random.default_rng(1)
    w = rng.random((2, t_q, t_k))
    w /= w.sum(axis=-1, keepdims=True)
    queries, keys = [f"q{i}" for i in range(t_q)], [f"k{j}" for j in range(t_k)]
    fig = heads_figure(w, queries, key_tokens=keys)
    maps = [t for t in fig.data if t.coloraxis]
    assert [(len(t.y), len(t.x)) for t in maps] == [(t_q, t_k)] * 2
    assert list(maps[0].x) == labels(keys) and list(maps[0].y) == labels(queries)
    cell_h = _panel_px(fig, "yaxis") / t_q  # planned pixels per query row
    assert cell_h <= CELL_PX + 0.5  # a short, wide map is not stretched tall
    longest = max(t_q, t_k)
    square = heads_figure(np.full((2, longest, longest), 1 / longest), [f"s{i}" for i in range(longest)])
    assert cell_h == pytest.approx(_panel_px(square, "yaxis") / longest, abs=0.5)  # same cells as a square map
    with pytest.raises(ValueError):
        heads_figure(w, queries)  # T_k keys need their own labels
