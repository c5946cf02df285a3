"""A classroom at once: N students change settings for a bounded time; latency, failures, memory, leaks.

    python -m bench.load                       # 30 protocol sessions for 60 s, then 4 real browsers for 30 s
    python -m bench.load --sessions 100 --seconds 120 --browsers 0
    python -m bench.load --classroom           # a room: 1 teacher and 30 students following it (bench/classroom.py)
    python -m bench.load --lecture-hall        # rooms of 100, 200 and 300, a join storm, two processes on Redis: rows
    python -m bench.load --lecture-hall --views   # the teacher walks every view, 100 then 200 students (bench/walk.py)
    python -m bench.load --classroom --sessions 200 --join-seconds 10 --fetch-page --against main   # storm, both

Why protocol clients: thirty chromium processes would take the two cores away from
the server they are measuring. Each student is a ``bench.protocol.Tab``, which
speaks Streamlit's websocket protocol as the frontend does (every widget's state on
every rerun, values encoded as the frontend encodes them), so the server does
exactly the work thirty browsers would cause, minus the drawing. A smaller run of
real chromium pages afterwards measures what a student sees: click to heatmaps
drawn.

Each student has a word of its own in every sentence it types (``student07``) and
its own seeds, and after every rerun checks the figure it received against
``core`` run locally on the settings *it* chose: the token labels, the number of
heads, and every weight (float32, exactly). A figure from another session, or
from an older setting, fails that check. Latency is send-to-``script_finished``:
every element of the new page, charts included, has arrived.

Every student caches messages as the browser does (``Tab(browser_cache=True)``)
and counts the bytes of each rerun. .streamlit/config.toml turns Streamlit's
message caching off (fast clicks otherwise end a session, see
tests/e2e/test_fast_clicks.py); a second classroom, the same students with the
same plans, then runs against a server with Streamlit's default caching, so the
bytes, latency and CPU that choice costs are printed side by side (``--no-baseline``
skips it).

Targets (issue 5, this 2-core machine): 0 failed sessions, p95 <= 3 s, server RSS <= 600 MB.
All traffic goes to 127.0.0.1; sessions, time and think time are bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field

from bench import walk
from bench.classroom import HALL_SECONDS, ROW_HEAD, lecture_hall, verdict
from bench.classroom import classroom as room
from bench.classroom import main as room_main
from bench.expected import Mismatch, check_page
from bench.measure import TARGET_RSS_MB, PeakRss, pct
from bench.page_assets import BROWSER, GZIP_ONLY
from bench.protocol import Page, Tab
from bench.streamlit_server import CHROMIUM, CHROMIUM_ARGS, checkout, streamlit_server
from core.training import TASK_NAMES
from dashboard.state.settings import D_MODELS, MAX_SEED, head_options

_WORDS = """the bank of river gave a loan money water boat fish teacher student reads book cat dog sat on mat
attention head query key value word order matters rope sine learned mask future past token"""
VOCAB = tuple(_WORDS.split())
TARGET_P95_S = 3.0


@dataclass
class Student:
    """One session's plan and record."""

    index: int
    rng: random.Random
    latencies: list[float] = field(default_factory=list)
    received: list[int] = field(default_factory=list)
    """Bytes each change's rerun sent this session (websocket payload)."""
    deflated: list[int] = field(default_factory=list)
    """The same, as the server's websocket compression would carry them (``Page.deflated``)."""
    references: int = 0
    """Elements sent as a reference to a message this session had cached (Streamlit's caching on)."""
    first_load: float | None = None
    error: str | None = None

    @property
    def word(self) -> str:
        return f"student{self.index:02d}"

    def sentence(self) -> str:
        return " ".join([self.word, *self.rng.sample(VOCAB, self.rng.randint(3, 15))])

    @property
    def pretrained(self) -> bool:
        """Every third student looks at the pretrained model's heads instead of random ones."""
        return self.index % 3 == 1

    @property
    def trains(self) -> bool:
        """Every third student is in the train view, pressing Train on settings of its own."""
        return self.index % 3 == 2

    def opening(self) -> dict[str, str]:
        """The link this student opens."""
        if self.trains:
            return {"view": "train", "weights": "trained", "task": self.rng.choice(TASK_NAMES)}
        return {"weights": "minilm"} if self.pretrained else {}

    def first_change(self, values: dict) -> dict:
        """A sentence of its own (a seed of its own and a press of Train in the train view)."""
        if self.trains:
            return {"seed": self.rng.randrange(MAX_SEED), "train_button": True}
        first = {"sentence": self.sentence()}
        return first if self.pretrained else first | {"seed": self.rng.randrange(MAX_SEED)}

    def check(self, page: Page, values: dict) -> None:
        """The heads figure must be this session's own; the train view must run without an exception."""
        if not self.trains:
            check_page(page, values)
        elif page.status != 0 or page.of("exception"):
            raise Mismatch(f"train view: status {page.status}, {len(page.of('exception'))} exceptions")

    def next_change(self, values: dict) -> dict:
        """One control per rerun, as in a browser (a head count offered only after d_model changed cannot be
        clicked in the same rerun); the app itself moves n_heads when a new d_model no longer allows it."""
        if self.trains:  # a task's recommendation (pre-trained, instant) or an own seed and a press of Train
            if self.rng.random() < 0.5:
                return {"task": self.rng.choice([t for t in TASK_NAMES if t != values.get("task")])}
            return {"seed": self.rng.randrange(MAX_SEED)} | ({"train_button": True} if "train_button" in values else {})
        if self.pretrained:  # the model fixes d_model, heads and positions: sentence, layer and the mask remain
            what = self.rng.choice(["sentence", "layer", "causal"])
            if what == "layer":
                return {"layer": self.rng.choice([n for n in range(1, 7) if n != int(values.get("layer", 1))])}
            return {"sentence": self.sentence()} if what == "sentence" else {"causal": not values["causal"]}
        what = self.rng.choice(["sentence", "d_model", "n_heads", "causal", "positional", "seed"])
        d_model, positional = int(values["d_model"]), str(values["positional"])
        if what == "sentence":
            return {"sentence": self.sentence()}
        if what == "causal":
            return {"causal": not values["causal"]}
        if what == "seed":
            return {"seed": self.rng.randrange(MAX_SEED)}
        if what == "positional":
            return {"positional": self.rng.choice([p for p in ("none", "sinusoidal", "learned") if p != positional])}
        if what == "d_model":
            return {"d_model": self.rng.choice([d for d in D_MODELS if d != d_model and d <= 256])}
        options = head_options(d_model, positional)
        return {"n_heads": self.rng.choice([h for h in options if h != int(values["n_heads"])] or options)}


async def student(url: str, s: Student, deadline: float, think: tuple[float, float]) -> None:
    """Open the teacher's link, type an own sentence, then change one control after another until ``deadline``."""
    try:
        async with Tab(url, timeout=60, browser_cache=True) as tab:
            page = await tab.open(s.opening())
            s.first_load = page.seconds
            page = await tab.change(**s.first_change(tab.values))
            s.check(page, tab.values)
            s.latencies.append(page.seconds)
            s.received.append(page.received)
            s.deflated.append(page.deflated)
            s.references += page.references
            while time.monotonic() < deadline:
                await asyncio.sleep(s.rng.uniform(*think))
                page = await tab.change(**s.next_change(tab.values))
                s.check(page, tab.values)
                s.latencies.append(page.seconds)
                s.received.append(page.received)
                s.deflated.append(page.deflated)
                s.references += page.references
    except Exception as err:  # any failure fails this session; the run goes on
        s.error = f"{type(err).__name__}: {err}"[:300]


async def classroom(url: str, n: int, seconds: float, think: tuple[float, float], seed: int) -> list[Student]:
    students = [Student(i, random.Random(seed * 10_000 + i)) for i in range(n)]
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(student(url, s, deadline, think) for s in students))
    return students


async def browsers(url: str, n: int, seconds: float, seed: int) -> tuple[list[float], list[str]]:
    """``n`` real chromium pages change the head count for ``seconds``: click to heatmaps drawn, in seconds."""
    from playwright.async_api import async_playwright

    times: list[float] = []
    errors: list[str] = []
    drawn = ".st-key-heads_chart g.hm image"

    async def one(browser, i: int) -> None:
        rng = random.Random(seed * 7919 + i)
        word = f"browser{i:02d}"
        context = await browser.new_context(viewport={"width": 1400, "height": 1000})
        page = await context.new_page()
        try:
            await page.goto(f"{url}/?sentence={word}+reads+the+book&d_model=64&n_heads=4", timeout=90_000)
            await page.wait_for_selector(drawn, timeout=90_000)
            heads, end = 4, time.monotonic() + seconds
            while time.monotonic() < end:
                heads = rng.choice([h for h in (1, 2, 4, 8, 16) if h != heads])
                button = page.locator(".st-key-n_heads").get_by_role("radio", name=str(heads), exact=True)
                start = time.perf_counter()
                await button.click()
                await page.wait_for_function(
                    """([sel, n, word]) => {
                        const maps = [...document.querySelectorAll('.st-key-heads_chart g.hm')]
                            .filter((g) => g.querySelector('image') && g.__data__ && g.__data__[0].trace.coloraxis);
                        return maps.length === n && maps.every((g) => String(g.__data__[0].trace.x[0]).includes(word));
                    }""",
                    arg=[drawn, heads, word],
                    polling="raf",
                    timeout=60_000,
                )
                times.append(time.perf_counter() - start)
                await asyncio.sleep(rng.uniform(1.0, 3.0))
            if await page.locator("[data-testid='stException']").count():
                errors.append(f"{word}: exception on the page")
        except Exception as err:
            errors.append(f"{word}: {type(err).__name__}: {str(err)[:200]}")
        finally:
            await context.close()

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            await asyncio.gather(*(one(browser, i) for i in range(n)))
        finally:
            await browser.close()
    return times, errors


STREAMLIT_CACHING = ("--global.minCachedMessageSize", "10000")  # Streamlit's default, over our config.toml


@dataclass
class Classroom:
    """One classroom run's totals, for the side-by-side line."""

    latencies: list[float]
    received: list[int]
    deflated: list[int]
    references: int
    failed: int
    cpu: float
    """Server CPU seconds (process and children) over the run."""
    reruns: int
    peak_mb: float

    @property
    def cpu_per_rerun(self) -> float:
        return self.cpu / max(1, self.reruns)

    @classmethod
    def measure(cls, url: str, rss: PeakRss, args: argparse.Namespace) -> tuple[Classroom, list[Student], float]:
        cpu0, t0 = rss.cpu(), time.monotonic()
        students = asyncio.run(classroom(url, args.sessions, args.seconds, tuple(args.think), args.seed))
        cpu, wall = rss.cpu() - cpu0, time.monotonic() - t0
        reruns = sum(len(s.latencies) + (s.first_load is not None) for s in students)
        room = cls(
            latencies=[x for s in students for x in s.latencies],
            received=[x for s in students for x in s.received],
            deflated=[x for s in students for x in s.deflated],
            references=sum(s.references for s in students),
            failed=sum(bool(s.error) for s in students),
            cpu=cpu,
            reruns=reruns,
            peak_mb=rss.peak / 2**20,
        )
        return room, students, wall

    def line(self, name: str) -> str:
        lat, sent = self.latencies, self.received
        return (
            f"  {name:<38} {statistics.fmean(sent or [0]):>8,.0f} B per rerun (p50 {pct(sent, 50):,.0f}, "
            f"deflated {statistics.fmean(self.deflated or [0]):,.0f}), "
            f"{self.references} as references; p50 {pct(lat, 50):.3f} s p95 {pct(lat, 95):.3f} s; "
            f"CPU {1000 * self.cpu_per_rerun:.0f} ms/rerun; RSS peak {self.peak_mb:.0f} MB; failed {self.failed}"
        )


def side_by_side(ref: str, sessions: int, seconds: float, seed: int, how: dict) -> int:
    """The same room on REF's app, then on this checkout's, in one session: both rows, and the ratios the issue
    holds a join storm to (last first map, server CPU)."""
    with tempfile.TemporaryDirectory(prefix="load-ref-") as into:
        old = room(sessions, seconds, seed, root=checkout(ref, into), **how)
    new = room(sessions, seconds, seed, **how)
    old.name, new.name = f"{ref}: {old.name}", f"this checkout: {new.name}"
    print(ROW_HEAD)
    print(old.row())
    print(new.row())
    print(f"this checkout / {ref}: last first map x{new.last_join / old.last_join:.2f} ({old.last_join:.1f} -> "
          f"{new.last_join:.1f} s), server CPU x{new.server_cpu / old.server_cpu:.2f} ({old.server_cpu:.0f} -> "
          f"{new.server_cpu:.0f} s); machine load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    return verdict(new)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long each session keeps changing settings")
    ap.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"),
                    help="seconds a student looks at the page before the next change")  # fmt: skip
    ap.add_argument("--browsers", type=int, default=4, help="real chromium pages in a second, smaller run (0: skip)")
    ap.add_argument("--browser-seconds", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the second classroom against Streamlit's default message caching")  # fmt: skip
    ap.add_argument("--classroom", action="store_true",
                    help="a room instead: 1 teacher changing a control every 5-10 s and running a quiz, "
                    "--sessions students following it (bench/classroom.py)")  # fmt: skip
    ap.add_argument("--join-seconds", type=float, default=1.0,
                    help="--classroom: students open the room's link over this many seconds")  # fmt: skip
    ap.add_argument("--fetch-page", action="store_true",
                    help="--classroom: each student first fetches what a browser with an empty cache does (the "
                    "served index.html, what it names and imports, then its elements' components: ~9 MB)")  # fmt: skip
    ap.add_argument("--redis", action="store_true",
                    help="--classroom: rooms in redis-server; the teacher on process A, students on B")  # fmt: skip
    ap.add_argument("--split", action="store_true",
                    help="--classroom --redis: students alternate between processes A and B")  # fmt: skip
    ap.add_argument("--brotli", action="store_true",
                    help="--fetch-page: the students offer brotli too (chromium over HTTPS or to localhost); by "
                    "default gzip only, as a phone's chromium offers a plain-HTTP host")  # fmt: skip
    ap.add_argument("--against", metavar="REF",
                    help="--classroom: REF's app (a commit, e.g. main) first, then this checkout's, on fresh "
                    "servers one after the other; prints both rows and this one's over REF's")  # fmt: skip
    ap.add_argument("--lecture-hall", action="store_true",
                    help="200 and 300 students, a join storm and two processes on Redis, then table rows")  # fmt: skip
    ap.add_argument("--views", action="store_true",
                    help="--lecture-hall: the teacher walks through every view instead, at 100 and 200 students "
                    "(bench/walk.py): the p95 of every view")  # fmt: skip
    ap.add_argument("--scale", type=float, default=1.0,
                    help="--lecture-hall: students x this (0.1-0.25 on a busy machine)")  # fmt: skip
    args = ap.parse_args()
    if args.lecture_hall and args.views:
        return walk.lecture_hall(args.seed, args.scale)
    if args.lecture_hall:  # each run HALL_SECONDS unless --seconds says otherwise
        return lecture_hall(args.seed, args.scale, args.seconds if args.seconds != 60.0 else HALL_SECONDS)
    if args.classroom:
        seconds = args.seconds if args.seconds != 60.0 else 90.0
        how = {"join_s": args.join_seconds, "assets": args.fetch_page, "redis": args.redis or args.split}
        how |= {"split": args.split, "accept": BROWSER if args.brotli else GZIP_ONLY}
        if args.against:
            return side_by_side(args.against, args.sessions, seconds, args.seed, how)
        return room_main(args.sessions, seconds, args.seed, **how)
    if not (1 <= args.sessions <= 200 and 0 < args.seconds <= 600 and 0 <= args.browsers <= 10):
        ap.error("bounded on purpose: 1..200 sessions, up to 600 s, up to 10 browsers")

    ok = True
    with streamlit_server() as (url, proc), PeakRss(proc.pid) as rss:
        idle_mb = rss.now() / 2**20
        ours, students, wall = Classroom.measure(url, rss, args)
        cpu = ours.cpu
        lat = [x for s in students for x in s.latencies]
        loads = [s.first_load for s in students if s.first_load is not None]
        failed = [s for s in students if s.error]
        peak_mb = rss.peak / 2**20
        print(
            f"protocol clients: {args.sessions} sessions, {args.seconds:.0f} s each, "
            f"think time {args.think[0]}-{args.think[1]} s, machine load average {os.getloadavg()[0]:.1f}"
        )
        print(f"  interactions {len(lat)} in {wall:.0f} s ({len(lat) / wall:.1f}/s), failed sessions {len(failed)}")
        for s in failed:
            print(f"    {s.word}: {s.error}")
        print(
            f"  first page load   p50 {pct(loads, 50):.3f} s  p95 {pct(loads, 95):.3f} s  max {max(loads or [0]):.3f} s"
        )
        print(
            f"  change -> charts  p50 {pct(lat, 50):.3f} s  p95 {pct(lat, 95):.3f} s  max {pct(lat, 100):.3f} s"
            f"  (mean {statistics.fmean(lat) if lat else 0:.3f} s)"
        )
        print(f"  server RSS idle {idle_mb:.0f} MB, peak {peak_mb:.0f} MB")
        print(
            f"  sent per rerun: mean {statistics.fmean(ours.received or [0]):,.0f} B websocket payload, "
            f"{statistics.fmean(ours.deflated or [0]):,.0f} B with websocket compression"
        )
        reruns = len(lat) + len(loads)
        print(
            f"  server CPU {cpu:.0f} s in {wall:.0f} s ({cpu / wall:.2f} cores), {1000 * cpu / max(1, reruns):.0f} ms "
            f"per rerun: one core serves ~{reruns / max(cpu, 1e-9):.1f} reruns/s (scripts share one GIL)"
        )
        print("  every figure matched its own session's settings (tokens, heads, weights)" if not failed else "")
        ok &= not failed and pct(lat, 95) <= TARGET_P95_S and peak_mb <= TARGET_RSS_MB

        if args.browsers:
            times, errors = asyncio.run(browsers(url, args.browsers, args.browser_seconds, args.seed))
            print(f"real browsers: {args.browsers} chromium pages, {args.browser_seconds:.0f} s, head count changes")
            print(f"  redraws {len(times)}, failed pages {len(errors)}")
            for e in errors:
                print(f"    {e}")
            print(f"  click -> heatmaps drawn  p50 {pct(times, 50):.3f} s  p95 {pct(times, 95):.3f} s")
            print(f"  server RSS peak over both runs {rss.peak / 2**20:.0f} MB")
            ok &= not errors and bool(times)
    if not args.no_baseline:
        with streamlit_server(extra_args=STREAMLIT_CACHING) as (url, proc), PeakRss(proc.pid) as rss:
            default, _, _ = Classroom.measure(url, rss, args)
        print(f"message caching: the same {args.sessions} students, same plans, {args.seconds:.0f} s, one server each")
        print(ours.line("caching off (.streamlit/config.toml)"))
        print(default.line("caching on (Streamlit's default)"))
        more = statistics.fmean(ours.received or [0]) / max(1.0, statistics.fmean(default.received or [0]))
        print(f"  caching off sends {more:.2f}x the bytes per rerun; machine load average {os.getloadavg()[0]:.1f}")
    verdict = "meets" if ok else "MISSES"
    print(f"{verdict} the targets: 0 failures, p95 <= {TARGET_P95_S} s, RSS <= {TARGET_RSS_MB:.0f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
