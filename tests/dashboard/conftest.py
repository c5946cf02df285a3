"""AppTest helpers: run the dashboard headless, read its Plotly figures as JSON."""

from __future__ import annotations

import base64
import json
import time

import numpy as np
import pytest
from streamlit.runtime.state.common import user_key_from_element_id
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "dashboard" / "app.py")
TIMEOUT = 30  # the CPU is shared with other test runs


def make_app(**query: str) -> AppTest:
    """An AppTest of the dashboard opened with ``query`` as its URL parameters (not run yet)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def lazy_expanders(at: AppTest, label: str | None = None) -> dict[str, object]:
    """The page's expanders that draw their contents only while open (``page.opened``), by key; only those
    labelled ``label`` if given. An expander without a key shows its contents whether open or not."""
    return {
        user_key_from_element_id(e.proto.id): e
        for e in at.expander
        if e.proto.id and (label is None or e.label == label)
    }


def open_all(at: AppTest, label: str | None = None) -> AppTest:
    """``at`` rerun with every such expander (labelled ``label``) open, as a student who opened them sees it."""
    for key in lazy_expanders(at, label):
        at.session_state[key] = True
    return at.run()


@pytest.fixture
def app():
    """The dashboard at its defaults, already run once."""
    return make_app().run()


def figures(at: AppTest) -> list[dict]:
    """Every Plotly chart on the page as its figure JSON, in page order.

    A grid of maps drawn one chart each (``dashboard/page/map_columns.py``: keys ``<grid>_1``, ``<grid>_2``, ...,
    and its colour bar ``<grid>_bar``) counts as ONE figure: its maps' traces in order, the first map's layout.
    """
    return list(keyed_figures(at).values())


def keyed_figures(at: AppTest) -> dict[str, dict]:
    """``figures(at)`` keyed by each chart's widget key (a map grid by its container's key)."""
    out: dict[str, dict] = {}
    for chart in at.get("plotly_chart"):
        key = chart.proto.id.rsplit("-", 1)[-1]  # Streamlit ends a keyed element's id with "-<key>"
        fig = json.loads(chart.proto.spec)
        grid, _, part = key.rpartition("_")
        if grid and part == "bar" and f"{grid}_1" not in out:
            continue  # a map grid's colour bar: the maps follow
        if grid and part.isdigit():
            if part != "1":
                out[grid]["data"].extend(fig["data"])
                continue
            key = grid
        out[key] = fig
    return out


def array(value) -> np.ndarray:
    """A Plotly data array as NumPy: plain lists, or ``{"dtype", "bdata", "shape"}`` base64."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if isinstance(shape, str):
            shape = [int(s) for s in shape.split(",")]
        return flat.reshape(shape) if shape else flat
    return np.asarray(value, dtype=float)


def heatmaps(fig: dict) -> list[dict]:
    """The weight heatmaps of a figure (traces of type heatmap)."""
    return [trace for trace in fig["data"] if trace.get("type") == "heatmap"]


def no_exception(at: AppTest) -> None:
    """Fail with the app's own traceback text if the page shows an exception."""
    assert not at.exception, [e.message for e in at.exception]


def escaped(token: str) -> str:
    """HTML escaping written out by hand, independent of the code under test: ``&``, ``<`` and ``>`` only, the
    named entities plotly.js decodes (``&quot;`` it would draw literally)."""
    return token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def subscribed(r, but: str | None = None, timeout: float = 15.0) -> str | None:
    """The id of the connection subscribed to the stores' channel once there is one (other than ``but``): a
    publish before that reaches no one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ids = [c["id"] for c in r.client_list(_type="pubsub") if c["sub"] == "1" and c["id"] != but]
        if ids:
            return ids[0]
        time.sleep(0.05)
    return None
