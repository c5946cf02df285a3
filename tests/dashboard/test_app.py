"""The dashboard as a user drives it: AppTest runs the real script headless.

Each control is checked on what it should change in the figure JSON or the page.
"""

from __future__ import annotations

import numpy as np

from core import tokenize
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception


def weight_maps(at) -> list[np.ndarray]:
    """The weights of every head in the page's first chart (the grey "masked" traces excluded)."""
    fig = figures(at)[0]
    return [array(t["z"]) for t in heatmaps(fig) if t.get("name") != "masked"]


def view(at, slug: str):
    at.button_group(key="view").set_value(slug).run()
    no_exception(at)
    return at


def test_default_page_renders_the_heads(app):
    no_exception(app)
    maps = weight_maps(app)
    assert len(maps) == 4  # defaults: 4 heads
    for z in maps:
        assert z.shape == (8, 8)  # "The bank of the river gave a loan": 8 tokens
        np.testing.assert_allclose(z.sum(axis=1), 1, rtol=1e-5)  # softmax rows


def test_default_shows_repeated_word_as_identical_rows(app):
    # "the" at positions 0 and 3, no positional encoding: same rows and columns in every head
    for z in weight_maps(app):
        np.testing.assert_allclose(z[0], z[3], atol=1e-6)
        np.testing.assert_allclose(z[:, 0], z[:, 3], atol=1e-6)


def test_head_count_control_changes_the_number_of_maps(app):
    for h in (1, 8, 16, 2):
        app.button_group(key="n_heads").set_value(h).run()
        no_exception(app)
        maps = weight_maps(app)
        assert len(maps) == h and all(z.shape == (8, 8) for z in maps)


def test_causal_masks_the_strict_upper_triangle(app):
    app.toggle(key="causal").set_value(True).run()
    no_exception(app)
    upper = np.triu(np.ones((8, 8), dtype=bool), k=1)
    maps = weight_maps(app)
    assert len(maps) == 4
    for z in maps:
        assert np.isnan(z[upper]).all()
        np.testing.assert_allclose(np.nansum(z, axis=1), 1, rtol=1e-5)
    masked = [t for t in heatmaps(figures(app)[0]) if t.get("name") == "masked"]
    assert len(masked) == 4 and all("masked" in t["hovertemplate"] for t in masked)


def test_d_model_change_sets_the_head_options_and_keeps_a_valid_count(app):
    app.button_group(key="n_heads").set_value(16).run()
    app.selectbox(key="d_model").set_value(8).run()
    no_exception(app)
    heads = app.button_group(key="n_heads")
    assert heads.options == ["1", "2", "4", "8"]
    assert heads.value == 8  # 16 no longer divides 8: the nearest valid count
    assert len(weight_maps(app)) == 8
    app.selectbox(key="d_model").set_value(256).run()
    assert app.button_group(key="n_heads").value == 8  # still valid: kept
    assert app.button_group(key="n_heads").options == ["1", "2", "4", "8", "16"]


def test_rope_needs_an_even_d_k(app):
    app.selectbox(key="d_model").set_value(8).run()
    app.button_group(key="n_heads").set_value(8).run()
    app.button_group(key="positional").set_value("rope").run()
    no_exception(app)
    heads = app.button_group(key="n_heads")
    assert "8" not in heads.options  # d_k = 1 cannot be rotated in pairs
    assert heads.value == 4


def test_sentence_control_sets_t(app):
    app.text_input(key="sentence").input("dog bites man").run()
    no_exception(app)
    assert all(z.shape == (3, 3) for z in weight_maps(app))
    fig = figures(app)[0]
    assert heatmaps(fig)[0]["y"] == ["0·dog", "1·bites", "2·man"]


def test_seed_and_positional_change_the_weights(app):
    base = weight_maps(app)
    app.number_input(key="seed").set_value(3).run()
    reseeded = weight_maps(app)
    assert not np.allclose(base[0], reseeded[0])
    app.button_group(key="positional").set_value("sinusoidal").run()
    no_exception(app)
    positioned = weight_maps(app)
    assert not np.allclose(reseeded[0], positioned[0])
    assert not np.allclose(positioned[0][0], positioned[0][3])  # the two "the" now differ


def test_average_toggle_adds_the_mean_map(app):
    app.toggle(key="average").set_value(True).run()
    no_exception(app)
    heads_fig, average_fig = figures(app)
    heads = [array(t["z"]) for t in heatmaps(heads_fig)]
    [mean] = [array(t["z"]) for t in heatmaps(average_fig)]
    np.testing.assert_allclose(mean, np.mean(heads, axis=0), atol=1e-6)


def test_only_the_chosen_view_is_drawn(app):
    view(app, "tokens")
    assert not app.get("plotly_chart")
    table = app.dataframe[0].value
    assert list(table["token"]) == tokenize("The bank of the river gave a loan")
    assert list(table["position"]) == list(range(8))
    assert list(table["same embedding as position"]) == ["", "", "", "0", "", "", "", ""]  # the second "the"
    # A phone shows the grid's first three columns: the repeat, the view's point, is one of them
    assert list(table.columns) == ["position", "token", "same embedding as position", "code points"]


def test_shapes_view_states_every_shape_for_the_current_numbers():
    at = make_app(sentence="a b c", d_model="32", n_heads="2", view="shapes", causal="true").run()
    no_exception(at)
    table = at.dataframe[0].value.set_index("tensor")["shape"]
    expected = {  # worked out by hand for T = 3, d_model = 32, h = 2, d_k = 16
        "X": "(3, 32)",
        "W_Q, W_K, W_V": "(32, 32)",
        "Q, K, V": "(3, 32)",
        "Q, K, V split": "(3, 2, 16)",  # (T, h, d_k): after the reshape, before the transpose
        "Q, K, V per head": "(2, 3, 16)",
        "Kᵀ": "(2, 16, 3)",
        "scores": "(2, 3, 3)",
        "causal mask": "(3, 3)",
        "weights": "(2, 3, 3)",
        "context": "(2, 3, 16)",
        "context, swapped back": "(3, 2, 16)",
        "concat": "(3, 32)",
        "W_O": "(32, 32)",
        "output": "(3, 32)",
    }
    assert table.to_dict() == expected
    latex = at.get("latex")[0].value
    assert r"\frac{32}{2} = 16" in latex


def test_permutation_verdict_flips_with_positional_encoding_and_causal_mask():
    at = make_app(view="permutation").run()
    no_exception(at)
    assert at.success and not at.warning  # reversed sentence, no positions, no mask: same map
    assert float(at.metric[0].value) < 1e-12
    table = at.dataframe[0].value.set_index("setting")["order visible?"]
    assert table.to_dict() == {
        "no positional encoding, no mask": "no",
        "sinusoidal positional encoding": "yes",
        "learned positional encoding": "yes",
        "rope positional encoding": "yes",
        "causal mask": "yes",
        "ALiBi's bias": "no",  # a reversal keeps every distance |i − j|, all ALiBi reads
    }

    at.button_group(key="positional").set_value("sinusoidal").run()
    no_exception(at)
    assert at.warning and not at.success
    assert float(at.metric[0].value) > 1e-3
    assert "positional encoding" in at.warning[0].value

    at.button_group(key="positional").set_value("rope").run()
    no_exception(at)
    assert at.warning and "RoPE" in at.warning[0].value

    at.button_group(key="positional").set_value("none").run()
    at.toggle(key="causal").set_value(True).run()
    no_exception(at)
    assert at.warning and "causal mask" in at.warning[0].value


def test_what_breaks_the_symmetry_changes_one_setting_at_a_time():
    """Each row turns on one thing: its first row has no mask and no bias even when the sidebar has a window and
    ALiBi (it said "no positional encoding, no mask" over the sidebar's window), and ALiBi's row shows a shuffle."""
    at = make_app(view="permutation", window="2", alibi="true", perm_mode="shuffle").run()
    no_exception(at)
    table = at.dataframe[-1].value.set_index("setting")["order visible?"]
    assert table["no positional encoding, no mask"] == "no"
    assert table["ALiBi's bias"] == "yes" and table["causal mask"] == "yes"


def test_permutation_shows_both_orders_and_the_realigned_map():
    at = make_app(view="permutation", sentence="man bites dog").run()
    fig, _outputs = figures(at)  # the maps, then the output rows
    original, permuted, realigned = (t for t in heatmaps(fig) if t.get("name") != "masked")
    assert original["y"] == ["0·man", "1·bites", "2·dog"]
    assert permuted["y"] == ["0·dog", "1·bites", "2·man"]
    np.testing.assert_allclose(array(realigned["z"]), array(original["z"]), atol=1e-6)


def test_typed_reordering_is_validated_as_a_rearrangement():
    at = make_app(view="permutation", sentence="man bites dog", perm_mode="retype").run()
    no_exception(at)
    assert at.info  # nothing typed yet: a prompt, no chart
    at.text_input(key="perm_text").input("dog bites man").run()
    no_exception(at)
    assert at.success and figures(at)
    at.text_input(key="perm_text").input("dog bites cat").run()
    no_exception(at)
    assert at.warning and "not a rearrangement" in at.warning[0].value
    assert not figures(at)


def reordered_words(at) -> list[str]:
    """Row tokens of the middle panel (the reordered sentence), without the "i·" prefix."""
    return [label.split("·", 1)[1] for label in heatmaps(figures(at)[0])[1]["y"]]


def test_random_reordering_has_its_own_seed():
    at = make_app(view="permutation", perm_mode="shuffle", sentence="a b c d e f g h").run()
    no_exception(at)
    first = reordered_words(at)
    at.number_input(key="perm_seed").set_value(7).run()
    second = reordered_words(at)
    assert sorted(first) == sorted(second) == list("abcdefgh")
    assert first != second and list("abcdefgh") not in (first, second)
    assert at.success  # still no positions: still the same map


def test_every_view_renders_at_the_extremes():
    long = " ".join(f"w{i}" for i in range(64))
    cases = [
        dict(sentence="hello", n_heads="1"),
        dict(sentence=long, d_model="512", n_heads="16", causal="true", positional="learned"),
    ]
    for query in cases:
        at = make_app(**query).run()
        no_exception(at)
        t = len(query["sentence"].split())
        assert [z.shape for z in weight_maps(at)] == [(t, t)] * int(query["n_heads"])
        for slug in ("tokens", "shapes", "permutation", "heads"):
            view(at, slug)
            assert not at.error
