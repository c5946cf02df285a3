"""Does the server's memory stay level? RSS over 500 reruns with varied settings, and the caches' bounds.

    python -m bench.memory                  # 500 reruns: 10 students one after another, 50 reruns each
    python -m bench.memory --reruns 1000
    python -m bench.memory --cycle          # 1, then 30 sessions cycling every view at the largest settings, 3 min
    python -m bench.memory --cycle --against 49a21bd   # the same rows for that commit's app first: before/after

Community Cloud gives an app 690 MB to 2.7 GB. What can grow without bound in this app:
the caches (bounded only if every one is bounded by bytes, ``dashboard.compute.bounded_cache``,
or holds one value: checked here by reading dashboard/, and printed), per-session state (sessions
come and go: students leave, so the run uses a new session every 50 reruns), and
whatever Streamlit keeps per message. Each rerun changes one control (as a browser
does) over every control and every view, from one token to 64, d_model 8 to 512,
1 to 16 heads, so the caches fill to their bounds well before the end; after that
the curve must be flat.

The RSS of the server process (and any children) is read after each rerun; every
50th is printed. Level means: the mean of the last quarter of the run exceeds the mean
of the second quarter (caches already full) by less than ``LEVEL_MB``.

``--cycle`` is the heavy user instead (issue 32): on a fresh server, after one short
session has opened every view with both weights (the libraries imported, MiniLM loaded:
the level before the run), each session opens the largest settings (64 tokens, d_model
512, 16 heads, every weight written, batch 8, shift 1000, a 62-word source, blocks of 1
key) and changes views one after another, every view with random weights and with
MiniLM, then types a new sentence and seed and goes round again, for ``--seconds``. The
heads view's maps are checked against core's on every visit. Then every tab closes, and
the RSS ``--after`` seconds later is compared with the level before. Targets: peak at most
``CYCLE_PEAK_MB`` (Community Cloud's smallest allowance), and back within
``CYCLE_BACK_MB`` of the level before the run.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.expected import check_page
from bench.measure import PeakRss
from bench.protocol import Tab
from bench.streamlit_server import ROOT, streamlit_server
from dashboard.state.settings import D_MODELS, MAX_SEED, head_options

LEVEL_MB = 15.0
"""Allowed growth from the second to the last quarter of the run, compared as means: single reruns at the
largest settings swing RSS by tens of MB (their figure JSON is megabytes) and fall back; a leak grows steadily."""
TARGET_RSS_MB = 600.0
EVERY = 50
_WORDS = "the a bank river loan money boat fish cat dog sat mat book reads attention head key value"
WORDS = _WORDS.split()
VIEWS = ("heads", "tokens", "shapes", "permutation")
CYCLE_PEAK_MB = 690.0
"""Community Cloud's smallest memory allowance for an app."""
CYCLE_BACK_MB = 50.0
"""How far above its level before the run the server may stay once the class has left."""
CYCLE_WEIGHTS = ("random", "minilm")
CYCLE_WORDS = 62
"""Words per sentence: every one a single WordPiece piece, so MiniLM reads 64 with [CLS] and [SEP], the cap."""


CACHE_DECORATORS = ("cache_data", "cache_resource", "lru_cache", "cache")
"""Decorators that keep a function's values: Streamlit's, functools' and ``dashboard.compute.bounded_cache.cache``."""


@dataclass(frozen=True)
class CacheBound:
    """One cached function in dashboard/ and what bounds it, as its source declares it."""

    file: str
    function: str
    decorator: str
    max_bytes: int | None
    """``bounded_cache.cache``'s ``max_bytes``; None for any other decorator."""
    max_entries: int | None
    arguments: int
    """The function's parameters: none means one value per process (a singleton)."""

    @property
    def bounded(self) -> bool:
        """By bytes, or a singleton: a function of no arguments has one key, so any cache keeps one value of it
        (bounded by what it is)."""
        return self.max_bytes is not None or self.arguments == 0

    def __str__(self) -> str:
        if self.max_bytes is not None:
            bound = f"max_bytes={self.max_bytes / 2**20:g} MB"
        elif self.bounded:
            bound = "one value"
        else:
            bound = f"UNBOUNDED by bytes ({self.decorator}, max_entries={self.max_entries})"
        return f"{self.file}:{self.function}  {bound}"


def _megabytes(expr: ast.expr) -> int:
    """A ``max_bytes`` as the source writes it (``64 * MB``, or a number of bytes), in bytes."""
    if isinstance(expr, ast.Name) and expr.id == "MB":
        return 2**20
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _megabytes(expr.left) * _megabytes(expr.right)
    return int(ast.literal_eval(expr))


def cache_bounds(root: Path = ROOT / "dashboard") -> list[CacheBound]:
    """Every function in ``root`` with a caching decorator (``CACHE_DECORATORS``), read from the source."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for dec in getattr(node, "decorator_list", []):
                name = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
                if name.split(".")[-1] not in CACHE_DECORATORS:
                    continue
                kw = {k.arg: k.value for k in dec.keywords} if isinstance(dec, ast.Call) else {}
                byte_bound = name.endswith("bounded_cache.cache") and "max_bytes" in kw
                max_bytes = _megabytes(kw["max_bytes"]) if byte_bound else None
                entries = ast.literal_eval(kw["max_entries"]) if "max_entries" in kw else None
                n_args = len(node.args.args) + len(node.args.kwonlyargs)
                file = str(path.relative_to(root.parent))
                found.append(CacheBound(file, node.name, name, max_bytes, entries, n_args))
    return found


def varied(rng: random.Random, values: dict) -> dict:
    """One control per rerun, as in a browser: a sentence of 1 to 64 tokens, width, heads, mask, positions,
    seed or view. The caches see hundreds of different keys."""
    what = rng.choice(["sentence", "sentence", "d_model", "n_heads", "causal", "positional", "seed", "view"])
    if what == "sentence":
        return {"sentence": " ".join(rng.choice(WORDS) for _ in range(rng.choice([1, 2, 8, 16, 32, 64])))}
    if what == "d_model":
        return {"d_model": rng.choice(D_MODELS)}
    if what == "n_heads":
        return {"n_heads": rng.choice(head_options(int(values["d_model"]), str(values["positional"])))}
    if what == "causal":
        return {"causal": not values["causal"]}
    if what == "positional":
        return {"positional": rng.choice(["none", "sinusoidal", "learned"])}
    if what == "seed":
        return {"seed": rng.randrange(MAX_SEED)}
    return {"view": rng.choice(VIEWS)}


async def reruns(url: str, n: int, per_session: int, rss: PeakRss, seed: int) -> list[float]:
    """RSS in MB after each of ``n`` reruns, ``per_session`` reruns per session."""
    rng = random.Random(seed)
    curve: list[float] = []
    while len(curve) < n:
        async with Tab(url, timeout=120) as tab:
            await tab.open({})
            for _ in range(min(per_session, n - len(curve))):
                page = await tab.change(**varied(rng, tab.values))
                if tab.values["view"] == "heads":
                    check_page(page, tab.values)
                elif page.of("exception"):
                    raise AssertionError(f"exception on the {tab.values['view']} view")
                curve.append(rss.now() / 2**20)
    return curve


def largest(rng: random.Random) -> dict[str, str]:
    """The link a heavy user opens: the largest settings of every control that makes a view's arrays larger."""
    return {
        "sentence": cycle_sentence(rng),
        "d_model": "512",
        "n_heads": "16",
        "seed": str(rng.randrange(MAX_SEED)),
        "values": "true",  # heads: every weight written in its cell
        "batch": "8",  # shapes
        "shift": "1000",  # positions
        "source": cycle_sentence(rng),  # cross: 62 words of keys and values
        "block_size": "1",  # flash: one key per block, 64 tiles
        "view": "heads",
    }


def cycle_sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(CYCLE_WORDS))


@dataclass
class Cycler:
    """One heavy user's record."""

    index: int
    views: int = 0
    """View changes whose run finished (every view with both weights per round)."""
    error: str | None = None


async def cycle(url: str, user: Cycler, deadline: float, seed: int) -> None:
    """Every view with each of ``CYCLE_WEIGHTS`` at the largest settings, then a new sentence and seed, until
    ``deadline``; the heads view checked against core on every visit. A failure ends this user's run."""
    from dashboard.views import VIEWS as ALL_VIEWS  # here: importing the views builds caches, which logs

    rng = random.Random(seed * 10_000 + user.index)
    try:
        async with Tab(url, timeout=180, deflate=False) as tab:
            await tab.open(largest(rng))
            while time.monotonic() < deadline:
                for weights in CYCLE_WEIGHTS:
                    if tab.values.get("weights") != weights:
                        await tab.change(weights=weights)
                    for key, value in (("d_model", 512), ("n_heads", 16)):  # MiniLM fixed its own
                        if key in tab.page.widgets() and str(tab.values.get(key)) != str(value):
                            await tab.change(**{key: value})
                    for view in ALL_VIEWS:
                        if time.monotonic() >= deadline:
                            return
                        page = await tab.change(view=view)
                        if view == "heads":
                            check_page(page, tab.values)
                        elif not page.finished or page.of("exception"):
                            raise AssertionError(f"the {view} view with {weights} weights did not finish cleanly")
                        user.views += 1
                await tab.change(sentence=cycle_sentence(rng))
                if "seed" in tab.page.widgets():
                    await tab.change(seed=rng.randrange(MAX_SEED))
    except Exception as err:  # this user fails; the others go on
        user.error = f"{type(err).__name__}: {err}"[:300]


async def warm_up(url: str) -> None:
    """One short session opens every view with each weights kind at the defaults: what any first visitors do."""
    from dashboard.views import VIEWS as ALL_VIEWS

    async with Tab(url, timeout=180, deflate=False) as tab:
        await tab.open({})
        for weights in CYCLE_WEIGHTS:
            await tab.change(weights=weights)
            for view in ALL_VIEWS:
                await tab.change(view=view)


@dataclass
class CycleRow:
    sessions: int
    seconds: float
    after_seconds: float
    before_mb: float
    peak_mb: float
    after_mb: float
    curve: list[tuple[float, float]]
    """(seconds since the start, largest RSS in MB in the 30 s up to then), over the run and after it."""
    users: list[Cycler]

    @property
    def ok(self) -> bool:
        return (
            self.peak_mb <= CYCLE_PEAK_MB
            and self.after_mb - self.before_mb <= CYCLE_BACK_MB
            and not any(u.error for u in self.users)
        )

    def line(self) -> str:
        failed = sum(bool(u.error) for u in self.users)
        views, back = sum(u.views for u in self.users), self.after_mb - self.before_mb
        return (
            f"{self.sessions:>8}  {self.seconds:>5.0f} s  {views:>5}  {failed:>6}  "
            f"{self.before_mb:>9.0f}  {self.peak_mb:>7.0f}  {self.after_mb:>12.0f}  {back:>+14.0f}"
        )


CYCLE_HEADER = (
    "sessions   cycling  views  failed  before MB  peak MB  after MB (*)  after - before\n"
    "(*) RSS --after seconds after every tab closed"
)


def cycle_row(sessions: int, seconds: float, after: float, seed: int, root: Path = ROOT) -> CycleRow:
    """``sessions`` heavy users for ``seconds`` on a fresh server of the app in ``root``; RSS before, at the peak
    and ``after`` s later."""
    with streamlit_server(root=root) as (url, proc), PeakRss(proc.pid) as rss:
        asyncio.run(warm_up(url))
        time.sleep(5)  # the warm-up's tab has closed; its runs have ended
        before = rss.now() / 2**20
        first = len(rss.samples)
        users = [Cycler(i) for i in range(sessions)]

        async def crowd() -> None:
            deadline = time.monotonic() + seconds
            await asyncio.gather(*(cycle(url, u, deadline, seed) for u in users))

        asyncio.run(crowd())  # every tab is closed when this returns
        time.sleep(after)
        after_mb = rss.now() / 2**20
        samples = rss.samples[first:]
    period = rss.period
    curve = [
        (min(len(samples), i + 120) * period, max(samples[i : i + 120]) / 2**20) for i in range(0, len(samples), 120)
    ]
    return CycleRow(sessions, seconds, after, before, max(samples) / 2**20, after_mb, curve, users)


def cycle_rows(args: argparse.Namespace, root: Path, name: str) -> list[CycleRow]:
    rows = []
    for n in args.sessions:
        row = cycle_row(n, args.seconds, args.after, args.seed, root)
        rows.append(row)
        print(f"{name}, {n} session(s): largest RSS in MB per 30 s (the tabs close at {args.seconds:.0f} s):")
        print("  " + "  ".join(f"{t:.0f}s {mb:.0f}" for t, mb in row.curve), flush=True)
        for u in row.users:
            if u.error:
                print(f"  session {u.index}: {u.error}")
    return rows


def cycle_main(args: argparse.Namespace) -> int:
    old: list[CycleRow] = []
    if args.against:
        from bench.follower import checkout

        with tempfile.TemporaryDirectory(prefix="memory-ref-") as into:
            old = cycle_rows(args, checkout(args.against, into), args.against)
    rows = cycle_rows(args, ROOT, "this checkout")
    print(CYCLE_HEADER.replace("--after seconds", f"{args.after:.0f} s"))
    for row in old:
        print(f"{row.line()}  [{args.against}]")
    for row in rows:
        print(row.line())
    ok = all(row.ok for row in rows)
    print(
        f"memory: {'within' if ok else 'NOT within'} the targets (peak <= {CYCLE_PEAK_MB:.0f} MB, back within "
        f"{CYCLE_BACK_MB:.0f} MB of the level before, no failed session)"
    )
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reruns", type=int, default=500)
    ap.add_argument("--per-session", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cycle", action="store_true", help="heavy users cycling every view at the largest settings")
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 30], help="--cycle: one row per count")
    ap.add_argument("--seconds", type=float, default=180.0, help="--cycle: how long the sessions cycle")
    ap.add_argument("--after", type=float, default=60.0, help="--cycle: RSS this long after the tabs close")
    ap.add_argument("--against", metavar="REF", help="--cycle: first the same rows for REF's app (git archive)")
    args = ap.parse_args()
    if args.cycle:
        if not all(1 <= n <= 60 for n in args.sessions) or not 10 <= args.seconds <= 600 or not 0 <= args.after <= 600:
            ap.error("--sessions 1..60, --seconds 10..600, --after 0..600")
        return cycle_main(args)
    if not 100 <= args.reruns <= 5000:
        ap.error("--reruns must be 100..5000")

    bounds = cache_bounds()
    print("cached functions in dashboard/:")
    for bound in bounds:
        print(f"  {bound}")
    unbounded = [b.function for b in bounds if not b.bounded]

    with streamlit_server() as (url, proc), PeakRss(proc.pid) as rss:
        idle = rss.now() / 2**20
        curve = asyncio.run(reruns(url, args.reruns, args.per_session, rss, args.seed))
    print(f"server RSS in MB after N reruns (idle before: {idle:.0f} MB); median and max of the last {EVERY}:")
    for i in range(EVERY - 1, len(curve), EVERY):
        block = curve[i + 1 - EVERY : i + 1]
        print(f"  {i + 1:5d}  {curve[i]:6.0f}   median {statistics.median(block):6.0f}   max {max(block):6.0f}")
    q = len(curve) // 4
    growth = statistics.fmean(curve[3 * q :]) - statistics.fmean(curve[q : 2 * q])
    peak = rss.peak / 2**20
    print(
        f"mean of the last quarter - mean of the second quarter: {growth:+.1f} MB (level if < {LEVEL_MB:.0f}); "
        f"peak {peak:.0f} MB"
    )
    level = growth < LEVEL_MB
    ok = level and not unbounded and peak <= TARGET_RSS_MB
    print(
        "memory:",
        "level and bounded" if ok else "NOT OK",
        f"({'no unbounded cache' if not unbounded else 'unbounded: ' + ', '.join(unbounded)})",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
