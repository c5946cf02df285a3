"""The link is the screen: the page a link to the address opens shows what the clicks that made it showed.

A property test over the app (Hypothesis' stateful testing over AppTest): a visitor changes any sidebar control to any
value it offers, picks a view, and steps through a tour, in any order. After every step the page's address is
opened in a fresh AppTest, and that page must draw from equal ``Settings`` (the app keeps the ones it drew from in
``session.SHOWN_SETTINGS``), draw the same heatmaps (z equal to 1e-12) and offer the same ``.npz`` settings.

Which address. AppTest reads the address each run ends with (``url_state.finish``, sent by ``address.send``: what
the browser shows once the page's message arrives). A browser also writes a bound control's parameter itself, at
the click, before the page answers: key=value, or no key when the value is that control's default at that moment
(the default the page drew it with). If the page's answer never arrives (a faster click superseded the run), that
address is the one left in the bar. So each click is checked against both: the page's address, and the test's own
model of the browser's (the previous address with the click written in), which must agree on the key clicked.
``tests/e2e/test_link_in_browser.py`` checks the model against Chromium's real address on the K/V heads sequence.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from dashboard.classroom.tours import load_tours
from dashboard.page.exports import trace_npz
from dashboard.state.session import SHOWN_SETTINGS
from dashboard.state.url_state import address_text
from dashboard.views import DEFAULT_VIEW, VIEWS
from dashboard.views import cross as cross_view
from dashboard.views import heads as heads_view
from tests.dashboard.conftest import array, figures, heatmaps, make_app, no_exception

SENTENCES = (
    "The bank of the river gave a loan",
    "cat",  # one token
    "the robot opens the door and walks into the room",
    "  ",  # nothing to draw: the page says so
    "<b>bold</b> **not** 🙂 שלום",  # markup and emoji and right-to-left text, shown as typed
    " ".join(f"w{i}" for i in range(66)),  # past 64 tokens: refused, with the offer to keep the start
)
SEEDS = (0, 1, 18, 4242, 99_999)
COUNTS = (0, 1, 2, 3, 5, 9, 64)
"""Window and prefix values: off, short, longer than a sentence, the largest."""
SIDEBAR_CONTROLS = ("button_group", "selectbox", "toggle", "number_input", "text_input")


def option_value(text: str) -> object:
    """A control's option as the app gave it (AppTest shows options as text): a number where it is one."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def default_of(widget) -> object:
    """The default a control was drawn with: what the browser compares a click with."""
    default = widget.proto.default
    if type(widget).__name__ == "ButtonGroup":
        return option_value(widget.options[default[0]]) if default else None
    if type(widget).__name__ == "Selectbox":
        return option_value(widget.options[default])
    return default


def text(value: object) -> str:
    """A value as its parameter holds it (a number input's default arrives as 18.0 for 18)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return address_text(value)


def browser_writes(address: dict[str, str], key: str, value: object, default: object) -> dict[str, str]:
    """The address after the browser wrote a bound control's click: key=value, or no key at its default."""
    written = {k: v for k, v in address.items() if k != key}
    if text(value) != text(default):
        written[key] = text(value)
    return written


class Downloads:
    """The last ``.npz`` a page offered (heads and cross build it from their run and settings on a click)."""

    def __init__(self):
        self.last: dict | None = None
        self.real = {m: m.download_buttons for m in (heads_view, cross_view)}
        for module, real in self.real.items():
            module.download_buttons = self._spy(real)

    def _spy(self, real):
        def spy(run, view, page_settings):
            import dataclasses

            about = dataclasses.asdict(page_settings) | {"view": view}
            self.last = json.loads(str(np.load(io.BytesIO(trace_npz(run, about)))["settings"]))
            return real(run, view, page_settings)

        return spy

    def take(self) -> dict | None:
        last, self.last = self.last, None
        return last

    def close(self) -> None:
        for module, real in self.real.items():
            module.download_buttons = real


def screen(at, downloads: Downloads) -> dict:
    """What a page shows, as compared: the settings it drew from, its heatmaps' z, its .npz settings."""
    no_exception(at)
    maps = [array(h["z"]) for fig in figures(at) for h in heatmaps(fig)]
    return {"settings": at.session_state[SHOWN_SETTINGS], "maps": maps, "npz": downloads.take()}


def link_warnings(at) -> list[str]:
    return [w.value for w in at.warning if w.icon == ":material/link:"]


def assert_same(shown: dict, opened: dict, where: str) -> None:
    assert opened["settings"] == shown["settings"], where
    assert len(opened["maps"]) == len(shown["maps"]), where
    for a, b in zip(opened["maps"], shown["maps"], strict=True):
        assert a.shape == b.shape, where
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=where)
    assert opened["npz"] == shown["npz"], where


def sidebar_controls(at) -> dict[str, object]:
    """The sidebar's bound controls a user can change now, by key (the tour picker is not bound: a rule of its own)."""
    found = {}
    for kind in SIDEBAR_CONTROLS:
        for w in getattr(at.sidebar, kind):
            if w.key and w.key not in ("tour", "room") and not w.proto.disabled:
                found[w.key] = w
    return found


def offered(widget, data) -> object:
    """A value the control offers, drawn by Hypothesis."""
    kind = type(widget).__name__
    if kind in ("ButtonGroup", "Selectbox"):
        return option_value(data.draw(st.sampled_from(widget.options)))
    if kind == "Toggle":
        return not widget.value
    if kind == "TextInput":
        return data.draw(st.sampled_from(SENTENCES))
    return data.draw(st.sampled_from(SEEDS if widget.key == "seed" else COUNTS))


class LinkIsTheScreen(RuleBasedStateMachine):
    """A visitor's clicks, each followed by opening the address in a fresh page."""

    @initialize()
    def open_the_app(self):
        self.downloads = Downloads()
        self.at = make_app().run()
        self.address: dict[str, str] = {}
        self.browser: dict[str, str] | None = None  # the browser's own address after a click, before the answer
        self.where = "opened /"

    def teardown(self):
        if hasattr(self, "downloads"):
            self.downloads.close()

    def _ran(self, where: str) -> None:
        self.where = f"{self.where} -> {where}"
        no_exception(self.at)
        self.address = dict(self.at.query_params)

    @rule(data=st.data())
    def change_a_sidebar_control(self, data):
        controls = sidebar_controls(self.at)
        key = data.draw(st.sampled_from(sorted(controls)))
        widget = controls[key]
        value = offered(widget, data)
        self.browser = browser_writes(self.address, key, value, default_of(widget))
        if type(widget).__name__ == "Selectbox":
            widget.select(value)
        else:
            widget.set_value(value)
        self.at.run()
        self._ran(f"{key}={text(value)}")
        assert self.address.get(key) == self.browser.get(key), self.where  # the page's address and the browser's

    @precondition(lambda self: any(b.key == "view" for b in self.at.button_group))  # a tour on a projector: its bar
    @rule(view=st.sampled_from(sorted(VIEWS)))
    def pick_a_view(self, view):
        self.at.button_group(key="view").set_value(view).run()
        self._ran(f"view={view}")
        assert self.address.get("view") == (None if view == DEFAULT_VIEW else view), self.where
        self.browser = None  # the view is the page's own key: only its answer writes the address

    @rule(data=st.data())
    def step_a_tour(self, data):
        buttons = {b.key for b in self.at.button if b.key in ("tour_next", "tour_back", "tour_end") and not b.disabled}
        if not buttons:
            slug = data.draw(st.sampled_from(sorted(load_tours())))
            self.at.selectbox(key="tour").select(slug).run()
            self._ran(f"tour {slug}")
        else:
            button = data.draw(st.sampled_from(sorted(buttons)))
            self.at.button(key=button).click().run()
            self._ran(button)
        self.browser = None

    @invariant()
    def the_address_opens_the_same_page(self):
        if hasattr(self, "at"):
            the_addresses_open_it(self)


def the_addresses_open_it(walk) -> None:
    """A walk's invariant: a fresh page on the page's address, and on the browser's, draws what ``walk.at`` shows."""
    shown = screen(walk.at, walk.downloads)
    opened, warned = opened_on(walk.address, walk.downloads)
    assert_same(shown, opened, f"{walk.where}: {walk.address}")
    assert not warned, (walk.where, walk.address, warned)  # the page's own address: nothing to correct
    if walk.browser is not None and walk.browser != walk.address:
        by_browser, _ = opened_on(walk.browser, walk.downloads)
        assert_same(shown, by_browser, f"{walk.where}: browser {walk.browser}")


_opened: dict[tuple, tuple[dict, list[str]]] = {}


def opened_on(address: dict[str, str], downloads: Downloads) -> tuple[dict, list[str]]:
    """The screen a fresh page opened on ``address`` shows, and its link warnings. A fresh page depends on nothing but
    its address, so each address is opened once per test session."""
    key = tuple(sorted(address.items()))
    if key not in _opened:
        at = make_app(**address).run()
        _opened[key] = screen(at, downloads), link_warnings(at)
    return _opened[key]


WALK = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
"""Every walk's settings but its size: the same walks in every run (CI), one step ~0.16 s."""
LinkIsTheScreen.TestCase.settings = settings(max_examples=30, stateful_step_count=15, **WALK)
test_the_link_is_the_screen = pytest.mark.timeout(1800)(LinkIsTheScreen.TestCase)


@pytest.fixture
def downloads():
    spy = Downloads()
    yield spy
    spy.close()


class Visitor:
    """A page and the address its browser shows: the page's, with each click written in as the browser writes it."""

    def __init__(self, downloads: Downloads, **query: str):
        self.downloads = downloads
        self.at = make_app(**query).run()
        self.browser = dict(self.at.query_params)

    def click(self, kind: str, key: str, value: object) -> None:
        widget = getattr(self.at, kind)(key=key)
        self.browser = browser_writes(dict(self.at.query_params), key, value, default_of(widget))
        widget.set_value(value)
        self.at.run()
        no_exception(self.at)
        assert self.at.query_params.get(key) == self.browser.get(key)  # the page writes what the browser wrote

    def assert_the_links_open_it(self) -> None:
        """The page's address and the browser's (if the page's answer was lost) both open this page."""
        shown = screen(self.at, self.downloads)
        assert shown["npz"] is not None  # the heads view offers its .npz: compared below
        for address in (dict(self.at.query_params), self.browser):
            opened = make_app(**address).run()
            assert_same(shown, screen(opened, self.downloads), str(address))
        assert not link_warnings(make_app(**dict(self.at.query_params)).run())


GROUPINGS = [(h, kv) for h in (1, 2, 4, 8, 16) for kv in range(1, h + 1) if h % kv == 0]
"""Every head count offered at d_model 64, with every K/V head count that divides it."""


@pytest.mark.parametrize(("n_heads", "kv_heads"), GROUPINGS)
def test_every_grouping_at_d_model_64_is_its_link(n_heads, kv_heads, downloads):
    visitor = Visitor(downloads)
    visitor.click("button_group", "n_heads", n_heads)
    visitor.click("button_group", "kv_heads", kv_heads)
    at = visitor.at
    config = at.session_state[SHOWN_SETTINGS].config
    assert (config.n_heads, config.kv_heads or config.n_heads) == (n_heads, kv_heads)
    titles = [a["text"] for fig in figures(at) for a in fig["layout"].get("annotations", []) if "head" in a["text"]]
    assert titles and all(("K/V" in t) == (kv_heads < n_heads) for t in titles)  # the maps name the sharing
    visitor.assert_the_links_open_it()


T = 8
"""Tokens in the default sentence: window and prefix are tried at every length up to it."""


@pytest.mark.parametrize("key", ["window", "prefix"])
@pytest.mark.parametrize("tokens", range(T + 1))
def test_every_window_and_prefix_up_to_the_sentence_is_its_link(key, tokens, downloads):
    visitor = Visitor(downloads)
    assert len(visitor.at.session_state[SHOWN_SETTINGS].sentence.split()) == T
    visitor.click("toggle", "causal", True)
    visitor.click("number_input", key, tokens)
    assert getattr(visitor.at.session_state[SHOWN_SETTINGS].config, key) == tokens
    visitor.assert_the_links_open_it()


def kv_sequence() -> list[tuple[str, int]]:
    """Heads 8, K/V heads 2, Heads 1, Heads 8: grouping follows the head count until chosen, then moves."""
    return [("n_heads", 8), ("kv_heads", 2), ("n_heads", 4), ("n_heads", 1), ("n_heads", 8)]


def test_heads_8_from_the_default_page_is_multi_head_attention_and_its_link_too():
    """The regression: at /, Heads 8 kept K/V heads at 4 (grouped-query attention, nothing asked for it), while the
    address said only n_heads=8, which opens ordinary 8-head attention."""
    at = make_app().run()
    at.button_group(key="n_heads").set_value(8).run()
    no_exception(at)
    shown = at.session_state[SHOWN_SETTINGS]
    assert shown.config.n_heads == 8 and shown.config.kv_heads in (None, 8)
    assert at.button_group(key="kv_heads").value == 8
    assert dict(at.query_params) == {"n_heads": "8"}
    assert not any("K/V" in (fig["layout"].get("annotations") or [{}])[0].get("text", "") for fig in figures(at))
    assert make_app(n_heads="8").run().session_state[SHOWN_SETTINGS] == shown


@pytest.mark.parametrize("steps", [kv_sequence()])
def test_k_v_heads_follow_the_head_count_until_chosen_then_move_to_the_nearest(steps):
    at = make_app().run()
    expected = [
        ({"n_heads": "8"}, 8),  # follows: no grouping
        ({"n_heads": "8", "kv_heads": "2"}, 2),  # chosen
        ({"kv_heads": "2"}, 2),  # still valid: kept (and 4 heads is the default head count)
        ({"n_heads": "1"}, 1),  # 2 no longer divides 1: the nearest, which is no grouping
        ({"n_heads": "8"}, 8),  # no choice left: follows again
    ]
    for (key, value), (address, kv) in zip(steps, expected, strict=True):
        at.button_group(key=key).set_value(value).run()
        no_exception(at)
        assert dict(at.query_params) == address, (key, value)
        assert at.button_group(key="kv_heads").value == kv
        config = at.session_state[SHOWN_SETTINGS].config
        assert (config.kv_heads or config.n_heads) == kv
        assert make_app(**address).run().session_state[SHOWN_SETTINGS] == at.session_state[SHOWN_SETTINGS]


def test_lesson_2_rebuilt_by_clicking_is_multi_head():
    """Lesson 2 by hand (d_model 512, 8 heads) gave W_K and W_V of (512, 256) and a grouped-query note."""
    at = make_app().run()
    at.selectbox(key="d_model").select(512).run()
    at.button_group(key="n_heads").set_value(8).run()
    no_exception(at)
    config = at.session_state[SHOWN_SETTINGS].config
    assert (config.d_model, config.n_heads, config.kv_heads) == (512, 8, None)
    assert dict(at.query_params) == {"d_model": "512", "n_heads": "8"}


VIEW_CLICKS = {
    "class": [
        ("text_area", "class_text", "the dog ran home\n<b>x</b> 🙂 שלום\nthe cat sat on the mat"),
        ("button_group", "class_head", 3),
        ("button_group", "weights", "identity"),
        ("text_area", "class_text", ""),
    ],
    "contrast": [
        ("text_input", "second", "The bank of the sea gave a loan"),
        ("button_group", "contrast_head", 2),
        ("toggle", "causal", True),
        ("text_input", "second", "the black bank of the river gave a loan"),
    ],
}
"""The class and contrast views' own controls (and a sidebar control between them), clicked in order."""


@pytest.mark.parametrize("view", sorted(VIEW_CLICKS))
def test_a_view_s_own_controls_are_its_link(view, downloads):
    """Each click on the class or contrast view's list, second sentence or head picker is in the address, and the
    page that address opens draws the same settings and maps; so is the browser's own address if the answer is lost."""
    at = make_app(view=view).run()
    no_exception(at)
    for kind, key, value in VIEW_CLICKS[view]:
        widget = getattr(at, kind)(key=key)
        browser = browser_writes(dict(at.query_params), key, value, default_of(widget))
        widget.set_value(value)
        at.run()
        no_exception(at)
        assert at.query_params.get(key) == browser.get(key), (key, value)
        shown = screen(at, downloads)
        assert shown["maps"] or key == "class_text", (key, value)  # an empty list draws no map: the page says why
        for address in (dict(at.query_params), browser):
            opened = make_app(**address).run()
            assert_same(shown, screen(opened, downloads), f"{view} {key}={value!r}: {address}")
            assert not link_warnings(opened)


VIEW_TEXTS = {
    "class_text": ("", "the cat sat\nthe dog ran home", "<b>x</b> 🙂 שלום\n\x00\ncat", " ".join(["w"] * 70)),
    "second": ("", "The bank of the sea gave a loan", "the black cat sat", "<b>x</b> **y** 🙂"),
}
"""Texts the class view's list and the contrast view's second sentence are given: empty, short, hostile, too long."""
WALKED_SIDEBAR = {"sentence": SENTENCES[:3], "n_heads": None, "causal": None, "seed": SEEDS[:3], "weights": None}
"""The sidebar controls the views' walk changes (None: any value the control offers)."""


class ViewControlsWalk(RuleBasedStateMachine):
    """The class and contrast views' own controls, a few sidebar controls and the view, in any order; after each step
    the address opens the same page."""

    @initialize(view=st.sampled_from(["class", "contrast"]))
    def open_a_view(self, view):
        self.downloads = Downloads()
        self.at = make_app(view=view).run()
        self.address, self.browser, self.where = dict(self.at.query_params), None, f"opened {view}"

    def teardown(self):
        if hasattr(self, "downloads"):
            self.downloads.close()

    def _click(self, widget, value, where: str) -> None:
        self.browser = browser_writes(self.address, widget.key, value, default_of(widget))
        widget.set_value(value)
        self.at.run()
        no_exception(self.at)
        self.address, self.where = dict(self.at.query_params), f"{self.where} -> {where}"
        assert self.address.get(widget.key) == self.browser.get(widget.key), self.where

    def _view_controls(self) -> dict[str, object]:
        kinds = ("text_area", "text_input", "button_group")
        return {w.key: w for kind in kinds for w in getattr(self.at, kind) if w.key in (*VIEW_TEXTS, *HEAD_PICKERS)}

    @precondition(lambda self: hasattr(self, "at") and bool(self._view_controls()))  # a step that runs the page
    @rule(data=st.data())
    def change_a_view_control(self, data):
        found = self._view_controls()
        key = data.draw(st.sampled_from(sorted(found)))
        widget = found[key]
        value = data.draw(st.sampled_from(VIEW_TEXTS[key])) if key in VIEW_TEXTS else offered(widget, data)
        self._click(widget, value, f"{key}={value!r}")

    @rule(data=st.data())
    def change_a_sidebar_control(self, data):
        controls = {k: w for k, w in sidebar_controls(self.at).items() if k in WALKED_SIDEBAR}
        key = data.draw(st.sampled_from(sorted(controls)))
        widget, values = controls[key], WALKED_SIDEBAR[key]
        value = data.draw(st.sampled_from(values)) if values else offered(widget, data)
        self._click(widget, value, f"{key}={text(value)}")

    @rule(view=st.sampled_from(["class", "contrast", "heads"]))
    def pick_a_view(self, view):
        self.at.button_group(key="view").set_value(view).run()
        no_exception(self.at)
        self.address, self.browser, self.where = dict(self.at.query_params), None, f"{self.where} -> view={view}"

    @invariant()
    def the_address_opens_the_same_page(self):
        if hasattr(self, "at"):
            the_addresses_open_it(self)


HEAD_PICKERS = ("class_head", "contrast_head")
ViewControlsWalk.TestCase.settings = settings(max_examples=25, stateful_step_count=12, **WALK)
test_the_class_and_contrast_controls_are_their_link = pytest.mark.timeout(1800)(ViewControlsWalk.TestCase)
