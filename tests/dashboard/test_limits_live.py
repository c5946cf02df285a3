"""The limits on a real server, spoken to over Streamlit's websocket protocol (``bench.protocol``), rooms in a real
redis-server that the test reads back: which address and which browser a page counts against, and a teacher's page
holding its room (issue 32 parts 3 and 4, issue 31 part 7).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import pytest
import redis
from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

from bench.protocol import Tab
from bench.streamlit_server import streamlit_server
from dashboard.classroom.room_page import REDIS_URL, TALLY_SECONDS
from dashboard.classroom.rooms import ROOMS_PER_BROWSER, RedisRoomStore
from dashboard.compute.training_jobs import JOBS_PER_ADDRESS
from dashboard.serve.clients import FORWARDED_ALLOW_IPS, LOCAL, XSRF_COOKIE
from tests.dashboard.test_rooms_live import HEAVY, alerts, start_room

pytestmark = pytest.mark.servers  # real servers: the full CI pass runs them, the light one leaves them

FORGED = ({}, {"X-Forwarded-For": "203.0.113.9"}, {"X-Forwarded-For": "198.51.100.7, 203.0.113.10"})
"""A page of this machine as it is, and forging one address, then a proxy chain."""


@pytest.fixture(scope="module")
def server(redis_server):
    """One app process with its rooms in the session's redis-server, FORWARDED_ALLOW_IPS unset (the default)."""
    named = os.environ.pop(FORWARDED_ALLOW_IPS, None)  # the server inherits this process's environment
    try:
        with streamlit_server(env={REDIS_URL: redis_server}) as (url, _):
            yield url
    finally:
        if named is not None:
            os.environ[FORWARDED_ALLOW_IPS] = named


def room_field(url: str, code: str, name: str) -> str | None:
    return redis.Redis.from_url(url, decode_responses=True).hget(f"attention_lab:room:{code}", name)


async def started_by(url: str, headers: dict[str, str]) -> str:
    """A tab with these handshake headers starts a room (and closes): its code."""
    async with Tab(url, headers=headers) as teacher:
        return await start_room(teacher)


def test_a_forged_forwarded_for_counts_against_this_machine_unless_the_deployment_names_its_proxy(server, redis_server):
    """Issue 32: uvicorn believed X-Forwarded-For from 127.0.0.1, so 45 forged rooms filled the server in 7 s. Each
    room's address, as the room keeps it (a salted hash, read back from Redis), is this machine's, forged or not.
    With FORWARDED_ALLOW_IPS set, as the README's nginx and Caddy examples run the app, the proxy on this machine is
    believed, and its header's address is the one the room counts."""
    codes = [asyncio.run(started_by(server, headers)) for headers in FORGED]
    tag = RedisRoomStore(redis_server)._tag  # the same salt as the servers': one Redis
    assert [room_field(redis_server, c, "address") for c in codes] == [tag(LOCAL)] * len(FORGED)
    with streamlit_server(env={REDIS_URL: redis_server, FORWARDED_ALLOW_IPS: "127.0.0.1"}) as (url, _):
        plain, forwarded = (asyncio.run(started_by(url, headers)) for headers in FORGED[:2])
    assert room_field(redis_server, plain, "address") == tag(LOCAL)
    assert room_field(redis_server, forwarded, "address") == tag("203.0.113.9")


def test_three_forged_tabs_fill_only_this_machines_share_of_the_training_queue(server):
    """Issue 32: three forged tabs filled the 6-job training cap. Three tabs forging three addresses now hold this
    machine's 3, and a fourth forged address is told so; the queue's other 3 stay for everyone else."""

    async def scenario() -> tuple[list[str], str]:
        said = []
        async with contextlib.AsyncExitStack() as open_tabs:  # every tab stays open (watching its job) to the end
            for i in range(JOBS_PER_ADDRESS + 1):
                tab = await open_tabs.enter_async_context(
                    Tab(server, headers={"X-Forwarded-For": f"203.0.113.{20 + i}"})
                )
                await tab.open(HEAVY | {"seed": str(300 + i)})
                await tab.change(train_button=True)
                said.append(alerts(tab))
        return said[:-1], said[-1]

    first, fourth = asyncio.run(scenario())
    assert not any("already has" in s or "busy" in s for s in first), first
    assert f"Your network already has {JOBS_PER_ADDRESS} trainings running or waiting" in fourth, fourth


def test_one_browsers_tabs_count_as_one_browser_by_its_xsrf_cookie(server):
    """Issue 31 part 7: rooms count per browser. A browser's tabs send the same XSRF token (masked anew each time);
    its fourth open room is refused, in the dialog of its rooms, while another browser on the same address starts
    one."""
    token = b"one browser's token"

    def cookie(raw: bytes) -> dict[str, str]:
        return {"Cookie": f"{XSRF_COOKIE}={generate_xsrf_token_string(raw)}"}

    async def scenario() -> tuple[list[str], str, str]:
        codes, refused = [], ""
        async with contextlib.AsyncExitStack() as open_tabs:  # the tabs stay open: their rooms are held
            for _ in range(ROOMS_PER_BROWSER + 1):
                tab = await open_tabs.enter_async_context(Tab(server, headers=cookie(token)))
                await tab.open({"sentence": "the teacher reads the book"})
                await tab.change(room_start=True)
                if tab.values.get("room"):
                    codes.append(tab.values["room"])
                else:
                    refused = alerts(tab)
            other = await started_by(server, cookie(b"another browser"))
        return codes, refused, other

    codes, refused, other = asyncio.run(scenario())
    assert len(codes) == ROOMS_PER_BROWSER, codes
    assert f"This browser already runs {ROOMS_PER_BROWSER} open rooms" in refused, refused
    assert other and other not in codes


def test_the_teacher_pages_timer_holds_its_room(server, redis_server):
    """Issue 32 part 4: a room closes 10 minutes after its teacher's page last showed it. The page shows it by its
    seat count's timer (every ``TALLY_SECONDS``), not only when the teacher changes something: a look by that timer
    alone moves the room's ``held`` on, and its version stays."""

    async def scenario() -> tuple[str, list[float]]:
        async with Tab(server) as teacher:
            code = await start_room(teacher)
            timers = [f for f, seconds in teacher.auto_reruns.items() if seconds == TALLY_SECONDS]
            assert timers, teacher.auto_reruns
            seen = [float(room_field(redis_server, code, "held"))]
            version = room_field(redis_server, code, "version")
            await asyncio.sleep(1.5)
            polled = time.time()
            for fragment in timers:
                await teacher.poll(fragment)
            seen.append(float(room_field(redis_server, code, "held")))
            assert room_field(redis_server, code, "version") == version
            return code, [*seen, polled]

    _, (before, after, polled) = asyncio.run(scenario())
    assert after >= before + 1.4 and after >= polled - 0.1
