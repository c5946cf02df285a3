"""Fuzz every URL key in the real app: bad values, under every view the key belongs to, never raise.

For each link: no exception; every control on the page holds a value the parser accepts (so what is
shown is valid); each key the parser replaced is named in a note, and no note quotes the link's text.
Sampled with hypothesis (``max_examples``) to stay within a few minutes; ``read`` itself is tested on
every key's fallback in test_url_state.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.state.settings import SETTING_KEYS
from dashboard.state.url_state import BAD, SPEC, address_text, read
from dashboard.views import VIEWS
from tests.dashboard.conftest import make_app, no_exception

CORPUS = (
    "",
    " ",
    "\t",
    "²",
    "-1",
    "1e999",
    "nan",
    "inf",
    "x" * 300,
    "%00",
    "\x00",
    "<b>x</b>",
    "**x**",
    "minilm",  # valid for another key
    "shuffle",
    "true",
    "lesson-1-one-head",
)
ALL_VIEWS = tuple(VIEWS)
TRAINS = ({"view": "train"}, {"weights": "trained", "view": "heads"})
WHERE: dict[str, tuple[dict[str, str], ...]] = {
    # key -> the pages it belongs to: a base link that draws its control
    **{k: tuple({"view": v} for v in ALL_VIEWS) for k in (*SETTING_KEYS, "view", "room", "tour")},
    "layer": ({"weights": "minilm", "view": "heads"}, {"weights": "trained", "train_layers": "2", "view": "model"}),
    **{k: TRAINS for k in ("task", "train_layers", "train_steps", "lr")},
    "average": ({"view": "heads"},),
    "values": ({"view": "heads"},),
    "one_layer": ({"view": "model", "weights": "minilm"}, {"view": "model", "weights": "trained", "train_layers": "2"}),
    "one_head": ({"view": "model"}, {"view": "model", "weights": "minilm"}),
    "quiz": ({"view": "heads"}, {"view": "model"}),
    "quiz_question": ({"view": "heads", "quiz": "true"}, {"view": "model", "quiz": "true"}),
    "perm_mode": ({"view": "permutation"},),
    "perm_seed": ({"view": "permutation", "perm_mode": "shuffle"},),
    "perm_text": ({"view": "permutation", "perm_mode": "retype"},),
    "perm_head": ({"view": "permutation"},),
    "step_head": ({"view": "steps"},),
    "first_step": ({"view": "steps"}, {"view": "steps", "alibi": "true", "causal": "true"}),
    "batch": ({"view": "shapes"},),
    "head": ({"view": "model"},),
    "shift": ({"view": "positions"},),
    "shift_head": ({"view": "positions"},),
    "source": ({"view": "cross"},),
    "replay_step": ({"view": "train"},),
    "cache_step": ({"view": "kv_cache"},),
    "cache_head": ({"view": "kv_cache", "n_heads": "8"}, {"view": "kv_cache", "n_heads": "16", "kv_heads": "8"}),
    "block_size": ({"view": "flash"},),
    "block": ({"view": "flash"},),
    "flash_head": ({"view": "flash"},),
    "ablate": ({"view": "train", "task": "shift"}, {"weights": "minilm", "view": "model"}),
    "ablate_mode": ({"view": "train", "task": "shift"},),
    "temperature": ({"view": "train", "task": "shift"},),
    "probe_query": ({"view": "steps"},),
    "probe_key": ({"view": "steps"},),
    "tour_step": ({"tour": "lesson-1-one-head"}, {"tour": "what-heads-learn"}),
    "class_text": ({"view": "class"}, {"view": "class", "weights": "identity"}),
    "class_head": ({"view": "class"}, {"view": "class", "n_heads": "8"}),
    "second": ({"view": "contrast"}, {"view": "contrast", "weights": "previous"}),
    "contrast_head": ({"view": "contrast"}, {"view": "contrast", "n_heads": "2"}),
}
WIDGETS = ("text_input", "text_area", "selectbox", "button_group", "toggle", "number_input", "select_slider")
ROUGH = set("<>*%\x00²\t") | {"x" * 300}
"""What a note must never contain: the link's markup, control characters or long text."""


def test_every_link_key_is_fuzzed():
    assert set(WHERE) == set(SPEC)


def _page_values(at) -> dict[str, str]:
    """Every bound control on the page, as the address text its widget writes."""
    return {w.key: address_text(w.value) for kind in WIDGETS for w in getattr(at, kind) if w.key in SPEC}


def _check(link: dict[str, str]) -> None:
    at = make_app(**link).run()
    no_exception(at)
    shown = _page_values(at)
    assert not read(shown).problems, (link, shown)  # every control holds a value the parser accepts
    notes = [w.value for w in at.warning if w.icon == ":material/link:"]
    for key in read(link).problems:  # what the parser replaces is said, naming the key
        if key in shown or key in HEAD_KEYS:
            assert any(key in n for n in notes), (key, link, notes)
    for note in notes:
        assert not any(rough in note for rough in ROUGH), note  # the link's own text is never quoted
        for raw in link.values():
            if len(raw) > 3 and raw not in OPTION_TEXTS:  # an option's own name may be listed as a valid choice
                assert raw not in note, (raw, note)


HEAD_KEYS = ("perm_head", "head", "shift_head", "step_head", "flash_head", "cache_head", "class_head", "contrast_head")
"""Head pickers: a segmented control shows no value it does not offer, so a replaced head is checked by its note."""
KEYS = sorted(WHERE)
OPTION_TEXTS = {
    "true",
    "false",
    *(address_text(o) for s in SPEC.values() if s.kind == "choice" for o in s.valid(read({}).context)),
}
"""The page's own words for valid values: a note may list them."""


@st.composite
def one_key(draw) -> dict[str, str]:
    key = draw(st.sampled_from(KEYS))
    base = draw(st.sampled_from(WHERE[key]))
    raw = draw(st.sampled_from([v for v in CORPUS if SPEC[key].parse(v, read(base).context) is BAD] or CORPUS))
    return {**base, key: raw}


@pytest.mark.parametrize("key", KEYS)
def test_an_empty_value_never_raises(key):
    """The value that raised in most controls (``int(None)``), for every key under its first page."""
    _check({**WHERE[key][0], key: ""})


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(one_key())
def test_one_bad_key_under_its_views(link):
    _check(link)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.lists(one_key(), min_size=2, max_size=4))
def test_a_few_bad_keys_together(links):
    link = {}
    for part in links:
        link |= part
    _check(link)
