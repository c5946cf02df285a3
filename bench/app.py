"""How fast the dashboard answers a teacher, against its targets.

    python -m bench.app             # about a minute on 2 shared cores
    python -m bench.app --profile   # also: where a rerun at the largest settings spends its time
    python -m bench.app --views kv_cache,flash   # only these views' rows and the new views' own controls

(a) Server side, with AppTest (the real script, the real Streamlit runtime, no
    browser): the median wall time of one full rerun at the defaults, after
    changing each control, and at the largest settings. "cold" clears
    ``dashboard.compute.computations``'s caches before every rerun, so the engine runs as it does the first
    time a setting is chosen: that is the number held against the target.
    "warm" alternates between two settings already cached (figures and page only).
(b) The Plotly figure JSON the browser receives (sum over the charts on the page).
(c) In headless Chromium: from the click on a head-count button to the new
    heatmaps being in the DOM, timed inside the page (``performance.now()``).
(d) Streamlit's message caching, on (its default) and off (.streamlit/config.toml),
    side by side: the same clicks from a protocol tab that caches as the browser
    does, against two servers, alternately. Bytes each rerun sends, rerun time.
(e) First load, in a fresh Chromium context (empty HTTP cache) on a warm server:
    from the browser's request for the page to the first chart's message arriving
    on the websocket (Chrome DevTools Protocol timestamps; over loopback, sent =
    received), and to the first heatmap drawn. The bytes the browser downloaded
    offering gzip only (a phone over plain HTTP: ``bench.page_assets.GZIP_ONLY``), and
    once the server's brotli is ready, offering brotli too (HTTPS, localhost), a second
    visit (the assets are cached "immutable" for a year), and one load on a cold server.

    python -m bench.app --first-load   # (e) alone
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from streamlit.testing.v1 import AppTest

from bench.page_assets import BROWSER, GZIP_ONLY, wait_compressed
from bench.protocol import Tab
from bench.streamlit_server import (
    APP_IDLE,
    HEADS_CHART,
    PAGE,
    ROOT,
    chromium,
    finished_runs,
    heatmap_count,
    streamlit_server,
    wait_heatmaps,
    wait_idle,
    watch_runs,
)
from core import MAX_TOKENS, tokenize
from dashboard.state.settings import D_MODELS, DEFAULTS, MAX_HEADS

FIRST_CHART_S = 1.0
FIRST_HEATMAP_S = 3.0
FIRST_LOADS = 5
RERUN_DEFAULT_S = 0.150
RERUN_LARGEST_S = 0.400
DRAWN_S = 1.0
PAYLOAD_BYTES = 2_000_000
REPEATS = 7
BROWSER_REPEATS = 5

# One other value per control: each timed rerun flips the control between its default and this.
OTHER = {
    "sentence": "the dog bites the man",
    "d_model": 128,
    "n_heads": 8,
    "causal": True,
    "positional": "sinusoidal",
    "seed": DEFAULTS.config.seed + 1,
    "weights": "identity",
    "scaled": not DEFAULTS.config.scaled,
    "presenter": not DEFAULTS.presenter,
}


def largest_sentence() -> str:
    """MAX_TOKENS distinct words: the longest sentence the app accepts, with no repeated row to cache."""
    text = " ".join(f"word{i}" for i in range(MAX_TOKENS))
    assert len(tokenize(text)) == MAX_TOKENS
    return text


LARGEST = {
    "sentence": largest_sentence(),
    "d_model": max(D_MODELS),
    "n_heads": MAX_HEADS,
    "causal": True,  # adds one masked-cell overlay per head: the biggest figure
    "positional": "learned",
}


@dataclass(frozen=True)
class Row:
    name: str
    value: float
    target: float
    unit: str
    note: str = ""

    def line(self) -> str:
        verdict = "PASS" if self.value <= self.target else "FAIL"
        if self.unit == "ms":
            shown, goal = f"{self.value * 1000:.1f} ms", f"<= {self.target * 1000:.0f} ms"
        else:
            shown, goal = f"{self.value:,.0f} B", f"<= {self.target:,.0f} B"
        return f"  {self.name:<52}{shown:>13}  {goal:<16}{verdict}  {self.note}"


# ---------------------------------------------------------------- (a) and (b): AppTest


def new_app(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def run_once(at: AppTest, cold: bool, cpu: list[float] | None = None) -> float:
    """Wall seconds for one full rerun, the cache cleared first when ``cold``; CPU seconds appended to ``cpu``.

    CPU time (all threads of this process: AppTest runs the script in its own) is
    what the rerun costs; wall time is what the teacher waits, and on a shared
    machine it also contains the other processes' turns.
    """
    if cold:  # every cached computation; the loaded model and the training registry stay, as on a server
        from dashboard.compute import (  # here: importing them builds caches, which logs outside a run
            bounded_cache,
            computations,
        )

        for cached in vars(computations).values():  # the computations (the code shown and the tours stay read)
            if isinstance(getattr(cached, "cache", None), bounded_cache.BoundedCache):
                cached.clear()
    start, start_cpu = time.perf_counter(), time.process_time()
    at.run()
    elapsed = time.perf_counter() - start
    if cpu is not None:
        cpu.append(time.process_time() - start_cpu)
    if at.exception:
        raise RuntimeError(f"the app raised: {[e.message for e in at.exception]}")
    return elapsed


def set_all(at: AppTest, values: dict) -> None:
    """Set widgets in sidebar order (d_model before n_heads, which depends on it), one rerun each."""
    for key in ("sentence", "positional", "weights", "d_model", "n_heads", "causal", "scaled", "seed", "view"):
        if key in values:
            at.get_by_key(key).set_value(values[key])
            at.run()


def flip_medians(at: AppTest, key: str, values: tuple) -> tuple[float, str]:
    """Median cold rerun seconds when ``key`` alternates between ``values``, and a note with CPU and warm medians.

    Ends on ``values[1]``, so the next control starts from where this one was found.
    """
    cold, cold_cpu, warm = [], [], []
    for i in range(REPEATS):
        at.get_by_key(key).set_value(values[i % 2])
        cold.append(run_once(at, True, cold_cpu))
    for i in range(REPEATS + 2):
        at.get_by_key(key).set_value(values[i % 2])
        warm.append(run_once(at, False))
    warm = warm[2:]  # both values are cached from here on
    at.get_by_key(key).set_value(values[1])
    at.run()
    median = statistics.median
    return median(cold), f"cpu {median(cold_cpu) * 1000:.1f} ms, warm {median(warm) * 1000:.1f} ms"


def payload(at: AppTest) -> int:
    """Bytes of Plotly figure JSON on the page (every chart the browser must parse and draw)."""
    return sum(len(chart.proto.spec.encode()) for chart in at.get("plotly_chart"))


LARGEST_QUERY = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in LARGEST.items()}
VIEW_CONTROLS = (
    # (view, extra settings, the view's own control, its two values): the slowest move of each new view
    ("kv_cache", {}, "cache_step", (1, MAX_TOKENS)),  # the first step and the last: 64 decoding steps each time
    ("kv_cache", {"kv_heads": "4", "window": "16", "alibi": "true"}, "cache_step", (1, MAX_TOKENS)),
    ("flash", {}, "block_size", (1, MAX_TOKENS)),  # 64 blocks of one key, then one block of all
    ("flash", {}, "flash_head", (1, MAX_HEADS)),
    ("flash", {"kv_heads": "4", "window": "16", "alibi": "true"}, "block_size", (1, MAX_TOKENS)),
)


def view_control_rows() -> list[Row]:
    """The kv_cache and flash views at the largest settings: a cold rerun after moving the view's own control."""
    rows = []
    for view, extra, key, values in VIEW_CONTROLS:
        at = new_app(**LARGEST_QUERY, view=view, **extra)
        at.run()
        cold, note = flip_medians(at, key, values)
        more = "".join(f", {k}={v}" for k, v in extra.items())
        rows.append(Row(f"{view}{more}: {key} {values[0]}<->{values[1]} (cold)", cold, RERUN_LARGEST_S, "ms", note))
    return rows


def largest_view_rows(views) -> list[Row]:
    """Per view: a cold rerun at the largest settings (the seed flipped), and its figure JSON."""
    rows = []
    for view in views:
        at = new_app()
        at.run()
        set_all(at, LARGEST | {"view": view})
        cold, note = flip_medians(at, "seed", (DEFAULTS.config.seed, DEFAULTS.config.seed + 1))
        name = f"largest settings, {view} view"
        rows.append(Row(f"rerun at {name} (cold)", cold, RERUN_LARGEST_S, "ms", note))
        if at.get("plotly_chart"):
            rows.append(Row(f"figure JSON at {name}", payload(at), PAYLOAD_BYTES, "B"))
    return rows


def largest_info() -> str:
    largest = ", ".join(f"{k}={v}" for k, v in LARGEST.items() if k != "sentence")
    return f"largest settings: {MAX_TOKENS} tokens, {largest}"


def server_side() -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    info: list[str] = []
    at = new_app()
    at.run()  # imports, first compile: not what a teacher waits for on a change
    run_once(at, cold=False)

    defaults = {key: getattr(DEFAULTS.config if hasattr(DEFAULTS.config, key) else DEFAULTS, key) for key in OTHER}
    cold, note = flip_medians(at, "seed", (DEFAULTS.config.seed, DEFAULTS.config.seed))  # no change: a plain rerun
    rows.append(Row("rerun at the defaults (cold)", cold, RERUN_DEFAULT_S, "ms", note))
    rows.append(Row("figure JSON at the defaults", payload(at), PAYLOAD_BYTES, "B"))
    for key, other in OTHER.items():
        cold, note = flip_medians(at, key, (other, defaults[key]))
        rows.append(Row(f"rerun after changing {key} (cold)", cold, RERUN_DEFAULT_S, "ms", note))

    from dashboard.views import VIEWS  # here, not at the top: importing it builds caches, which logs outside a run

    rows += largest_view_rows(VIEWS)  # every view: a teacher may be on any of them when changing a setting
    rows += view_control_rows()
    rows += pretrained_rows()
    info.insert(0, largest_info())
    info.insert(
        1, f"pretrained: weights=minilm, {MAX_TOKENS} WordPiece pieces with [CLS] and [SEP], 6 layers x 12 heads"
    )
    return rows, info


def pretrained_sentence() -> str:
    """A sentence MiniLM splits into exactly MAX_TOKENS pieces, [CLS] and [SEP] included (no repeated row)."""
    from core.pretrained import load_minilm

    model = load_minilm()
    words = [w for w in model.tokenizer.vocab if w.isalpha() and w.isascii() and len(w) > 3][: MAX_TOKENS - 2]
    text = " ".join(words)
    assert len(model.encode(text).ids) == MAX_TOKENS
    return text


PRETRAINED_VIEWS = ("heads", "model", "steps", "summary", "permutation", "shapes", "tokens")
"""The views that read the pretrained model's own numbers (the others say they need random weights)."""


def pretrained_rows() -> list[Row]:
    """Reruns on the pretrained model at the token cap, cold = the forward pass recomputed (the model stays loaded).

    Each flip changes the layer shown, so every measured rerun draws different heads.
    """
    rows = []
    sentence = pretrained_sentence()
    for view in PRETRAINED_VIEWS:
        at = new_app(weights="minilm", view=view, sentence=sentence)
        at.run()  # loads the model once per process (st.cache_resource), as a server does at its first visit
        cold, note = flip_medians(at, "layer", (1, 2))
        rows.append(
            Row(f"rerun on minilm at {MAX_TOKENS} pieces, {view} view (cold)", cold, RERUN_LARGEST_S, "ms", note)
        )
        if at.get("plotly_chart"):
            rows.append(Row(f"figure JSON on minilm, {view} view", payload(at), PAYLOAD_BYTES, "B"))
    return rows


def breakdown() -> list[str]:
    """Where a cold rerun at the largest settings goes, stage by stage, outside Streamlit.

    AppTest runs the script in its own thread, so a profiler on this thread sees
    nothing; the stages are timed directly instead (median of REPEATS each).
    Plotly serialises with orjson when it is importable and with the standard
    ``json`` module otherwise: requirements.txt decides which one a deployment gets.
    """
    import plotly.graph_objects as go
    import plotly.io as pio

    from core import AttentionConfig, run
    from dashboard.figures import heads_figure

    def median_s(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    tokens = tokenize(LARGEST["sentence"])
    config = AttentionConfig(**{k: v for k, v in LARGEST.items() if k != "sentence"}, seed=DEFAULTS.config.seed)
    result = run(tokens, config)
    w, mask = result.trace.weights, result.trace.mask
    fig = heads_figure(w, tokens, mask)
    stages = {
        "core.run (embed, positions, attention)": lambda: run(tokens, config),
        "heads_figure (pure builder)": lambda: heads_figure(w, tokens, mask),
        "plotly.tools.return_figure_from_figure_or_data (validate)": lambda: go.Figure(fig),
        "plotly.io.to_json, engine json": lambda: pio.to_json(fig, validate=False, engine="json"),
    }
    try:
        import orjson  # noqa: F401 - only whether it is there

        stages["plotly.io.to_json, engine orjson"] = lambda: pio.to_json(fig, validate=False, engine="orjson")
    except ImportError:
        pass
    lines = [f"stages of one cold rerun at the largest settings (heads view), median of {REPEATS}:"]
    lines += [f"    {name:<62}{median_s(fn) * 1000:8.1f} ms" for name, fn in stages.items()]
    for threads in ("1", None):
        name = f"core.run, fresh process, OPENBLAS_NUM_THREADS={threads or 'unset (one per core)'}"
        lines.append(f"    {name:<62}{core_run_in_subprocess(threads) * 1000:8.1f} ms")
    return lines


_CORE_RUN = """
import statistics, sys, time
from core import AttentionConfig, run, tokenize
tokens, config = tokenize(sys.argv[1]), AttentionConfig(**eval(sys.argv[2]))
run(tokens, config)
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter(); run(tokens, config); times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def core_run_in_subprocess(blas_threads: str | None) -> float:
    """Median seconds of ``core.run`` at the largest settings in a new process with its own BLAS thread count.

    The count is fixed when NumPy loads OpenBLAS, so it takes a fresh process to change it.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if blas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = blas_threads
    config = {k: v for k, v in LARGEST.items() if k != "sentence"} | {"seed": DEFAULTS.config.seed}
    args = [sys.executable, "-c", _CORE_RUN, LARGEST["sentence"], repr(config), str(REPEATS * 2)]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


# ---------------------------------------------------------------- (c): a real browser

# Stamps the time of the first click after it is installed; the wait below stamps "drawn".
_STAMP_CLICK = """() => {
    window.__alClick = null;
    const stamp = () => { window.__alClick ??= performance.now(); };
    document.addEventListener('click', stamp, {capture: true, once: true});
}"""


def click_to_drawn(page, heads: int) -> float:
    """Seconds from a click on the ``heads`` button to ``heads`` weight heatmaps drawn, timed in the page."""
    page.evaluate(_STAMP_CLICK)
    runs = finished_runs(page)
    page.locator(".st-key-n_heads").get_by_role("radio", name=str(heads), exact=True).click()
    wait_heatmaps(page, heads)
    drawn = page.evaluate("() => performance.now()")
    elapsed = (drawn - page.evaluate("() => window.__alClick")) / 1000
    while finished_runs(page) == runs:  # let the script finish before the next click
        page.wait_for_timeout(20)
    wait_idle(page)
    return elapsed


def browser_side() -> tuple[list[Row], list[str]]:
    """Median click-to-drawn time: cold (a seed never computed in this server) and warm (cached)."""
    cold, warm = [], []
    with streamlit_server() as (url, _proc), chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = watch_runs(context.new_page())
        page.set_default_timeout(60_000)
        for i in range(BROWSER_REPEATS + 1):
            page.goto(f"{url}/?seed={1000 + i}&n_heads={DEFAULTS.config.n_heads}")
            wait_idle(page)
            wait_heatmaps(page, DEFAULTS.config.n_heads)
            times = [click_to_drawn(page, OTHER["n_heads"]), click_to_drawn(page, DEFAULTS.config.n_heads)]
            if i > 0:  # the first page load also loads plotly.js: not a teacher's change
                cold.append(times[0])
                warm.append(times[1])
        n = DEFAULTS.config.n_heads
        assert heatmap_count(page) == n and page.locator(HEADS_CHART).count() == n  # one chart per head
        context.close()
    note = f"warm {statistics.median(warm) * 1000:.0f} ms; cold runs {', '.join(f'{t * 1000:.0f}' for t in cold)} ms"
    rows = [
        Row(
            f"click {DEFAULTS.config.n_heads}->{OTHER['n_heads']} heads to drawn (cold)",
            statistics.median(cold),
            DRAWN_S,
            "ms",
            note,
        )
    ]
    return rows, []


# ---------------------------------------------------------------- (d): message caching on and off

STREAMLIT_CACHING = ("--global.minCachedMessageSize", "10000")  # Streamlit's default, over our config.toml
# A student's clicks: head counts and views, with returns to what was on screen a few runs before.
CLICKS = [{"n_heads": 8}, {"n_heads": 4}, {"view": "steps"}, {"view": "heads"}, {"causal": True}, {"causal": False}]
CLICK_ROUNDS = 5


async def _click_through(urls: dict[str, str]) -> dict[str, list]:
    """The same CLICKS on every server, one click on each in turn (the order rotating), as cached pages."""
    tabs = {name: Tab(url, browser_cache=True) for name, url in urls.items()}
    pages: dict[str, list] = {name: [] for name in urls}
    names = list(urls)
    for tab in tabs.values():
        await tab.__aenter__()
    try:
        for tab in tabs.values():
            await tab.open({})
        for i, change in enumerate(CLICKS * CLICK_ROUNDS):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                pages[name].append(await tabs[name].change(**change))
    finally:
        for tab in tabs.values():
            await tab.__aexit__(None, None, None)
    return pages


def caching_cost() -> list[str]:
    """Bytes per rerun and rerun time with Streamlit's message caching (default) and without (our config)."""
    with streamlit_server() as (ours, _a), streamlit_server(extra_args=STREAMLIT_CACHING) as (default, _b):
        urls = {"caching off (.streamlit/config.toml)": ours, "caching on (Streamlit's default)": default}
        pages = asyncio.run(_click_through(urls))
    median = statistics.median
    lines = [f"message caching, {len(CLICKS) * CLICK_ROUNDS} clicks on each server ({', '.join(map(str, CLICKS))}):"]
    for name, runs in pages.items():
        sent = [p.received for p in runs]
        lines.append(
            f"    {name:<40}{median(sent):>9,.0f} B median, {statistics.fmean(sent):>9,.0f} B mean per rerun "
            f"({statistics.fmean(p.deflated for p in runs):,.0f} B deflated), "
            f"{sum(p.references for p in runs)} elements sent as references; "
            f"rerun {median(p.seconds for p in runs) * 1000:.0f} ms median"
        )
    off, on = (statistics.fmean(p.received for p in runs) for runs in pages.values())
    lines.append(f"    caching off sends {off / on:.2f}x the bytes per rerun ({off - on:,.0f} B more)")
    return lines


# ---------------------------------------------------------------- (e): first load


class NetworkLog:
    """What a page downloads, from the Chrome DevTools Protocol: HTTP bytes per URL, websocket frames, times.

    Timestamps are CDP's (seconds on one monotonic clock): ``start`` is the request for
    the page, ``websocket`` the websocket's handshake, ``first_chart`` the first
    ``plotly_chart`` element's message arriving.
    """

    def __init__(self, context, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._forward_msg = ForwardMsg
        self.urls: dict[str, str] = {}
        self.bytes: dict[str, int] = {}
        self.ws_bytes = 0
        self.repeat_bytes = 0
        """Set by ``_load``: what a reload in the same context downloaded (HTTP and websocket)."""
        self.start = self.websocket = self.first_chart = None
        self._cdp = cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.on("Network.requestWillBeSent", self._request)
        cdp.on("Network.loadingFinished", lambda e: self.bytes.__setitem__(e["requestId"], e["encodedDataLength"]))
        cdp.on("Network.webSocketWillSendHandshakeRequest", self._handshake)
        cdp.on("Network.webSocketFrameReceived", self._frame)

    def stop(self) -> None:
        """Stop listening: what the page loads from here on is not this log's."""
        self._cdp.detach()

    def _request(self, e: dict) -> None:
        self.urls[e["requestId"]] = e["request"]["url"]
        if e["type"] == "Document" and self.start is None:
            self.start = e["timestamp"]

    def _handshake(self, e: dict) -> None:
        self.websocket = self.websocket or e["timestamp"]

    def _frame(self, e: dict) -> None:
        if e["response"]["opcode"] != 2:  # Streamlit's messages are binary frames
            return
        data = base64.b64decode(e["response"]["payloadData"])
        self.ws_bytes += len(data)
        if self.first_chart is None:
            msg = self._forward_msg()
            msg.ParseFromString(data)
            if msg.WhichOneof("type") == "delta" and msg.delta.new_element.WhichOneof("type") == "plotly_chart":
                self.first_chart = e["timestamp"]

    def http_bytes(self) -> int:
        return sum(self.bytes.values())

    def by_kind(self) -> Counter:
        kinds: Counter = Counter()
        for rid, n in self.bytes.items():
            url = self.urls.get(rid, "")
            kind = next((k for k in ("js", "css", "woff2", "ttf") if url.split("?")[0].endswith("." + k)), "other")
            kinds["fonts" if kind in ("woff2", "ttf") else kind] += n
        return kinds


def _load(browser, url: str, n_heads: int, accept: str = GZIP_ONLY) -> tuple[NetworkLog, float]:
    """One first visit in a fresh context (empty cache) offering the encodings ``accept``: the network log and
    seconds to the heatmaps drawn."""
    context = browser.new_context(
        viewport={"width": 1400, "height": 1000}, extra_http_headers={"Accept-Encoding": accept}
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    log = NetworkLog(context, page)
    page.goto(url)
    wait_heatmaps(page, n_heads)
    drawn = page.evaluate("() => performance.now()") / 1000  # since the navigation started
    page.wait_for_selector(APP_IDLE)
    page.wait_for_timeout(500)  # late requests (icons, fonts) land in the log
    log.stop()
    repeat = NetworkLog(context, page)
    page.reload()
    wait_heatmaps(page, n_heads)
    page.wait_for_timeout(500)
    log.repeat_bytes = repeat.http_bytes() + repeat.ws_bytes
    context.close()
    return log, drawn


def first_load() -> tuple[list[Row], list[str]]:
    """First visits in fresh browser contexts: one on a cold server, then FIRST_LOADS on the warm server."""
    n = DEFAULTS.config.n_heads
    to_chart, to_drawn, page_start, info = [], [], [], []
    with streamlit_server() as (url, _proc), chromium() as browser:
        cold, cold_drawn = _load(browser, url, n)  # the server's first session: imports, caches, first compile
        for _ in range(FIRST_LOADS):
            log, drawn = _load(browser, url, n)
            to_chart.append(log.first_chart - log.start)
            to_drawn.append(drawn)
            page_start.append(log.websocket - log.start)
        static = [log.urls[rid].removeprefix(url).lstrip("/") for rid in log.bytes if "/static/" in log.urls[rid]]
        waited = wait_compressed(url, static)
        brotli, _ = _load(browser, url, n, accept=BROWSER)
    median = statistics.median
    kinds = log.by_kind()
    total = log.http_bytes() + log.ws_bytes
    info.append(
        f"first load, warm server: page to websocket open {median(page_start):.2f} s (HTML, JS fetched and run), "
        f"websocket open to first chart {median(to_chart) - median(page_start):.2f} s; "
        f"cold server: first chart {cold.first_chart - cold.start:.2f} s, heatmaps drawn {cold_drawn:.2f} s"
    )
    info.append(
        f"first load offering {GZIP_ONLY!r} downloads {total:,} B: JS {kinds['js']:,}, CSS {kinds['css']:,}, "
        f"fonts {kinds['fonts']:,}, other HTTP {kinds['other']:,}, websocket payload {log.ws_bytes:,} (deflated on "
        f"the wire); {len(log.bytes)} HTTP requests"
    )
    ready = "the server compresses nothing" if waited is None else f"its brotli ready after {waited:.0f} s"
    info.append(
        f"    offering {BROWSER!r} ({ready}): HTTP {brotli.http_bytes():,} B against {log.http_bytes():,} B; "
        f"a second visit (reload, same browser) downloads {log.repeat_bytes:,} B"
    )
    rows = [
        Row("first load: request to first chart sent (warm server)", median(to_chart), FIRST_CHART_S, "ms",
            f"runs {', '.join(f'{t:.2f}' for t in to_chart)} s"),
        Row("first load: request to first heatmap drawn", median(to_drawn), FIRST_HEATMAP_S, "ms",
            f"runs {', '.join(f'{t:.2f}' for t in to_drawn)} s"),
    ]  # fmt: skip
    return rows, info


def main() -> int:
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        # dashboard/app.py sets one BLAS thread before NumPy loads, so the server computes with one.
        # AppTest runs the app in this process, where NumPy is loaded already: start again with the
        # same setting, or the AppTest numbers would time a BLAS set-up the server never uses.
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "bench.app", *sys.argv[1:]])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", action="store_true", help="time the stages of a rerun at the largest settings")
    parser.add_argument("--no-browser", action="store_true", help="skip (c), e.g. where chromium is missing")
    parser.add_argument("--first-load", action="store_true", help="(e) alone: a first visit's time and bytes")
    parser.add_argument(
        "--views",
        help="only the largest-settings rows of these views (comma-separated, e.g. kv_cache,flash) and the rows of "
        "the kv_cache and flash views' own controls; nothing else",
    )
    args = parser.parse_args()

    # Clearing caches from outside a script run logs "missing ScriptRunContext", and each cache
    # then logs "No runtime found" when it is rebuilt; the app's config resets log levels on
    # every AppTest run, so a filter on these two loggers silences them instead.
    for name in ("streamlit.runtime.caching.cache_data_api", "streamlit.runtime.scriptrunner_utils.script_run_context"):
        logging.getLogger(name).addFilter(lambda record: False)
    start = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    if args.first_load:
        rows, info = first_load()
    elif args.views:  # a quick look at some views: their rows only
        rows, info = largest_view_rows(args.views.split(",")) + view_control_rows(), [largest_info()]
    else:
        rows, info = server_side()
        if args.profile:
            info += breakdown()
        info += caching_cost()
        if not args.no_browser:
            more, _ = browser_side()
            rows += more
            more, lines = first_load()
            rows += more
            info += lines
    print(f"Attention Lab app benchmark: medians of {REPEATS} reruns (AppTest), {BROWSER_REPEATS} clicks (chromium)")
    blas = os.environ["OPENBLAS_NUM_THREADS"]  # as this process started: NumPy loaded with it
    print(
        f"machine: {os.cpu_count()} cores, load average {load_at_start:.1f} -> {os.getloadavg()[0]:.1f}, "
        f"OPENBLAS_NUM_THREADS={blas} (the timings move with the load of a shared machine)"
    )
    for line in info:
        print(line)
    for row in rows:
        print(row.line())
    failed = [row.name for row in rows if row.value > row.target]
    print(f"{len(rows) - len(failed)}/{len(rows)} PASS in {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
