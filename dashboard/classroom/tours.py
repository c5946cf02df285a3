"""Guided tours: a lesson as an ordered list of links, each with a note for the teacher.

A tour is a data file, ``dashboard/classroom/tours/<slug>.toml`` (the slug is the URL's ``tour``)::

    title = "Lesson 1: one head, and the look-ahead mask"
    lesson = "01-scaled-dot-product-attention"
    about = "One sentence on what the tour shows."

    [[steps]]
    title = "Five tokens"
    note = "What to point at, and the question to ask the class."
    settings = { view = "tokens", sentence = "the robot opens the door" }

``settings`` holds URL keys (``settings.LINK_KEYS``; not ``tour`` and ``tour_step``) with the values a
link would carry, typed as the widgets take them (``d_model = 512``, ``causal = true``). A step is one
link's worth: every control the step leaves out goes back to its default (presenter mode stays as the
teacher set it), so a step looks the same whatever came before it. Optional checks, verified by
tests/dashboard/test_tours.py against the numbers: ``pattern = "previous-token"`` (the step's layer and
head have that named pattern) and ``attends = ["it", "cat"]`` (in the step's layer and head, the row of
the first token puts most weight on the second).

The page: a "Guided tour" picker near the top of the sidebar, by title; while a tour runs, a bar above the
view with the step's title and note, its steps, **Back** and **Next**. The buttons apply a step in their
callback, which runs before the widgets are created, so every widget starts from the step (and the address
takes the step as one history entry: ``dashboard/address.py``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitAPIException

from dashboard import bounded_cache, followed
from dashboard.bounded_cache import MB
from dashboard.classroom.share import url_value
from dashboard.classroom.tour_facts import fill
from dashboard.settings import (
    DEFAULT_CONFIG,
    DEFAULTS,
    LINK_KEYS,
    SETTING_KEYS,
    Settings,
    recommended_state,
    trains,
)

TOURS_DIR = Path(__file__).with_name("tours")
TOUR_KEYS = ("tour", "tour_step")
"""The tour's own URL keys: a step cannot set them."""
KEPT = frozenset({"presenter", *TOUR_KEYS})
"""What a step never resets: the teacher's presenter mode and the tour itself."""
STEP_FIELDS = {"title", "note", "settings", "pattern", "attends"}
TOUR_FIELDS = {"title", "lesson", "about", "steps"}


@dataclass(frozen=True)
class Step:
    title: str
    note: str
    """For the teacher: what to point at, what to ask. Markdown (it is the project's own text)."""
    settings: dict = field(default_factory=dict)
    """URL key -> value, typed as the widget takes it."""
    pattern: str | None = None
    """A claim checked by a test: the step's layer and head have this named pattern (core.PATTERNS)."""
    attends: tuple[str, str] | None = None
    """A claim checked by a test: (query token, key token) the step's head sends most weight to."""


@dataclass(frozen=True)
class Tour:
    slug: str
    title: str
    lesson: str
    about: str
    steps: tuple[Step, ...]


def _check_value(where: str, key: str, value: object) -> None:
    if key not in LINK_KEYS or key in TOUR_KEYS:
        raise ValueError(f"{where}: {key!r} is not a setting a link can carry (see settings.LINK_KEYS)")
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"{where}: {key} must be text, a number or true/false")


def parse_tour(slug: str, data: dict) -> Tour:
    """A ``Tour`` from a file's parsed TOML; ``ValueError`` naming the tour and step for anything wrong."""
    if extra := set(data) - TOUR_FIELDS:
        raise ValueError(f"tour {slug}: unknown fields {sorted(extra)}; a tour has {sorted(TOUR_FIELDS)}")
    steps = []
    for i, raw in enumerate(data.get("steps", []), 1):
        where = f"tour {slug}, step {i}"
        if extra := set(raw) - STEP_FIELDS:
            raise ValueError(f"{where}: unknown fields {sorted(extra)}; a step has {sorted(STEP_FIELDS)}")
        if not str(raw.get("title", "")).strip() or not str(raw.get("note", "")).strip():
            raise ValueError(f"{where}: needs a title and a note")
        settings = dict(raw.get("settings", {}))
        for key, value in settings.items():
            _check_value(where, key, value)
        attends = raw.get("attends")
        if attends is not None and (len(attends) != 2 or not all(isinstance(a, str) for a in attends)):
            raise ValueError(f"{where}: attends is [query token, key token]")
        steps.append(
            Step(
                title=str(raw["title"]),
                note=str(raw["note"]).strip(),
                settings=settings,
                pattern=raw.get("pattern"),
                attends=None if attends is None else (attends[0], attends[1]),
            )
        )
    if not steps or not str(data.get("title", "")).strip():
        raise ValueError(f"tour {slug}: needs a title and at least one step")
    return Tour(slug, str(data["title"]), str(data.get("lesson", "")), str(data.get("about", "")), tuple(steps))


@bounded_cache.cache(max_bytes=1 * MB)
def load_tours(folder: Path = TOURS_DIR) -> dict[str, Tour]:
    """Every ``*.toml`` in ``folder`` by slug (the file name), in file-name order."""
    tours = {}
    for path in sorted(folder.glob("*.toml")):
        with path.open("rb") as f:
            tours[path.stem] = parse_tour(path.stem, tomllib.load(f))
    return tours


DEFAULT_VALUES = {
    **{
        k: getattr(DEFAULT_CONFIG, k)
        for k in ("d_model", "n_heads", "causal", "positional", "seed", "scaled", "window", "prefix", "alibi")
    },
    "weights": DEFAULT_CONFIG.weights,
    **{k: getattr(DEFAULTS, k) for k in SETTING_KEYS if hasattr(DEFAULTS, k) and k != "presenter"},
    "view": "heads",
    "quiz": False,
}
"""What a step resets the controls it does not name to (the sidebar's defaults, the heads view, no quiz)."""


def step_state(step: Step) -> dict:
    """The session values a step sets, by widget key: its settings, the defaults for what it leaves out,
    and, for the trained model, the task's recommendation (as a link to the train view gets)."""
    state = {k: v for k, v in DEFAULT_VALUES.items() if k not in KEPT}
    if step.settings.get("view") == "train" or trains(step.settings.get("weights")):
        state |= recommended_state(str(step.settings.get("task", DEFAULTS.task)))
    state |= step.settings
    return {"kv_heads": state["n_heads"]} | state  # multi-head unless the step groups its heads


def _view_keys_to_clear(step: Step) -> list[str]:
    """View controls the step does not name: dropped, so their widgets start from their own defaults."""
    return [k for k in LINK_KEYS - set(SETTING_KEYS) - KEPT - set(DEFAULT_VALUES) if k not in step.settings]


def _set_url(key: str, value: object) -> None:
    """Write (None: remove) ``key`` in the address bar when no widget on the last page owned it.

    A widget drawn on the last page writes its own new value to the URL; one that was not (a control of
    another view) would start from the step's value without writing it, and a link copied then would miss it.
    Streamlit refuses direct writes to a parameter a widget owns: that widget writes it.
    """
    try:
        if value is not None:
            st.query_params[key] = url_value(value)
        elif key in st.query_params:
            del st.query_params[key]
    except StreamlitAPIException:  # bound to a widget on the page: it keeps the URL in step itself
        pass


def apply_step(slug: str, number: int) -> None:
    """Set every widget to step ``number`` (1-based) of tour ``slug``; call it before the widgets exist
    (a button callback, or before the sidebar)."""
    tour = load_tours()[slug]
    number = max(1, min(number, len(tour.steps)))
    step = tour.steps[number - 1]
    for key in _view_keys_to_clear(step):
        st.session_state.pop(key, None)  # its widget starts again from its default (and leaves the URL)
        _set_url(key, None)
    st.session_state.update(step_state(step))
    for key, value in step.settings.items():
        _set_url(key, value)
    st.session_state["tour"] = slug
    st.session_state["tour_step"] = number


def open_tour_link(link: dict[str, str]) -> None:
    """A link with a tour and no settings of its own (``?tour=...&tour_step=2``): open that step.

    Call it after ``url_state.read_address`` and before any widget. A link that carries settings (one copied from the
    address bar mid-tour) is applied as it is: it already holds the step's settings.
    """
    tours = load_tours()
    slug = link.get("tour")
    if slug not in tours or set(link) - {*TOUR_KEYS, "presenter"}:
        return
    apply_step(slug, int(link.get("tour_step", 1)))  # url_state has made it one of the tour's steps


def _pick_tour() -> None:
    """Tour picker callback: a new tour starts at its first step; clearing it ends the tour."""
    slug = st.session_state.get("tour")
    if slug in load_tours():
        apply_step(slug, 1)


def _end_tour() -> None:
    st.session_state["tour"] = None


def tour_picker() -> None:
    """The tours by title, in the sidebar near the top (call it inside ``st.sidebar``).

    Not bound to the URL: a bound picker writes the text it shows, and this one shows titles while a link carries
    the slug. The page writes ``tour`` itself (``settings.OWNED_KEYS``; ``url_state`` reads it).
    """
    tours = load_tours()
    st.selectbox(
        "Guided tour",
        list(tours),
        index=None,
        format_func=lambda slug: tours[slug].title,
        placeholder="Choose a lesson's tour",
        key="tour",
        on_change=_pick_tour,
        help="A lesson as a series of prepared views, each with a note on what to point at and what to "
        "ask. Next and Back change every control; clear the box to end the tour.",
    )


def step_number(value: object, n: int) -> int:
    """The step shown for the picker's value, or a following page's room value: 1 to ``n``. A missing or odd value
    (None, text that is no number) is step 1, as the picker starts; one out of range is the nearest step."""
    try:
        return max(1, min(int(value), n))
    except (TypeError, ValueError, OverflowError):
        return 1


def tour_bar(settings: Settings | None = None) -> None:
    """While a tour runs, its bar on the page (call it above the view): the steps, the note, Back and Next. A
    note's ``{fact}`` names are read from the computation of ``settings`` (``tour_facts``).

    Back and Next carry no tooltip: the pointer rests on the button after a click, and a tooltip there covered the
    note the class is reading. The step picker's help says what they do.
    """
    tours = load_tours()
    slug = st.session_state.get("tour")
    if slug not in tours:
        return
    tour = tours[slug]
    n = len(tour.steps)
    with st.container(border=True, key="tour_bar"):
        number = followed.choice(  # a following page: the teacher's step and its note; the teacher moves on
            "tour_step",
            1,
            lambda: st.segmented_control(
                f"{tour.title}: step",
                list(range(1, n + 1)),
                default=1,
                required=True,
                key="tour_step",
                bind="query-params",
                on_change=lambda: apply_step(slug, int(st.session_state["tour_step"])),
                help="Jump to a step: its settings replace the current ones. Back and Next below move one step, "
                "and the browser's Back and Forward retrace the steps taken.",
            ),
        )
        number = step_number(number, n)
        step = tour.steps[number - 1]
        note = step.note if settings is None else fill(step.note, settings)  # its numbers: from the page's run
        title = f"{tour.title}, step {number} of {n}: " if followed.following() else f"{number}. "
        st.markdown(f"**{title}{step.title}**  \n{note}")  # the tour file's own text, never typed input
        if followed.following():
            return
        with st.container(horizontal=True):
            st.button(
                "Back",
                key="tour_back",
                disabled=number <= 1,
                on_click=apply_step,
                args=(slug, number - 1),
                icon=":material/arrow_back:",
            )
            if number < n:
                st.button(
                    "Next",
                    key="tour_next",
                    type="primary",
                    on_click=apply_step,
                    args=(slug, number + 1),
                    icon=":material/arrow_forward:",
                )
            st.button(
                "End tour",
                key="tour_end",
                on_click=_end_tour,
                icon=":material/close:",
                help="Leave the tour; the page keeps this step's settings to explore from.",
            )
