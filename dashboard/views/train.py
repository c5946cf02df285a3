"""Train: press Train, watch the loss fall, then replay how every head's map formed.

The model is core.training's tiny transformer, with the sidebar's d_model, heads,
causal mask, positions and seed plus the task's controls (``Settings.training``).
Jobs live in ``dashboard.compute.training_jobs``: identical settings train once for the
whole server, recommended settings come pre-trained, and each session has a
training-time budget. While a job runs, a fragment redraws its progress every
``LIVE_SECONDS``; while the replay plays, another fragment moves the step slider. A student's page that follows
the teacher has no Train button: until the teacher's run shows, one line says what it is doing (waiting for a slot,
training, ended without a result, dropped, on another server process, not started) and what the student can do; the
page is redrawn when that changes, never polled.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import head_summary
from core.head_summary import NAMED_SHARE, ROW_WEIGHT, named_shares, pattern_label
from core.training import TrainSettings, head_patterns, recommended, seed_note, train
from core.training.model import forward
from core.training.patterns import head_roles
from core.training.train import snapshot
from dashboard.compute.training_jobs import (
    CANCELLED,
    MAX_RUNNING,
    SESSION_SECONDS,
    TEACHER_TRAINING,
    Answer,
    Job,
    TeacherTraining,
    Trained,
    answer,
    read_teacher_training,
    registry,
    result_npz,
)
from dashboard.figures.grid import ChartGrid
from dashboard.figures.layout import CAPTION_ROW_PX, QUIZ_SWITCH_PX, chart_fold_px
from dashboard.figures.train import curves_figures, formation_figure, layers_charts
from dashboard.page.common import PLOTLY_CONFIG, plain_cell, session_id, show_code, table_height
from dashboard.page.map_columns import chart, show_charts, show_grid
from dashboard.page.probes import ablation_panel, predictions_panel
from dashboard.page.shared_figures import charts_of
from dashboard.serve import clients
from dashboard.state.followed import Controls
from dashboard.state.session import REPLAY_PLAYING, keep, set_values
from dashboard.state.settings import Settings, recommended_state, widget_state

LIVE_SECONDS = 0.5
"""How often a running job's progress is redrawn."""
PLAY_SECONDS = 0.3
"""Time between replay frames."""
PLAY_FRAMES = 40
"""A replay shows about this many frames (every k-th snapshot), about 12 s whatever the run's length."""

SETTING_NAMES = {
    "d_model": "d_model",
    "n_heads": "heads",
    "train_layers": "layers",
    "positional": "positions",
    "causal": "causal",
    "train_steps": "steps",
    "lr": "learning rate",
    "seed": "seed",
}
"""The recommended settings by widget key, with their names on the page."""

CIRCUIT_WORDS = {
    "textbook": "This run learned the textbook circuit: a previous-token head in layer 1 and an induction head in "
    "layer 2.",
    "duplicate-token": "This run found another circuit: layer 1 became a duplicate-token head (it looks at the "
    "earlier copy of its own token) instead of a previous-token head.",
    "unsolved": "This run did not reach 99% held-out accuracy, so it has no circuit to name yet.",
}

READING = {
    "shift": "At position t the model outputs its guess for the input at t − 1 (position 0 has none).",
    "reverse": "At position t the model outputs its guess for the input at T − 1 − t.",
    "reverse-causal": "Next-token: at position t the model guesses the token at t + 1; after the | it should "
    "write the digits backwards.",
    "sort": "Next-token: at position t the model guesses the token at t + 1; after the | it should write the "
    "digits in increasing order.",
    "induction": "Next-token: at position t the model guesses the token at t + 1; in a repeated block it should "
    "continue the block.",
}
"""How to read the model's answer on typed input, per task."""


def render(settings: Settings, controls: Controls) -> None:
    try:
        training = settings.training
    except ValueError as err:  # e.g. sort without the causal mask: core's message names the fix
        st.error(str(err))
        return
    _recommendation(settings, training)
    if not controls.drawn:  # the teacher trains: no Train button (it made a student the class run's owner)
        trained = registry().trained(training)
        if trained is None:
            st.info(_teachers_run(training, controls), icon=":material/model_training:")
        else:
            _results(settings, trained, controls)
        return
    job = _train_button(training)
    if job is not None and job.active:
        _live(training, settings.presenter)
        return
    if job is not None and job.error:
        st.error(job.error)
    trained = registry().trained(training)
    if trained is None:
        st.info("Press **Train** to train this model. Its curves, maps and replay appear here.")
        return
    _results(settings, trained, controls)


# --- before training ---------------------------------------------------------------------------------------------


TAKE_OVER = "turn off “Follow the teacher” and press Train"
"""What a following student can do when the teacher's run will not show: train it, as their own run."""
OWN_RUN = f"To train these settings yourself, {TAKE_OVER}."
THERE = {
    "waiting": "waiting for a training slot",
    "training": "training",
    "trained": "trained",
    "stopped": "stopped early",
    "failed": "failed",
}
"""A run's state on another process (``TRAINING_STATES``), in words."""


def _teachers_run(training: TrainSettings, controls: Controls) -> str:
    """A following page's line until the run's results show. The page redraws when the room's version changes (the
    teacher's page publishes the run's state: ``TEACHER_TRAINING``) and when a job of this process changes state
    (``Registry.when_changed``), so the line is this process's news, never a guess from the room alone."""
    reg = registry()
    said = read_teacher_training(controls.room_value(TEACHER_TRAINING))
    return _teachers_run_line(reg.job(training), said, reg.dropped(training), reg.max_running)


def _teachers_run_line(job: Job | None, said: TeacherTraining | None, dropped: str | None, slots: int) -> str:
    """What a following student is told of the run of the teacher's settings, and what they can do: plain text,
    the page's own words (a job's error is escaped). ``job``: this process's job for the settings; ``said``: the
    room's ``TEACHER_TRAINING``; ``dropped``: why this process let go of its job (``Registry.dropped``)."""
    if job is not None and job.state == "waiting":
        return (
            f"The run of your teacher's settings is waiting for a free training slot on this server (at most {slots} "
            "trainings run at once). This page shows the run by itself once it has trained: its curves, maps "
            "and replay."
        )
    if job is not None and job.active:
        return (
            "The run of your teacher's settings is training on this server now. This page shows the run by itself "
            "when it ends: its curves, maps and replay."
        )
    if job is not None and job.error and job.error != CANCELLED:
        error = plain_cell(job.error.rstrip("."))
        return f"The run of your teacher's settings failed, so it has no result: {error}. {OWN_RUN}"
    if job is None and said is not None and not said.here:
        return (
            f"Your teacher's run of these settings is on another server process ({THERE[said.state]} when their "
            "page last drew, unless that process has restarted since), and this page can show only the runs of "
            "its own process. To see the model here, turn off “Follow the teacher” and press Train: the same "
            "settings then train on this process."
        )
    if dropped == "cancelled" or (job is not None and job.error == CANCELLED):
        return (
            "The run of your teacher's settings was cancelled before it ended: every page that had pressed Train "
            f"for it had closed, so the server stopped it and kept nothing. {OWN_RUN}"
        )
    if dropped == "evicted":
        return (
            "The run of your teacher's settings has ended, and this server has since dropped it to make room for "
            f"newer runs. {OWN_RUN}"
        )
    if said is not None:
        return f"This server process had the run of your teacher's settings and no longer holds it. {OWN_RUN}"
    return (
        "Your teacher has not pressed Train for these settings yet. When they do, this page shows the run by "
        f"itself. {OWN_RUN}"
    )


def _recommendation(settings: Settings, training: TrainSettings) -> None:
    """The task in one line, and which values are the task's recommendation."""
    task = training.task_info
    st.markdown(f"**Task: {task.name}.** The pattern that solves it: {task.pattern}.")
    rec = {k: _shown(v) for k, v in recommended_state(training.task).items()}
    chosen = {k: _shown(v) for k, v in widget_state(training).items()}
    differ = [f"{SETTING_NAMES[k]} {chosen[k]} (recommended {rec[k]})" for k in SETTING_NAMES if chosen[k] != rec[k]]
    values = ", ".join(f"{SETTING_NAMES[k]} {rec[k]}" for k in SETTING_NAMES)
    st.caption(f"The {task.name} task's recommended settings: {values}.")
    if differ:
        st.caption(f"This run differs in: {'; '.join(differ)}. Choosing the task again restores the recommendation.")
    else:
        st.caption(
            "This run uses all of them: it comes pre-trained (core/training/trained/), written by the same code, "
            "so it shows at once and the replay shows how it learned."
        )


def _shown(value: object) -> str:
    """A setting as the page says it: on / off for switches."""
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _train_button(training: TrainSettings) -> Job | None:
    """The Train button and what the server allows; returns this settings' job, if there is one."""
    reg, session = registry(), session_id()
    pretrained = training == recommended(training.task)
    left = reg.seconds_left(session)
    with st.container(horizontal=True, vertical_alignment="center"):
        pressed = st.button(
            "Train",
            key="train_button",
            type="primary",
            icon=":material/play_arrow:",
            help="Train this model in NumPy on the server, with a live loss and accuracy curve. Identical "
            "settings train once for everyone: if a classmate is already training them, you watch their run.",
        )
        st.caption(
            f"Each session may train for {SESSION_SECONDS:.0f} s in all ({left:.0f} s left); "
            f"at most {MAX_RUNNING} trainings run at once on this server."
        )
    if pressed and pretrained:
        st.toast("These are the task's recommended settings: they come pre-trained. Change one (the seed?) to train.")
    elif pressed:
        outcome = reg.start(training, session, clients.address())
        if isinstance(outcome, str):
            st.warning(outcome, icon=":material/hourglass_top:")
    return reg.job(training)


@st.fragment(run_every=LIVE_SECONDS)
def _live(training: TrainSettings, presenter: bool) -> None:
    """A running job's progress bar and live curves; when it ends, the whole page redraws with the results."""
    job = registry().job(training)
    if job is None or not job.active:
        st.rerun(scope="app")
    if job.state == "waiting":
        st.progress(0.0, text="Waiting for a free training slot on the server…")
        return
    live = job.live
    step = 0 if live is None else live.step
    st.progress(step / training.steps, text=f"Training: step {step} of {training.steps}, {job.elapsed():.1f} s")
    if live is not None:
        curves = curves_figures(
            live.loss_step, live.loss, live.eval_step, live.eval_accuracy, training.steps, presenter=presenter
        )
        show_charts(curves, 2, key="live_curves")
    if job.owner == session_id():
        st.button(
            "Stop",
            key="stop_button",
            icon=":material/stop:",
            on_click=registry().stop,
            args=(training, session_id()),
            help="End the run after its current step; what it learned so far is kept and shown.",
        )
    else:
        st.caption("Another session started this training: you are watching its run.")


# --- after training ----------------------------------------------------------------------------------------------


CURVES_ABOVE_PX = 6 * CAPTION_ROW_PX - QUIZ_SWITCH_PX
"""On a projector, above the curves: six rows of text (the task's line, the recommendation's line and the two of what
this run uses, the Train button's row, the accuracy line: 244 px measured in chromium); no quiz switch."""


def _results(settings: Settings, trained: Trained, controls: Controls) -> None:
    result, presenter = trained.result, settings.presenter
    _outcome(trained, controls)
    h = result.history
    fold_px = chart_fold_px(presenter=presenter, above_px=CURVES_ABOVE_PX)  # the view's first chart
    curves = charts_of(  # built once per finished run (``Trained`` is computed once): a room's followers all draw these
        trained,
        ("train curves", presenter),
        lambda: curves_figures(
            h.step, h.loss, h.eval_step, h.eval_accuracy, result.settings.steps, presenter=presenter, fold_px=fold_px
        ),
    )
    show_charts(curves, 2, key="train_curves")
    run = result.settings  # what this run trained with (a loaded run's own file)
    st.caption(
        f"Training loss: cross-entropy of each step's batch of {run.batch_size} sequences. Held-out accuracy: share "
        f"of held-out tokens predicted right, every {run.eval_every} steps; the dotted line is 99%, the bar for solved."
    )
    show_code(train, _train_call(trained))
    _final_maps(settings, trained)
    _replay(settings, trained)
    _learned(trained)
    ablation_panel(settings, trained.source)
    _try_it(settings, trained)
    _exports(trained)


def _outcome(trained: Trained, controls: Controls) -> None:
    result = trained.result
    reached = result.step_to_target
    where = "" if reached is None else f" (99% first at step {reached})"
    source = "pre-trained, loaded from its file" if trained.pretrained else f"trained in {result.seconds:.1f} s"
    st.markdown(f"Held-out accuracy **{result.final_accuracy:.1%}** after {result.steps_done} steps{where}: {source}.")
    if result.stopped:
        steps, following = result.settings.steps, not controls.drawn  # a follower: the teacher's run, not theirs
        forward = f" To train all {steps} steps yourself, {TAKE_OVER}." if following else ""
        st.warning(
            f"This run stopped at step {result.steps_done} of {steps} (the Stop button, or "
            f"{'its' if following else 'this'} session's {SESSION_SECONDS:.0f} s of training): what it learned so "
            f"far is shown.{forward}",
            icon=":material/stop_circle:",
        )


def _train_call(trained: Trained) -> str:
    s = trained.result.settings
    if trained.pretrained:
        return (
            f"result = load_trained({s.task!r})  # written offline by python -m core.training.pretrain:\n"
            f"result = train(recommended({s.task!r}))"
        )
    return f"result = train({s!r})"


def _example_tokens(trained: Trained) -> tuple[str, ...]:
    return trained.runs[0].tokens


def _final_maps(settings: Settings, trained: Trained) -> None:
    st.subheader("The trained heads", anchor=False)
    tokens = _example_tokens(trained)
    st.caption(
        f"Every head of every layer on the task's fixed example ({len(tokens)} tokens, the same for every seed): "
        "each map titled with its layer and head; row = query, column = key."
    )

    def build() -> ChartGrid:
        weights = np.stack([r.trace.weights for r in trained.runs])  # (L, h, T, T)
        return layers_charts(weights, tokens, trained.runs[0].trace.mask, presenter=settings.presenter)

    show_grid(charts_of(trained, ("trained maps", settings.presenter), build), key="trained_maps")
    show_code(forward, "runs = runs_of(result, example)  # forward: one AttentionTrace per layer")


def _replay(settings: Settings, trained: Trained) -> None:
    st.subheader("Replay: how the maps formed", anchor=False)
    steps = [int(s) for s in trained.result.snapshot_steps]
    st.caption(
        f"{len(steps)} snapshots of every head's map on the fixed example, one every "
        f"{trained.result.settings.snapshot_every} steps. Drag the step, or press Play."
    )
    playing = st.session_state.get(REPLAY_PLAYING, False)
    st.button(
        "Pause" if playing else "Play",
        key="replay_play",
        icon=":material/pause:" if playing else ":material/play_arrow:",
        on_click=_toggle_play,
        args=(steps,),
        help="Step through the snapshots from the start (about 12 s), maps and curves together.",
    )
    _replay_frame(settings, trained, steps, playing)


def _toggle_play(steps: list[int]) -> None:
    """Play from the start (or from where the slider is, if not at the end); Pause stops."""
    playing = not st.session_state.get(REPLAY_PLAYING, False)
    keep(REPLAY_PLAYING, playing)
    if playing and st.session_state.get("replay_step", steps[-1]) == steps[-1]:
        set_values(replay_step=steps[0])


def _replay_frame(settings: Settings, trained: Trained, steps: list[int], playing: bool) -> None:
    """The slider, the maps at its step and the formation curves; a fragment that advances itself while playing."""

    def frame() -> None:
        if st.session_state.get(REPLAY_PLAYING, False):
            _advance(steps)
        step = st.select_slider(
            "Replay step",
            options=steps,
            value=steps[-1],
            key="replay_step",
            bind="query-params",
            help="Training step of the snapshot shown: 0 is before training (random weights), the last is the "
            "trained model.",
        )
        _replay_figures(settings, trained, steps.index(step))

    st.fragment(frame, run_every=PLAY_SECONDS if playing else None)()


def _advance(steps: list[int]) -> None:
    """Move the slider one frame on; at the last snapshot, stop playing and redraw the page (Play again)."""
    stride = max(1, math.ceil(len(steps) / PLAY_FRAMES))
    current = st.session_state.get("replay_step", steps[0])
    index = steps.index(current) if current in steps else 0
    if index >= len(steps) - 1:
        keep(REPLAY_PLAYING, False)
        st.rerun(scope="app")
    set_values(replay_step=steps[min(index + stride, len(steps) - 1)])


def _replay_figures(settings: Settings, trained: Trained, i: int) -> None:
    result = trained.result
    step = int(result.snapshot_steps[i])
    h = result.history
    batch = h.accuracy[step - 1] if step >= 1 else None
    evaluated = [(s, a) for s, a in zip(h.eval_step, h.eval_accuracy, strict=True) if s <= step][-1]
    words = [f"**Step {step}**: held-out accuracy {evaluated[1]:.1%} (evaluated at step {evaluated[0]})"]
    if batch is not None:
        words.append(f"accuracy on this step's training batch {batch:.1%}")
    st.markdown(", ".join(words) + ".")
    tokens = _example_tokens(trained)
    maps = charts_of(  # built once per run and snapshot: a room's followers all draw these
        trained,
        ("replay maps", i, settings.presenter),
        lambda: layers_charts(result.snapshots[i], tokens, trained.runs[0].trace.mask, presenter=settings.presenter),
    )
    show_grid(maps, key="replay_maps")
    formation = charts_of(
        trained,
        ("replay formation", i, settings.presenter),
        lambda: formation_figure(
            result.snapshot_steps,
            trained.formation,
            trained.formation_labels,
            at_step=step,
            presenter=settings.presenter,
        ),
    )
    chart(formation, width="stretch", key="replay_formation", config=PLOTLY_CONFIG)
    st.caption(
        "Each head's mean weight on the key its pattern reads, on the fixed example, at every snapshot; "
        "the dotted line is the step shown."
    )
    show_code(snapshot, "snapshots.append(snapshot(params, config, example))  # inside train, every few steps")


def _learned(trained: Trained) -> None:
    """The pattern each head learned, from the numbers, and what other seeds do."""
    st.subheader("What each head learned", anchor=False)
    result, p = trained.result, trained.patterns
    named = "; ".join(f"{name}: {weight:.2f}" for name, weight in trained.named.items())
    st.markdown(f"The task's circuit, measured on 256 held-out sequences: {named} (mean weight on its key).")
    if (circuit := trained.circuit()) is not None:
        st.markdown(CIRCUIT_WORDS[circuit] if circuit in CIRCUIT_WORDS else mixed_words(trained))
    st.dataframe(_pattern_table(trained), hide_index=True, width="stretch", height=table_height(p.answer.size))
    st.caption(seed_note(result.settings.task))  # the survey's measured fraction (core.training.SEED_SURVEY)
    show_code(head_patterns, "patterns = head_patterns(result.params, result.settings.model, held_out_batch)")


def mixed_words(trained: Trained) -> str:
    """A solved induction run with neither textbook circuit: layer 1 in numbers, naming only a pattern its rows show
    (``head_roles``' per-row rule: more than NAMED_SHARE of a head's rows with more than ROW_WEIGHT on the key)."""
    p = trained.patterns
    previous, duplicate = float(np.nanmax(p.previous_at_source[0])), float(np.nanmax(p.duplicate[0]))
    task = trained.result.settings.task
    heads = range(p.answer.shape[1])
    named = {role.description for head in heads for role in head_roles(task, p, 0, head)}
    found = [name for name in ("previous-token", "duplicate-token") if f"{name} head" in named]
    rule = f"more than {NAMED_SHARE:.0%} of its rows with more than {ROW_WEIGHT:.0%} of their weight on the key"
    what = (
        f"layer 1 has a {' and a '.join(found)} head ({rule})"
        if found
        else f"no head of it has {rule} of either, so neither is named"
    )
    return (
        f"This run solves the task without the textbook circuit. Layer 1's heads put at most {previous:.2f} of their "
        f"weight on the previous token (at the keys layer 2 reads) and at most {duplicate:.2f} on the earlier copy of "
        f"their own token: {what}."
    )


def _pattern_table(trained: Trained) -> pd.DataFrame:
    """One row per head: its weights on the task's keys (held-out set), what that makes it, and the summary's names."""
    p = trained.patterns
    rows = []
    for layer, run in enumerate(trained.runs):
        named = named_shares(head_summary(run.trace.weights, run.trace.mask))
        for head in range(p.answer.shape[1]):
            rows.append(
                {
                    "layer": layer + 1,
                    "head": head + 1,
                    "learned": _role(trained, layer, head),
                    "on the answer's key": float(p.answer[layer, head]),
                    "on the previous token": float(p.previous[layer, head]),
                    "…at the answers' keys": float(p.previous_at_source[layer, head]),
                    "on its token's earlier copy": float(p.duplicate[layer, head]),
                    "summary's names (fixed example)": ", ".join(pattern_label(*n) for n in named[head]) or "none",
                }
            )
    return pd.DataFrame(rows).round(3)


def _role(trained: Trained, layer: int, head: int) -> str:
    """The head's named roles with the share of rows behind each (``head_roles``: the rule that names heads
    everywhere, from the held-out set's rows)."""
    roles = head_roles(trained.result.settings.task, trained.patterns, layer, head)
    return ", ".join(f"{role.description} ({role.share:.0%} of rows)" for role in roles) or "none of these"


def _try_it(settings: Settings, trained: Trained) -> None:
    st.subheader("Try it on your own input", anchor=False)
    result = trained.result
    task = result.settings.task_info
    reading = "reverse-causal" if task.name == "reverse" and result.settings.model.causal else task.name
    text = st.text_input(
        "Your sequence",
        value=" ".join(_example_tokens(trained)),
        max_chars=4 * result.settings.seq_len,
        key=f"try_{task.name}",
        help=f"Up to {result.settings.seq_len} of the {task.name} task's symbols ({''.join(task.symbols)}); "
        "spaces are ignored. The model answers at every position.",
    )
    outcome = answer(result, text)
    if isinstance(outcome, str):
        st.warning(outcome, icon=":material/edit_note:")
        return
    st.caption(READING[reading])
    st.code(_answer_text(outcome), language=None)
    predictions_panel(settings, result, task.encode("".join(outcome.tokens)), outcome.tokens)

    def build() -> ChartGrid:
        weights = np.stack([r.trace.weights for r in outcome.runs])  # (L, h, T, T)
        return layers_charts(weights, outcome.tokens, outcome.runs[0].trace.mask, presenter=settings.presenter)

    # the model's maps are a function of the tokens: every follower shows the example until they type their own
    show_grid(charts_of(trained, ("try maps", outcome.tokens, settings.presenter), build), key="try_maps")


def _answer_text(outcome: Answer) -> str:
    """The typed symbols over the model's output, one column per position (shown as plain text, never Markdown)."""
    return f"input           {' '.join(outcome.tokens)}\nmodel's output  {' '.join(outcome.output)}"


def _exports(trained: Trained) -> None:
    s = trained.result.settings
    st.download_button(
        "Trained weights and snapshots (.npz)",
        data=lambda: result_npz(trained.result),
        file_name=f"trained_{s.task}_seed{s.seed}.npz",
        mime="application/octet-stream",
        key="train_npz",
        on_click="ignore",
        icon=":material/download:",
        help="Every weight matrix (param/...), the snapshots (S, layers, heads, T, T) with their steps, the "
        "loss and accuracy history and the settings, for numpy.load; TrainResult.load reads it back.",
    )
