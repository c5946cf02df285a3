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
the first token puts most weight on the second). ``figure = "step_mask_chart"`` names the chart (or the keyed
table or panel) the note is about, when it is not the page's first map; ``rows_on_screen = 1``: only the first row
of it fits a projector's first screen, and the note says where the rest is (tests/e2e/test_tours_on_a_projector.py
holds every step's figure to a 1280 x 720 projector's first screen).

The page: a "Guided tour" picker near the top of the sidebar, by title; while a tour runs, a bar above the
view with the step's title and note, its steps, **Back** and **Next** (in presenter mode, in place of the view bar
and the view's line: ``tour_bar``). The buttons apply a step in their
callback, which runs before the widgets are created, so every widget starts from the step (and the address
takes the step as one history entry: ``dashboard/state/address.py``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.classroom.share import url_value
from dashboard.classroom.tour_facts import fill
from dashboard.compute import bounded_cache
from dashboard.compute.bounded_cache import MB
from dashboard.page.presenter import TOUR_LINE_KEY
from dashboard.state.address import replace
from dashboard.state.followed import OWN, Controls
from dashboard.state.session import set_values
from dashboard.state.settings import LINK_KEYS, Settings

TOURS_DIR = Path(__file__).with_name("tours")
TOUR_KEYS = ("tour", "tour_step")
"""The tour's own URL keys: a step cannot set them."""
STEP_FIELDS = {"title", "note", "settings", "pattern", "attends", "figure", "rows_on_screen"}
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
    figure: str | None = None
    """The key of what the note is about: a chart, a grid of maps (its charts are keyed ``<figure>_<n>``), or a
    table or panel drawn in a keyed container. None: the page's first map."""
    rows_on_screen: int | None = None
    """How many rows of the figure (of maps, or of a table) a 1280 x 720 projector's first screen holds when it
    cannot hold all of them (MiniLM's 72 maps); None: all of them."""


FIGURE_KEY = re.compile(r"[a-z][a-z0-9_]*")
"""A figure's key: a Streamlit widget key, as the page's charts are keyed."""


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
        figure, rows = raw.get("figure"), raw.get("rows_on_screen")
        if figure is not None and not (isinstance(figure, str) and FIGURE_KEY.fullmatch(figure)):
            raise ValueError(f'{where}: figure is a chart\'s key, such as "heads_chart"')
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
            raise ValueError(f"{where}: rows_on_screen is a whole number of rows, 1 or more")
        steps.append(
            Step(
                title=str(raw["title"]),
                note=str(raw["note"]).strip(),
                settings=settings,
                pattern=raw.get("pattern"),
                attends=None if attends is None else (attends[0], attends[1]),
                figure=figure,
                rows_on_screen=rows,
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


def step_address(slug: str, number: int) -> dict[str, str]:
    """Step ``number`` (1-based, moved into range) of tour ``slug`` as its link: the step's settings as a link
    carries them, the tour and the step. Every control the step leaves out is at its default there."""
    tour = load_tours()[slug]
    number = max(1, min(number, len(tour.steps)))
    settings = {k: url_value(v) for k, v in tour.steps[number - 1].settings.items()}
    return {**settings, "tour": slug, "tour_step": str(number)}


def apply_step(slug: str, number: int) -> None:
    """Open step ``number`` (1-based) of tour ``slug``: the next run reads its address as a link's, so every control
    starts from the step (``url_state.settle``), and the address takes it as one history entry. Call it from a
    callback, or before ``settle``."""
    replace(step_address(slug, number))


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
    set_values(tour=None)


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


def presenting(settings: Settings) -> bool:
    """A tour runs in presenter mode: its bar replaces the view bar and the view's line (``tour_bar``)."""
    return settings.presenter and st.session_state.get("tour") in load_tours()


def _step_picker(slug: str, tour: Tour, controls: Controls, *, presenter: bool) -> int:
    """The step picker (a following page: the teacher's step, no picker); the step shown, 1 to n."""
    n = len(tour.steps)
    number = controls.choice(  # a following page: the teacher's step and its note; the teacher moves on
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
            label_visibility="collapsed" if presenter else "visible",
            help=None
            if presenter
            else "Jump to a step: its settings replace the current ones. Back and Next below move one step, "
            "and the browser's Back and Forward retrace the steps taken.",
        ),
    )
    return step_number(number, n)


def _back_next(slug: str, number: int, n: int) -> None:
    """Back, and Next unless this is the last step. No tooltip: the pointer rests on the button after a click, and a
    tooltip there covered the note the class is reading."""
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


def _end_button() -> None:
    st.button(
        "End tour",
        key="tour_end",
        on_click=_end_tour,
        icon=":material/close:",
        help="Leave the tour; the page keeps this step's settings to explore from.",
    )


def tour_bar(settings: Settings | None = None, controls: Controls = OWN) -> DeltaGenerator | None:
    """While a tour runs, its bar on the page (call it above the view): the steps, the note, Back and Next. A
    note's ``{fact}`` names are read from the computation of ``settings`` (``tour_facts``).

    In presenter mode (``presenting``) the bar is the top of the page, in place of the view bar and the view's line,
    and takes two rows: the steps, Back and Next, then the step's title and its note cut to one line, with the whole
    note (and End tour) one click away in a popover that opens over the maps. It returns the first row's container
    for the class's buttons (``room_page.class_bar``); elsewhere None. On a following page (``controls``) the step
    is the teacher's: no picker, no Back and Next.
    """
    tours = load_tours()
    slug = st.session_state.get("tour")
    if slug not in tours:
        return None
    tour = tours[slug]
    n = len(tour.steps)
    presenter = settings is not None and settings.presenter
    with st.container(border=not presenter, key="tour_bar"):
        if presenter:
            row = st.container(horizontal=True, vertical_alignment="center", key="tour_row")
            with row:
                number = _step_picker(slug, tour, controls, presenter=True)
        else:
            number = _step_picker(slug, tour, controls, presenter=False)
        step = tour.steps[number - 1]
        note = step.note if settings is None else fill(step.note, settings)  # its numbers: from the page's run
        if presenter:
            _presenter_rows(row, slug, tour, number, note, controls)
            return row
        title = f"{tour.title}, step {number} of {n}: " if not controls.drawn else f"{number}. "
        st.markdown(f"**{title}{step.title}**  \n{note}")  # the tour file's own text, never typed input
        if not controls.drawn:
            return None
        with st.container(horizontal=True):
            _back_next(slug, number, n)
            _end_button()
    return None


def _presenter_rows(row: DeltaGenerator, slug: str, tour: Tour, number: int, note: str, controls: Controls) -> None:
    """Presenter mode's bar: beside the step picker in ``row``, Back, Next and the popover with the whole note (and
    End tour); under it, the step's title and its note on one line (``presenter.TOUR_LINE_KEY``: the style sheet
    cuts it there)."""
    n, step = len(tour.steps), tour.steps[number - 1]
    following = not controls.drawn
    with row:
        if following:
            st.markdown(f"**{tour.title}, step {number} of {n}**")
        else:
            _back_next(slug, number, n)
        with st.popover("Whole note", icon=":material/notes:", key="tour_note"):
            st.markdown(f"**{tour.title}, step {number} of {n}: {step.title}**  \n{note}")
            if not following:
                _end_button()
    with st.container(key=TOUR_LINE_KEY):
        st.markdown(f"**{number}. {step.title}**&ensp;{note}")  # the tour file's own text, never typed input
