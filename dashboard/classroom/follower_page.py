"""The page of a student who follows the teacher: the teacher's figures, the quiz and the room bar, no settings widgets.

While a student follows, every setting is the room's: drawing the ~25 sidebar widgets only to hold values the
student may not change was about a quarter of each follower redraw (``python -m bench.follower --profile``), and
200 students redraw on every change the teacher makes. So a following page reads its settings from the room
(``follower_settings``: the room's address, read as any link is); in place of the settings widgets its sidebar holds
the teacher's settings as one read-only line read from the run, and the room panel, whose "Follow the teacher"
toggle gives the controls back: the next run draws the full sidebar, starting from the teacher's settings (the
page's last values were the room's: ``url_state.settle``).

The app calls ``follower_settings(room)`` after ``enter_room``; when it returns settings, ``follow_room`` draws the
page's body as a fragment (``_followed_body``, which the push reruns alone) instead of the full sidebar and body;
when it returns None, the page draws its own sidebar.
The page's other controls a follower cannot use (the view bar, the tour's step and buttons, the heads view's
switches, the quiz switch, the head pickers) are the room's values: the body gets them as the run's ``Controls``
(``dashboard.state.followed``), which draws no widget.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core import Run
from dashboard.classroom.room_page import RoomState, drawn, follow_on, fragment_rerun, question_open, watch_room
from dashboard.compute import bounded_cache, computations
from dashboard.compute.bounded_cache import MB
from dashboard.page.common import scaled
from dashboard.serve import streamlit_runtime
from dashboard.state.followed import Controls
from dashboard.state.settings import Settings, settings_from
from dashboard.state.url_state import SPEC, address_text, read, with_own

Body = Callable[[RoomState, Settings, Controls], None]
"""The page's body: everything the settings decide, drawn with the run's controls."""


def room_address(state: RoomState) -> dict[str, str] | None:
    """A following page's address: the room's settings as a link carries them (this screen keeps its own presenter
    mode and room: ``url_state.with_own``); None on any other page."""
    if not state.following or state.room is None:
        return None
    return {k: address_text(v) for k, v in state.room.settings.items() if k in SPEC and v is not None}


def follower_settings(state: RoomState) -> tuple[Settings, Controls] | None:
    """On a student's page that follows its teacher, the room's settings, read from the room's address as any link
    is (``url_state.read``, then ``settings.settings_from``), and the page's controls: the room's values, no widgets
    (``dashboard.state.followed``). None on any other page."""
    address = room_address(state)
    if address is None or state.room is None:
        return None
    values = read(with_own(address), repair=True).context
    return settings_from(values), Controls({**state.room.settings, **values})  # and the teacher's training


def follow_room(state: RoomState, body: Body, line: DeltaGenerator) -> None:
    """A following page's ``body(state, settings, controls)``, with the teacher's settings as one read-only line in
    ``line`` (the lean sidebar's top, under the app's name), as one fragment.

    The teacher's change reruns this fragment alone (``push.watch`` gets its id): the room's new settings, its
    line and the body, not the sidebar's room section, the follow line's fragment or ``enter_room``, which were
    about a third of each follower redraw (``python -m bench.follower --profile``). A click in the body (a quiz
    pick, an expander) reruns it alone too. A rerun that finds more than a new version (``room_page.follow_on``:
    the room closed, following stopped, the student changed a control) reruns the whole page, which says why."""
    st.fragment(_followed_body)(state, body, line)


def _followed_body(state: RoomState, body: Body, line: DeltaGenerator) -> None:
    if fragment_rerun():  # this fragment's own rerun: read the room again
        newest = follow_on(state.code or "")
        if newest is None:
            st.rerun(scope="app")
        state = newest
    followed = follower_settings(state)
    assert followed is not None, "follow_room is for a following page"
    settings, controls = followed
    line.caption(settings_line(settings, quiz_open=question_open(state.room)))  # d_k answers a quiz question
    watch_room(state, streamlit_runtime.running_fragment())  # this fragment: the push reruns it alone
    body(state, settings, controls)
    drawn(state)  # not reached when Streamlit ends this run early: the page's check then reruns it whole


_lines = bounded_cache.BoundedCache("dashboard.classroom.follower_page.lines", max_bytes=1 * MB)
"""(settings, quiz open) -> ``settings_line``: one per room version a follower shows, so a few per open room."""


def settings_line(settings: Settings, quiz_open: bool = False) -> str:
    """``teacher_line`` of the settings and their run, kept once made from a run: every follower of a room shows the
    same line, and looking the run up again (hashing its cache key) was ~5% of a follower's redraw. A line made
    without a run is not kept (making it again computes no run), so it gets the facts as soon as there is a run:
    after MiniLM failed to load and "Try again" loaded it."""
    line = _lines.peek((settings, quiz_open))
    if line is not None:
        return line
    run = _run(settings)
    line = teacher_line(settings, run, quiz_open)
    if run is not None:
        _lines.put((settings, quiz_open), line)
    return line


def _run(settings: Settings) -> Run | None:
    """The run the views draw (the same cached one), or None, saying nothing: a trained model (its run waits for
    training), MiniLM not installed, or a sentence the views refuse (the view says why)."""
    try:
        if settings.kind.TRAINS or not settings.sentence.strip():
            return None
        if settings.kind.ARCHITECTURE is not None:  # the pretrained model
            ready = not isinstance(computations.minilm(), str)
            return (
                computations.minilm_runs(settings.sentence, settings.config.causal)[settings.layer - 1]
                if ready
                else None
            )
        return computations.attention_run(computations.tokens_of(settings.sentence), settings.config)
    except ValueError:
        return None


def teacher_line(settings: Settings, run: Run | None, quiz_open: bool = False) -> str:
    """The teacher's settings in one line: the choices (weights, seed) from the settings, every fact about the
    computation (tokens, widths, heads, mask, scaling) from ``run``; only the choices when there is no run. While
    the room's question is open (``quiz_open``) it leaves out d_k, which a quiz question asks for, and says when the
    settings can be changed."""
    chosen = f"{settings.weights} weights, seed {settings.config.seed}"
    if settings.kind.TRAINS:
        chosen += f", task {settings.task}, {settings.train_steps} steps"
    how = (  # during the question, Follow off gives no controls (room_page.question_open)
        "You can change them once your teacher reveals the answer."
        if quiz_open
        else "Turn off “Follow the teacher” below to change them."
    )
    if run is None:
        return f"Following the teacher: {chosen}. {how}"
    tr = run.trace
    n_heads, n_tokens, d_k = tr.q.shape[-3:]  # q: (h, T_q, d_k)
    kv_heads = tr.k.shape[-3]  # k: (kv_heads, T_k, d_k)
    facts = [
        f"{n_tokens} tokens",
        f"d_model {run.x.shape[-1]}",  # x: (T, d_model)
        f"{n_heads} heads{'' if quiz_open else f' of d_k {d_k}'}"
        + (f" sharing {kv_heads} K/V heads" if kv_heads != n_heads else ""),
        f"{run.positional} positions",
        "masked" if tr.mask is not None else "no mask",
        "scaled by 1/√d_k" if scaled(tr) else f"scores × {tr.scale:.3g}",
    ]
    if tr.bias is not None:
        facts.append("ALiBi")
    if run.layer != 1:
        facts.append(f"layer {run.layer}")
    return f"Following the teacher: {chosen}; {', '.join(facts)}. {how}"
