"""A room under load: 1 teacher, N students following it; the teacher changes a control every 5-10 s, runs a quiz.

    python -m bench.load --classroom                     # 30 students, 90 s
    python -m bench.load --classroom --sessions 60 --seconds 120

Each page is a ``bench.protocol.Tab``. Protocol clients do not run fragments by themselves, so each student does
what its browser's timer does: every ``interval`` the page's ``st.fragment(run_every=...)`` asked for (the server's
``auto_rerun`` message), it sends that fragment's rerun (``fragment_id``, ``is_auto_rerun``, every widget's state).
The fragment compares the room's version; when the teacher has changed something, it reruns the whole page, whose
run this client reads to its end. So the measured delay is the real one: teacher's click sent -> the student's
whole page redrawn with the new settings (``script_finished``), poll phase included.

Checks: after every redraw, the student's widgets hold the teacher's values and its heads figure is exactly
``core``'s for them (as ``bench.expected.check_page``); in the quiz, every student picks an answer, the teacher reveals,
and the teacher's tally must count every student. The first ``IDLE_S`` seconds, nobody changes anything: server CPU
divided by the polls answered then is the cost of one idle poll.

Targets (issue 13): 0 failures, p95 teacher's change -> student's redraw <= 2 s, server RSS <= 600 MB.
All traffic goes to 127.0.0.1; sessions and time are bounded.
"""

from __future__ import annotations

import asyncio
import html
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bench.expected import Mismatch, expected_weights
from bench.measure import TARGET_RSS_MB, PeakRss, pct
from bench.protocol import Page, Tab, decode_array
from bench.streamlit_server import streamlit_server

WORDS = ("a", "cat", "sat", "on", "the", "mat", "by", "river", "bank", "dog")
FOLLOWED = ("sentence", "d_model", "n_heads", "causal", "positional", "seed", "quiz")
"""The teacher's controls the bench compares on every student's page."""
TARGET_FOLLOW_P95_S = 2.0
IDLE_S = 10.0
"""Seconds at the start when nobody changes anything: idle polling only."""


@dataclass
class Change:
    sent: float
    values: dict


@dataclass
class Record:
    changes: list[Change] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    polls: int = 0
    errors: list[str] = field(default_factory=list)
    quiz_counts: list[tuple[int, int]] = field(default_factory=list)
    """(tally's total, students who picked) per quiz round."""
    picked: dict[str, set[int]] = field(default_factory=dict)
    code: str = ""
    idle_cpu: float = 0.0
    idle_polls: int = 0


def followed(values: dict) -> dict[str, str]:
    """The followed controls as the URL writes them (a widget seeded from the URL holds text, a set one a number)."""
    return {k: str(v).lower() if isinstance(v := values.get(k), bool) else str(v) for k in FOLLOWED}


def pick_key(page: Page) -> str | None:
    return next((k for k in page.widgets() if k.startswith("quiz_pick_")), None)


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
            rec.changes.append(Change(time.monotonic(), followed(tab.values)))
            rec.code = tab.values["room"]
            ready.set()
            await asyncio.sleep(3)  # the class joins (first page loads)
            cpu0, polls0 = cpu(), rec.polls
            await asyncio.sleep(IDLE_S)
            rec.idle_cpu, rec.idle_polls = cpu() - cpu0, rec.polls - polls0
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
    rec.changes.append(Change(time.monotonic(), followed(tab.values | change)))
    page = await tab.change(**change)
    if followed(tab.values) != rec.changes[-1].values:
        rec.errors.append(f"teacher: shows {followed(tab.values)}, expected {rec.changes[-1].values}")
    return page


async def quiz_round(tab: Tab, rec: Record, rng: random.Random, n: int) -> None:
    page = await change_and_record(tab, rec, {"quiz": True})
    key = pick_key(page)
    if key is None:  # this run has no question with one clear answer: a note instead
        await change_and_record(tab, rec, {"quiz": False})
        return
    rec.picked[key] = set()
    waited = time.monotonic() + 8
    while len(rec.picked[key]) < n and time.monotonic() < waited:
        await asyncio.sleep(0.2)
    await tab.change(**{key: rng.choice(list(page.widgets()[key].selectbox.options))})
    page = await tab.change(quiz_reveal=True)
    tallies = [f for f in page.figures() if f["data"] and f["data"][0].get("type") == "bar" and "guesses" in str(f)]
    total = int(sum(tallies[-1]["data"][0]["y"])) if tallies else -1
    rec.quiz_counts.append((total, len(rec.picked[key])))
    await asyncio.sleep(2)
    await change_and_record(tab, rec, {"quiz": False})
    await asyncio.sleep(rng.uniform(5, 10))


async def student(url: str, i: int, rec: Record, deadline: float, ready: asyncio.Event) -> None:
    rng = random.Random(i)
    try:
        await ready.wait()
        async with Tab(url, timeout=60) as tab:
            await asyncio.sleep(rng.uniform(0, 1))  # the class does not join in the same millisecond
            page = await tab.open({"room": rec.code})
            check_student(page, tab.values)
            seen = len(rec.changes)
            while time.monotonic() < deadline:
                [(fragment, interval)] = tab.auto_reruns.items() or [("", 1.0)]
                if not fragment:
                    raise AssertionError("the student's page does not poll (no self-rerunning fragment)")
                await asyncio.sleep(interval)
                page = await tab.poll(fragment)
                rec.polls += 1
                if page.status != 0:
                    continue  # the fragment's own run: nothing changed
                now = time.monotonic()
                check_student(page, tab.values)
                shown, first = followed(tab.values), max(seen - 1, 0)
                # what the student showed last, or any change since: the newest may be recorded but not yet sent
                index = next(
                    (j for j in range(len(rec.changes) - 1, first - 1, -1) if rec.changes[j].values == shown), None
                )
                if index is None:
                    raise AssertionError(f"student {i} shows {shown}, the teacher {rec.changes[-1].values}")
                if index >= seen:  # a change this student had not shown yet
                    rec.delays.append(now - rec.changes[index].sent)
                    seen = index + 1
                if (key := pick_key(page)) is not None and key in rec.picked and i not in rec.picked[key]:
                    options = list(page.widgets()[key].selectbox.options)
                    await tab.change(**{key: rng.choice(options)})
                    rec.picked[key].add(i)
    except Exception as err:
        rec.errors.append(f"student {i}: {type(err).__name__}: {err}"[:300])


async def run(url: str, n: int, seconds: float, seed: int, cpu: Callable[[], float]) -> Record:
    rec = Record()
    ready = asyncio.Event()
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        teacher(url, rec, deadline, random.Random(seed), ready, n, cpu),
        *(student(url, i, rec, deadline, ready) for i in range(n)),
    )
    return rec


def main(sessions: int, seconds: float, seed: int) -> int:
    """Run the room on its own server; print the figures and whether they meet the targets."""
    with streamlit_server() as (url, proc), PeakRss(proc.pid) as rss:
        rec = asyncio.run(run(url, sessions, seconds, seed, rss.cpu))
        peak_mb = rss.peak / 2**20
    failures = rec.errors + [f"quiz: tally {t}, picked {p}" for t, p in rec.quiz_counts if t != p]
    p95 = pct(rec.delays, 95)
    print(f"classroom: 1 teacher, {sessions} students in room for {seconds:.0f} s; changes {len(rec.changes) - 1}, "
          f"quiz rounds {len(rec.quiz_counts)} (tally, picked: {rec.quiz_counts})")  # fmt: skip
    print(f"  failures {len(failures)}")
    for f in failures[:10]:
        print(f"    {f}")
    print(f"  teacher's change -> student's page redrawn: {len(rec.delays)} redraws, p50 {pct(rec.delays, 50):.3f} s "
          f"p95 {p95:.3f} s max {pct(rec.delays, 100):.3f} s")  # fmt: skip
    idle = 1000 * rec.idle_cpu / max(1, rec.idle_polls)
    print(f"  idle polls: {rec.idle_polls} in {IDLE_S:.0f} s, server CPU {idle:.1f} ms per poll "
          f"({rec.idle_cpu / IDLE_S:.2f} cores for {sessions} students)")  # fmt: skip
    print(f"  server RSS peak {peak_mb:.0f} MB")
    ok = not failures and bool(rec.delays) and p95 <= TARGET_FOLLOW_P95_S and peak_mb <= TARGET_RSS_MB
    verdict = "meets" if ok else "MISSES"
    print(f"{verdict} the targets: 0 failures, p95 <= {TARGET_FOLLOW_P95_S} s, RSS <= {TARGET_RSS_MB:.0f} MB")
    return 0 if ok else 1
