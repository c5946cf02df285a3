"""The quiz on the page (URL ``quiz=true``): a question instead of the maps, a pick, **Reveal**, then the map.

The heads and model views call ``ask(settings, run, controls)`` once their run is ready; while it returns True
the answer is hidden and the view draws no map. The questions come from ``dashboard.classroom.quiz``
(pure, tested); this module only keeps the student's pick and what was revealed in the session.

Token text (in questions, choices and explanations) is shown with ``st.text`` and in a selectbox, whose
options are plain text: never Markdown. For a room: ``current_question()`` is the question on screen,
``pick(question)`` the student's answer (an index into its choices, or None), ``question_id`` its id.

In a room the quiz is the teacher's. The room puts an ``InRoom`` (``dashboard.classroom.room_quiz``) in the session
before the view: the teacher reveals without a pick of their own, and the class's count and tally sit in the panel,
under the question; a student's pick goes to the room (marked as sent), and the answer shows only once the
teacher has revealed it.
"""

from __future__ import annotations

from typing import Protocol

import streamlit as st

from core import PATTERNS, Run
from core.head_summary import ROW_WEIGHT
from dashboard.classroom.quiz import METRIC_WORDS, Question, head_where, question_id, verdict
from dashboard.classroom.quiz_mechanics import KINDS as MECHANICS
from dashboard.classroom.quiz_mechanics import questions_for
from dashboard.classroom.quiz_reveal import show_mechanics
from dashboard.classroom.quiz_tap import KIND as TAP
from dashboard.classroom.quiz_tap import asks_taps
from dashboard.figures.heads import single_map_charts
from dashboard.figures.labels import position
from dashboard.figures.quiz import marked_map_charts, pattern_bars_figure, tap_reveal_figure
from dashboard.page.common import PLOTLY_CONFIG, plain_cell
from dashboard.page.map_columns import show_grid
from dashboard.state.followed import Controls
from dashboard.state.session import QUIZ_CURRENT, QUIZ_REVEALED, QUIZ_ROOM, forget, keep, set_values
from dashboard.state.settings import Settings

NUMBER = "quiz_question"
"""Key and query parameter of the question number (1-based): in the URL, so a room's students get the
teacher's question."""


class InRoom(Protocol):
    """What a room tells and does for the quiz (``dashboard.classroom.room_quiz.RoomQuiz``)."""

    teacher: bool
    """This page runs the room: it reveals for the class and sees the tally; it does not guess."""

    def for_class(self, qid: str) -> bool:
        """A student's question that only the teacher reveals (the room's question, or any while following)."""
        ...

    def revealed(self, qid: str) -> int | None:
        """The answer the teacher revealed to the room for ``qid``, or None."""
        ...

    def send(self, qid: str, pick: int) -> str | None:
        """A student's pick to the room; the room's refusal in words, or None."""
        ...

    def reveal(self, question: Question) -> None:
        """The teacher's Reveal, for the room."""
        ...

    def tally(self, question: Question, presenter: bool) -> None:
        """Draw, here, the class's count of picks (live), and after the reveal its tally."""
        ...

    def picks(self, qid: str) -> list[int] | None:
        """The class's picks per choice that the room kept at the teacher's reveal, or None."""
        ...


def in_room() -> InRoom | None:
    return st.session_state.get(QUIZ_ROOM)


def quiz_toggle(controls: Controls) -> bool:
    """The quiz switch (key and query parameter ``quiz``); on a following page the teacher's, not drawn."""
    return controls.choice(
        "quiz",
        False,
        lambda: st.toggle(
            "Quiz: predict, then reveal",
            key="quiz",
            bind="query-params",
            help="Hide the maps and ask one question whose answer comes from these numbers; pick an answer, then "
            "press Reveal to see the map with your pick and the right answer marked.",
        ),
    )


def pick_key(question: Question) -> str:
    return f"quiz_pick_{question_id(question)}"


def pick(question: Question) -> int | None:
    """The student's answer to ``question``: an index into its choices, or None before a pick."""
    value = st.session_state.get(pick_key(question))
    return None if value is None else int(value)


def current_question() -> Question | None:
    """The question this session shows (None outside quiz mode or when the run has none)."""
    return st.session_state.get(QUIZ_CURRENT)


def _context(settings: Settings) -> str:
    """What the questions depend on: the settings that change the numbers (not presenter mode or the view)."""
    c = settings.config
    training = repr(settings.training) if settings.kind.TRAINS else ""
    return f"{settings.sentence!r}|{settings.weights}|{c!r}|layer={settings.layer}|{training}"


def _next_question(number: int, n: int) -> None:
    set_values(quiz_question=number % n + 1)


def _reveal(question: Question) -> None:
    """Reveal button: this page sees the answer; a teacher's Reveal is the room's too."""
    keep(QUIZ_REVEALED, st.session_state.get(QUIZ_REVEALED, frozenset()) | {question_id(question)})
    room = in_room()
    if room is not None and room.teacher:
        room.reveal(question)


def _send(room: InRoom, qid: str, choice: int | None) -> None:
    """A student's pick to the room, and the mark that says where it stands. Sent on every run until the reveal
    (a follower's page reruns only when the room changes): a seat freed while the page slept, then taken again,
    gets its pick back."""
    if choice is None:
        st.caption("Pick an answer: it goes to your teacher, who reveals the answer to the class.")
        return
    if refused := room.send(qid, choice):
        st.caption(refused)  # the room's own words
        return
    st.caption(
        ":material/check_circle: Your pick is sent. The answer shows here when your teacher reveals it; "
        "until then you can change your pick."
    )


def ask(settings: Settings, run: Run, controls: Controls) -> bool:
    """The quiz switch, and in quiz mode the question about ``run`` (the layer shown); True while hidden. On a
    following page (``controls``) both are the teacher's, not drawn."""
    if not quiz_toggle(controls):
        forget(QUIZ_CURRENT)
        return False
    layered = settings.kind.LEARNED  # a learned model's heads are named by layer too
    tap = asks_taps(settings.weights, settings.kind.LEARNED)  # learned or hand-built: a row a student can predict
    found = questions_for(run, learned=settings.kind.LEARNED, layered=layered, context=_context(settings), tap=tap)
    if not found:
        forget(QUIZ_CURRENT)
        st.info(
            "No question has one clear answer in this run: no head alone has a named pattern, and no row's "
            "largest weight beats the next by 0.1. Try another sentence, seed, layer or weights, or turn the "
            "quiz off to see the maps.",
            icon=":material/quiz:",
        )
        return True
    n = len(found)
    if not 1 <= int(st.session_state.get(NUMBER) or 1) <= n:  # fewer questions than before: back to the first
        set_values(quiz_question=1)
    with st.container(border=True, key="quiz_panel"):
        number = _question_number(n, controls)
        question = found[max(1, min(int(number or 1), n)) - 1]
        keep(QUIZ_CURRENT, question)
        qid = question_id(question)
        room = in_room()
        teacher = room is not None and room.teacher  # runs the room: reveals for the class, never guesses
        for_class = room is not None and not teacher and room.for_class(qid)  # a student: the teacher reveals
        revealed = _revealed(room, qid, teacher, for_class)
        # the teacher's page: the class's count and tally beside the question, where the class looks
        left, right = st.columns([3, 2], gap="medium") if teacher else (st.container(), None)
        with left:
            if teacher:
                st.caption("Your class picks on their own screens; reveal when you are ready.")
            else:
                st.caption("Predict first, then reveal." if not for_class else "Predict first.")
            st.text(question.text)  # may quote a token: plain text
            choice = None if teacher else _guess(question, revealed)
            if for_class and not revealed:
                _send(room, qid, choice)
            with st.container(horizontal=True):
                if not for_class:  # a student on the class's question moves with the teacher, who reveals
                    _buttons(question, int(number), n, teacher, choice, revealed)
        if right is not None:
            with right:
                room.tally(question, settings.presenter)
        if revealed:
            _show_answer(settings, run, question, choice)
    return not revealed


def _question_number(n: int, controls: Controls) -> int:
    """Which of the run's ``n`` questions, from 1: the picker's, or on a following page the teacher's."""
    return controls.choice(
        NUMBER,
        1,
        lambda: st.number_input(
            "Question",
            min_value=1,
            max_value=n,
            value=1,
            step=1,
            key="quiz_question",  # NUMBER, written out: tests/dashboard/test_links.py reads bound keys
            bind="query-params",
            width=180,
            help=f"This run's numbers answer {n} question{'s' * (n > 1)} uniquely (1 to {n}); they come in the "
            "same order for everyone with these settings.",
        ),
    )


def _revealed(room: InRoom | None, qid: str, teacher: bool, for_class: bool) -> bool:
    """Whether the answer shows: the teacher's Reveal (on any of their devices) for the class's question, else
    this page's own."""
    mine = qid in st.session_state.get(QUIZ_REVEALED, frozenset())
    if teacher:
        return mine or room.revealed(qid) is not None  # or revealed from the teacher's other device
    if for_class:
        return room.revealed(qid) is not None  # only the teacher's Reveal shows the answer
    return mine


def _guess(question: Question, revealed: bool) -> int | None:
    """The answer picked (an index into ``question.choices``), or None before a pick; fixed once revealed."""
    if question.kind == TAP:
        return _tap(question, revealed)
    return st.selectbox(
        "Your answer",
        range(len(question.choices)),
        index=None,
        format_func=lambda i: question.choices[i],  # selectbox options are plain text, never Markdown
        placeholder="Pick one",
        width=420,
        key=pick_key(question),
        disabled=revealed,
        help="Commit to a guess before you see the map: that is what makes the reveal teach.",
    )


def _tap(question: Question, revealed: bool) -> int | None:
    """The tap question's choices: one button per token, in reading order, labelled as plain text (a button label
    is Markdown: each mark escaped by ``page.plain_cell``); the tapped one is primary."""
    key = pick_key(question)
    chosen = st.session_state.get(key)
    with st.container(horizontal=True, key="quiz_tap"):
        for i, choice in enumerate(question.choices):
            st.button(
                plain_cell(choice),
                key=f"quiz_tap_{i}",
                type="primary" if chosen == i else "secondary",
                disabled=revealed,
                on_click=_set_pick,
                args=(key, i),
            )
    return None if chosen is None else int(chosen)


def _set_pick(key: str, i: int) -> None:
    keep(key, i)


def _buttons(question: Question, number: int, n: int, teacher: bool, choice: int | None, revealed: bool) -> None:
    """Reveal (after a pick; the teacher's reveals for the class) and Another question."""
    st.button(
        "Reveal",
        type="primary",
        key="quiz_reveal",
        disabled=revealed or (choice is None and not teacher),
        on_click=_reveal,
        args=(question,),
        icon=":material/visibility:",
        help=_reveal_help(teacher, choice),
    )
    st.button(
        "Another question",
        key="quiz_next",
        on_click=_next_question,
        args=(number, n),
        icon=":material/skip_next:",
        help="The next question about these same numbers (they wrap round)."
        + (" Your class gets it too." if teacher else " Your answers are not stored."),
    )


def _reveal_help(teacher: bool, choice: int | None) -> str:
    if teacher:
        return "Show the map and the right answer, here and on every student's screen, and the class's tally."
    if choice is None:
        return "Pick an answer first; then the map appears with your pick and the right answer marked."
    return "Show the map, your pick and the right answer."


def _show_answer(settings: Settings, run: Run, question: Question, choice: int | None) -> None:
    """The verdict and why, then the map the question hid (and, for a pattern, every head's metric)."""
    if choice is not None:
        st.text(verdict(question, choice))
    st.text(question.explanation)
    if question.kind in MECHANICS:  # what the mechanics decided: its own figures (dashboard/classroom/quiz_reveal.py)
        show_mechanics(settings, run, question)
        return
    if question.kind == TAP:
        _show_tap(settings, run, question, choice)
        return
    layered = settings.kind.LEARNED
    where = f"layer {question.layer}, head {question.head + 1}" if layered else f"head {question.head + 1}"
    weights = run.trace.weights[question.head]  # (T, T) the map the question hid
    if question.kind == "pattern":
        metric = next(p.metric for p in PATTERNS if p.name == question.pattern)
        st.caption(
            f"Each bar is one head's share of rows that put more than {ROW_WEIGHT:g} of their weight "
            f"{METRIC_WORDS[metric]} (shares[{metric!r}] in core.head_summary); the dashed line is the share core "
            "names a head from. The answer's bar is pink"
            + ("; your pick, if another, is outlined in orange." if choice is not None else ".")
        )
        bars = pattern_bars_figure(
            question.values,
            question.threshold,
            answer=question.answer,
            pick=choice,
            metric=f"share of rows, {metric}",
            presenter=settings.presenter,
        )
        st.plotly_chart(bars, width="stretch", key="quiz_bars", config=PLOTLY_CONFIG)
        title = f"{where}, the {question.pattern} head"
        grid = single_map_charts(weights, run.tokens, run.trace.mask, title, settings.presenter)
    else:
        mine = "Dashed orange box: your pick, if another. " if choice is not None else ""
        st.caption(f"Solid pink box: the right answer. {mine}Dotted white outline: the query's row.")
        grid = marked_map_charts(
            weights,
            run.tokens,
            run.trace.mask,
            where,
            row=question.row,
            answer=question.options[question.answer],
            pick=None if choice is None else question.options[choice],
            presenter=settings.presenter,
        )
    show_grid(grid, key="quiz_map")  # its own chart: a phone's whole width (dashboard/page/map_columns.py)


def _show_tap(settings: Settings, run: Run, question: Question, choice: int | None) -> None:
    """The real row as bars, and on the same axis the picks: the class's the room kept at the reveal, or outside a
    room this page's own."""
    room = in_room()
    kept = room.picks(question_id(question)) if room is not None else None
    n = len(question.choices)
    if kept is not None:
        picks = (list(kept) + [0] * n)[:n]
        whose = "the class's picks"
    else:
        picks = [int(choice == j) for j in range(n)]
        whose = "your pick"
    where = head_where(question.layer, question.head, settings.kind.LEARNED)  # as the question names it
    st.caption(
        f"Grey bars: the weights of row {position(question.row)} in {where}; pink: the largest. "
        f"Orange: {whose}, as a share of all picks, with the count above."
    )
    row = run.trace.weights[question.head, question.row]  # (T_k,) the row the question hid
    figure = tap_reveal_figure(
        row, picks, run.tokens, answer=question.answer, whose=whose, presenter=settings.presenter
    )
    st.plotly_chart(figure, width="stretch", key="quiz_tap_bars", config=PLOTLY_CONFIG)
