"""Streamlit's own JavaScript and CSS, compressed once and served from memory: an ASGI middleware.

Streamlit 1.67 serves its static bundle uncompressed on purpose (``starlette_gzip_middleware.py``: Starlette's
``GZipMiddleware`` would compress every response again, on every request) and expects a proxy in front to
compress it. A student's first visit then downloads ~9.3 MB, 4.7 MB of it Plotly; Community Cloud documents no
such proxy. The bundle never changes while the server runs (its file names carry their hash and are cached
"immutable" for a year), so each file is compressed once:

- gzip (level 9) for every file, when the middleware is built (at the server's start, before it answers:
  ~0.8 s of CPU for the whole folder);
- brotli (quality 11) in the background, ~31 s of CPU for the folder, so it must never land inside a join storm:
  a child process makes it, at the lowest priority, and a thread of the server stops it (``SIGSTOP``) for as long
  as the server is busy and lets it go on (``SIGCONT``) after a quiet second (no request, and little CPU used by
  the server: ``BUSY_CORES``). Until a file's brotli is ready, its gzip is served. A process and not a thread:
  brotli-11's encoder takes tens of MB for a large file, and glibc kept ~30 MB of them in the server after a
  thread's encoders were done (measured with the thread; the child's memory goes back when it exits), and a
  stopped process costs nothing where a thread could only pause between steps.

Only exact paths from the list built at start are answered here (``/static/...`` under ``server.baseUrlPath``),
and only a plain GET or HEAD that accepts one of the encodings; everything else (the page, the websocket, a
Range or conditional request, a client that accepts neither) passes on to Streamlit unchanged, its path-security
checks included (user middleware runs before them, so this one never reads a path it did not list itself).

Why our own and not a library: starlette-compress and brotli-asgi compress on every request (the cost Streamlit
avoids); servestatic and blacknoise precompress in a separate build step that writes next to the files in
site-packages, which Community Cloud, which only installs requirements.txt, does not run.
"""

from __future__ import annotations

import atexit
import contextlib
import gzip
import json
import logging
import mimetypes
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

COMPRESSIBLE = frozenset({".js", ".mjs", ".css", ".svg", ".json", ".map", ".txt", ".html", ".ttf", ".otf"})
"""File types worth compressing; fonts as woff2 and images are compressed already."""
GZIP_LEVEL = 9
BROTLI_QUALITY = 11
QUIET_S = 1.0
BUSY_CORES = 0.3
"""The brotli goes on only after a quiet window of ``QUIET_S``: no request or websocket opened, and the server used
at most this share of a core (a class redrawing). The requests say a join storm is on where the CPU cannot: a
server held to a small share of a core (Community Cloud's floor is 0.078) never uses more."""
_FRAME = struct.Struct(">Q")
"""The child's answer, per file in the order asked: its brotli's length, then the bytes."""
ENCODINGS = ("br", "gzip")
"""What this middleware can send, in order of preference (brotli is ~20% smaller than gzip on this bundle)."""
PASS_ON_HEADERS = frozenset({b"range", b"if-range", b"if-none-match", b"if-modified-since"})
"""A request with one of these is Streamlit's to answer (a part of the file, or a 304 for its own ETag)."""


def accepted(header: str) -> dict[str, float]:
    """The quality values of an ``Accept-Encoding`` header (RFC 9110 12.5.3), names lower-cased; a missing q is 1,
    a malformed one 0 (not acceptable)."""
    qualities: dict[str, float] = {}
    for item in header.split(","):
        name, *params = (part.strip() for part in item.split(";"))
        if not name:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
                q = q if 0.0 <= q <= 1.0 else 0.0
        qualities[name.lower()] = q
    return qualities


def choose(header: str, available: tuple[str, ...]) -> str | None:
    """The encoding to send, of ``available`` (in order of preference), for an ``Accept-Encoding`` header: the one
    the client rates highest (``*`` stands for any it did not name), the first of ``available`` on a tie; None when
    the client accepts none of them (it gets the file as it is)."""
    qualities = accepted(header)
    star = qualities.get("*", 0.0)
    rated = [(qualities.get(name, star), -i, name) for i, name in enumerate(available)]
    best = max(rated, default=(0.0, 0, None))
    return best[2] if best[0] > 0 else None


def content_type(path: str) -> str:
    """The ``Content-Type`` Starlette's ``FileResponse`` gives the same file (text types with their charset). Read
    per response: Streamlit registers its own types (``.js`` as ``application/javascript``) only once its runtime
    starts, after the middleware is built."""
    kind = mimetypes.guess_type(path)[0] or "text/plain"
    return f"{kind}; charset=utf-8" if kind.startswith("text/") else kind


@dataclass
class Asset:
    """One static file's compressed forms (the file itself stays on disk: Streamlit serves it as it is)."""

    source: Path
    encoded: dict[str, bytes] = field(default_factory=dict)
    """Encoding -> body. The brotli thread adds "br" once it is done (one assignment: the reader sees all or none)."""


def static_dir() -> Path:
    """Streamlit's frontend build: ``index.html`` and the hashed bundle under ``static/``."""
    from dashboard.serve.streamlit_runtime import static_dir

    return static_dir()


def url_prefix() -> str:
    """The path the bundle is served under: ``/static/``, or ``/<server.baseUrlPath>/static/``."""
    import streamlit as st

    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/static/" if base else "/static/"


def gzip_assets(directory: Path, prefix: str) -> dict[str, Asset]:
    """Request path -> ``Asset`` with its gzip, for every compressible file under ``directory/static`` whose gzip is
    smaller than the file."""
    assets = {}
    for path in sorted((directory / "static").rglob("*")):
        if not path.is_file() or path.suffix.lower() not in COMPRESSIBLE:
            continue
        data = path.read_bytes()
        gz = gzip.compress(data, GZIP_LEVEL, mtime=0)
        if len(gz) < len(data):
            url = prefix + path.relative_to(directory / "static").as_posix()
            assets[url] = Asset(path, {"gzip": gz})
    return assets


def brotli_child() -> None:
    """The child process (``python precompressed.py``): reads a JSON list of paths on stdin, writes each file's
    brotli as a ``_FRAME`` on stdout, then its own CPU seconds on stderr. At the lowest priority."""
    import brotli

    with contextlib.suppress(AttributeError, OSError):
        os.nice(19)
    if sys.platform.startswith("linux"):  # gone with the thread that started it, even while stopped
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    out = sys.stdout.buffer
    for path in json.load(sys.stdin):
        body = brotli.compress(Path(path).read_bytes(), quality=BROTLI_QUALITY)
        out.write(_FRAME.pack(len(body)) + body)
        out.flush()
    print(time.process_time(), file=sys.stderr)


def _end(child: subprocess.Popen) -> None:
    """The child gone, whatever state it is in (a stopped process is continued, to take the signal)."""
    if child.poll() is None:
        child.kill()
        if hasattr(signal, "SIGCONT"):
            with contextlib.suppress(OSError):
                child.send_signal(signal.SIGCONT)
        child.wait()


class PrecompressedStatic:
    """ASGI middleware: answers GET and HEAD for Streamlit's static files with their precompressed bytes.

    ``brotli=False`` serves gzip only (no child). ``ready`` is set once every file has its brotli (or at once
    without brotli); ``brotli_seconds`` is the CPU the child spent, ``waited_s`` the time it was stopped for a busy
    server.
    """

    def __init__(self, app: ASGIApp, *, directory: Path | None = None, prefix: str | None = None, brotli: bool = True):
        self.app = app
        self.assets = gzip_assets(directory or static_dir(), prefix if prefix is not None else url_prefix())
        self.cache_control = immutable().encode()
        self.ready = threading.Event()
        self.brotli_seconds = 0.0
        self.waited_s = 0.0
        self._last_request = 0.0
        """When the last request or websocket came through (monotonic), read by the brotli thread."""
        self.child: subprocess.Popen | None = None
        """The brotli child, once started."""
        if brotli:
            threading.Thread(target=self._compress_brotli, name="brotli-static", daemon=True).start()
        else:
            self.ready.set()

    def held_bytes(self) -> int:
        """Compressed bytes held in memory, every encoding."""
        return sum(len(body) for asset in self.assets.values() for body in asset.encoded.values())

    def _quiet(self, window: tuple[float, float, float]) -> bool:
        """Whether the window opened at ``window`` (monotonic, process CPU, this thread's CPU) was quiet: no
        request came in it and the server, less this thread, used at most ``BUSY_CORES`` of a core."""
        start, process, mine = window
        others = (time.process_time() - process) - (time.thread_time() - mine)
        return self._last_request < start and others <= BUSY_CORES * (time.monotonic() - start)

    def _compress_brotli(self) -> None:
        """Start the child; give it the files after a first quiet window; stop and continue it as the server is
        busy or quiet, window by window, until it has sent every file."""
        self.child = child = subprocess.Popen(
            [sys.executable, "-P", __file__],  # -P: not this folder on its path (its modules are the page's)
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        atexit.register(_end, child)
        reader = threading.Thread(target=self._read_brotli, args=(child,), name="brotli-read", daemon=True)
        try:
            window = (time.monotonic(), time.process_time(), time.thread_time())
            time.sleep(QUIET_S)
            while not self._quiet(window):
                window = (time.monotonic(), time.process_time(), time.thread_time())
                time.sleep(QUIET_S)
                self.waited_s += QUIET_S
            child.stdin.write(json.dumps([str(a.source) for a in self.assets.values()]).encode())
            child.stdin.close()
            reader.start()
            stopped = False
            while True:
                window = (time.monotonic(), time.process_time(), time.thread_time())
                reader.join(QUIET_S)
                if not reader.is_alive():
                    break
                if stopped:
                    self.waited_s += time.monotonic() - window[0]
                if self._quiet(window) == stopped and hasattr(signal, "SIGSTOP"):
                    child.send_signal(signal.SIGCONT if stopped else signal.SIGSTOP)
                    stopped = not stopped
            if stopped:  # it has sent every file: let it say its CPU and end
                child.send_signal(signal.SIGCONT)
            said = child.stderr.read().decode(errors="replace")
            try:
                self.brotli_seconds = float(said)
            except ValueError:
                logging.getLogger(__name__).warning("the brotli child failed; gzip only:\n%s", said[-2000:])
        finally:
            _end(child)
            self.ready.set()

    def _read_brotli(self, child: subprocess.Popen) -> None:
        """Each file's brotli as the child sends it (one assignment: a request sees the encodings before or after)."""
        for asset in self.assets.values():
            head = child.stdout.read(_FRAME.size)
            if len(head) < _FRAME.size:
                return  # the child died: those files keep their gzip
            (size,) = _FRAME.unpack(head)
            asset.encoded = {**asset.encoded, "br": child.stdout.read(size)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            self._last_request = time.monotonic()
        asset = self.assets.get(scope.get("path", "")) if scope["type"] == "http" else None
        if asset is None or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        accept = ""
        for name, value in scope["headers"]:
            if name in PASS_ON_HEADERS:
                await self.app(scope, receive, send)
                return
            if name == b"accept-encoding":
                accept += value.decode("latin-1") + ","
        encoded = asset.encoded
        encoding = choose(accept, tuple(e for e in ENCODINGS if e in encoded))
        if encoding is None:
            await self.app(scope, receive, send)
            return
        body = encoded[encoding]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", content_type(asset.source.name).encode()),
                    (b"content-encoding", encoding.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"vary", b"Accept-Encoding"),
                    (b"cache-control", self.cache_control),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


def immutable() -> str:
    """The caching header Streamlit gives its hashed files (``streamlit_runtime.static_cache_control``)."""
    from dashboard.serve.streamlit_runtime import static_cache_control

    return static_cache_control()


if __name__ == "__main__":
    brotli_child()
