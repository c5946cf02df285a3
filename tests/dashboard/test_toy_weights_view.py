"""Toy weights on the page (AppTest): each choice draws the pattern its caption promises,
the previous-token head says when it lacks its position table and fixes it in one click,
and the head options follow core.head_counts."""

from __future__ import annotations

import numpy as np
import pytest

from core import POSITIONAL_KINDS, head_counts, tokenize
from dashboard.page.weight_notes import FIX_LABEL
from dashboard.state.settings import D_MODELS, DEFAULTS, MAX_HEADS
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception


def head_maps(at) -> list[np.ndarray]:
    """Each head's weights in the page's first chart (masked overlays left out)."""
    return [array(t["z"]) for t in heatmaps(figures(at)[0]) if t.get("coloraxis")]


def look_alike_mass(z: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Per query row ``(T,)``: the weight it puts on keys holding the same word as itself (itself included)."""
    same = np.array([[a == b for b in tokens] for a in tokens])  # (T, T)
    return (np.nan_to_num(z) * same).sum(axis=1)


def test_identity_weights_make_repeated_words_attend_to_each_other():
    """'the' sits at 0 and 3: with W_Q = W_K = I each copy of 'the' looks hardest at both copies."""
    at = make_app(weights="identity").run()
    no_exception(at)
    tokens = tokenize(DEFAULTS.sentence)
    twins = [i for i, t in enumerate(tokens) if t == "the"]
    assert twins == [0, 3]
    maps = head_maps(at)
    assert len(maps) == DEFAULTS.config.n_heads
    for z in maps:
        for i in twins:
            assert set(np.argsort(z[i])[-2:]) == set(twins)  # its two largest weights: itself and its twin
            assert z[i, twins].sum() > 0.6
        assert look_alike_mass(z, tokens).mean() > 0.6  # every word: mostly itself and its copies


def test_random_weights_do_not_promise_that():
    """The same measure is small for the random default: the pattern comes from the weights, not the sentence."""
    at = make_app().run()
    tokens = tokenize(DEFAULTS.sentence)
    for z in head_maps(at):
        assert look_alike_mass(z, tokens).mean() < 0.3


@pytest.mark.parametrize("causal", ["false", "true"])
def test_previous_token_head_draws_the_sub_diagonal(causal):
    at = make_app(weights="previous", positional="learned", causal=causal).run()
    no_exception(at)
    assert not at.warning  # it has its position table: nothing to fix
    t = len(tokenize(DEFAULTS.sentence))
    for z in head_maps(at):
        z = np.nan_to_num(z)  # masked cells (causal) arrive as NaN gaps
        sub = z[np.arange(1, t), np.arange(t - 1)]  # weight of query i on key i - 1
        assert (sub > 0.5).all()
        assert (z[1:].argmax(axis=1) == np.arange(t - 1)).all()


def test_previous_token_head_at_64_tokens_and_16_heads():
    sentence = " ".join(f"w{i}" for i in range(64))
    at = make_app(sentence=sentence, weights="previous", positional="learned", d_model="512", n_heads="16").run()
    no_exception(at)
    maps = head_maps(at)
    assert len(maps) == 16
    for z in maps:
        assert (z[1:].argmax(axis=1) == np.arange(63)).all()


def test_previous_without_learned_positions_says_so_and_fixes_it_in_one_click():
    at = make_app(weights="previous").run()  # positional defaults to none
    no_exception(at)
    [warning] = at.warning
    assert "learned" in warning.value and "none" in warning.value
    t = len(tokenize(DEFAULTS.sentence))
    faded = [z[np.arange(1, t), np.arange(t - 1)].mean() for z in head_maps(at)]
    assert max(faded) < 0.5  # no clock to read: no sub-diagonal
    [fix] = [b for b in at.button if b.key == "use_learned"]
    assert fix.label == FIX_LABEL
    fix.click().run()
    no_exception(at)
    assert at.button_group(key="positional").value == "learned"
    assert not at.warning and not [b for b in at.button if b.key == "use_learned"]
    for z in head_maps(at):
        assert (z[np.arange(1, t), np.arange(t - 1)] > 0.5).all()


def test_the_caption_follows_the_choice():
    at = make_app().run()
    for kind, words in [("identity", "itself"), ("previous", "i − 1"), ("random", "chance")]:
        at.button_group(key="weights").set_value(kind).run()
        no_exception(at)
        assert any(words in c.value for c in at.sidebar.caption), kind


@pytest.mark.parametrize("positional", POSITIONAL_KINDS)
@pytest.mark.parametrize("d_model", [8, 16])
def test_head_options_follow_core_head_counts(d_model, positional):
    at = make_app(d_model=str(d_model), positional=positional).run()
    for weights in ("random", "identity", "previous"):
        at.button_group(key="weights").set_value(weights).run()
        no_exception(at)
        allowed = [h for h in head_counts(d_model, positional, weights) if h <= MAX_HEADS]
        assert at.button_group(key="n_heads").options == [str(h) for h in allowed], weights


def test_choosing_previous_moves_a_head_count_it_cannot_use():
    at = make_app(d_model="8", n_heads="8").run()
    assert at.button_group(key="n_heads").value == 8
    at.button_group(key="weights").set_value("previous").run()
    no_exception(at)
    assert at.button_group(key="n_heads").value == 2  # d_k = 1 has no room for the clock; 2 heads give d_k = 4
    assert len(head_maps(at)) == 2


def test_a_link_with_unusable_weights_falls_back_with_a_note():
    at = make_app(weights="<b>trained</b>").run()
    no_exception(at)
    [note] = [w.value for w in at.warning]
    assert "weights must be one of random, identity, previous" in note and "<b>" not in note
    assert at.button_group(key="weights").value == "random"


def test_a_link_asking_previous_with_too_many_heads_explains_why():
    at = make_app(weights="previous", positional="learned", d_model="8", n_heads="4").run()
    no_exception(at)
    assert any("previous-token head reads two clock hands: it needs d_k >= 4" in w.value for w in at.warning)
    assert at.button_group(key="n_heads").value == 2


def test_every_width_offers_a_previous_token_head():
    for d_model in D_MODELS:
        assert head_counts(d_model, "learned", "previous"), d_model


def test_identity_note_states_what_the_maps_measure():
    """d_model 8 with 8 heads leaves d_k = 1: the old note's "each token looks mostly at itself and at every
    copy" was false there (27% of rows). The page's numbers must be the maps' own, measured here by hand."""
    at = make_app(weights="identity", d_model="8", n_heads="8").run()
    no_exception(at)
    tokens = tokenize(DEFAULTS.sentence)
    maps = head_maps(at)  # (T, T) each
    same = np.array([[a == b for b in tokens] for a in tokens])  # (T, T)
    on_self = np.mean([same[np.arange(len(tokens)), z.argmax(axis=1)] for z in maps])
    mass = np.mean([look_alike_mass(z, tokens) for z in maps])
    [note] = [c.value for c in at.caption if c.value.startswith("Measured on this sentence")]
    assert f"in {on_self:.0%} of the rows" in note and f"get {mass:.2f} of the weight" in note
    assert on_self < 0.5 and "another token's vector can line up better" in note
    assert not any("looks mostly at itself" in c.value for c in at.caption)


def test_previous_note_states_what_the_maps_measure():
    at = make_app(weights="previous", positional="learned").run()
    no_exception(at)
    maps = head_maps(at)
    t = maps[0].shape[0]
    hit = np.mean([z[1:].argmax(axis=1) == np.arange(t - 1) for z in maps])
    [note] = [c.value for c in at.caption if c.value.startswith("Measured on this sentence")]
    assert f"in {hit:.0%} of the rows after the first" in note
