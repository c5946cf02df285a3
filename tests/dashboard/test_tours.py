"""Tours are data: every step of every tour file is a valid link that renders, and its claims hold."""

from __future__ import annotations

import re

import numpy as np
import pytest
from streamlit.runtime.state.common import user_key_from_element_id

from core import PATTERNS, AttentionConfig, head_summary, name_patterns
from core.head_summary import SPECIFIC, named_shares, pattern_label, specificity
from core.sources import MiniLMSource, source_class
from dashboard.classroom.quiz import questions
from dashboard.classroom.tour_facts import unknown_facts
from dashboard.classroom.tours import TOUR_KEYS, TOURS_DIR, load_tours, parse_tour
from dashboard.state.followed import OWN
from dashboard.state.settings import DEFAULT_CONFIG, LINK_KEYS, Settings
from dashboard.state.url_state import step_state
from dashboard.views import VIEWS
from tests.conftest import require_minilm
from tests.dashboard.conftest import heatmaps, keyed_figures, make_app, no_exception

TOURS = load_tours()
STEPS = [(slug, i) for slug, tour in TOURS.items() for i in range(1, len(tour.steps) + 1)]


def test_five_tours_one_file_each():
    assert sorted(p.stem for p in TOURS_DIR.glob("*.toml")) == sorted(TOURS)
    assert len(TOURS) == 5
    lessons = {t.lesson for t in TOURS.values()}
    course = ("01-scaled-dot-product-attention", "02-self-attention-and-multi-head", "03-attention-from-scratch")
    assert set(course) <= lessons


def _widget(at, key: str):
    """The widget bound to ``key`` on the page, or None."""
    for kind in ("text_input", "selectbox", "button_group", "toggle", "number_input", "select_slider"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    return None


def _needs_minilm(*steps) -> None:
    """Skip (or fail in CI) when a step opens the pretrained model and its weights are not installed."""
    if any(source_class(str(s.settings.get("weights", "random"))).ARCHITECTURE is not None for s in steps):
        require_minilm()


def _url(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize(("slug", "number"), STEPS, ids=[f"{s}-{n}" for s, n in STEPS])
def test_every_step_is_a_valid_link_that_renders(slug, number):
    step = TOURS[slug].steps[number - 1]
    _needs_minilm(step)
    assert set(step.settings) <= LINK_KEYS - set(TOUR_KEYS)
    at = make_app(tour=slug, tour_step=str(number), **{k: _url(v) for k, v in step.settings.items()}).run()
    no_exception(at)
    link_notes = [w.value for w in at.warning if w.icon == ":material/link:"]  # dashboard/state/link_notes.py
    assert not link_notes  # no link value was dropped
    assert not at.error, [e.value for e in at.error]
    for key, value in step.settings.items():
        widget = _widget(at, key)
        assert widget is not None, f"{slug} step {number}: no control {key} on the {step.settings.get('view')} view"
        assert widget.value == value, (key, widget.value, value)
    assert at.button_group(key="tour_step").value == number
    if step.settings.get("quiz"):  # a quiz step has a question with one answer in this run
        assert not at.info or all("No question" not in i.value for i in at.info)
        assert any(s.key and s.key.startswith("quiz_pick_") for s in at.selectbox)


@pytest.mark.parametrize("slug", list(TOURS))
def test_next_and_back_walk_the_tour_and_set_every_control(slug):
    tour = TOURS[slug]
    _needs_minilm(*tour.steps)
    at = make_app().run()
    at.selectbox(key="tour").select(slug).run()  # the picker opens step 1
    for number in range(1, len(tour.steps) + 1):
        no_exception(at)
        assert at.button_group(key="tour_step").value == number
        assert not [w for w in at.warning if w.icon == ":material/link:"]  # the page's own values: not a link
        state = step_state(tour.steps[number - 1])
        for key, value in state.items():
            widget = _widget(at, key)
            if widget is not None and not getattr(widget, "disabled", False):
                assert widget.value == value, (slug, number, key, widget.value, value)
        if number < len(tour.steps):
            at.button(key="tour_next").click().run()
    assert not any(b.key == "tour_next" for b in at.button)  # the last step: End tour, no Next
    at.button(key="tour_back").click().run()
    no_exception(at)
    assert at.button_group(key="tour_step").value == len(tour.steps) - 1
    at.button(key="tour_end").click().run()
    no_exception(at)
    assert at.selectbox(key="tour").value is None and not any(b.key == "tour_back" for b in at.button)


def test_a_tour_link_alone_opens_its_step():
    slug = "lesson-1-one-head"
    step = TOURS[slug].steps[2]
    at = make_app(tour=slug, tour_step="3").run()
    no_exception(at)
    for key, value in step.settings.items():
        assert _widget(at, key).value == value


def test_a_step_resets_what_it_does_not_name():
    at = make_app(tour="lesson-1-one-head", tour_step="3").run()  # heads view with values on
    assert at.toggle(key="values").value is True
    at.toggle(key="presenter").set_value(True).run()
    at.button(key="tour_back").click().run()  # step 2: the steps view, no values
    assert not [b for b in at.button_group if b.key == "view"]  # presenter mode: the tour's bar stands in for it
    at.button(key="tour_end").click().run()  # the view bar is back, on the step's view
    assert at.button_group(key="view").value == "steps"
    at.button_group(key="view").set_value("heads").run()
    no_exception(at)
    assert at.toggle(key="values").value is False  # not carried over from step 3
    assert at.toggle(key="presenter").value is True  # the teacher's presenter mode stays


def test_a_step_out_of_range_shows_the_first():
    at = make_app(tour="lesson-2-heads-and-shapes", tour_step="99").run()
    no_exception(at)
    assert at.button_group(key="tour_step").value in (1, len(TOURS["lesson-2-heads-and-shapes"].steps))


BAD = [
    ({"title": "t", "steps": [{"title": "s", "note": "n", "settings": {"tour": "x"}}]}, "not a setting"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "settings": {"colour": "red"}}]}, "not a setting"),
    ({"title": "t", "steps": [{"title": "s", "settings": {}}]}, "needs a title and a note"),
    ({"title": "t", "steps": []}, "at least one step"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "extra": 1}]}, "unknown fields"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "settings": {"seed": [1]}}]}, "text, a number"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "figure": "Heads chart"}]}, "chart's key"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "figure": 3}]}, "chart's key"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "rows_on_screen": 0}]}, "whole number of rows"),
    ({"title": "t", "steps": [{"title": "s", "note": "n", "rows_on_screen": True}]}, "whole number of rows"),
]


@pytest.mark.parametrize("slug", list(TOURS))
def test_every_fact_a_note_names_is_one_the_page_reads(slug):
    for number, step in enumerate(TOURS[slug].steps, 1):
        assert not unknown_facts(step.note), (slug, number, unknown_facts(step.note))


@pytest.mark.parametrize(("data", "words"), BAD, ids=[w for _, w in BAD])
def test_a_broken_tour_is_refused_with_where(data, words):
    with pytest.raises(ValueError, match=words):
        parse_tour("broken", data)


# -- the claims in the notes hold for the numbers ----------------------------------------------------------------------
def _runs(state: dict):
    """The step's runs, computed the way the page computes them: through the step's model source."""
    kind = source_class(state["weights"])
    if kind.ARCHITECTURE is not None:  # a pretrained model: its shape, not the step's
        require_minilm()
        from core.pretrained import load_minilm

        return MiniLMSource.of(load_minilm(), state["sentence"], causal=bool(state["causal"])).runs()
    from dashboard.compute import training_jobs

    shape = {k: state[k] for k in ("d_model", "n_heads", "positional")}
    config = AttentionConfig(**shape, causal=state["causal"], seed=state["seed"], scaled=True)
    training = {k: state[k] for k in ("task", "train_layers", "train_steps", "lr")}
    settings = Settings(config=config, weights=state["weights"], **training)
    return training_jobs.trained_source_or_message(settings.training, OWN).runs()


CLAIMS = [(s, n) for s, n in STEPS if TOURS[s].steps[n - 1].pattern or TOURS[s].steps[n - 1].attends]


@pytest.mark.parametrize(("slug", "number"), CLAIMS, ids=[f"{s}-{n}" for s, n in CLAIMS])
def test_the_notes_claims_hold(slug, number):
    step = TOURS[slug].steps[number - 1]
    state = step_state(step)
    runs = _runs(state)
    r = runs[state["layer"] - 1]
    k = state["head"] - 1
    if step.pattern:
        [names] = name_patterns(head_summary(r.trace.weights[k : k + 1], r.trace.mask, r.word_ids))
        assert step.pattern in names, (slug, number, names)
    if step.attends:
        query, key = step.attends
        q = r.tokens.index(query)
        assert r.tokens[int(np.argmax(r.trace.weights[k, q]))] == key
        # and the head is specific to the query: not a column every row reads
        specific = float(specificity(r.trace.weights[k], q, r.tokens.index(key), r.trace.mask))
        assert specific >= SPECIFIC
        weight = float(r.trace.weights[k, q, r.tokens.index(key)])  # the numbers the note states, if it does
        assert f"{weight:.2f} of its weight" in step.note and f"{weight - specific:.2f} on average" in step.note


def _heads_named(note: str) -> list[tuple[int, int]]:
    """The heads a note names, as "Layer 4, head 2"."""
    return [(int(layer), int(head)) for layer, head in re.findall(r"\b[Ll]ayer (\d+), head (\d+)", note)]


NAMING = [(s, n) for s, n in STEPS if _heads_named(TOURS[s].steps[n - 1].note)]
PATTERN_WORDS = {p.name for p in PATTERNS}


@pytest.mark.parametrize(("slug", "number"), NAMING, ids=[f"{s}-{n}" for s, n in NAMING])
def test_a_note_agrees_with_the_verdict_on_the_head_it_names(slug, number):
    """The page's verdict on a head (the model view's line under the map, the summary's "in words") and a note
    about the same head say one thing: the note states each pattern the verdict names with its share of rows, as
    the verdict does, and names no pattern the verdict does not. A note about one row of a head named for most of
    its rows says so, and the two read as two facts, not as a contradiction."""
    step = TOURS[slug].steps[number - 1]
    state = step_state(step)
    assert state["view"] in ("model", "summary"), "a note names a head on a page that shows its verdict"
    runs = _runs(state)
    for layer, head in _heads_named(step.note):
        assert layer == state["layer"], (slug, number, "the page shows the sidebar's layer")
        if state["view"] == "model":
            assert head == state["head"], (slug, number, "the model view's verdict line is about the head opened")
        r = runs[layer - 1]
        [verdict] = named_shares(head_summary(r.trace.weights[head - 1 : head], r.trace.mask, r.word_ids))
        for name, share in verdict:
            assert pattern_label(name, share) in step.note, (slug, number, pattern_label(name, share))
        stated = {name for name in PATTERN_WORDS if re.search(rf"\b{name}\b", step.note)}
        assert stated <= {name for name, _ in verdict}, (slug, number, stated, verdict)
        if not verdict:
            assert "none of the named patterns" in step.note, (slug, number)


def test_the_default_config_is_what_a_step_resets_to():
    state = step_state(TOURS["lesson-2-heads-and-shapes"].steps[0])
    assert {k: state[k] for k in ("d_model", "n_heads", "seed", "positional")} == {
        "d_model": DEFAULT_CONFIG.d_model,
        "n_heads": DEFAULT_CONFIG.n_heads,
        "seed": DEFAULT_CONFIG.seed,
        "positional": DEFAULT_CONFIG.positional,
    }


QUIZZES = [(s, n) for s, n in STEPS if TOURS[s].steps[n - 1].settings.get("quiz")]


@pytest.mark.parametrize(("slug", "number"), QUIZZES, ids=[f"{s}-{n}" for s, n in QUIZZES])
def test_a_quiz_comes_before_the_steps_that_name_its_answers(slug, number):
    """A pattern question asked after a step that names its head is recall, not prediction."""
    tour, state = TOURS[slug], step_state(TOURS[slug].steps[number - 1])
    kind = source_class(state["weights"])
    if not kind.LEARNED:  # the mechanics questions: the notes say the first asks which cells are exactly 0
        at = make_app(tour=slug, tour_step=str(number)).run()
        no_exception(at)
        assert at.session_state["quiz_current"].kind == "zero"
        assert "exactly 0" in tour.steps[number - 1].note
        return
    r = _runs(state)[state["layer"] - 1]
    asked = [q for q in questions(r.trace.weights, r.trace.mask, r.tokens, r.word_ids, layer=r.layer, layered=True)]
    answers = [(q.pattern, q.layer, q.head) for q in asked if q.kind == "pattern"]
    assert answers  # the step asks which head has a pattern
    for earlier in tour.steps[: number - 1]:
        before = step_state(earlier)
        same_model = before["weights"] == state["weights"] and before["layer"] == state["layer"]
        for pattern, layer, head in answers:
            assert not (same_model and earlier.pattern == pattern), (slug, earlier.title, pattern)
            assert f"layer {layer}, head {head + 1}" not in earlier.note.lower(), (slug, earlier.title)


# -- each step names what its note is about, and the page draws it ---------------------------------------------------
def _page_keys(at) -> set[str]:
    """The key of every keyed element and container on the page (Streamlit ends their ids with "-<key>")."""
    keys, todo = set(), [at._tree]
    while todo:
        node = todo.pop()
        proto_id = getattr(getattr(node, "proto", None), "id", "")
        if isinstance(proto_id, str) and proto_id.startswith("$$ID"):
            keys.add(user_key_from_element_id(proto_id))
        todo.extend(getattr(node, "children", {}).values())
    return keys


def _first_map(at) -> str | None:
    """The key of the page's first chart that draws a heatmap (a grid by its key), or None."""
    return next((key for key, fig in keyed_figures(at).items() if heatmaps(fig)), None)


@pytest.mark.parametrize(("slug", "number"), STEPS, ids=[f"{s}-{n}" for s, n in STEPS])
def test_every_step_names_a_figure_its_page_draws(slug, number):
    """A step's ``figure`` is on its page (a chart, a grid of charts, or a keyed table or panel); a step that names
    none has a map on its page, the first of which its note is about. tests/e2e/test_tours_on_a_projector.py holds
    it to the projector's first screen."""
    step = TOURS[slug].steps[number - 1]
    _needs_minilm(step)
    at = make_app(tour=slug, tour_step=str(number), presenter="true").run()
    no_exception(at)
    if step.figure is None:
        assert _first_map(at) is not None, f"{slug} step {number} names no figure and its page draws no map"
    else:
        keys = _page_keys(at)
        assert step.figure in keys or f"{step.figure}_1" in keys, (slug, number, step.figure)


def test_a_projector_s_tour_bar_stands_in_for_the_view_bar_and_line():
    """Presenter mode: the tour's bar and no view bar or view heading; the view is still the step's. A laptop keeps
    both above the bar."""
    slug, number = "lesson-1-one-head", 2  # the steps view
    teaches = VIEWS["steps"].teaches
    at = make_app(tour=slug, tour_step=str(number), presenter="true").run()
    no_exception(at)
    assert not [b for b in at.button_group if b.key == "view"]
    assert teaches not in [h.value for h in at.subheader] + [c.value for c in at.caption]
    assert at.button_group(key="step_head") is not None  # the steps view is drawn
    assert at.button(key="tour_next") is not None and at.button(key="tour_end") is not None
    at = make_app(tour=slug, tour_step=str(number)).run()
    assert at.button_group(key="view").value == "steps" and teaches in [c.value for c in at.caption]
