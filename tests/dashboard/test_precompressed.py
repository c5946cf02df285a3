"""serve/precompressed.py: Streamlit's static files compressed once, served from memory, everything else passed on.

The middleware is driven as uvicorn drives it (an ASGI scope, ``receive`` and ``send``), in front of an app that
stands for Streamlit and says what reached it. The encodings are decoded with the standard gzip module and brotli's
own decoder; which one is chosen is checked against Accept-Encoding's rules as a property.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import brotli
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import FileResponse

from dashboard.serve import precompressed
from dashboard.serve.precompressed import ENCODINGS, PrecompressedStatic, accepted, choose, static_dir, url_prefix

FILES = {
    "js/app.ABC123.js": b"export const attention = 'softmax(QK^T / sqrt(d_k)) V';\n" * 400,
    "css/index.XYZ.css": b".stApp { color: #0b6e99; }\n" * 300,
    "media/font.woff2": bytes(range(256)) * 40,  # not a compressible type: Streamlit serves it as it is
}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    for name, data in FILES.items():
        path = tmp_path / "static" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (tmp_path / "index.html").write_text("<html></html>")
    return tmp_path


class Streamlit:
    """Stands for Streamlit's own app: records each request that reached it and answers 200 "streamlit"."""

    def __init__(self) -> None:
        self.got: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:
        self.got.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-from", b"streamlit")]})
        await send({"type": "http.response.body", "body": b"streamlit"})


def request(app, path: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request through ``app``: status, headers (lower-cased names), body."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, *bodies = sent
    head = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], head, b"".join(m.get("body", b"") for m in bodies)


def middleware(bundle: Path, brotli_too: bool = True) -> tuple[PrecompressedStatic, Streamlit]:
    inner = Streamlit()
    mw = PrecompressedStatic(inner, directory=bundle, prefix="/static/", brotli=brotli_too)
    return mw, inner


def test_gzip_is_ready_at_start_and_decodes_to_the_file(bundle):
    mw, inner = middleware(bundle, brotli_too=False)
    for name in ("js/app.ABC123.js", "css/index.XYZ.css"):
        status, head, body = request(mw, f"/static/{name}", accept_encoding="gzip, deflate")
        assert status == 200 and head["content-encoding"] == "gzip"
        assert gzip.decompress(body) == FILES[name]
        assert int(head["content-length"]) == len(body) < len(FILES[name])
        assert head["cache-control"] == "public, immutable, max-age=31536000"  # Streamlit's for its hashed files
        assert head["vary"] == "Accept-Encoding"
        assert head["content-type"] == FileResponse(bundle / "static" / name).headers["content-type"]  # Streamlit's
    assert inner.got == []


def test_brotli_comes_from_the_background_thread_and_decodes_to_the_file(bundle):
    mw, inner = middleware(bundle)
    assert mw.ready.wait(60), "the brotli thread did not finish"
    for name in ("js/app.ABC123.js", "css/index.XYZ.css"):
        _, head, body = request(mw, f"/static/{name}", accept_encoding="gzip, deflate, br, zstd")
        assert head["content-encoding"] == "br"
        assert brotli.decompress(body) == FILES[name]
        # a client that offers gzip only still gets gzip
        _, head, body = request(mw, f"/static/{name}", accept_encoding="gzip, deflate")
        assert head["content-encoding"] == "gzip" and gzip.decompress(body) == FILES[name]
    assert mw.held_bytes() == sum(len(b) for a in mw.assets.values() for b in a.encoded.values())
    assert inner.got == []


def test_gzip_is_served_until_the_brotli_of_a_file_is_ready(bundle):
    mw, _ = middleware(bundle, brotli_too=False)  # no thread: what a request sees before brotli is done
    _, head, body = request(mw, "/static/js/app.ABC123.js", accept_encoding="br, gzip")
    assert head["content-encoding"] == "gzip" and gzip.decompress(body) == FILES["js/app.ABC123.js"]
    _, head, _ = request(mw, "/static/js/app.ABC123.js", accept_encoding="br")  # br only: the file as it is
    assert head == {"x-from": "streamlit"}


def test_head_sends_the_headers_of_the_compressed_file_and_no_body(bundle):
    mw, _ = middleware(bundle, brotli_too=False)
    _, get_head, get_body = request(mw, "/static/js/app.ABC123.js", accept_encoding="gzip")
    status, head, body = request(mw, "/static/js/app.ABC123.js", method="HEAD", accept_encoding="gzip")
    assert status == 200 and body == b""
    assert head == get_head and int(head["content-length"]) == len(get_body)


@pytest.mark.parametrize(
    ("path", "method", "headers"),
    [
        ("/static/js/app.ABC123.js", "GET", {}),  # no Accept-Encoding: the file as it is
        ("/static/js/app.ABC123.js", "GET", {"accept_encoding": "identity"}),
        ("/static/js/app.ABC123.js", "GET", {"accept_encoding": "gzip;q=0, br;q=0"}),
        ("/static/js/app.ABC123.js", "GET", {"accept_encoding": "gzip", "range": "bytes=0-9"}),
        ("/static/js/app.ABC123.js", "GET", {"accept_encoding": "gzip", "if_none_match": '"abc"'}),
        ("/static/js/app.ABC123.js", "GET", {"accept_encoding": "gzip", "if_modified_since": "Mon, 1 Jan 2024"}),
        ("/static/js/app.ABC123.js", "POST", {"accept_encoding": "gzip"}),
        ("/static/media/font.woff2", "GET", {"accept_encoding": "gzip"}),  # compressed already: not listed
        ("/", "GET", {"accept_encoding": "gzip"}),  # the page: Streamlit's, with its no-cache and ETag
        ("/index.html", "GET", {"accept_encoding": "gzip"}),
        ("/static/js/../js/app.ABC123.js", "GET", {"accept_encoding": "gzip"}),  # only exact listed paths
        ("/static//js/app.ABC123.js", "GET", {"accept_encoding": "gzip"}),
        ("/static/js/app.abc123.js", "GET", {"accept_encoding": "gzip"}),
        ("/static/js/missing.js", "GET", {"accept_encoding": "gzip"}),
        ("//static/js/app.ABC123.js", "GET", {"accept_encoding": "gzip"}),
    ],
)
def test_everything_else_passes_on_to_streamlit(bundle, path, method, headers):
    mw, inner = middleware(bundle, brotli_too=False)
    status, head, body = request(mw, path, method=method, **headers)
    assert (status, head, body) == (200, {"x-from": "streamlit"}, b"streamlit")
    assert [scope["path"] for scope in inner.got] == [path]


def test_websockets_and_lifespan_pass_on(bundle):
    mw, inner = middleware(bundle, brotli_too=False)
    for kind in ("websocket", "lifespan"):
        scope = {"type": kind, "path": "/static/js/app.ABC123.js", "headers": []}

        async def noop(*_):
            return None

        async def go(scope=scope):
            await mw(scope, noop, noop)

        asyncio.run(go())
    assert [s["type"] for s in inner.got] == ["websocket", "lifespan"]


def test_the_list_is_streamlit_s_own_bundle_under_its_prefix():
    """On the installed Streamlit: every listed path is a file of its build under /static/, and the page's largest
    files (the Plotly chart's code, the entry script) are listed."""
    mw = PrecompressedStatic(Streamlit(), brotli=False)
    root = static_dir()
    assert url_prefix() == "/static/"
    assert mw.assets and all(url.startswith("/static/") for url in mw.assets)
    assert all((root / url.lstrip("/")).is_file() for url in mw.assets)
    names = [url.rsplit("/", 1)[1] for url in mw.assets]
    assert any(n.startswith("PlotlyChart.") and n.endswith(".js") for n in names)
    assert any(n.startswith("index.") and n.endswith(".css") for n in names)
    assert not any(n.endswith((".woff2", ".png")) for n in names)


@contextmanager
def spinning() -> Iterator[None]:
    """A thread spinning in Python while the block runs: a busy server, as a class's script runs make it."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield
    finally:
        stop.set()
        spinner.join()


def test_the_brotli_waits_while_the_server_is_busy(bundle, monkeypatch):
    """A busy process (a thread spinning in Python, as a class's script runs do) holds the brotli back; once it stops,
    the brotli is done within a few quiet windows. The threshold is lowered to 0.02 of a core: on a loaded test
    machine the spinner gets a fraction of a core, as a server does on Community Cloud."""
    monkeypatch.setattr(precompressed, "BUSY_CORES", 0.02)
    with spinning():
        mw, _ = middleware(bundle)
        time.sleep(4)
        assert not mw.ready.is_set(), "brotli went ahead while the process was busy"
        assert mw.waited_s > 0
    assert mw.ready.wait(60), "brotli did not finish once the process was quiet"
    assert all("br" in asset.encoded for asset in mw.assets.values())


def process_state(pid: int) -> str:
    """The kernel's one-letter state of a process (``T``: stopped), from /proc; ``gone`` once it has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_a_busy_server_stops_the_brotli_child_mid_file_and_a_quiet_one_continues_it(tmp_path, monkeypatch):
    """A file large enough that brotli-11 takes seconds: the child starts in a quiet second, the server gets busy,
    and within two windows the child is stopped (no CPU for it while the class joins); once quiet, it goes on
    and the brotli decodes to the file."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads process states from /proc (Linux)")
    monkeypatch.setattr(precompressed, "BUSY_CORES", 0.02)
    draw = random.Random(0)  # words in no order: brotli-11 takes ~7 s of CPU here (a stride pattern took 0.8 s)
    words = b" ".join(b"w%d" % draw.randrange(100_003) for _ in range(600_000))
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "big.js").write_bytes(words)
    mw = PrecompressedStatic(Streamlit(), directory=tmp_path, prefix="/static/")
    deadline = time.monotonic() + 30
    while mw.child is None or mw.child.stdin is None or not mw.child.stdin.closed:
        assert time.monotonic() < deadline, "the child was never given the files"
        time.sleep(0.05)
    with spinning():
        deadline = time.monotonic() + 10
        while (state := process_state(mw.child.pid)) != "T":
            assert state != "gone" and not mw.ready.is_set(), "the file was done before the server got busy"
            assert time.monotonic() < deadline, "the child was not stopped while the server was busy"
            time.sleep(0.1)
        cpu = Path(f"/proc/{mw.child.pid}/stat").read_text()
        time.sleep(2.5)
        assert Path(f"/proc/{mw.child.pid}/stat").read_text() == cpu, "the stopped child still ran"
    assert mw.ready.wait(120), "brotli did not finish once the server was quiet"
    assert brotli.decompress(mw.assets["/static/js/big.js"].encoded["br"]) == words
    assert mw.waited_s > 0 and mw.brotli_seconds > 0


def test_the_brotli_waits_while_requests_come(bundle, monkeypatch):
    """Requests in every window (a join storm on a server held to a small share of a core, where the CPU used says
    little) hold the brotli back too, whatever the CPU; websockets count, the lifespan does not."""
    monkeypatch.setattr(precompressed, "BUSY_CORES", 1e6)
    mw, _ = middleware(bundle)
    end = time.monotonic() + 4
    while time.monotonic() < end:
        request(mw, "/static/js/app.ABC123.js", accept_encoding="gzip")
        time.sleep(0.2)
    assert not mw.ready.is_set(), "brotli went ahead while requests came"
    assert mw.ready.wait(60), "brotli did not finish once the requests stopped"


# ---- Accept-Encoding ------------------------------------------------------------------------------------------

CODINGS = ["gzip", "br", "deflate", "zstd", "identity", "*", "GZip", "BR", "compress"]
QS = st.one_of(st.none(), st.sampled_from(["0", "0.0", "0.5", "1", "1.0", "0.001", "2", "-1", "abc", ""]))


@st.composite
def headers(draw) -> str:
    items = draw(st.lists(st.tuples(st.sampled_from(CODINGS), QS), max_size=6))
    spaces = draw(st.sampled_from(["", " ", "  "]))
    return ",".join(f"{spaces}{c}" + ("" if q is None else f";{spaces}q={q}") for c, q in items)


@given(headers(), st.sampled_from([("br", "gzip"), ("gzip",), ()]))
def test_the_chosen_encoding_is_one_the_client_rates_highest(header, available):
    """The choice is acceptable (q > 0, directly or through ``*``) and no available encoding is rated higher; brotli
    wins a tie; None exactly when the client accepts none of those available."""
    got = choose(header, available)
    q = accepted(header)

    def rating(name: str) -> float:
        return q.get(name, q.get("*", 0.0))

    if got is None:
        assert all(rating(name) == 0 for name in available)
    else:
        assert got in available and rating(got) > 0
        assert all(rating(got) >= rating(name) for name in available)
        assert all(rating(got) > rating(name) for name in available[: available.index(got)])


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip, deflate", "gzip"),  # chromium to a plain-HTTP host (a phone on the hall's Wi-Fi)
        ("gzip, deflate, br, zstd", "br"),  # chromium over HTTPS or to localhost
        ("br;q=0.5, gzip", "gzip"),
        ("gzip;q=0, *", "br"),
        ("GZIP", "gzip"),
        ("*;q=0", None),
        ("", None),
        ("identity", None),
    ],
)
def test_chromium_s_headers_and_others(header, expected):
    assert choose(header, ENCODINGS) == expected
