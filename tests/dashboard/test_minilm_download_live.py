"""MiniLM's first use on a real server with nothing installed (``fresh_server_app.py``), over Streamlit's websocket
protocol (``bench.protocol``): two students choose it at once while a slow stand-in hub on 127.0.0.1 sends the
installed package's files. The server downloads them once, both pages show a bar that moves, and both end with
the model's 12 heads. Needs the installed files (CI's full pass has them).
"""

from __future__ import annotations

import asyncio

import pytest

from bench.protocol import Tab
from bench.streamlit_server import streamlit_server
from core.pretrained.locate import MINILM_FILES
from tests.conftest import require_minilm
from tests.dashboard.charts import heatmaps

pytestmark = pytest.mark.servers  # a real server: the full CI pass runs it, the light one leaves it

APP = "tests/dashboard/fresh_server_app.py"
QUERY = {"weights": "minilm", "sentence": "The bank of the river."}


def test_two_students_at_once_share_one_download_and_watch_it_move(hub_server, tmp_path):
    served = hub_server(MINILM_FILES, require_minilm())
    served.bytes_per_second = 30_000_000  # about 3 s for 91 MB: both pages ask while it runs
    env = {"HF_ENDPOINT": served.url, "ATTENTION_LAB_CACHE": str(tmp_path / "cache")}
    with streamlit_server(app=APP, env=env) as (url, _):

        async def two() -> list[Tab]:
            async with Tab(url, timeout=120) as a, Tab(url, timeout=120) as b:
                await asyncio.gather(a.open(QUERY), b.open(QUERY))
                return [a, b]

        tabs = asyncio.run(two())
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 1}
    for tab in tabs:
        assert not tab.page.of("exception") and not [t for t in tab.page.texts("alert") if "MiniLM" in t]
        maps = [t for fig in tab.page.figures() for t in heatmaps(fig) if "<extra>head " in t.get("hovertemplate", "")]
        assert len(maps) == 12, len(maps)  # layer 1's heads, drawn once the files were here
        percents = [p for p, _ in tab.progress]
        assert percents == sorted(percents) and len({p for p in percents if 0 < p < 100}) >= 3, tab.progress
        assert all("from 127.0.0.1:" in text and "once for this server" in text for _, text in tab.progress)
