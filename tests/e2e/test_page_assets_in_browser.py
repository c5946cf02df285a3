"""The join storm's fetch (bench/page_assets.py) is what a real browser with an empty cache fetches: chromium opens
a room's student link, every static file it downloads is recorded, and the bench's plan for the kinds of element
that page received over the websocket must list the same files."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.page_assets import AssetPlan, room_page_kinds

pytestmark = pytest.mark.e2e


def test_the_storm_fetches_what_chromium_fetches(server, browser):
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        code, kinds = pool.submit(asyncio.run, room_page_kinds(server)).result()
    plan = AssetPlan.read(server)
    planned = {p for p in plan.eager + plan.lazy_for(kinds) if p.startswith("static/") or p == "favicon.png"}
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    fetched: set[str] = set()
    page.on("requestfinished", lambda r: fetched.add(r.url.removeprefix(server).lstrip("/")))

    def fetched_static() -> set[str]:
        return {p for p in set(fetched) if p.startswith("static/") or p == "favicon.png"}

    try:
        page.goto(f"{server}/?room={code}", timeout=90_000)
        page.wait_for_selector("g.hm image", timeout=90_000)  # the maps are drawn: the chart's chunk came
        # the last files (the favicon) can come seconds after the maps on a loaded machine: wait for the plan's
        # files, up to 60 s, then 2 s more for any file it does not list
        for _ in range(240):
            if planned <= fetched_static():
                break
            page.wait_for_timeout(250)
        page.wait_for_timeout(2000)
    finally:
        context.close()
    static = fetched_static()
    assert planned == static, (sorted(planned - static), sorted(static - planned))
    assert "_stcore/health" in fetched and "_stcore/host-config" in fetched
