"""What a browser with an empty cache downloads to show a room's page, read from what the server really serves.

A first visit fetches the page (``index.html``), then everything it names (the entry script, its module
preloads, the style sheet, the preloaded font, the icon), then the whole static import graph of those scripts
(an ES module's ``import ... from "./x.js"`` is fetched before it runs), then ``_stcore/health`` and
``_stcore/host-config``. Once the page's elements arrive over the websocket, the frontend loads each element's
component lazily: ``import(`./PlotlyChart.HASH.js`)`` with the chunks ``__vite__mapDeps`` lists for it (the
chart's is ~4.7 MB). A real chromium, captured on a room's student page (Streamlit 1.67), fetched 112 responses,
9.3 MB in all: ``tests/e2e/test_page_assets_in_browser.py`` checks that this module lists the same static files.

``AssetPlan.read(url)`` reads the served files once (the bench's own reading, before the storm); each student then
fetches ``plan.eager`` and, after its first page, ``plan.lazy_for(kinds)``, with ``fetch``: up to
``CONNECTIONS`` keep-alive HTTP/1.1 connections at a time, as a browser opens per host, the bytes counted and
thrown away (the client parses nothing, so it costs the server what a browser costs it, and the client little).
It offers the encodings a phone's chromium offers a plain-HTTP host (``GZIP_ONLY``), or with ``accept=BROWSER``
what chromium offers HTTPS and localhost (brotli too); the bytes counted are the bytes sent, compressed or not.

    python -m bench.page_assets                   # a student's first visit: bytes as they are, gzip only, brotli
    python -m bench.page_assets --against main    # the same for another commit's app, side by side
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

CONNECTIONS = 6
"""Connections a browser opens to one host at a time (HTTP/1.1)."""
GZIP_ONLY = "gzip, deflate"
"""The Accept-Encoding chromium sends a plain-HTTP host that is not localhost: a phone on the hall's Wi-Fi."""
BROWSER = "gzip, deflate, br, zstd"
"""The Accept-Encoding chromium sends over HTTPS and to localhost or 127.0.0.1 (Community Cloud is HTTPS)."""
IDENTITY = "identity"
"""A client that takes the files as they are."""
STCORE = ("_stcore/health", "_stcore/host-config")
"""What the frontend asks the server before it opens the websocket."""
ALIASES = {"code": "StreamlitSyntaxHighlighter"}
"""Element kinds whose lazy component is not named after the kind (``plotly_chart`` -> ``PlotlyChart``)."""
USED_FONTS = ("MaterialSymbols-Rounded",)
"""Fonts the page uses that the index does not preload (the icons): found in the served style and scripts."""

_NAMED = re.compile(r'(?:src|href)="\./([^"?#]+)"')
_STATIC_IMPORT = re.compile(r'(?:\bimport|\bfrom)\s*["\'`]\./([^"\'`]+\.js)["\'`]')
_LAZY = re.compile(r"\bimport\(\s*[\"'`]\./([^\"'`]+\.js)[\"'`]\s*\)")


def named_in_index(index: str) -> list[str]:
    """Every relative ``src``/``href`` in the served page (scripts, preloads, style, font, icon), as paths."""
    return list(dict.fromkeys(m for m in _NAMED.findall(index) if not m.startswith("_stcore/")))


def static_imports(script: str) -> list[str]:
    """The module names a script imports statically (``import "./x.js"``, ``... from "./x.js"``), not ``import()``."""
    return list(dict.fromkeys(_STATIC_IMPORT.findall(script)))


def lazy_imports(script: str) -> list[str]:
    """The module names a script loads on demand (``import("./x.js")``): the frontend's lazy components."""
    return list(dict.fromkeys(_LAZY.findall(script)))


def component_of(kind: str) -> str:
    """The frontend component an element kind (``ForwardMsg``'s ``Element`` field) is drawn by."""
    return ALIASES.get(kind) or "".join(part.capitalize() for part in kind.split("_"))


def _sibling(path: str, name: str) -> str:
    return f"{path.rsplit('/', 1)[0]}/{name}" if "/" in path else name


@dataclass
class AssetPlan:
    """The paths a first visit fetches before the websocket (``eager``) and the lazy components by name."""

    eager: list[str]
    lazy: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Component name -> paths of its chunk and the chunks it needs."""

    def lazy_for(self, kinds: set[str]) -> list[str]:
        """Paths the page's element kinds load lazily that the eager fetch did not already bring (the browser's
        memory cache keeps what one page load fetched)."""
        have = set(self.eager)
        paths = [p for k in sorted(kinds) for p in self.lazy.get(component_of(k), ()) if p not in have]
        return list(dict.fromkeys(paths))

    @classmethod
    def from_files(cls, index: str, read: Callable[[str], str]) -> AssetPlan:
        """The plan from the page's text and ``read(path) -> text`` of any served script or style sheet."""
        texts: dict[str, str] = {}

        def graph(roots: list[str]) -> list[str]:
            """``roots`` and every module they import statically, in the order a breadth-first walk meets them."""
            order, todo = [], list(roots)
            while todo:
                path = todo.pop(0)
                if path in order:
                    continue
                order.append(path)
                if path not in texts:
                    texts[path] = read(path)
                todo += [_sibling(path, m) for m in static_imports(texts[path])]
            return order

        named = named_in_index(index)
        scripts = graph([p for p in named if p.endswith(".js")])
        served = " ".join([*(texts[p] for p in scripts), *(read(p) for p in named if p.endswith(".css"))])
        used = [re.findall(rf"{re.escape(font)}[^\"'`)\s/]*\.woff2", served) for font in USED_FONTS]
        fonts = [f"static/media/{m}" for m in dict.fromkeys(m for found in used for m in found)]
        lazy = {
            chunk.split(".")[0]: tuple(graph([_sibling(path, chunk)]))
            for path in scripts
            for chunk in lazy_imports(texts[path])
        }
        eager = list(dict.fromkeys(["", *named, *scripts, *fonts, *STCORE]))
        return cls(eager=eager, lazy=lazy)

    @classmethod
    def read(cls, url: str) -> AssetPlan:
        """The plan for the app at ``url``, from the files it serves (read once, by the bench, not per student)."""

        def get(path: str) -> str:
            with urllib.request.urlopen(f"{url.rstrip('/')}/{path}", timeout=60) as r:
                return r.read().decode("utf-8", "replace")

        return cls.from_files(get(""), get)


async def _get_all(host: str, port: int, paths: list[str], out: list[int], accept: str) -> None:
    """GET each path in turn on one keep-alive connection, offering ``accept``; append each body's size as sent."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for path in paths:
            writer.write(
                f"GET /{path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: */*\r\n"
                f"Accept-Encoding: {accept}\r\nConnection: keep-alive\r\n\r\n".encode()
            )
            await writer.drain()
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            status = int(head.split(" ", 2)[1])
            if status != 200:
                raise OSError(f"GET /{path}: HTTP {status}")
            headers = dict(
                (k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in head.split("\r\n")[1:])
            )
            size = 0
            if headers.get("transfer-encoding", "").lower() == "chunked":
                while (n := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)) > 0:
                    size += len(await reader.readexactly(n + 2)) - 2
                await reader.readuntil(b"\r\n")
            else:
                left = int(headers.get("content-length", 0))
                while left > 0:
                    got = await reader.read(min(left, 1 << 18))
                    if not got:
                        raise OSError(f"GET /{path}: connection closed {left} bytes early")
                    size, left = size + len(got), left - len(got)
            out.append(size)
    finally:
        writer.close()


async def fetch(url: str, paths: list[str], connections: int = CONNECTIONS, accept: str = GZIP_ONLY) -> int:
    """GET ``paths`` from the app at ``url`` over up to ``connections`` keep-alive connections, offering the
    encodings ``accept``: bytes of body read (as sent: compressed where the server compressed)."""
    if not paths:
        return 0
    where = urllib.parse.urlsplit(url)
    sizes: list[int] = []
    lanes = [paths[i::connections] for i in range(min(connections, len(paths)))]
    await asyncio.gather(*(_get_all(where.hostname, where.port, lane, sizes, accept) for lane in lanes))
    return sum(sizes)


def encoding(url: str, path: str, accept: str) -> str:
    """The Content-Encoding the app at ``url`` answers a HEAD for ``path`` with, offered ``accept`` ("" for none)."""
    request = urllib.request.Request(f"{url.rstrip('/')}/{path}", method="HEAD", headers={"Accept-Encoding": accept})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.headers.get("Content-Encoding", "")


def wait_compressed(url: str, paths: list[str], timeout: float = 600, every: float = 5) -> float | None:
    """Wait until the app at ``url`` sends every one of ``paths`` it compresses as brotli; seconds waited, or None
    for an app that compresses none of them (main before ``streamlit_app.py``: nothing to wait for).

    Why: the brotli is made in the background after the server starts, pausing while requests come
    (``dashboard.serve.precompressed``), so a bench that starts a class right after the server measures it half-made;
    a lecture starts on a server up for minutes. It looks every ``every`` s, at one file after another, and at
    the first still without brotli stops looking until the next time, so its requests leave most seconds quiet.
    """
    start = time.monotonic()
    compressed = [p for p in paths if encoding(url, p, GZIP_ONLY) == "gzip"]
    if not compressed:
        return None
    todo = list(compressed)
    while todo:
        while todo and encoding(url, todo[0], BROWSER) == "br":
            todo.pop(0)
        if not todo:
            break
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{len(todo)} of {len(compressed)} files still without brotli after {timeout:.0f} s")
        time.sleep(every)
    return time.monotonic() - start


async def room_page_kinds(url: str) -> tuple[str, set[str]]:
    """A teacher's room code at ``url``, and the element kinds a student's first page of it holds (what the page's
    lazy components are chosen by)."""
    from bench.protocol import Tab

    async with Tab(url, timeout=90, deflate=False) as teacher, Tab(url, timeout=90, deflate=False) as student:
        await teacher.open({"sentence": "the teacher reads the book to the class"})
        await teacher.change(room_start=True)
        page = await student.open({"room": teacher.values["room"]})
    return teacher.values["room"], {e.WhichOneof("type") for e in page.elements.values()}


@dataclass
class FirstVisit:
    """What one app sends a student's first visit of a room, by what the client offers."""

    files: int
    sent: dict[str, int]
    """Accept-Encoding offered -> body bytes sent (``IDENTITY``, ``GZIP_ONLY``, ``BROWSER``)."""
    brotli_wait: float | None
    """Seconds the brotli took to be ready after the server answered (None: the app compresses nothing)."""
    rss_mb: float
    """The server's resident memory once every file was sent every way."""

    def line(self, name: str) -> str:
        plain = self.sent[IDENTITY]
        ways = ", ".join(f"{how!r} {n:,} B ({n / plain:.0%})" for how, n in self.sent.items() if how != IDENTITY)
        ready = "compresses nothing"
        if self.brotli_wait is not None:
            ready = f"brotli ready {self.brotli_wait:.0f} s after the first request"
        rss = f"server RSS {self.rss_mb:.0f} MB"
        return f"  {name}: {self.files} files; as they are {plain:,} B; {ways}; {ready}; {rss}"


def first_visit(root=None) -> FirstVisit:
    """A room's student page on a fresh server of ``root``'s app (this checkout by default): the bytes of every file
    a browser with an empty cache fetches for it, fetched as they are, with gzip only, and (once ready) brotli."""
    import psutil

    from bench.streamlit_server import ROOT, streamlit_server

    with streamlit_server(root=root or ROOT) as (url, proc):
        _, kinds = asyncio.run(room_page_kinds(url))
        plan = AssetPlan.read(url)
        paths = plan.eager + plan.lazy_for(kinds)
        sent = {how: asyncio.run(fetch(url, paths, accept=how)) for how in (IDENTITY, GZIP_ONLY)}
        wait = wait_compressed(url, paths)
        sent[BROWSER] = asyncio.run(fetch(url, paths, accept=BROWSER))
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
    return FirstVisit(len(paths), sent, wait, rss)


def main() -> int:
    import argparse
    import os
    import tempfile

    from bench.streamlit_server import checkout

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", metavar="REF", help="also REF's app (a commit, e.g. main), first")
    args = ap.parse_args()
    print(f"first visit of a room's student page; machine load average {os.getloadavg()[0]:.1f}")
    if args.against:
        with tempfile.TemporaryDirectory(prefix="assets-ref-") as into:
            print(first_visit(checkout(args.against, into)).line(args.against))
    visit = first_visit()
    print(visit.line("this checkout"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
