"""Shared links: URL query parameters restore the state, and bad values fall back with a note."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core import AttentionConfig
from dashboard.state.link_notes import link_notes
from dashboard.state.settings import DEFAULTS, LINK_KEYS, OWNED_KEYS, SETTING_KEYS, Settings
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
    (dict(seed="abc"), ["seed", f"showing seed = {DEFAULTS.config.seed}"]),
    (dict(seed="-5"), ["seed"]),
    (dict(seed="NaN"), ["seed"]),
    (dict(seed="99999999999999999999999"), ["seed"]),
    (dict(causal="maybe"), ["causal", "true or false", "showing causal = false"]),
    (dict(positional="<b>x</b>"), ["positional", "showing positional = none"]),
    (dict(view="nope"), ["view", "showing view = heads"]),
    # Empty values made a widget raise (int(None), ValueError) before the parser replaced them.
    (dict(n_heads=""), ["n_heads", "not a whole number", "showing 4 heads"]),
    (dict(weights=""), ["weights", "showing weights = random"]),
    (dict(positional=""), ["positional", "showing positional = none"]),
    (dict(seed="inf"), ["seed", "showing seed = 18"]),
    (dict(view="permutation", perm_head=""), ["perm_head", "from 1 to 4", "showing perm_head = 1"]),
    (dict(view="steps", step_head="²"), ["step_head", "showing step_head = 1"]),
    (dict(view="positions", shift_head="9"), ["shift_head", "from 1 to 4", "showing shift_head = 1"]),
    (dict(view="model", head=""), ["head", "showing head = 1"]),
    (dict(view="train", task=""), ["task", "showing task = shift"]),
    (dict(view="train", train_layers=""), ["train_layers", "showing train_layers = 1"]),
    (dict(view="train", lr="nan"), ["lr", "0.001, 0.002, 0.003, 0.005", "showing lr = 0.003"]),
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
        if raw.strip() and not raw.isdigit() and raw not in ("permutation", "steps", "positions", "model", "train"):
            assert raw not in notes[0]  # the raw URL text is never echoed into Markdown
    drawn = [t for fig in figures(at) for t in heatmaps(fig) if t.get("name") != "masked"]
    assert len(drawn) >= 1  # still drawn (the train view's maps come after its curves)


def test_default_values_give_no_note():
    at = make_app(d_model="64", n_heads="4", causal="false").run()
    no_exception(at)
    assert not at.warning


def test_unknown_keys_are_counted_in_a_note_never_quoted():
    at = make_app(foo="bar", **{"<b>k</b>": "1"}, d_model="16").run()
    no_exception(at)
    [note] = [w.value for w in at.warning]
    assert "2 parameters this dashboard does not use" in note
    assert "foo" not in note and "<b>" not in note
    assert figures(at)  # the page is still drawn, with the link's valid d_model
    assert at.selectbox(key="d_model").value == 16  # the valid part of the link still applies


def _bound_keys(path: Path) -> set[str]:
    """The ``key=`` of every call in ``path`` that passes ``bind="query-params"``."""
    keys = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            kw = {k.arg: k.value for k in node.keywords}
            if isinstance(kw.get("bind"), ast.Constant) and kw["bind"].value == "query-params":
                assert isinstance(kw.get("key"), ast.Constant), f"{path}:{node.lineno}: needs a literal key"
                keys.add(kw["key"].value)
    return keys


def test_link_keys_list_every_bound_widget():
    """A new URL-bound widget must join LINK_KEYS, or its links would be called unknown; the keys the page writes
    itself (the view and the tour: one history entry per change) are link keys whose controls are not bound."""
    dashboard = Path(__file__).resolve().parents[2] / "dashboard"
    bound = set().union(*(_bound_keys(p) for p in dashboard.rglob("*.py")))
    assert bound == LINK_KEYS - set(OWNED_KEYS)
    assert set(OWNED_KEYS) <= LINK_KEYS


def test_every_setting_is_a_link_key():
    """Each AttentionConfig field and each page field of Settings is a URL key, declared once."""
    config_fields = set(AttentionConfig.__dataclass_fields__)
    page_fields = set(Settings.__dataclass_fields__) - {"config"}
    assert set(SETTING_KEYS) == config_fields | page_fields
    assert set(SETTING_KEYS) <= LINK_KEYS


def test_the_note_is_for_the_link_only():
    at = make_app(seed="abc").run()
    assert at.warning
    at.run()
    assert not at.warning  # said once: a rerun does not repeat it
    at.button_group(key="n_heads").set_value(2).run()
    assert not at.warning  # the user has moved on: the link note is gone


def _link_notes(at) -> list[str]:
    return [w.value for w in at.warning if w.icon == ":material/link:"]


@pytest.mark.parametrize(
    ("key", "raw", "widget", "shown"),
    [
        ("n_heads", "", "button_group", 4),
        ("seed", "inf", "number_input", 18),
        ("weights", "", "button_group", "random"),
    ],
)
def test_a_changed_address_is_read_on_any_rerun(key, raw, widget, shown):
    """Not only the first run: Back/Forward (a later issue) hands the page another address mid-session."""
    at = make_app(n_heads="2", seed="5", weights="identity").run()
    at.query_params[key] = raw  # the address changes under the open page
    at.run()
    no_exception(at)
    assert getattr(at, widget)(key=key).value == shown
    [note] = _link_notes(at)
    assert key in note
    assert (f"showing {shown} heads" if key == "n_heads" else f"showing {key} = {shown}") in note
    at.run()
    assert not _link_notes(at)  # said once


def test_a_value_set_through_a_widget_is_never_corrected_or_noted():
    at = make_app(d_model="64", n_heads="16").run()
    assert not _link_notes(at)
    at.selectbox(key="d_model").set_value(8).run()  # 16 heads no longer fit: the sidebar moves to the nearest
    no_exception(at)
    assert at.button_group(key="n_heads").value == 8 and not _link_notes(at)
    at.button_group(key="n_heads").set_value(2).run()
    assert at.button_group(key="n_heads").value == 2 and not _link_notes(at)
    at.run()
    assert at.button_group(key="n_heads").value == 2 and not _link_notes(at)


def test_a_later_bad_value_of_another_views_control_is_replaced_before_it_is_drawn():
    """A control that is not on the page yet would seed itself from the address when its view opens."""
    at = make_app(n_heads="2").run()
    at.query_params["perm_head"] = "²"
    at.run()
    [note] = _link_notes(at)
    assert "perm_head" in note and "from 1 to 2" in note and "²" not in note
    at.button_group(key="view").set_value("permutation").run()
    no_exception(at)
    assert at.button_group(key="perm_head").value == 1


def test_link_notes_pure():
    """The notes url_state does not write: unknown parameters (counted) and settings the weights fix."""
    s = Settings(config=AttentionConfig(d_model=64, n_heads=4))
    assert link_notes({}, s) == []
    assert link_notes({"d_model": "64", "n_heads": "4", "seed": str(s.config.seed)}, s) == []
    assert link_notes({"n_heads": "3"}, s) == []  # a key's own value: url_state's note (test_url_state.py)
    assert link_notes({"foo": "1", "<b>": "2"}, s) == [
        "The link has 2 parameters this dashboard does not use: they were ignored."
    ]
    minilm = Settings(config=AttentionConfig(d_model=384, n_heads=12, positional="learned"), weights="minilm")
    [note] = link_notes({"d_model": "32", "n_heads": "12"}, minilm)
    assert note.startswith("With weights = minilm, d_model is the pretrained model's (d_model = 384, 12 heads")
