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
- One address (``dashboard.serve.clients.address``) has at most ``JOBS_PER_ADDRESS`` jobs running or
  waiting: a script opening a new socket per job (a new session, with fresh seconds) is held by its
  address, and a lecture hall behind one address still leaves the rest of the queue to others.
- A job no open tab watches any more (every session that asked for it has closed: Streamlit's runtime
  says so, ``dashboard.serve.clients.alive``) is cancelled before its next step, and its result dropped. From the
  moment its tabs close it counts against no limit: a hall whose three closed tabs' jobs are still ending is not
  told its network has three trainings.
- Finished results are kept, oldest dropped first, up to ``KEEP_FINISHED`` and
  ``KEEP_BYTES`` (a 2-layer, 16-head, 2000-step run keeps ~50 MB of snapshots). Why a job was dropped (cancelled
  or evicted) is remembered for a while (``Registry.dropped``), so a page that showed it can say so.
- A job's every change of state (it starts training, ends, is cancelled or dropped) is reported to the callbacks
  given to ``Registry.when_changed``: a following student's page, which does not poll the job, redraws then.

``Registry`` is plain Python (tested without a server); ``registry()`` is the one
instance (``st.cache_resource``); ``trained_source_or_message`` is what ``dashboard/compute/source.py``
calls for the trained model's source.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import threading
import time
import uuid
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
from dashboard.serve.clients import alive
from dashboard.state.followed import Controls
from dashboard.state.session import set_values

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
JOBS_PER_ADDRESS = 3
"""Trainings running or waiting that were started from one address (of the ``MAX_JOBS``)."""
WAIT_LOOK_SECONDS = 1.0
"""A job waiting for a slot looks this often whether any of its askers' tabs is still open (``Registry._run``)."""
CANCELLED = "Cancelled: no open page was watching this training any more. Press Train to start it again."
DROPPED_KEPT = 64
"""Settings whose dropped job's reason is remembered (``Registry.dropped``), the oldest forgotten first."""

_LOGGER = logging.getLogger(__name__)

Trainer = Callable[..., TrainResult]
Alive = Callable[[str], "bool | None"]
"""session id -> True while its tab is connected, False once it has gone, None when unknown."""


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
    address: str | None = None
    """The address it was started from (None: not known), counted against ``JOBS_PER_ADDRESS``."""
    watchers: set[str] = field(default_factory=set)
    """Every session that asked for these settings while the job was active: it runs while one is open."""
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
        jobs_per_address: int = JOBS_PER_ADDRESS,
        alive: Alive = lambda session: None,
    ) -> None:
        self._trainer = trainer
        self.jobs_per_address = jobs_per_address
        self._alive = alive
        self.session_seconds = session_seconds
        self.max_running, self.max_jobs = max_running, max_jobs
        self._keep_finished, self._keep_bytes = keep_finished, keep_bytes
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_running)
        self._jobs: OrderedDict[TrainSettings, Job] = OrderedDict()
        self._used: OrderedDict[str, float] = OrderedDict()
        self._pretrained: dict[str, Trained] = {}
        self._dropped: OrderedDict[TrainSettings, str] = OrderedDict()
        self._listeners: set[Callable[[], None]] = set()

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

    def dropped(self, settings: TrainSettings) -> str | None:
        """Why the registry no longer holds the job it had for ``settings``: "cancelled" (no open page watched it)
        or "evicted" (newer runs took its room); None while it holds one, or when it never had one (or has
        forgotten: it remembers the last ``DROPPED_KEPT``)."""
        with self._lock:
            return self._dropped.get(settings)

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

    def start(self, settings: TrainSettings, session: str, address: str | None = None) -> Job | str:
        """Train ``settings`` (or join the job already doing it); a refusal is returned as its message.

        ``address`` is the client's (``dashboard.serve.clients.address``); None counts the session alone.
        """
        with self._lock:
            job = self._jobs.get(settings)
            if job is not None and (job.active or (job.trained is not None and not job.trained.result.stopped)):
                self._jobs.move_to_end(settings)
                if job.active:
                    job.watchers.add(session)
                return job  # identical settings train once
            if problem := self._refusal(session, address):
                return problem
            job = Job(settings, owner=session, address=address, watchers={session})
            self._jobs[settings] = job
            self._dropped.pop(settings, None)
            evicted = self._evict()
        if evicted:
            self._changed()
        threading.Thread(target=self._run, args=(job,), name=f"train-{settings.task}", daemon=True).start()
        return job

    def _refusal(self, session: str, address: str | None) -> str | None:
        if any(j.owner == session and j.active for j in self._jobs.values()):
            return "This session is already training other settings: wait for that run to finish, or stop it."
        counted = [j for j in self._jobs.values() if j.active and self._watched(j)]  # closed tabs' jobs are ending
        from_address = sum(address is not None and j.address == address for j in counted)
        if from_address >= self.jobs_per_address:
            return (
                f"Your network already has {self.jobs_per_address} trainings running or waiting on this shared "
                "server: wait for one to finish. The recommended settings of every task need no training."
            )
        if self._spent(session) >= self.session_seconds:
            return (
                f"This session has used its {self.session_seconds:g} s of training on this shared server. "
                "The recommended settings of every task need no training (they come pre-trained)."
            )
        if len(counted) >= self.max_jobs:
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

    def when_changed(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever a job starts training, ends (trained, stopped, failed or cancelled) or is
        dropped, from the thread that changed it: a page that shows a job without polling it redraws then
        (``room_page.watch_room`` gives ``room_page._redraw_training_pages``). The same callback again changes
        nothing."""
        with self._lock:
            self._listeners.add(callback)

    def _changed(self) -> None:
        """Outside the lock: tell every ``when_changed`` callback; one that fails is logged, never raised into a
        training thread or a page."""
        with self._lock:
            listeners = tuple(self._listeners)
        for callback in listeners:
            try:
                callback()
            except Exception:
                _LOGGER.warning("A training job's change could not be reported", exc_info=True)

    def _run(self, job: Job) -> None:
        """The background thread: wait for a slot, train, measure, count the seconds; drop what no one watches. A
        job whose every asker left while it waited ends without a slot, within ``WAIT_LOOK_SECONDS``: it counts
        against no limit (``_refusal``), so it must not pile up behind the running ones either."""
        slots = self._slots  # the one this job holds, released however long it runs
        while not slots.acquire(timeout=WAIT_LOOK_SECONDS):
            if not self._watched(job):
                job.error = CANCELLED
                self._end(job)
                return
        try:
            job.started, job.state = time.monotonic(), "training"
            self._changed()
            try:
                if not self._watched(job):  # every asker left while it waited: nothing to train
                    raise _Cancelled
                result = self._trainer(
                    job.settings,
                    on_progress=lambda p: setattr(job, "live", Live.of(p)),
                    should_stop=lambda: self._should_stop(job),
                )
                if not self._watched(job):
                    raise _Cancelled
                job.trained = finish(result)
            except _Cancelled:
                job.error = CANCELLED
            except Exception as err:  # a failed run must end with a message, not a hung page
                job.error = f"Training failed: {type(err).__name__}: {err}"
            finally:
                self._end(job)
        finally:
            slots.release()

    def _end(self, job: Job) -> None:
        """A job is done (trained, stopped, failed or cancelled): count its seconds, drop it if cancelled, evict what
        no longer fits, give its memory back, and say so."""
        with self._lock:
            self._used[job.owner] = self._used.get(job.owner, 0.0) + job.elapsed()
            self._used.move_to_end(job.owner)
            while len(self._used) > MAX_SESSIONS:
                self._used.popitem(last=False)
            job.state = "done"
            if job.error == CANCELLED and self._jobs.get(job.settings) is job:
                self._drop(job.settings, "cancelled")  # its weights and snapshots go now, not when evicted
            self._evict()
        release_memory()
        self._changed()

    def _watched(self, job: Job) -> bool:
        """False once every session that asked for the job is known to have closed its tab."""
        return not all(self._alive(s) is False for s in tuple(job.watchers))

    def _should_stop(self, job: Job) -> bool:
        """Asked before every step: the Stop button, the owner's seconds used up, or no one watching any more."""
        if job.stop.is_set() or not self._watched(job):
            return True
        with self._lock:
            return self._used.get(job.owner, 0.0) + job.elapsed() >= self.session_seconds

    def _evict(self) -> bool:
        """Under the lock: drop the oldest finished jobs beyond ``keep_finished`` or ``keep_bytes`` (running ones
        stay); True when it dropped one."""
        finished = [s for s, j in self._jobs.items() if not j.active]
        sizes = {s: self._jobs[s].trained.nbytes if self._jobs[s].trained else 0 for s in finished}
        evicted = False
        while finished and (len(finished) > self._keep_finished or sum(sizes[s] for s in finished) > self._keep_bytes):
            self._drop(finished.pop(0), "evicted")
            evicted = True
        return evicted

    def _drop(self, settings: TrainSettings, why: str) -> None:
        """Under the lock: forget ``settings``' job, and remember ``why`` (``dropped``)."""
        del self._jobs[settings]
        self._dropped[settings] = why
        self._dropped.move_to_end(settings)
        while len(self._dropped) > DROPPED_KEPT:
            self._dropped.popitem(last=False)


class _Cancelled(Exception):
    """A job whose watchers all left: it ends with ``CANCELLED`` and keeps nothing."""


def release_memory() -> None:
    """Give the memory a finished training freed back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    A run allocates hundreds of MB of NumPy temporaries in its own thread, and glibc keeps a thread's freed
    arenas for reuse: without this, a server stayed at 715 MB after seven heavy runs had ended (issue 18).
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


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


def _alive_here(session: str) -> bool | None:
    """``clients.alive`` for a session that asked for a job: it ran on this process (the registry is this process's),
    so one the runtime has forgotten has gone. Without ``here`` a closed tab Streamlit had already forgotten read as
    "cannot tell", and its job trained on for nobody."""
    return alive(session, here=True)


@st.cache_resource(max_entries=1, show_spinner=False)  # no arguments: one registry
def registry() -> Registry:
    """The one registry of this server process, shared by every session; it cancels jobs whose tabs closed."""
    return Registry(alive=_alive_here)


PROCESS = uuid.uuid4().hex[:8]
"""This server process's id, new at every start: ``TEACHER_TRAINING`` names the process that holds the teacher's
job, so a follower tells a run on another process (Redis rooms) from one this process had and no longer has."""
TEACHER_TRAINING = "_teacher_training"
"""A room's value beside the teacher's settings: "STATE@PROCESS" (``training_state``) while this server process
holds a job for them, absent when none. The teacher's page publishes it at the end of each of its whole runs, and
the room's version grows when it changes: the followers' pages redraw then (``room_page.publish_room``); a change
the teacher's page does not publish (its tab closed, the job dropped) redraws this process's followers through
``Registry.when_changed``."""
TRAINING_STATES = ("waiting", "training", "trained", "stopped", "failed")
"""A job's states as ``TEACHER_TRAINING`` names them: waiting for a slot, training, trained to its last step,
stopped before it (the Stop button, or its session's seconds), failed (ended with an error)."""


@dataclass(frozen=True)
class TeacherTraining:
    """``TEACHER_TRAINING``'s value, read (``read_teacher_training``)."""

    state: str
    """One of ``TRAINING_STATES``, as the teacher's page last published it."""
    process: str
    """The id (``PROCESS``) of the server process that holds the job."""

    @property
    def here(self) -> bool:
        """The job is (or was) this process's."""
        return self.process == PROCESS


def training_state(training: TrainSettings) -> str | None:
    """``TEACHER_TRAINING``'s value for ``training`` on this server process, "STATE@PROCESS" (e.g.
    "training@1f2e3d4c"); None: no job here, or a pre-trained run."""
    job = registry().job(training)
    if job is None:
        return None
    if job.active:
        state = job.state  # "waiting" or "training"
    elif job.trained is None:
        state = "failed"
    else:
        state = "stopped" if job.trained.result.stopped else "trained"
    return f"{state}@{PROCESS}"


def read_teacher_training(value: object) -> TeacherTraining | None:
    """``TEACHER_TRAINING``'s value ("STATE@PROCESS", ``training_state``) as its two parts; None for no value, or
    for anything else (rooms live for hours, never across a change of this format: there is no older one to read)."""
    if not isinstance(value, str):
        return None
    state, at, process = value.partition("@")
    return TeacherTraining(state, process) if at and process and state in TRAINING_STATES else None


NOT_TRAINED = (
    "This model has not been trained yet: {what}. Open the train view and press Train "
    "(a task's recommended settings come pre-trained and show at once)."
)


def _open_train_view() -> None:
    """Button callback: switch the view selector (and the URL) to the train view."""
    set_values(view="train")


NOT_TRAINED_FOLLOWING = (
    "Your teacher's model ({task}, these settings) {state} on this server. Its maps show here when the run ends; "
    "or turn off “Follow the teacher”, open the train view and press Train to train the same settings yourself."
)
"""A following student's line: the view and the Train button are the teacher's (``Controls`` draws neither)."""


def trained_source_or_message(settings: TrainSettings, controls: Controls) -> TrainedSource | None:
    """The trained model's source (its runs on the task's fixed example), or None after saying how to train it: on
    a following page, that the teacher's run shows when it ends (the follower has no view bar and no Train)."""
    trained = registry().trained(settings)
    if trained is not None:
        return trained.source
    job = registry().job(settings)
    what = "it is training now" if job is not None and job.active else f"{settings.task}, these settings"
    if not controls.drawn:
        state = "is training now" if job is not None and job.active else "has not been trained yet"
        st.info(NOT_TRAINED_FOLLOWING.format(task=settings.task, state=state), icon=":material/model_training:")
        return None
    st.info(NOT_TRAINED.format(what=what), icon=":material/model_training:")
    st.button("Open the train view", key="open_train", on_click=_open_train_view, icon=":material/arrow_forward:")
    return None
