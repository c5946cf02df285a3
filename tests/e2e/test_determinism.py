"""Same link, same pictures: two separate server processes send byte-identical figure data.

A teacher's link is opened by thirty laptops, each served by whatever process the
host runs, possibly after a restart. So two Streamlit servers are started side by
side (with different ``PYTHONHASHSEED``, so anything keyed on Python's salted
``hash()`` would show), a real chromium opens the same URL on each, and every
websocket frame the browser receives is recorded. The Plotly figures are read
from those frames (``ForwardMsg`` -> ``delta.new_element.plotly_chart.spec``):
the exact bytes each browser was given, compared byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from urllib.parse import urlencode

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.streamlit_server import chromium, streamlit_server, wait_idle
from tests.conftest import require_chromium
from tests.e2e.conftest import watched_page

pytestmark = pytest.mark.e2e

LINK = {
    "sentence": "The dog saw the other dog 🐕‍🦺 near the bank",  # repeats, an emoji with ZWJ
    "d_model": "32",
    "n_heads": "4",
    "causal": "true",
    "positional": "learned",
    "seed": "12345",
    "view": "heads",
    "average": "true",  # a second figure: the average over heads
}


@pytest.fixture(scope="module")
def two_servers() -> Iterator[list[str]]:
    """Two dashboard servers, each its own process with its own hash salt."""
    require_chromium()
    mp = pytest.MonkeyPatch()
    with ExitStack() as stack:
        urls = []
        for salt in ("1", "2"):
            mp.setenv("PYTHONHASHSEED", salt)  # inherited by the server process started next
            url, _proc = stack.enter_context(streamlit_server())
            urls.append(url)
        mp.undo()
        yield urls


@pytest.fixture(scope="module")
def browser(two_servers):
    with chromium(require_chromium()) as b:
        yield b


def figure_specs(browser, url: str, link: dict[str, str]) -> list[str]:
    """The Plotly figure JSON strings a fresh browser session receives for ``url/?link``, in page order."""
    frames: list[bytes] = []
    with watched_page(browser) as page:  # an exception on the page fails the test
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
        page.goto(f"{url}/?{urlencode(link)}")
        wait_idle(page)
        page.wait_for_selector(".js-plotly-plot")
    specs: dict[tuple[int, ...], str] = {}
    for frame in frames:
        msg = ForwardMsg()
        msg.ParseFromString(frame if isinstance(frame, bytes) else frame.encode("latin-1"))
        if msg.WhichOneof("type") == "delta" and msg.delta.new_element.WhichOneof("type") == "plotly_chart":
            specs[tuple(msg.metadata.delta_path)] = msg.delta.new_element.plotly_chart.spec
        assert msg.WhichOneof("type") != "ref_hash", "a fresh browser context has no message cache"
    return [spec for _, spec in sorted(specs.items())]


def test_two_server_processes_send_byte_identical_figures(two_servers, browser) -> None:
    first, second = (figure_specs(browser, url, LINK) for url in two_servers)
    heads = int(LINK["n_heads"])
    assert len(first) == heads + 2, "expected one chart per head, the shared colour bar and the average"
    for spec in first:
        fig = json.loads(spec)
        assert [t["type"] for t in fig["data"]].count("heatmap") >= 1
        assert any("bdata" in json.dumps(t.get("z")) for t in fig["data"])  # real arrays, not placeholders
    assert first == second  # str equality of the JSON text: the same bytes on the wire


def test_the_comparison_can_fail(two_servers, browser) -> None:
    """Guard: one seed apart, the same server sends different figures, so equality above means something."""
    base = figure_specs(browser, two_servers[0], LINK)
    other = figure_specs(browser, two_servers[0], LINK | {"seed": "12346"})
    assert len(base) == len(other) == int(LINK["n_heads"]) + 2
    differing = sum(a != b for a, b in zip(base, other, strict=True))
    assert differing >= int(LINK["n_heads"]), "every head's map (and the average) changes with the seed"
