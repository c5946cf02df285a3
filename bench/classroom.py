"""A room under load: 1 teacher, N students following it; the teacher changes a control every 5-10 s, runs a quiz.

    python -m bench.load --classroom                     # 30 students, 90 s
    python -m bench.load --classroom --sessions 200 --seconds 60
    python -m bench.load --classroom --sessions 200 --join-seconds 10 --fetch-page   # a join storm
    python -m bench.load --classroom --sessions 200 --redis     # teacher on process A, students on B, Redis
    python -m bench.load --lecture-hall                  # all of the above at 200 (and 300), then table rows

Each page is a ``bench.protocol.Tab``. A follower's page polls nothing: the server pushes a run of the whole page
when the teacher changes something (``dashboard.classroom.push``), and this client reads it to its end, as a
browser does. So the measured delay is the real one: teacher's click sent -> the student's whole page redrawn with
the new settings (``script_finished``).

Checks: after every redraw, the student's widgets hold the teacher's values and its heads figure is exactly
``core``'s for them (as ``bench.expected.check_page``); in the quiz, every student picks an answer, the teacher reveals,
and the teacher's tally must count every student. Before the class joins, the teacher is alone for ``BASE_S``: the
server's own idle CPU. After it has joined, nobody changes anything for ``IDLE_S``: the server CPU above its own
idle, per student per second, is what an idle student costs. CPU is the server processes' own (psutil), printed
beside the bench's own clients', which share the same cores and so slow the server's wall-clock figures.

Join: the students open the link spread over ``--join-seconds``; with ``--fetch-page`` each first GETs the page and
its scripts (what a browser's first visit downloads) and the line says when the last of them had its first map.

Targets (issue 18): 0 failures, p95 teacher's change -> student's redraw <= 2 s, server RSS <= 600 MB (the bench's
memory target; the issue allows 1 GB). All traffic goes to 127.0.0.1; sessions and time are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import random
import re
import resource
import time
import traceback
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import streamlit
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.expected import Mismatch, expected_weights
from bench.measure import TARGET_RSS_MB, PeakRss, pct
from bench.protocol import Page, Tab, decode_array
from bench.streamlit_server import redis_server, streamlit_server
from dashboard.classroom.room_page import CHECK_SECONDS
from dashboard.settings import kv_head_options, nearest_heads

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


@dataclass
class Change:
    sent: float
    values: dict
    """The followed controls as the address writes them (``followed``)."""
    typed: dict = field(default_factory=dict)
    """The teacher's widget values as the page holds them: what core computes the expected maps from."""


@dataclass
class Record:
    changes: list[Change] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    redraws: int = 0
    """Whole runs the server pushed to students (idle ones should get none)."""
    joined: list[float] = field(default_factory=list)
    """Per student: seconds from the room's link going out to its first page read to its end, maps included."""
    base_cpu: float = 0.0
    """Server CPU seconds per second with the teacher alone in the room (the server's own idle)."""
    errors: list[str] = field(default_factory=list)
    quiz_counts: list[tuple[int, int]] = field(default_factory=list)
    """(tally's total, students who picked) per quiz round."""
    picked: dict[str, set[int]] = field(default_factory=dict)
    """This round's picks: question widget key -> students who picked."""
    quiz_open: bool = False
    """The teacher's question is open for picks."""
    code: str = ""
    link_out: float = 0.0
    fetched: int = 0
    """Bytes of page and scripts the students fetched (``--fetch-page``)."""
    idle_cpu: float = 0.0
    idle_redraws: int = 0


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
    for j in range(len(changes) - 1, first - 1, -1):
        typed = changes[j].typed
        if typed.get("quiz"):
            if quiz_shown(page):
                return j
            continue
        try:
            check_student(page, typed)
        except Mismatch:
            continue
        return j
    return None


def check_student(page: Page, values: dict) -> None:
    """The page ran cleanly and, outside the quiz, draws exactly core's maps for ``values`` (one chart per head)."""
    if page.status != 0 or page.of("exception"):
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
    url: str, rec: Record, deadline: float, rng: random.Random, ready: asyncio.Event, n: int, cpu: Callable[[], float]
) -> None:
    try:
        async with Tab(url, timeout=60) as tab:
            await tab.open({"sentence": "the teacher reads the book to the class"})
            await tab.change(room_start=True)
            rec.changes.append(Change(time.monotonic(), followed(tab.values), dict(tab.values)))
            rec.code = tab.values["room"]
            cpu0 = cpu()
            await asyncio.sleep(BASE_S)  # the teacher alone: what the server costs with nobody to serve
            rec.base_cpu = (cpu() - cpu0) / BASE_S
            rec.link_out = time.monotonic()
            ready.set()
            while len(rec.joined) + len(rec.errors) < n and time.monotonic() < rec.link_out + JOIN_WAIT_S:
                await asyncio.sleep(0.2)  # the class joins (first page loads)
            await asyncio.sleep(1)
            cpu0, redraws0 = cpu(), rec.redraws
            await asyncio.sleep(IDLE_S)
            rec.idle_cpu, rec.idle_redraws = cpu() - cpu0, rec.redraws - redraws0
            step = 0
            while time.monotonic() < deadline - 12:
                step += 1
                if step % 4 == 0:  # a quiz round: on, wait for the class, pick, reveal, read the tally, off
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
                await asyncio.sleep(rng.uniform(5, 10))
    except Exception as err:
        rec.errors.append(f"teacher: {type(err).__name__}: {err}"[:300])
        ready.set()


async def change_and_record(tab: Tab, rec: Record, change: dict) -> Page:
    """The teacher's change, recorded (with what students must show) before it is sent: a student may redraw
    before the teacher's own page has."""
    typed = tab.values | change
    if typed.get("kv_heads") is not None:  # the page keeps K/V heads a divisor of the new head count, as here
        typed["kv_heads"] = nearest_heads(int(typed["kv_heads"]), kv_head_options(int(typed["n_heads"])))
    rec.changes.append(Change(time.monotonic(), followed(typed), typed))
    page = await tab.change(**change)
    rec.changes[-1].typed = dict(tab.values)  # what the teacher's page holds now (the same, or the page's own)
    if followed(tab.values) != rec.changes[-1].values:
        rec.errors.append(f"teacher: shows {followed(tab.values)}, expected {rec.changes[-1].values}")
    return page


async def quiz_round(tab: Tab, rec: Record, rng: random.Random, n: int) -> None:
    """The quiz on; the class picks on their own pages (the teacher never does: the room's quiz is the teacher's);
    the teacher reveals; the tally must count every pick."""
    rec.picked, rec.quiz_open = {}, True  # before the change: a student's page may redraw before the teacher's
    page = await change_and_record(tab, rec, {"quiz": True})
    if "quiz_reveal" not in page.widgets():  # this run has no question with one clear answer: a note instead
        rec.quiz_open = False
        await change_and_record(tab, rec, {"quiz": False})
        return
    waited = time.monotonic() + 8
    while sum(map(len, rec.picked.values())) < n and time.monotonic() < waited:
        await asyncio.sleep(0.2)
    rec.quiz_open = False
    await asyncio.sleep(0.5)  # a pick sent just now reaches the room
    page = await tab.change(quiz_reveal=True)
    tallies = [f for f in page.figures() if f["data"] and f["data"][0].get("type") == "bar" and "guesses" in str(f)]
    total = int(sum(decode_array(tallies[-1]["data"][0]["y"]))) if tallies else -1
    rec.quiz_counts.append((total, sum(map(len, rec.picked.values()))))
    await asyncio.sleep(2)
    await change_and_record(tab, rec, {"quiz": False})
    await asyncio.sleep(rng.uniform(5, 10))


async def student(
    url: str, i: int, rec: Record, deadline: float, ready: asyncio.Event, join_s: float, assets: bool
) -> None:
    rng = random.Random(i)
    try:
        await ready.wait()
        await asyncio.sleep(rng.uniform(0, join_s))  # the class opens the link over join_s seconds
        if assets:  # what a browser fetches before its websocket opens: the page and its scripts
            rec.fetched += await asyncio.to_thread(fetch_page, url)
        async with Tab(url, timeout=120) as tab:
            page = await tab.open({"room": rec.code})
            if shown_change(page, rec.changes, 0) is None:
                raise Mismatch(f"student {i}'s first page shows none of the teacher's settings")
            rec.joined.append(time.monotonic() - rec.link_out)
            seen = len(rec.changes)
            [(fragment, interval)] = tab.auto_reruns.items()
            if interval < CHECK_SECONDS:
                raise AssertionError(f"the student's page polls every {interval} s: a follower's page is pushed")
            due = time.monotonic() + rng.uniform(0, interval)  # timers at any phase: the idle window sees its share
            while (left := deadline - time.monotonic()) > 0:
                try:  # the run the server pushes when the teacher changes, or the page's own slow check when due
                    page = await tab.next_run(timeout=min(left, due - time.monotonic()))
                except TimeoutError:
                    if time.monotonic() < due:
                        break
                    due += interval
                    page = await tab.poll(fragment)
                    if page.status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                        continue
                rec.redraws += 1
                now = time.monotonic()
                if page.status != 0 or page.of("exception"):
                    raise Mismatch(f"status {page.status}, {len(page.of('exception'))} exceptions")
                # what the student showed last, or any change since: the newest may be recorded but not yet sent
                index = shown_change(page, rec.changes, max(seen - 1, 0))
                if index is None:
                    raise AssertionError(f"student {i} shows none of the teacher's changes since {seen - 1}")
                if index >= seen:  # a change this student had not shown yet
                    rec.delays.append(now - rec.changes[index].sent)
                    seen = index + 1
                if rec.quiz_open and (key := pick_key(page)) is not None and i not in rec.picked.get(key, ()):
                    options = list(page.widgets()[key].selectbox.options)
                    await tab.change(**{key: rng.choice(options)})
                    rec.picked.setdefault(key, set()).add(i)
    except Exception as err:
        rec.errors.append(f"student {i}: {type(err).__name__}: {err} {traceback.format_exc()[-600:]}"[:900])


LAZY_SCRIPTS = ("PlotlyChart", "StreamlitSyntaxHighlighter")
"""Scripts the page loads once it draws a chart and a code block (not named in the index): their files' prefixes
in the installed Streamlit's static folder, which the server serves."""


def fetch_page(url: str) -> int:
    """GET the app's page, every script and style sheet it names and the chart's and code block's scripts, as a
    browser's first visit does (~9 MB): bytes read."""
    with urllib.request.urlopen(f"{url}/", timeout=120) as r:
        index = r.read()
    total = len(index)
    named = [p.decode()[2:] for p in re.findall(rb'(?:src|href)="(\./static/[^"]+\.(?:js|css))"', index)]
    static = Path(streamlit.__file__).parent / "static" / "static" / "js"
    lazy = [f"static/js/{f.name}" for f in sorted(static.glob("*.js")) if f.name.split(".")[0] in LAZY_SCRIPTS]
    for path in dict.fromkeys(named + lazy):
        with urllib.request.urlopen(f"{url}/{path}", timeout=120) as r:
            total += len(r.read())
    return total


async def run(
    urls: tuple[str, ...], n: int, seconds: float, seed: int, cpu: Callable[[], float], join_s: float, assets: bool
) -> Record:
    """The teacher on ``urls[0]``, student i on ``urls[1 + i % (len(urls) - 1)]`` (the same server, or others)."""
    rec = Record()
    ready = asyncio.Event()
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        teacher(urls[0], rec, deadline, random.Random(seed), ready, n, cpu),
        *(student(urls[1 + i % (len(urls) - 1)], i, rec, deadline, ready, join_s, assets) for i in range(n)),
    )
    return rec


@dataclass
class Result:
    """One classroom run, as a row of the bench table (bench/README.md)."""

    name: str
    sessions: int
    failures: int
    p50: float
    p95: float
    last_join: float
    idle_ms: float
    """Server CPU per idle student per second, above the server's own idle (``base_cpu``)."""
    server_cpu: float
    client_cpu: float
    peak_mb: float

    @property
    def ok(self) -> bool:
        return self.failures == 0 and self.p95 <= TARGET_FOLLOW_P95_S and self.peak_mb <= TARGET_RSS_MB

    def row(self) -> str:
        return (
            f"| {self.name} | {self.sessions} | {self.p50:.2f} s | {self.p95:.2f} s | {self.last_join:.1f} s | "
            f"{self.idle_ms:.2f} ms | {self.server_cpu:.0f} s / {self.client_cpu:.0f} s | {self.peak_mb:.0f} MB | "
            f"{self.failures} |"
        )


ROW_HEAD = (
    "| run | students | p50 | p95 | last first map | idle CPU per student per s | CPU server / clients | RSS peak "
    "| failures |\n|---|---|---|---|---|---|---|---|---|"
)


def classroom(
    sessions: int,
    seconds: float,
    seed: int,
    join_s: float = 1.0,
    assets: bool = False,
    redis: bool = False,
    split: bool = False,
) -> Result:
    """Run the room on its own server (``redis``: rooms in a redis-server, the teacher on process A and the
    students on process B; ``split``: the students alternate between A and B, as a load balancer with sticky
    sessions spreads them); print the figures and return them."""
    with contextlib.ExitStack() as stack:
        env = {}
        if redis:
            env = {"ATTENTION_LAB_REDIS_URL": stack.enter_context(redis_server())}
        url_a, proc_a = stack.enter_context(streamlit_server(env=env))
        rss = [stack.enter_context(PeakRss(proc_a.pid))]
        url_b = url_a
        if redis:
            url_b, proc_b = stack.enter_context(streamlit_server(env=env))
            rss.append(stack.enter_context(PeakRss(proc_b.pid)))
        cpu0, mine0 = sum(r.cpu() for r in rss), own_cpu()
        urls = (url_a, url_a, url_b) if split else (url_a, url_b)
        rec = asyncio.run(run(urls, sessions, seconds, seed, lambda: sum(r.cpu() for r in rss), join_s, assets))
        server_cpu, client_cpu = sum(r.cpu() for r in rss) - cpu0, own_cpu() - mine0
        peak_mb = max(r.peak for r in rss) / 2**20
    failures = rec.errors + [f"quiz: tally {t}, picked {p}" for t, p in rec.quiz_counts if t != p]
    p95 = pct(rec.delays, 95)
    where = "teacher on process A, students on process B, rooms in Redis" if redis else "one server process"
    where = "teacher on process A, students on A and B, rooms in Redis" if split else where
    print(f"classroom: 1 teacher, {sessions} students in room for {seconds:.0f} s ({where}); changes "
          f"{len(rec.changes) - 1}, quiz rounds {len(rec.quiz_counts)} (tally, picked: {rec.quiz_counts})")  # fmt: skip
    print(f"  failures {len(failures)}")
    for f in failures[:10]:
        print(f"    {f}")
    print(f"  teacher's change -> student's page redrawn: {len(rec.delays)} redraws, p50 {pct(rec.delays, 50):.3f} s "
          f"p95 {p95:.3f} s max {pct(rec.delays, 100):.3f} s")  # fmt: skip
    each = rec.fetched / max(1, len(rec.joined)) / 2**20
    fetched = f" (page and scripts fetched first, {each:.1f} MB each)" if assets else ""
    print(f"  join: {len(rec.joined)} students opened the link within {join_s:.0f} s{fetched}; the last saw its "
          f"first map {max(rec.joined or [float('nan')]):.1f} s after the link went out")  # fmt: skip
    idle = 1000 * max(0.0, rec.idle_cpu / IDLE_S - rec.base_cpu) / sessions
    print(f"  idle: {rec.idle_redraws} runs in {IDLE_S:.0f} s; server CPU {1000 * rec.idle_cpu / IDLE_S:.1f} ms "
          f"per s ({1000 * rec.base_cpu:.1f} with the teacher alone): {idle:.3f} ms per student per s")  # fmt: skip
    print(f"  CPU over the run: server {server_cpu:.1f} s, the bench's own clients {client_cpu:.1f} s (same cores)")
    print(f"  server RSS peak {peak_mb:.0f} MB")
    name = ("two processes, Redis" + (": students on both" if split else ": students on B")) if redis else "one process"
    name += ", join storm" if assets else ""
    return Result(name, sessions, len(failures), pct(rec.delays, 50), p95, max(rec.joined or [float("nan")]), idle,
                  server_cpu, client_cpu, peak_mb)  # fmt: skip


def own_cpu() -> float:
    """CPU seconds of this process (the clients), threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def verdict(result: Result) -> int:
    word = "meets" if result.ok else "MISSES"
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
fetching the page and its scripts first), and 200 students spread over two processes sharing the room through
Redis. Each runs 90 s."""


def lecture_hall(seed: int, scale: float = 1.0) -> int:
    """Every run of ``LECTURE_HALL`` (students x ``scale``, for a busy machine), then their table rows."""
    results = []
    for n, how in LECTURE_HALL:
        results.append(classroom(max(1, round(n * scale)), 90.0, seed, **how))
        print()
    print(ROW_HEAD)
    for r in results:
        print(r.row())
    return 0 if all(r.ok for r in results) else 1
