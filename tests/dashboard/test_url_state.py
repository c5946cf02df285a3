"""The URL parser as a pure function (no Streamlit): every key's fallback, and it never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.training import recommended
from dashboard.classroom.tours import load_tours
from dashboard.state.settings import DEFAULT_CONFIG, DEFAULTS, LINK_KEYS, widget_state
from dashboard.state.url_state import SPEC, SPECS, address_text, notes, read

MINILM_SHAPE = {"d_model": 384, "n_heads": 12, "positional": "learned"}
"""What all-MiniLM-L6-v2 was trained with (its config.json): the weights fix it."""
BAD_TEXT = ["", " ", "²", "-1", "1e999", "nan", "inf", "x" * 300, "%00", "\x00", "<b>x</b>", "**x**", "1.5"]
"""Text no key but a text box takes (a head count of "-1", a view called "nan", ...)."""
TEXT_KEYS = {s.key for s in SPECS if s.kind == "text"}

DEFAULTS_SHOWN = {
    # key -> what the page shows for it at the defaults (written out here, not read from the specs)
    "view": "heads",
    "weights": "random",
    "task": "shift",
    "positional": "none",
    "d_model": 64,
    "n_heads": 4,
    "kv_heads": 4,  # as many K/V heads as query heads: multi-head attention
    "causal": False,
    "scaled": True,
    "seed": 18,
    "train_layers": 1,
    "train_steps": 150,
    "lr": 0.003,
    "layer": 1,
    "presenter": False,
    "window": 0,
    "prefix": 0,
    "alibi": False,
    "average": False,
    "values": False,
    "one_layer": False,
    "one_head": False,
    "perm_mode": "reverse",
    "perm_seed": 0,
    "perm_head": 1,
    "step_head": 1,
    "first_step": 1,
    "head": 1,
    "shift_head": 1,
    "batch": 1,
    "shift": 10,
    "replay_step": None,
    "quiz": False,
    "quiz_question": 1,
    "tour": None,
    "tour_step": 1,
    "cache_step": None,  # the view's own default (the last step, a quarter of the tokens, the first block)
    "block_size": None,
    "block": None,
    "flash_head": 1,
    "class_head": 1,
    "contrast_head": 1,
    "cache_head": 1,
    "ablate": "none",  # the intact model
    "ablate_mode": "mean",
    "temperature": 1.0,
    "probe_query": 0,
    "probe_key": 0,
}


def test_every_link_key_has_one_spec():
    assert [s.key for s in SPECS] == list(SPEC) and set(SPEC) == LINK_KEYS
    assert set(DEFAULTS_SHOWN) | TEXT_KEYS == LINK_KEYS  # every key's fallback is tested below


@pytest.mark.parametrize("key", sorted(DEFAULTS_SHOWN))
@pytest.mark.parametrize("raw", BAD_TEXT, ids=repr)
def test_a_bad_value_falls_back_to_the_default_and_is_named(key, raw):
    if key == "tour" and raw == "":
        raw = "no-such-tour"  # an empty tour is the cleared picker: no tour, nothing to say
    reading = read({key: raw})
    assert reading.values == {key: DEFAULTS_SHOWN[key]}
    [note] = notes(reading)
    assert f"The link's {key}" in note or f"({key})" in note
    if raw.strip() and raw not in ("-1", "1.5"):
        assert raw not in note
    assert not set(note) & set("<>*%\x00²")  # nothing a link wrote: our own words and values


def test_text_keys_take_any_text_as_it_is():
    for key in TEXT_KEYS:
        for raw in BAD_TEXT:
            assert read({key: raw}).values == {key: raw}
            assert not read({key: raw}).problems  # the page says what it cannot use (an empty sentence, ...)


@pytest.mark.parametrize(
    ("link", "value"),
    [
        ({"d_model": " 32"}, 32),  # spaces, or a number written otherwise: understood (and rewritten)
        ({"d_model": "32.0"}, 32),
        ({"lr": "0.0030"}, 0.003),
        ({"causal": "TRUE"}, True),
        ({"n_heads": "+8"}, 8),
    ],
)
def test_a_value_written_otherwise_is_understood(link, value):
    reading = read(link)
    [(key, got)] = reading.values.items()
    assert got == value and not reading.problems
    assert address_text(got) != link[key]  # read_address rewrites it as the widget would


def test_head_counts_depend_on_d_model_positions_and_weights():
    assert read({"n_heads": "3"}).problems == {
        "n_heads": "cannot be used (3 heads do not divide d_model = 64: each head needs d_model / h columns)"
    }
    assert read({"d_model": "8", "n_heads": "16"}).values == {"d_model": 8, "n_heads": 4}
    assert read({"d_model": "8", "n_heads": "8"}).problems == {}
    rope = read({"d_model": "8", "positional": "rope", "n_heads": "8"})  # d_k = 1 is odd
    assert rope.values["n_heads"] == 4 and "RoPE" in rope.problems["n_heads"]
    previous = read({"d_model": "8", "weights": "previous", "n_heads": "4"})  # d_k = 2 < 4
    assert previous.values["n_heads"] == 2 and "previous-token head" in previous.problems["n_heads"]
    assert "at most 16" in read({"n_heads": "32"}).problems["n_heads"]
    [note] = notes(read({"n_heads": "32"}))
    assert note == "The link's head count (n_heads) asks for 32 heads; at most 16 are drawn: showing 4 heads."


def test_an_early_fallback_is_the_context_of_later_keys():
    # d_model=7 falls back to 64, where 16 heads are valid: n_heads=16 stands, and with it perm_head=9
    reading = read({"d_model": "7", "n_heads": "16", "perm_head": "9"})
    assert reading.values == {"d_model": 64, "n_heads": 16, "perm_head": 9}
    assert set(reading.problems) == {"d_model"}


@pytest.mark.parametrize("key", ["perm_head", "step_head", "head", "shift_head", "flash_head"])
def test_head_pickers_offer_the_heads_drawn(key):
    assert read({"n_heads": "2", key: "2"}).values[key] == 2
    assert read({"n_heads": "2", key: "3"}).values[key] == 1
    assert read({key: "3"}, known={"n_heads": 2}).values[key] == 1  # a head count already on the page
    assert read({"weights": "minilm", key: "12"}).values[key] == 12  # MiniLM draws 12 heads whatever the link says


def test_minilm_fixes_its_shape_and_ignores_the_links():
    reading = read({"weights": "minilm", "d_model": "32", "n_heads": "", "positional": "learned"})
    assert reading.ignored == ("d_model", "n_heads")  # "learned" is MiniLM's own: nothing to say
    assert not reading.problems and {k: reading.context[k] for k in MINILM_SHAPE} == MINILM_SHAPE


def test_layers_are_the_models():
    assert read({"weights": "minilm", "layer": "6"}).values["layer"] == 6
    assert read({"weights": "minilm", "layer": "7"}).values["layer"] == 1
    assert read({"weights": "trained", "train_layers": "2", "layer": "2"}).values["layer"] == 2
    assert read({"weights": "trained", "train_layers": "1", "layer": "2"}).problems["layer"] == "one of 1"


def test_a_training_link_falls_back_to_the_tasks_recommendation():
    """A train link takes the task's recommendation for what it leaves unset, so a bad value shows the same."""
    induction = widget_state(recommended("induction"))
    keys = ("d_model", "n_heads", "causal", "positional", "seed", "train_layers", "train_steps", "lr")
    link = {"view": "train", "task": "induction", **{k: "²" for k in keys}}
    reading = read(link)
    assert {k: reading.values[k] for k in keys} == {k: induction[k] for k in keys}
    assert set(reading.problems) == set(keys)
    assert read({"seed": "²"}).values["seed"] == DEFAULT_CONFIG.seed  # not training: the sidebar's default


def test_tour_steps_are_the_tours():
    slug, tour = next(iter(load_tours().items()))
    n = len(tour.steps)
    assert read({"tour": slug, "tour_step": str(n)}).values["tour_step"] == n
    reading = read({"tour": slug, "tour_step": str(n + 1)})
    assert reading.values["tour_step"] == 1 and reading.problems["tour_step"] == f"a whole number from 1 to {n}"
    assert read({"tour": ""}).values == {"tour": None} and not read({"tour": ""}).problems


def test_known_values_are_the_context_and_never_reparsed():
    reading = read({"perm_head": "8"}, known={"n_heads": 8, "d_model": 64})
    assert reading.values == {"perm_head": 8} and not reading.problems
    assert reading.context["sentence"] == DEFAULTS.sentence  # what neither says: the default


def test_unknown_keys_are_counted():
    reading = read({"utm_source": "x", "<b>": "y", "seed": "3"})
    assert reading.unknown == 2 and reading.values == {"seed": 3}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(LINK_KEYS | {"foo"})), st.text(max_size=12) | st.sampled_from(BAD_TEXT)))
def test_any_link_reads_to_valid_values(link):
    reading = read(link)  # never raises
    ctx = reading.context
    for key, value in reading.values.items():
        spec = SPEC[key]
        if value is not None:  # None: the widget's own default (no tour, the last replay step)
            assert spec.parse(address_text(value), ctx) == value, (key, value)  # a value the page can show
    ours = set("abcdefghijklmnopqrstuvwxyz0123456789 ,.:;=()_/-'")
    for note in notes(reading):
        assert not set(note) & set("<>*\x00")
        for raw in link.values():
            if set(raw.lower()) - ours:  # text our own notes could not contain: it must not be quoted
                assert raw not in note, (raw, note)
