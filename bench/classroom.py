"""A room under load: 1 teacher, N students following it; the teacher changes a control every 5-10 s, runs a quiz.

    python -m bench.load --classroom                     # 30 students, 90 s
    python -m bench.load --classroom --sessions 200 --seconds 60
    python -m bench.load --classroom --sessions 200 --join-seconds 10 --fetch-page   # a join storm
    python -m bench.load --classroom --sessions 200 --redis     # teacher on process A, students on B, Redis
    python -m bench.load --lecture-hall                  # all of the above at 200 (and 300), then table rows

Each page is a ``bench.protocol.Tab``. A follower's page polls nothing: the server pushes a run of the page's body
when the teacher changes something (``dashboard.classroom.push``), and this client reads it to its end and draws it
into the page, as a browser does. So the measured delay is the real one: teacher's click sent -> the student's page
redrawn with the new settings (the run's ``script_finished``).

Checks: after every redraw, the student's page draws exactly ``core``'s maps for the teacher's values (a following
page has no settings widgets); in the quiz (every ``QUIZ_EVERY``th step, the first at step 2), the students read
the question for ``READ_S`` and pick an answer, the teacher reveals once no pick is under way, and the tally must
count every pick. Before the class joins, the teacher is alone for ``BASE_S``: the server's own idle CPU. After it
has joined, nobody changes anything for ``IDLE_S``: the server CPU above its own idle, per student per second, is
what an idle student costs.

The clients: the teacher and every student share one event loop in a process of their own (``clients``), kept
cheap: no zlib, no websocket pings of their own (a browser sends none), and one check per distinct page
(``VERDICTS``: the server hands followers the same figures, so most students only hash the bytes they got). The
output puts their CPU beside the server processes' (psutil), and how late their loop woke (``LoopLag``): their own
share of every delay. A time-out or lost connection while their loop was ``STARVED_LAG_S`` late is counted as
"client starvation", apart from the server's failures, and the run then cannot say whether the server met the target.

Join: the students open the link spread over ``--join-seconds``; with ``--fetch-page`` each first fetches what a
browser with an empty cache does (``bench.page_assets``: the served index.html, what it names and imports, and once
its page has come, the components its elements are drawn by, ~9.3 MB on Streamlit 1.67) and the line says when the
last of them had its first map.

Targets (issue 18): 0 failures, p95 teacher's change -> student's redraw <= 2 s, server RSS <= 600 MB (the bench's
memory target; the issue allows 1 GB). All traffic goes to 127.0.0.1; sessions and time are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import html
import math
import multiprocessing
import random
import re
import resource
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.exceptions import ConnectionClosed

from bench.expected import Mismatch, expected_weights
from bench.measure import TARGET_RSS_MB, PeakRss, pct
from bench.page_assets import GZIP_ONLY, AssetPlan, fetch, wait_compressed
from bench.protocol import NoRun, Page, Tab, decode_array
from bench.streamlit_server import ROOT, redis_server, streamlit_server
from dashboard.classroom.room_page import CHECK_SECONDS
from dashboard.state.settings import kv_head_options, nearest_heads
from dashboard.views import VIEWS

WORDS = ("a", "cat", "sat", "on", "the", "mat", "by", "river", "bank", "dog")
FOLLOWED = ("sentence", "d_model", "n_heads", "causal", "positional", "seed", "quiz")
"""The teacher's controls the bench compares on every student's page."""
TARGET_FOLLOW_P95_S = 2.0
IDLE_S = 10.0
"""Seconds after the class has joined when nobody changes anything: what idle students cost."""
BASE_S = 3.0
"""Seconds the teacher is alone in the room first: the server's own idle CPU, taken off the students' idle cost."""
JOIN_WAIT_S = 120.0
"""The longest the teacher waits for the class to join before going on."""
QUIZ_EVERY = 4
"""Every fourth of the teacher's steps is a quiz round, the first at step 2 (so every run of 60 s or more has one)."""
QUIZ_PICK_S = 30.0
"""The longest the teacher waits for every student still in the room to pick (each must first be redrawn)."""
READ_S = (2.0, 6.0)
"""Seconds a student reads the teacher's question before picking (uniform). Picking the instant it showed put the
class's 200 picks (a body run each) inside the quiz change's own redraw wave, which no class does: session 30, 200
students, p95 2.48 and 3.07 s for the two quiz changes against 1.35-1.99 s for the six others."""
STARVED_LAG_S = 1.0
"""A time-out or lost connection within ``STARVE_WINDOW_S`` of the clients' own event loop waking this late (or
later) is the clients' starvation, counted apart from the server's failures: one late wake-up makes every tab in
the client process that late to read, to answer the server's websocket pings (30 s), or to send."""
STARVE_WINDOW_S = 60.0
"""The longest a wait that can fail lasts (the server's ping interval and time-out, 30 s each)."""


class LoopLag:
    """How late the clients' event loop wakes up: a task sleeps ``PERIOD_S`` again and again and records each
    overshoot. A tab can read a frame no sooner than the loop gets to it, so this is the clients' own share of every
    delay they measure; a browser, with a process of its own per tab, has none of it."""

    PERIOD_S = 0.05

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        """(monotonic time of the wake-up, seconds late)."""
        self.last = time.monotonic()

    async def run(self) -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(self.PERIOD_S)
            self.last = time.monotonic()
            self.samples.append((self.last, self.last - start - self.PERIOD_S))

    def worst(self, since: float, now: float | None = None) -> float:
        """The latest wake-up since ``since``, counting one overdue right now (the loop may be just back)."""
        now = time.monotonic() if now is None else now
        return max([now - self.last - self.PERIOD_S, *(lag for at, lag in self.samples if at >= since)])

    def pct(self, q: float) -> float:
        return pct([lag for _, lag in self.samples], q)


def starved(err: BaseException, worst_lag: float) -> bool:
    """A failure that is the clients' own starvation: a time-out or a lost connection (what a client too late to
    read or answer pings causes) while the clients' loop was ``STARVED_LAG_S`` or more late. A wrong page is never
    the clients': it is the server's, however late they were."""
    late = isinstance(err, TimeoutError | OSError | ConnectionClosed)
    return late and worst_lag >= STARVED_LAG_S


@dataclass
class Change:
    sent: float
    values: dict
    """The followed controls as the address writes them (``followed``)."""
    typed: dict = field(default_factory=dict)
    """The teacher's widget values as the page holds them: what core computes the expected maps from."""
    stop: str = ""
    """``bench.walk``: the stop of the teacher's walk this change was made at ("" in a room without a walk)."""


@dataclass
class Record:
    changes: list[Change] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    redraws: int = 0
    """Runs the server pushed to students, or their pages' own checks ran (idle ones should get none)."""
    whole_redraws: int = 0
    """Of ``redraws``, whole-page runs: the push reruns a follower's body alone, so these are the pages' own checks
    (a version missed) and whatever else runs a following page whole."""
    overtaken: list[float] = field(default_factory=list)
    """Whole runs that drew no body, the pushed body's run coming next (``settled``): seconds until it came."""
    joined: list[float] = field(default_factory=list)
    """Per student: seconds from the room's link going out to its first page read to its end, maps included."""
    base_cpu: float = 0.0
    """Server CPU seconds per second with the teacher alone in the room (the server's own idle)."""
    errors: list[str] = field(default_factory=list)
    """The server's failures (a wrong page, a time-out or lost connection while the clients kept up)."""
    starved: list[str] = field(default_factory=list)
    """Failures that were the clients' own starvation (``starved``): not the server's, counted apart."""
    students_failed: int = 0
    quiz_counts: list[tuple[int, int]] = field(default_factory=list)
    """(tally's total, students who picked) per quiz round."""
    picked: dict[str, set[int]] = field(default_factory=dict)
    """This round's picks: question widget key -> students who picked."""
    picking: int = 0
    """Picks sent whose run has not finished yet: the teacher reveals only once none is under way."""
    quiz_open: bool = False
    """The teacher's question is open for picks."""
    code: str = ""
    link_out: float = 0.0
    fetched: list[int] = field(default_factory=list)
    """Per student, bytes of page, scripts, styles and fonts fetched (a join storm, ``--fetch-page``)."""
    deadline: float = math.inf
    """When the teacher and the students stop: the run's seconds after it began, plus the time the class took to
    join (``join_done``), so a slow join (the storm's ~57 s) takes none of the changes' and quiz rounds' time."""
    class_in: bool = False
    """The class has joined (or the teacher, who would say so, failed): the deadline moves no more."""
    idle_cpu: float = 0.0
    idle_redraws: int = 0
    lag: LoopLag = field(default_factory=LoopLag)
    server_cpu: float = 0.0
    """Over the clients' run: the server processes' CPU seconds (psutil), and the client process's own."""
    client_cpu: float = 0.0
    wall: float = 0.0
    sends: Any = None
    """``bench.sends.Sends``: the class sends sentences, the teacher's page times their count (None: not this run)."""
    walk: Any = None
    """``bench.walk.Walk``: the teacher walks through every view instead of changing controls at random (None: not)."""

    def fail(self, who: str, err: BaseException, detail: str = "") -> None:
        """Count a failure as the server's, or as the clients' starvation (``starved``)."""
        lag = self.lag.worst(time.monotonic() - STARVE_WINDOW_S)
        line = f"{who}: {type(err).__name__}: {err} {detail}"[:900]
        if who.startswith("student"):
            self.students_failed += 1
        if starved(err, lag):
            self.starved.append(f"{line[:300]} (the clients' loop was {lag:.1f} s late)")
        else:
            self.errors.append(line)

    def join_done(self, now: float) -> None:
        """The class has joined ``now``: the time since the link went out does not count against the run."""
        self.deadline += now - self.link_out
        self.class_in = True

    def time_left(self, now: float) -> float:
        """Seconds to the deadline; while the class is still joining, at least 1 s (the deadline will move on, so a
        student seated early waits for it, a second at a time, instead of leaving at the run's unmoved end)."""
        left = self.deadline - now
        return left if self.class_in else max(left, 1.0)

    def picks(self) -> int:
        return sum(map(len, self.picked.values()))


def followed(values: dict) -> dict[str, str]:
    """The followed controls as the URL writes them (a widget seeded from the URL holds text, a set one a number)."""
    return {k: str(v).lower() if isinstance(v := values.get(k), bool) else str(v) for k in FOLLOWED}


def pick_key(page: Page) -> str | None:
    return next((k for k in page.widgets() if k.startswith("quiz_pick_")), None)


def quiz_shown(page: Page) -> bool:
    """The page shows the quiz (a question to pick from or the quiz's own map), not the heads view's maps."""
    return any(k.startswith("quiz_") for k in page.widgets()) or any(
        "quiz" in str(f.get("layout", {}).get("meta", "")) for f in page.figures()
    )


def shown_change(page: Page, changes: list[Change], first: int) -> int | None:
    """The newest of the teacher's changes from ``first`` on that a following student's page shows: a quiz, or
    exactly core's maps for the teacher's values. (A following page draws no settings widgets, so the maps, not the
    page's own values, say which change it shows.)"""
    digest = page_digest(page)
    for j in range(len(changes) - 1, first - 1, -1):
        if shows(page, digest, changes[j].typed):
            return j
    return None


VERDICTS: dict[tuple[bytes, str], bool] = {}
"""(``page_digest``, the teacher's values) -> whether such a page shows them: checked once per client process.
The server hands every follower the same figures, so 200 students' pages are a handful of distinct ones: the
first student to receive one pays for the JSON and core's maps, the rest for a hash of the bytes they received."""


def page_digest(page: Page) -> bytes:
    """A hash of everything ``shows`` reads: the run's status and exceptions, the quiz's widgets, every chart's
    bytes in page order. Two pages with one digest get one verdict."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((page.status, len(page.of("exception")), sorted(k for k in page.widgets() if k.startswith("quiz_"))))
             .encode())  # fmt: skip
    for chart in page.of("plotly_chart"):
        spec = chart.plotly_chart.spec.encode()
        h.update(len(spec).to_bytes(8, "little") + spec)
    return h.digest()


def shows(page: Page, digest: bytes, typed: dict) -> bool:
    """``page`` (whose ``page_digest`` is ``digest``) shows the teacher's ``typed`` values: the quiz when they turn
    it on, else exactly core's maps for them (``check_student``). Remembered in ``VERDICTS``."""
    key = (digest, repr(sorted(typed.items())))
    if key not in VERDICTS:
        if typed.get("quiz"):
            VERDICTS[key] = quiz_shown(page)
        elif not exact(typed):  # another view, or learned weights: the view and the settings line (bench.walk)
            VERDICTS[key] = shows_stop(page, typed)
        else:
            try:
                check_student(page, typed)
                VERDICTS[key] = True
            except Mismatch:
                VERDICTS[key] = False
    return VERDICTS[key]


def shows_stop(page: Page, typed: dict) -> bool:
    """``page`` shows the teacher's ``typed`` values on a view the exact check does not cover: it finished with no
    exception, draws ``typed``'s view (the line under the view bar) and the teacher's settings line for its weights
    and seed."""
    if not page.finished or page.of("exception"):
        return False
    texts = page.texts("markdown")
    weights, seed = re.escape(str(typed["weights"])), int(typed["seed"])
    line = re.compile(rf"\b{weights} weights, seed {seed}\b")  # whole numbers: seed 1 is not seed 100
    return VIEWS[typed["view"]].teaches in texts and any(line.search(t) for t in texts)


def exact(typed: dict) -> bool:
    """The values whose page ``check_student`` checks map by map: the heads view on random weights."""
    return typed.get("view", "heads") == "heads" and typed.get("weights", "random") == "random"


def what_it_shows(page: Page) -> str:
    """A failing page in a line: its status, its texts (the settings line, the view's, any message) and charts."""
    texts = page.texts("markdown") + page.texts("alert")
    line = [t[:120] for t in texts if t.startswith("Following the teacher")]  # the settings line, if drawn
    return (
        f"status {page.status}, {len(page.of('exception'))} exceptions, {len(page.of('plotly_chart'))} charts, "
        f"settings line {line}, texts {[t[:60] for t in texts[:6]]}"
    )


def check_student(page: Page, values: dict) -> None:
    """The page ran cleanly and, outside the quiz, draws exactly core's maps for ``values`` (one chart per head)."""
    if not page.finished or page.of("exception"):
        raise Mismatch(f"status {page.status}, {len(page.of('exception'))} exceptions")
    if values.get("quiz"):
        return
    tokens, weights, allowed = expected_weights(values)
    labels = [f"{i}·{html.escape(t, quote=True)}" for i, t in enumerate(tokens)]
    maps = [
        t
        for f in page.figures()
        for t in f["data"]
        if t.get("type") == "heatmap" and t.get("coloraxis") and list(t.get("x", [])) == labels
    ]
    if len(maps) != weights.shape[0]:
        raise Mismatch(f"{len(maps)} maps of these tokens for {weights.shape[0]} heads")
    for i, trace in enumerate(maps):
        z = np.nan_to_num(decode_array(trace["z"]).astype(np.float32))
        want = weights[i] if allowed is None else np.where(allowed, weights[i], 0)
        if z.shape != want.shape or not np.array_equal(z, want):
            raise Mismatch(f"head {i + 1}: weights differ from the teacher's settings")


async def teacher(
    url: str, rec: Record, rng: random.Random, ready: asyncio.Event, n: int, cpu: Callable[[], float]
) -> None:
    try:
        async with Tab(url, timeout=60, deflate=False) as tab:
            await tab.open({"sentence": "the teacher reads the book to the class"})
            await tab.change(room_start=True)
            rec.changes.append(Change(time.monotonic(), followed(tab.values), dict(tab.values)))
            rec.code = tab.values["room"]
            cpu0 = cpu()
            await asyncio.sleep(BASE_S)  # the teacher alone: what the server costs with nobody to serve
            rec.base_cpu = (cpu() - cpu0) / BASE_S
            rec.link_out = time.monotonic()
            ready.set()
            while len(rec.joined) + rec.students_failed < n and time.monotonic() < rec.link_out + JOIN_WAIT_S:
                await asyncio.sleep(0.2)  # the class joins (first page loads)
            rec.join_done(time.monotonic())
            if rec.sends is not None:  # the class sends its sentences once the idle window is over
                rec.sends.start = time.monotonic() + 1 + IDLE_S
            await asyncio.sleep(1)
            cpu0, redraws0 = cpu(), rec.redraws
            await asyncio.sleep(IDLE_S)
            rec.idle_cpu, rec.idle_redraws = cpu() - cpu0, rec.redraws - redraws0
            if rec.walk is not None:
                await rec.walk.teach(tab, rec, rng, n)
            step = 0
            while rec.walk is None and time.monotonic() < rec.deadline - 12:
                step += 1
                if step % QUIZ_EVERY == 2 and rec.sends is None:  # a quiz round (none with sends): on, wait for
                    # the class, pick, reveal, read the tally, off
                    await quiz_round(tab, rec, rng, n)
                    continue
                what = rng.choice(["seed", "n_heads", "causal", "sentence"])
                change = {
                    "seed": {"seed": rng.randrange(99_999)},
                    "n_heads": {"n_heads": rng.choice([h for h in (1, 2, 4, 8) if h != tab.values["n_heads"]])},
                    "causal": {"causal": not tab.values["causal"]},
                    "sentence": {"sentence": " ".join(rng.sample(WORDS, 6))},
                }[what]
                page = await change_and_record(tab, rec, change)
                if page.status != 0 or page.of("exception"):
                    rec.errors.append(f"teacher: status {page.status}")
                rest = rng.uniform(5, 10)  # with sends, the page's timers fire meanwhile, as a browser's do
                await (asyncio.sleep(rest) if rec.sends is None else rec.sends.watch(tab, rest))
    except Exception as err:
        rec.fail("teacher", err)
        rec.class_in = True  # nobody will move the deadline now: it stands
        ready.set()


async def change_and_record(tab: Tab, rec: Record, change: dict, stop: str = "", own: bool = False) -> Page:
    """The teacher's change, recorded (with what students must show, and the walk's ``stop``) before it is sent: a
    student may redraw before the teacher's own page has. ``own``: the page sets the followed controls itself (the
    trained model's weights come with the d_model, heads and mask it was trained with), so they are not compared."""
    typed = tab.values | change
    if typed.get("kv_heads") is not None and "kv_heads" not in change:
        typed["kv_heads"] = kv_heads_after(int(tab.values["n_heads"]), int(typed["kv_heads"]), int(typed["n_heads"]))
    rec.changes.append(Change(time.monotonic(), followed(typed), typed, stop))
    page = await tab.change(**change)
    rec.changes[-1].typed = dict(tab.values)  # what the teacher's page holds now (the same, or the page's own)
    if not own and followed(tab.values) != rec.changes[-1].values:
        rec.errors.append(f"teacher: shows {followed(tab.values)}, expected {rec.changes[-1].values}")
    return page


def kv_heads_after(n_heads: int, kv_heads: int, new_n_heads: int) -> int:
    """The K/V heads the teacher's page shows after its head count goes from ``n_heads`` to ``new_n_heads``: as many
    as the heads when they were as many (multi-head attention stays multi-head: the address leaves ``kv_heads`` out
    when it equals the heads, so it follows them), else the nearest divisor of the new count (grouped-query attention
    stays grouped). ``tests/test_bench_classroom.py`` checks it against the page's own reading of its address."""
    if kv_heads == n_heads:
        return new_n_heads
    return nearest_heads(kv_heads, kv_head_options(new_n_heads))


async def quiz_round(tab: Tab, rec: Record, rng: random.Random, n: int) -> None:
    """The quiz on; the class picks on their own pages (the teacher never does: the room's quiz is the teacher's);
    once every student still in the room has picked (or ``QUIZ_PICK_S`` passed) and no pick is under way, the
    teacher reveals; the tally must count every pick."""
    rec.picked, rec.quiz_open = {}, True  # before the change: a student's page may redraw before the teacher's
    page = await change_and_record(tab, rec, {"quiz": True})
    if "quiz_reveal" not in page.widgets():  # this run has no question with one clear answer: a note instead
        rec.quiz_open = False
        await change_and_record(tab, rec, {"quiz": False})
        return
    waited = time.monotonic() + QUIZ_PICK_S
    while rec.picks() < n - rec.students_failed and time.monotonic() < waited:
        await asyncio.sleep(0.2)
    rec.quiz_open = False  # no student starts a pick now
    settle = time.monotonic() + 60
    while rec.picking and time.monotonic() < settle:  # every pick sent has reached the room
        await asyncio.sleep(0.05)
    page = await tab.change(quiz_reveal=True)
    tallies = [f for f in page.figures() if f["data"] and f["data"][0].get("type") == "bar" and "guesses" in str(f)]
    total = int(sum(decode_array(tallies[-1]["data"][0]["x"]))) if tallies else -1  # the bars lie down: counts on x
    rec.quiz_counts.append((total, rec.picks()))
    await asyncio.sleep(2)
    await change_and_record(tab, rec, {"quiz": False})
    await asyncio.sleep(rng.uniform(5, 10))


async def student(
    url: str, i: int, rec: Record, ready: asyncio.Event, join_s: float, plan: AssetPlan | None, accept: str = GZIP_ONLY
) -> None:
    rng = random.Random(i)
    try:
        await ready.wait()
        await asyncio.sleep(rng.uniform(0, join_s))  # the class opens the link over join_s seconds
        fetched = await fetch(url, plan.eager, accept=accept) if plan else 0  # what a browser fetches before its socket
        async with Tab(url, timeout=120, deflate=False) as tab:
            page = await tab.open({"room": rec.code})
            if plan:  # the components its elements are drawn by, loaded as they arrive (the chart's 4.7 MB)
                kinds = {e.WhichOneof("type") for e in page.elements.values()}
                fetched += await fetch(url, plan.lazy_for(kinds), accept=accept)
                rec.fetched.append(fetched)
            if shown_change(page, rec.changes, 0) is None:
                raise Mismatch(f"student {i}'s first page shows none of the teacher's settings")
            rec.joined.append(time.monotonic() - rec.link_out)
            seen = len(rec.changes)
            [(fragment, interval)] = tab.auto_reruns.items()
            if interval < CHECK_SECONDS:
                raise AssertionError(f"the student's page polls every {interval} s: a follower's page is pushed")
            due = time.monotonic() + rng.uniform(0, interval)  # timers at any phase: the idle window sees its share
            reading: tuple[float, str] | None = None  # (when this student picks, the question's key): it reads first
            while (left := rec.time_left(time.monotonic())) > 0:
                wake = due if reading is None else min(due, reading[0])
                wake = wake if rec.sends is None else min(wake, rec.sends.due(i))
                try:  # the run the server pushes when the teacher changes, or the page's own slow check when due
                    page = await tab.next_run(timeout=max(0.0, min(left, wake - time.monotonic())))
                except NoRun:
                    if rec.sends is not None and time.monotonic() >= rec.sends.due(i):
                        page = await rec.sends.step(tab, i)  # open the box, or type and press Send
                    elif reading is not None and time.monotonic() >= reading[0]:
                        await _pick(tab, i, reading[1], rec, rng)
                        reading = None
                        continue
                    elif time.monotonic() < due:
                        continue  # the wait ended at the deadline, or at the join's 1 s (``time_left``)
                    else:
                        due += interval
                        page = await tab.poll(fragment)
                if not page.redrew:
                    continue  # the page's own check (or its end, come late): nothing redrawn
                rec.redraws += 1
                rec.whole_redraws += page.status == ForwardMsg.FINISHED_SUCCESSFULLY
                if not page.finished or page.of("exception"):
                    raise Mismatch(f"status {page.status}, {len(page.of('exception'))} exceptions")
                # what the student showed last, or any change since: the newest may be recorded but not yet sent
                page, index = await settled(tab, page, max(seen - 1, 0), rec)
                now = time.monotonic()
                if index is None:
                    raise AssertionError(
                        f"student {i} shows none of the teacher's changes since {seen - 1}: {what_it_shows(page)}"
                    )
                if index >= seen:  # a change this student had not shown yet
                    rec.delays.append(now - rec.changes[index].sent)
                    if rec.walk is not None:
                        rec.walk.redrawn(rec.changes[index].stop, rec.delays[-1], seen, index)
                    seen = index + 1
                if reading is None and rec.quiz_open and (key := pick_key(page)) and i not in rec.picked.get(key, ()):
                    reading = (now + rng.uniform(*READ_S), key)  # meanwhile it reads what the server pushes
            if rec.sends is not None:
                rec.sends.check(tab, i)  # its page says the sentence was sent
    except Exception as err:
        rec.fail(f"student {i}", err, traceback.format_exc()[-600:])


OVERTAKEN_S = 10.0
"""How long ``settled`` waits for the pushed body's run after a whole run that drew none."""


async def settled(tab: Tab, page: Page, first: int, rec: Record) -> tuple[Page, int | None]:
    """``page`` and the newest change from ``first`` on it shows (``shown_change``). For a whole run that shows
    none, the run after it, merged, if it comes within ``OVERTAKEN_S``: a pushed body whose run starts while a whole
    run's messages wait to be sent drops that run's body from the server's queue and keeps the rest, its end included
    (``ForwardMsgQueue.clear(retain_lifecycle_msgs=True, fragment_ids_this_run=...)``). The browser draws the page
    without its body, then the body's run right after it. Each such wait is kept in ``rec.overtaken``."""
    index = shown_change(page, rec.changes, first)
    if index is not None or page.status != ForwardMsg.FINISHED_SUCCESSFULLY:
        return page, index
    start = time.monotonic()
    try:
        after = await tab.next_run(timeout=OVERTAKEN_S)
    except NoRun:
        return page, None
    rec.overtaken.append(time.monotonic() - start)
    return after, shown_change(after, rec.changes, first)


async def _pick(tab: Tab, i: int, key: str, rec: Record, rng: random.Random) -> None:
    """Student ``i`` picks an answer to question ``key``, if its page still asks it and the quiz is still open."""
    if not rec.quiz_open or key not in tab.page.widgets() or i in rec.picked.get(key, ()):
        return
    options = list(tab.page.widgets()[key].selectbox.options)
    rec.picking += 1
    try:
        await tab.change(**{key: rng.choice(options)})
    finally:
        rec.picking -= 1
    rec.picked.setdefault(key, set()).add(i)


async def run(
    urls: tuple[str, ...],
    n: int,
    seconds: float,
    seed: int,
    cpu: Callable[[], float],
    join_s: float,
    plan: AssetPlan | None = None,
    accept: str = GZIP_ONLY,
    sends: Any = None,
    walk: Any = None,
) -> Record:
    """The teacher on ``urls[0]``, student i on ``urls[1 + i % (len(urls) - 1)]`` (the same server, or others);
    ``plan``: each student first fetches what a browser's first visit does (a join storm), offering ``accept``."""
    rec = Record(deadline=time.monotonic() + seconds, sends=sends, walk=walk)
    ready = asyncio.Event()
    lag = asyncio.create_task(rec.lag.run())
    try:
        await asyncio.gather(
            teacher(urls[0], rec, random.Random(seed), ready, n, cpu),
            *(student(urls[1 + i % (len(urls) - 1)], i, rec, ready, join_s, plan, accept) for i in range(n)),
        )
    finally:
        lag.cancel()
    return rec


def _clients_main(conn, pids: list[int], args: tuple) -> None:
    """The clients' process: one event loop for the teacher and every student; sends back the ``Record`` with the
    server processes' CPU and its own over the run."""
    try:
        servers = [PeakRss(pid) for pid in pids]  # its cpu() only: no sampling thread in this process

        def cpu() -> float:
            return sum(s.cpu() for s in servers)

        cpu0, mine0, t0 = cpu(), own_cpu(), time.monotonic()
        rec = asyncio.run(run(*args[:4], cpu, *args[4:]))
        rec.server_cpu, rec.client_cpu, rec.wall = cpu() - cpu0, own_cpu() - mine0, time.monotonic() - t0
        conn.send(rec)
    except BaseException:
        conn.send(traceback.format_exc())
    finally:
        conn.close()


def clients(
    urls: tuple[str, ...],
    pids: list[int],
    n: int,
    seconds: float,
    seed: int,
    join_s: float,
    plan: AssetPlan | None,
    accept: str = GZIP_ONLY,
    sends: Any = None,
    walk: Any = None,
) -> Record:
    """``run`` in a process of its own (spawned: nothing of this one's threads), so the clients share no GIL with
    the bench's samplers and their CPU is theirs alone; the server processes' CPU is measured there over the same
    span. A browser would be a process per student, on other machines: what is left of the clients' share of the
    cores is printed beside the server's."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    args = (urls, n, seconds, seed, join_s, plan, accept, sends, walk)
    proc = ctx.Process(target=_clients_main, args=(send, pids, args))
    proc.start()
    send.close()
    try:
        if not receive.poll(seconds + JOIN_WAIT_S + 600):
            raise TimeoutError("the clients' process sent nothing back")
        got = receive.recv()
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    if isinstance(got, str):
        raise RuntimeError(f"the clients' process failed:\n{got}")
    return got


@dataclass
class Result:
    """One classroom run, as a row of the bench table (bench/README.md)."""

    name: str
    sessions: int
    failures: int
    """The server's: a wrong page, or a time-out or lost connection while the clients kept up."""
    p50: float
    p95: float
    last_join: float
    idle_ms: float
    """Server CPU per idle student per second, above the server's own idle (``base_cpu``)."""
    server_cpu: float
    client_cpu: float
    peak_mb: float
    starved: int = 0
    """Failures that were the bench's clients' own starvation (``STARVED_LAG_S``), not the server's."""
    lag_max: float = 0.0
    """The clients' event loop's latest wake-up over the run, seconds."""
    quiz: list[tuple[int, int]] = field(default_factory=list)
    """(tally, picks) per quiz round."""

    @property
    def ok(self) -> bool:
        """The server met the targets, measured by clients that kept up (a starved client's run says nothing). A
        run with no redraw measured has p95 NaN, which meets no target."""
        return (
            self.failures == 0
            and self.starved == 0
            and self.p95 <= TARGET_FOLLOW_P95_S
            and self.peak_mb <= TARGET_RSS_MB
        )

    def row(self) -> str:
        quiz = ", ".join(f"{t} of {p}" for t, p in self.quiz) or "none"
        return (
            f"| {self.name} | {self.sessions} | {self.p50:.2f} s | {self.p95:.2f} s | {self.last_join:.1f} s | "
            f"{self.idle_ms:.2f} ms | {self.server_cpu:.0f} s / {self.client_cpu:.0f} s | {self.lag_max:.2f} s | "
            f"{quiz} | {self.peak_mb:.0f} MB | {self.failures} | {self.starved} |"
        )


ROW_HEAD = (
    "| run | students | p50 | p95 | last first map | idle CPU per student per s | CPU server / clients "
    "| clients' loop late, max | quiz tally of picks | RSS peak | failures | client starvation |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def classroom(
    sessions: int,
    seconds: float,
    seed: int,
    join_s: float = 1.0,
    assets: bool = False,
    redis: bool = False,
    split: bool = False,
    root: Path = ROOT,
    accept: str = GZIP_ONLY,
    sends: Any = None,
    walk: Any = None,
) -> Result:
    """Run the room on its own server (``redis``: rooms in a redis-server, the teacher on process A and the
    students on process B; ``split``: the students alternate between A and B, as a load balancer with sticky
    sessions spreads them); the clients in a process of their own (``clients``); print the figures, return them.
    ``root``: the checkout whose app runs (``--against``); ``accept``: what a join storm's students offer
    (``GZIP_ONLY``: phones on a plain-HTTP host; a server that compresses is first given the time to make its
    brotli, as a server up before the lecture has had)."""
    with contextlib.ExitStack() as stack:
        env = {}
        if redis:
            env = {"ATTENTION_LAB_REDIS_URL": stack.enter_context(redis_server())}
        url_a, proc_a = stack.enter_context(streamlit_server(env=env, root=root))
        procs = [proc_a]
        url_b = url_a
        if redis:
            url_b, proc_b = stack.enter_context(streamlit_server(env=env, root=root))
            procs.append(proc_b)
        rss = [stack.enter_context(PeakRss(p.pid)) for p in procs]
        plan = AssetPlan.read(url_b) if assets else None  # read once, before the class: what a first visit fetches
        if plan:
            brotli = [wait_compressed(url, plan.eager + list(chain(*plan.lazy.values()))) for url in {url_a, url_b}]
            print(f"  the servers' brotli was ready {brotli} s after they answered (None: they compress nothing)")
        urls = (url_a, url_a, url_b) if split else (url_a, url_b)
        rec = clients(urls, [p.pid for p in procs], sessions, seconds, seed, join_s, plan, accept, sends, walk)
        for mine, theirs in ((sends, rec.sends), (walk, rec.walk)):
            if mine is not None:  # what the clients' process measured: the class's sends, the walk's delays
                mine.__dict__.update(theirs.__dict__)
        peak_mb = max(r.peak for r in rss) / 2**20
    failures = rec.errors + [f"quiz: tally {t}, picked {p}" for t, p in rec.quiz_counts if t != p]
    p95 = pct(rec.delays, 95)
    where = "teacher on process A, students on process B, rooms in Redis" if redis else "one server process"
    where = "teacher on process A, students on A and B, rooms in Redis" if split else where
    print(f"classroom: 1 teacher, {sessions} students in room for {seconds:.0f} s ({where}); changes "
          f"{len(rec.changes) - 1}, quiz rounds {len(rec.quiz_counts)} (tally, picked: {rec.quiz_counts})")  # fmt: skip
    print(f"  failures {len(failures)} (the server's); client starvation {len(rec.starved)} (time-outs while the "
          f"bench's own clients were {STARVED_LAG_S:.0f} s or more late: theirs, counted apart)")  # fmt: skip
    for f in failures[:10]:
        print(f"    {f}")
    for f in rec.starved[:5]:
        print(f"    starved: {f}")
    print(f"  teacher's change -> student's page redrawn: {len(rec.delays)} redraws, p50 {pct(rec.delays, 50):.3f} s "
          f"p95 {p95:.3f} s max {pct(rec.delays, 100):.3f} s")  # fmt: skip
    print(f"  students' runs: {rec.redraws}, {rec.whole_redraws} of them whole-page; {len(rec.overtaken)} whole runs "
          f"drew no body and the pushed body's run came {pct(rec.overtaken, 100):.2f} s after at most")  # fmt: skip
    fetched = ""
    if plan:
        each = pct(rec.fetched, 50) / 2**20
        fetched = (f" (each fetched what a browser with an empty cache does, read from the served index.html: "
                   f"{len(plan.eager)} files before its websocket, then its elements' components, offering "
                   f"{accept!r}: {each:.1f} MB)")  # fmt: skip
    print(f"  join: {len(rec.joined)} students opened the link within {join_s:.0f} s{fetched}; the last saw its "
          f"first map {max(rec.joined or [float('nan')]):.1f} s after the link went out (not counted in the run's "
          f"{seconds:.0f} s)")  # fmt: skip
    idle = 1000 * max(0.0, rec.idle_cpu / IDLE_S - rec.base_cpu) / sessions
    print(f"  idle: {rec.idle_redraws} runs in {IDLE_S:.0f} s; server CPU {1000 * rec.idle_cpu / IDLE_S:.1f} ms "
          f"per s ({1000 * rec.base_cpu:.1f} with the teacher alone): {idle:.3f} ms per student per s")  # fmt: skip
    wall = max(rec.wall, 1e-9)
    print(f"  CPU over the run ({wall:.0f} s): server {rec.server_cpu:.1f} s ({rec.server_cpu / wall:.2f} cores), "
          f"the bench's own clients {rec.client_cpu:.1f} s ({rec.client_cpu / wall:.2f} cores, one process on the "
          f"same cores); the clients' loop woke late by p95 {1000 * rec.lag.pct(95):.0f} ms, max "
          f"{rec.lag.pct(100):.2f} s (their own share of any delay above)")  # fmt: skip
    print(f"  server RSS peak {peak_mb:.0f} MB")
    name = ("two processes, Redis" + (": students on both" if split else ": students on B")) if redis else "one process"
    name += ", join storm" if assets else ""
    return Result(name, sessions, len(failures), pct(rec.delays, 50), p95, max(rec.joined or [float("nan")]), idle,
                  rec.server_cpu, rec.client_cpu, peak_mb, len(rec.starved), rec.lag.pct(100),
                  rec.quiz_counts)  # fmt: skip


def own_cpu() -> float:
    """CPU seconds of this process (the clients), threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def verdict(result: Result) -> int:
    word = "meets" if result.ok else "MISSES"
    if result.starved:
        word = "CANNOT TELL (the bench's clients starved) whether the server meets"
    print(f"{word} the targets: 0 failures, p95 <= {TARGET_FOLLOW_P95_S} s, RSS <= {TARGET_RSS_MB:.0f} MB")
    return 0 if result.ok else 1


def main(sessions: int, seconds: float, seed: int, **how) -> int:
    return verdict(classroom(sessions, seconds, seed, **how))


LECTURE_HALL = (
    (100, {}),
    (200, {}),
    (300, {}),
    (200, {"join_s": 10.0, "assets": True}),
    (200, {"redis": True, "split": True}),
)
"""``--lecture-hall``: (students, how) for 100, 200 and 300 students on one process (issue 18: 200 within 2 s, or,
where one process cannot, 100 within 2 s and 200 within 4 s), a join storm (200 open the link within 10 s, each
fetching what a browser's first visit fetches), and 200 students spread over two processes sharing the room
through Redis. Each runs ``HALL_SECONDS`` plus the time its class takes to join (``Record.join_done``: the storm's
join took 57 s of its 90 and left no time for a quiz), long enough for a quiz round (every run must have one: the
class picks, the teacher reveals, the tally counts every pick)."""
HALL_SECONDS = 90.0


def lecture_hall(seed: int, scale: float = 1.0, seconds: float = HALL_SECONDS) -> int:
    """Every run of ``LECTURE_HALL`` (students x ``scale``, for a busy machine), then their table rows."""
    results = []
    for n, how in LECTURE_HALL:
        results.append(classroom(max(1, round(n * scale)), seconds, seed, **how))
        if not results[-1].quiz:
            print("  NO QUIZ ROUND ran in this run: the tally was not measured")
        print()
    print(ROW_HEAD)
    for r in results:
        print(r.row())
    return 0 if all(r.ok and r.quiz for r in results) else 1
