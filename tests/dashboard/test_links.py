"""Shared links: URL query parameters restore the state, and bad values fall back with a note."""

from __future__ import annotations

import pytest

from dashboard.settings import DEFAULTS, Settings
from dashboard.url_notes import link_notes
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception


def test_a_link_restores_every_control():
    at = make_app(
        sentence="dog bites man",
        d_model="32",
        n_heads="2",
        causal="true",
        positional="learned",
        seed="5",
        view="shapes",
    ).run()
    no_exception(at)
    assert at.text_input(key="sentence").value == "dog bites man"
    assert at.selectbox(key="d_model").value == 32
    assert at.button_group(key="n_heads").value == 2
    assert at.toggle(key="causal").value is True
    assert at.button_group(key="positional").value == "learned"
    assert at.number_input(key="seed").value == 5
    assert at.button_group(key="view").value == "shapes"
    assert not at.warning  # every value was usable: no note
    assert at.dataframe[0].value.set_index("tensor").loc["scores", "shape"] == "(2, 3, 3)"


def test_a_link_restores_the_figure():
    at = make_app(sentence="one two three four", n_heads="8", causal="true").run()
    no_exception(at)
    maps = [array(t["z"]) for t in heatmaps(figures(at)[0]) if t.get("name") != "masked"]
    assert len(maps) == 8 and all(z.shape == (4, 4) for z in maps)


def test_a_link_restores_the_view_options():
    at = make_app(view="permutation", perm_mode="shuffle", perm_seed="9", perm_head="2").run()
    no_exception(at)
    assert at.button_group(key="perm_mode").value == "shuffle"
    assert at.number_input(key="perm_seed").value == 9
    assert at.button_group(key="perm_head").value == 2


BAD_LINKS = [
    # (query, words the note must contain)
    (dict(n_heads="3"), ["3 heads", "d_model = 64", "showing 4 heads"]),
    (dict(n_heads="0"), ["0 heads", "showing 4 heads"]),
    (dict(n_heads="32"), ["32 heads", "at most 16"]),
    (dict(n_heads="16", d_model="8"), ["16 heads", "d_model = 8"]),
    (dict(n_heads="abc"), ["not a whole number"]),
    (dict(d_model="7"), ["d_model", "showing d_model = 64"]),
    (dict(d_model="-1"), ["d_model", "showing d_model = 64"]),
    (dict(seed="abc"), ["seed", f"showing seed {DEFAULTS.seed}"]),
    (dict(seed="-5"), ["seed"]),
    (dict(seed="NaN"), ["seed"]),
    (dict(seed="99999999999999999999999"), ["seed"]),
    (dict(causal="maybe"), ["causal", "off"]),
    (dict(positional="<b>x</b>"), ["positional encoding", "showing none"]),
    (dict(view="nope"), ["view", "showing heads"]),
]


@pytest.mark.parametrize(("query", "words"), BAD_LINKS, ids=[str(q) for q, _ in BAD_LINKS])
def test_a_bad_link_value_falls_back_with_a_note(query, words):
    at = make_app(**query).run()
    no_exception(at)
    notes = [w.value for w in at.warning]
    assert len(notes) == 1, notes
    for word in words:
        assert word in notes[0], (word, notes[0])
    for raw in query.values():
        if not raw.isdigit():
            assert raw not in notes[0]  # the raw URL text is never echoed into Markdown
    assert len([t for t in heatmaps(figures(at)[0]) if t.get("name") != "masked"]) >= 1  # still drawn


def test_unknown_keys_and_default_values_give_no_note():
    at = make_app(foo="bar", d_model="64", n_heads="4", causal="false").run()
    no_exception(at)
    assert not at.warning


def test_the_note_is_for_the_link_only():
    at = make_app(seed="abc").run()
    assert at.warning
    at.button_group(key="n_heads").set_value(2).run()
    assert not at.warning  # the user has moved on: the link note is gone


def test_link_notes_pure():
    s = Settings(d_model=64, n_heads=4)
    assert link_notes({}, s) == []
    assert link_notes({"d_model": "64", "n_heads": "4", "seed": str(s.seed)}, s) == []
    [note] = link_notes({"n_heads": "3"}, s)
    assert "3 heads" in note and "64" in note
    assert link_notes({"seed": "1e3"}, s)  # not a plain integer
    assert link_notes({"view": "x"}, s, "heads", ("tokens", "heads")) == [
        "The link's view must be one of tokens, heads: showing heads."
    ]
