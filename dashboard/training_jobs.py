"""The server's training jobs: one registry per process, shared by every session.

A class of 30 pressing Train on the teacher's link must not start 30 trainings on a
1-GB, shared-CPU server, so:

- Jobs are keyed by the full ``TrainSettings``: identical settings train once. A second
  caller gets the first caller's job and watches its progress instead of training again.
- Each task's recommended settings come pre-trained (``core.training.load_trained``):
  no training at all, read once per process.
- Training runs in a background thread, at most ``MAX_RUNNING`` at once; up to
  ``MAX_JOBS`` may wait or run, more are refused with a message.
- One session trains for at most ``SESSION_SECONDS`` in total and one job at a time:
  ``should_stop`` ends a run when its session's time is used (core caps steps too).
- Finished results are kept, oldest dropped first, up to ``KEEP_FINISHED`` and
  ``KEEP_BYTES`` (a 2-layer, 16-head, 2000-step run keeps ~50 MB of snapshots).

``Registry`` is plain Python (tested without a server); ``registry()`` is the one
instance (``st.cache_resource``); ``trained_source_or_message`` is what ``dashboard/source.py``
calls for the trained model's source.
"""

from __future__ import annotations

import io
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from core import Run
from core.sources import TrainedSource
from core.training import HeadPatterns, Progress, TrainResult, TrainSettings, load_trained, recommended, train
from core.training.patterns import answer_weight, named_pattern, previous_at_source
from core.training.pretrain import circuit
from core.training.runs import runs_of

SESSION_SECONDS = 60.0
"""Training seconds one browser session may use in total: a few runs at most settings, never the whole server."""
MAX_RUNNING = 2
"""Trainings computing at once: the host has about 2 shared cores, and pages must keep redrawing."""
MAX_JOBS = 6
"""Trainings running or waiting for a slot; the next one is refused with a message."""
KEEP_FINISHED = 16
"""Finished runs kept for other sessions and for weights=trained in the other views."""
KEEP_BYTES = 160 * 2**20
"""...and at most this many bytes of weights and snapshots among them (of the ~1 GB host)."""
MAX_SESSIONS = 10_000
"""Sessions whose used seconds are remembered (the oldest forgotten first)."""

Trainer = Callable[..., TrainResult]


@dataclass(frozen=True)
class Trained:
    """A finished run with what every page reads from it, computed once."""

    result: TrainResult
    source: TrainedSource
    """The model as every other view reads it: one Run per layer on the task's fixed example."""
    patterns: HeadPatterns
    """Every head's weight on the answer key, the previous token and its own earlier copies (held-out set)."""
    named: dict[str, float]
    """The task's textbook circuit, measured (``TrainResult.named_pattern``)."""
    formation_labels: tuple[str, ...]
    formation: np.ndarray
    """(S, L*h): each head's weight on its pattern's key at every snapshot (``formation``)."""
    pretrained: bool
    """True when read from core/training/trained/ (the task's recommended settings)."""

    @property
    def runs(self) -> tuple[Run, ...]:
        """One Run per layer on the task's fixed example (``core.training.runs.runs_of``)."""
        return self.source.runs()

    @property
    def nbytes(self) -> int:
        return self.result.snapshots.nbytes + sum(p.nbytes for p in self.result.params.values())

    def circuit(self) -> str | None:
        """For the 2-layer induction circuit: "textbook", "duplicate-token", "mixed" or "unsolved"; else None."""
        return circuit(self.result) if textbook_circuit(self.result.settings) else None


ANSWER_KEY = {
    "shift": "the previous token",
    "reverse": "the mirrored position",
    "sort": "the next-larger digit",
    "induction": "the token after its earlier twin",
}
"""The key a perfect head reads, per task, in words (``Batch.source`` in core.training.tasks)."""


def textbook_circuit(settings: TrainSettings) -> bool:
    """Induction with 2 layers: layer 1 should become a previous-token head, layer 2 the induction head."""
    return settings.task == "induction" and settings.model.n_layers == 2


def formation(result: TrainResult) -> tuple[tuple[str, ...], np.ndarray]:
    """How each head's pattern formed, on the fixed example: labels ``(L*h,)`` and weights ``(S, L*h)``.

    Each value is the head's mean weight on the key its task's pattern reads (``answer_weight``); in the
    induction circuit's first layer, on the previous token at the keys layer 2 reads (``previous_at_source``).
    """
    s, example = result.settings, result.fixed_example
    labels, columns = [], []
    for layer in range(s.model.n_layers):
        reads_previous = textbook_circuit(s) and layer == 0
        measure = (
            (lambda w: previous_at_source(w, example)) if reads_previous else (lambda w: answer_weight(w, example))
        )
        target = "the previous token" if reads_previous else ANSWER_KEY[s.task]
        per_snapshot = np.stack([measure(snap[layer][None]) for snap in result.snapshots])  # (S, h)
        labels += [f"L{layer + 1} H{head + 1} on {target}" for head in range(s.model.n_heads)]
        columns.append(per_snapshot)
    return tuple(labels), np.concatenate(columns, axis=1)  # (S, L*h)


def finish(result: TrainResult, pretrained: bool = False) -> Trained:
    """Measure a finished run once: runs on the fixed example, head patterns, how they formed."""
    patterns = result.patterns()  # a forward pass over 256 held-out sequences: once
    source = TrainedSource.of(result)
    labels, values = formation(result)
    return Trained(result, source, patterns, named_pattern(result.settings.task, patterns), labels, values, pretrained)


@dataclass(frozen=True)
class Live:
    """A copy of a running job's curves, safe to draw while the thread keeps training."""

    step: int
    loss_step: tuple[int, ...]
    loss: tuple[float, ...]
    eval_step: tuple[int, ...]
    eval_accuracy: tuple[float, ...]

    @classmethod
    def of(cls, p: Progress) -> Live:
        h = p.history
        n, m = len(h.step), len(h.eval_step)  # read the lengths once: the lists may grow meanwhile
        loss = (tuple(h.step[:n]), tuple(h.loss[:n]))
        return cls(p.step, *loss, tuple(h.eval_step[:m]), tuple(h.eval_accuracy[:m]))


@dataclass
class Job:
    """One training, shared by every session that asks for its settings."""

    settings: TrainSettings
    owner: str
    """The session that started it: its seconds are counted, and only it may stop the run."""
    state: str = "waiting"
    """"waiting" for a slot, "training", or "done" (see ``trained`` or ``error``)."""
    live: Live | None = None
    trained: Trained | None = None
    error: str | None = None
    started: float | None = None
    """time.monotonic() when training began (after the wait)."""
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def active(self) -> bool:
        return self.state != "done"

    def elapsed(self) -> float:
        return 0.0 if self.started is None else time.monotonic() - self.started


class Registry:
    """Training jobs keyed by their full settings; thread-safe."""

    def __init__(
        self,
        trainer: Trainer = train,
        *,
        session_seconds: float = SESSION_SECONDS,
        max_running: int = MAX_RUNNING,
        max_jobs: int = MAX_JOBS,
        keep_finished: int = KEEP_FINISHED,
        keep_bytes: int = KEEP_BYTES,
    ) -> None:
        self._trainer = trainer
        self.session_seconds = session_seconds
        self.max_running, self.max_jobs = max_running, max_jobs
        self._keep_finished, self._keep_bytes = keep_finished, keep_bytes
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_running)
        self._jobs: OrderedDict[TrainSettings, Job] = OrderedDict()
        self._used: OrderedDict[str, float] = OrderedDict()
        self._pretrained: dict[str, Trained] = {}

    # --- reading ---------------------------------------------------------------------------------------------

    def trained(self, settings: TrainSettings) -> Trained | None:
        """The finished run for ``settings``: the pre-trained file, or a job's result; None if not trained yet."""
        if settings == recommended(settings.task):
            return self._pretrained_run(settings.task)
        with self._lock:
            job = self._jobs.get(settings)
        return None if job is None else job.trained

    def job(self, settings: TrainSettings) -> Job | None:
        """The job training (or that trained) ``settings``, if the registry still holds it."""
        with self._lock:
            return self._jobs.get(settings)

    def seconds_left(self, session: str) -> float:
        """Training seconds ``session`` may still use, counting its running job."""
        with self._lock:
            return max(0.0, self.session_seconds - self._spent(session))

    def _spent(self, session: str) -> float:
        running = sum(j.elapsed() for j in self._jobs.values() if j.owner == session and j.active)
        return self._used.get(session, 0.0) + running

    def _pretrained_run(self, task: str) -> Trained:
        with self._lock:
            if task in self._pretrained:
                return self._pretrained[task]
        # loaded and measured outside the lock (15-40 ms here), so running jobs and other pages never wait on it;
        # two sessions arriving together may both load it, and the first one stored is kept
        trained = finish(load_trained(task), pretrained=True)
        with self._lock:
            return self._pretrained.setdefault(task, trained)

    # --- starting and stopping -------------------------------------------------------------------------------

    def start(self, settings: TrainSettings, session: str) -> Job | str:
        """Train ``settings`` (or join the job already doing it); a refusal is returned as its message."""
        with self._lock:
            job = self._jobs.get(settings)
            if job is not None and (job.active or (job.trained is not None and not job.trained.result.stopped)):
                self._jobs.move_to_end(settings)
                return job  # identical settings train once
            if problem := self._refusal(session):
                return problem
            job = Job(settings, owner=session)
            self._jobs[settings] = job
            self._evict()
        threading.Thread(target=self._run, args=(job,), name=f"train-{settings.task}", daemon=True).start()
        return job

    def _refusal(self, session: str) -> str | None:
        if any(j.owner == session and j.active for j in self._jobs.values()):
            return "This session is already training other settings: wait for that run to finish, or stop it."
        if self._spent(session) >= self.session_seconds:
            return (
                f"This session has used its {self.session_seconds:g} s of training on this shared server. "
                "The recommended settings of every task need no training (they come pre-trained)."
            )
        if sum(j.active for j in self._jobs.values()) >= self.max_jobs:
            return (
                f"The server is busy: {self.max_jobs} trainings are running or waiting. Try again in a few "
                "seconds, or pick a task's recommended settings, which come pre-trained."
            )
        return None

    def stop(self, settings: TrainSettings, session: str) -> bool:
        """Ask ``settings``' job to stop after its current step; only the session that started it may."""
        with self._lock:
            job = self._jobs.get(settings)
            if job is None or job.owner != session or not job.active:
                return False
            job.stop.set()
            return True

    def _run(self, job: Job) -> None:
        """The background thread: wait for a slot, train, measure, count the seconds."""
        with self._slots:
            job.started, job.state = time.monotonic(), "training"
            try:
                result = self._trainer(
                    job.settings,
                    on_progress=lambda p: setattr(job, "live", Live.of(p)),
                    should_stop=lambda: self._should_stop(job),
                )
                job.trained = finish(result)
            except Exception as err:  # a failed run must end with a message, not a hung page
                job.error = f"Training failed: {type(err).__name__}: {err}"
            finally:
                with self._lock:
                    self._used[job.owner] = self._used.get(job.owner, 0.0) + job.elapsed()
                    self._used.move_to_end(job.owner)
                    while len(self._used) > MAX_SESSIONS:
                        self._used.popitem(last=False)
                    job.state = "done"
                    self._evict()

    def _should_stop(self, job: Job) -> bool:
        """Asked before every step: the Stop button, or the owner's seconds used up."""
        if job.stop.is_set():
            return True
        with self._lock:
            return self._used.get(job.owner, 0.0) + job.elapsed() >= self.session_seconds

    def _evict(self) -> None:
        """Drop the oldest finished jobs beyond ``keep_finished`` or ``keep_bytes`` (running ones stay)."""
        finished = [s for s, j in self._jobs.items() if not j.active]
        sizes = {s: self._jobs[s].trained.nbytes if self._jobs[s].trained else 0 for s in finished}
        while finished and (len(finished) > self._keep_finished or sum(sizes[s] for s in finished) > self._keep_bytes):
            del self._jobs[finished.pop(0)]


@dataclass(frozen=True)
class Answer:
    """The trained model on a sequence the student typed."""

    tokens: tuple[str, ...]
    output: tuple[str, ...]
    """The model's arg-max symbol at every position."""
    runs: tuple[Run, ...]


def answer(result: TrainResult, text: str) -> Answer | str:
    """``text`` (the task's symbols, spaces ignored) through the model, or a message naming only counts and limits.

    Nothing typed is quoted back: the message is the page's own text.
    """
    task, t_max = result.settings.task_info, result.settings.seq_len
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return f"Type up to {t_max} of the {task.name} task's symbols: {''.join(task.symbols)}"
    unknown = sum(c not in task.symbols for c in chars)
    if unknown:
        return (
            f"{unknown} of the {len(chars)} characters are not symbols of the {task.name} task. "
            f"Use only {''.join(task.symbols)} (spaces are ignored)."
        )
    if len(chars) > t_max:
        return f"{len(chars)} symbols: this model was trained on sequences of {t_max}, so it takes at most {t_max}."
    ids = task.encode("".join(chars))  # (T,)
    return Answer(tuple(chars), tuple(task.decode(result.predict(ids))), runs_of(result, ids))


def result_npz(result: TrainResult) -> bytes:
    """The run as one compressed ``.npz`` (``TrainResult.save``): weights, snapshots, history, settings."""
    buffer = io.BytesIO()
    result.save(buffer)
    return buffer.getvalue()


@st.cache_resource(max_entries=1, show_spinner=False)  # no arguments: one registry
def registry() -> Registry:
    """The one registry of this server process, shared by every session."""
    return Registry()


NOT_TRAINED = (
    "This model has not been trained yet: {what}. Open the train view and press Train "
    "(a task's recommended settings come pre-trained and show at once)."
)


def _open_train_view() -> None:
    """Button callback: switch the view selector (and the URL) to the train view."""
    st.session_state["view"] = "train"


def trained_source_or_message(settings: TrainSettings) -> TrainedSource | None:
    """The trained model's source (its runs on the task's fixed example), or None after saying how to train it."""
    trained = registry().trained(settings)
    if trained is not None:
        return trained.source
    job = registry().job(settings)
    what = "it is training now" if job is not None and job.active else f"{settings.task}, these settings"
    st.info(NOT_TRAINED.format(what=what), icon=":material/model_training:")
    st.button("Open the train view", key="open_train", on_click=_open_train_view, icon=":material/arrow_forward:")
    return None
