"""Rooms on real servers, spoken to over Streamlit's websocket protocol (``bench.protocol``): two app processes on
one real redis-server serve one room and keep it across a restart; a closed socket frees its seat (which pins the
runtime API ``serve.clients.alive`` reads, on a running server), and a socket that never reads holds none after
30 s; a full room's refused tab runs at most twice in 10 s and gets in by itself when a seat frees; with Redis hung
or killed, the pages say so and come back on their own timers.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.follower import shows_seed
from bench.full_room import SEATS, SMALL_ROOM_APP
from bench.protocol import TEACHER_KEY_COMPONENT, Page, Tab
from bench.streamlit_server import streamlit_server
from dashboard.classroom.room_page import CHECK_SECONDS, REDIS_URL, TALLY_SECONDS
from dashboard.classroom.rooms import AWAY_SECONDS, SEAT_SECONDS
from dashboard.classroom.teacher_key import CLAIM_PARAM
from tests.conftest import RedisProcess

pytestmark = pytest.mark.servers  # four real servers: the full CI pass runs them, the light one leaves them


def alerts(tab: Tab) -> str:
    return " ".join(tab.page.texts("alert"))


def exceptions(page: Page) -> list[str]:
    """The exception elements on a page (Streamlit's error box; its text redacted on this app's server)."""
    return [f"{e.exception.type}: {e.exception.message}" for e in page.of("exception")]


async def start_room(teacher: Tab) -> str:
    await teacher.open({"sentence": "the teacher reads the book"})
    await teacher.change(room_start=True)
    code = teacher.values["room"]
    assert f"You run room {code}" in alerts(teacher)
    return code


async def follow(student: Tab, seed: int) -> tuple[int, float]:
    """Wait, as the student's browser does, for the runs the server pushes until its page shows ``seed``: (runs it
    took, seconds). The page's own check of the room is a slow fallback (``dashboard.classroom.push`` reruns it)."""
    assert list(student.auto_reruns.values()) == [CHECK_SECONDS], "a following page polls again"
    start = time.monotonic()
    for runs in range(1, 4):
        run = await student.next_run(timeout=30)
        if shows_seed(student.page, student, seed):  # a following page has no seed box: its settings line
            # the push reran the page's body fragment alone (room_page.follow_on), merged into the page as browsers do
            assert run.status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY and run.redrew, run.status
            return runs, time.monotonic() - start
    raise AssertionError(f"the student's page does not show seed {seed} after 3 pushed runs")


async def teacher_on_a_students_on_b(a: str, b: str) -> tuple[str, str, list[tuple[int, float]]]:
    async with Tab(a) as teacher, Tab(b) as s1, Tab(b) as s2:
        code = await start_room(teacher)
        token = claim_token(teacher)
        for student in (s1, s2):
            await student.open({"room": code})
            assert "Following room" in " ".join(student.page.texts("markdown")), student.page.texts("alert")
        # refresh the teacher's page (the seat count comes from Redis); B's students redraw for it at once too (the
        # store's pub/sub), and that run is read here, not taken for the next change's
        await asyncio.gather(teacher.change(seed=0), follow(s1, 0), follow(s2, 0))
        assert "2 students joined" in alerts(teacher)
        follows = []
        for seed in (4242, 77):
            _, *pushed = await asyncio.gather(teacher.change(seed=seed), follow(s1, seed), follow(s2, seed))
            follows += pushed
        return code, token, follows


def claim_token(teacher: Tab) -> str:
    """The teacher link's claim token, read from the dialog's code block (the dialog opens by itself after Start)."""
    blocks = [e.code.code_text for e in teacher.page.of("code") if f"{CLAIM_PARAM}=" in e.code.code_text]
    return blocks[0].split(f"{CLAIM_PARAM}=", 1)[1] if blocks else ""


def test_two_processes_on_one_redis_serve_one_room_and_keep_it_across_a_restart(redis_url):
    env = {REDIS_URL: redis_url}
    with streamlit_server(env=env) as (a, _), streamlit_server(env=env) as (b, _):
        code, token, follows = asyncio.run(teacher_on_a_students_on_b(a, b))
    print(f"\nstudents on process B followed the teacher on A: {follows} (pushed runs, seconds from the click)")
    assert all(runs == 1 for runs, _ in follows)  # B's watcher pushed one run, and it showed the teacher's change
    assert token, "the teacher link was not shown"

    async def after_restart(c: str) -> str:
        async with Tab(c) as teacher:
            await teacher.open({"room": code, CLAIM_PARAM: token})  # the teacher link, unused until now
            return alerts(teacher) + f" seed={teacher.values['seed']}"

    with streamlit_server(env=env) as (c, _):  # both processes gone: a new one on the same Redis
        shown = asyncio.run(after_restart(c))
    assert f"You run room {code}" in shown and "seed=77" in shown


def test_a_closed_socket_frees_its_seat_at_once():
    """A closed tab's seat is free when the teacher's page next runs: Streamlit's runtime knows the socket closed,
    so no wait for ``SEAT_SECONDS`` (a change in the private API ``clients.alive`` reads would fail here)."""

    async def scenario(url: str) -> tuple[str, str, float]:
        async with Tab(url) as teacher:
            code = await start_room(teacher)
            async with Tab(url) as student:
                await student.open({"room": code})
                await teacher.change(seed=1)
                seated = alerts(teacher)
            closed = time.monotonic()
            while "0 students joined" not in alerts(teacher) and time.monotonic() - closed < SEAT_SECONDS / 2:
                await asyncio.sleep(0.5)
                await teacher.change(seed=int(teacher.values["seed"]) + 1)
            return seated, alerts(teacher), time.monotonic() - closed

    with streamlit_server() as (url, _):
        seated, after, seconds = asyncio.run(scenario(url))
    assert "1 student joined" in seated
    assert "0 students joined" in after, f"the seat was still taken {seconds:.1f} s after the socket closed"


def keys_component(page) -> list:
    """The teacher-key component's element(s) on ``page`` (``dashboard/classroom/teacher_key.py``)."""
    return [e for e in page.of("bidi_component") if e.bidi_component.component_name.endswith(TEACHER_KEY_COMPONENT)]


def test_a_followers_browser_answers_the_teacher_key_component_once_and_its_redraws_mount_none():
    """On a real server, as a browser does (``bench.protocol.Tab`` answers as ``teacher_key.JS``): the first run
    mounts the component and asks; its answer (a trigger on the id the frontend uses) reruns the page, which mounts
    it with the same data (to read the answer; its JavaScript does not run again); a pushed redraw then mounts
    none. A change in Streamlit's trigger ids would leave it mounted there."""

    async def scenario(url: str) -> tuple[list, list, list, bool]:
        async with Tab(url) as teacher, Tab(url) as student:
            code = await start_room(teacher)
            first = await student.open({"room": code})
            answered = student.page
            _, redrawn = await asyncio.gather(teacher.change(seed=31), follow(student, 31))
            return keys_component(first), keys_component(answered), keys_component(student.page), redrawn[0] == 1

    with streamlit_server() as (url, _):
        first, answered, redrawn, once = asyncio.run(scenario(url))
    assert len(first) == 1 and json.loads(first[0].bidi_component.json)["answer"] is True
    assert [e.bidi_component.json for e in answered] == [first[0].bidi_component.json]
    assert redrawn == [] and once


HEAVY = {"view": "train", "weights": "trained", "task": "induction", "d_model": "512", "n_heads": "16"}
HEAVY |= {"train_layers": "2", "train_steps": "2000"}
"""Issue 18's flood: d_model 512, 16 heads, 2 layers, 2000 steps."""


def test_seven_sockets_flooding_heavy_runs_are_cancelled_and_memory_returns():
    """Issue 18: seven sockets each queued a heavy run and closed; the runs went on, a real student was told the
    server was busy, and memory went from 196 to 733 MB and stayed at 715 MB. Each run is now cancelled as its socket
    closes, and from that moment counts against no limit (issue 32: closed tabs blocked the hall): no socket of the
    seven is refused, a student after them is not either, and memory returns. Sockets that stay open are refused
    past the address's 3 (``tests/dashboard/test_limits_live.py``)."""
    import psutil

    from dashboard.compute.training_jobs import KEEP_BYTES

    async def flood(url: str, rss) -> tuple[int, list[str], float, int, str]:
        async with Tab(url) as first:
            await first.open({"view": "train", "weights": "trained", "task": "induction"})  # imports, pre-trained run
        base = rss()
        said = []
        for i in range(7):
            async with Tab(url) as tab:
                await tab.open(HEAVY | {"seed": str(100 + i)})
                await tab.change(train_button=True)
                said.append(alerts(tab))
        closed, accepted = time.monotonic(), ""
        while time.monotonic() - closed < 60:  # the cancelled jobs leave the address's queue
            async with Tab(url) as student:
                await student.open({"view": "train", "weights": "trained", "task": "shift", "seed": "7"})
                await student.change(train_button=True)
                accepted = alerts(student)
            if "trainings running or waiting" not in accepted:
                break
            await asyncio.sleep(1)
        waited = time.monotonic() - closed
        settle = time.monotonic()
        while rss() > base + KEEP_BYTES + 50 * 2**20 and time.monotonic() - settle < 30:
            await asyncio.sleep(1)
        return base, said, waited, rss() - base, accepted

    with streamlit_server() as (url, proc):
        process = psutil.Process(proc.pid)
        base, said, waited, grown, accepted = asyncio.run(flood(url, lambda: process.memory_info().rss))
    print(f"\nflood: base RSS {base / 2**20:.0f} MB, {waited:.1f} s until a new job was accepted, "
          f"then {grown / 2**20:+.0f} MB")  # fmt: skip
    assert not [s for s in said if "Your network already has" in s or "busy" in s], said
    assert "trainings running or waiting" not in accepted and "busy" not in accepted, accepted
    assert grown <= KEEP_BYTES + 50 * 2**20


def test_a_full_rooms_refused_tab_runs_at_most_twice_in_10_s_and_gets_in_by_itself_when_a_seat_frees():
    """Issue 32: the refused tab's page reran itself without end (on this bench's 2-seat room, 1,603 runs started
    and none finished in 10 s, 0.92 of a core: ``python -m bench.full_room``). Its runs are counted from its first
    request, read as a browser reads them, its timers fired as a browser fires them (``Tab.idle``)."""

    async def scenario(url: str) -> tuple:
        async with Tab(url) as teacher, Tab(url) as late:
            code = await start_room(teacher)
            async with Tab(url) as seated:
                await seated.open({"room": code})
                refused = await late.idle(10, {"room": code})
            joined = await late.idle(CHECK_SECONDS + 5)  # the seated tab closed: its seat is free at once
            return code, refused, joined

    with streamlit_server(app=SMALL_ROOM_APP, env={SEATS: "1"}) as (url, _):
        code, refused, joined = asyncio.run(scenario(url))
    print(f"\nthe refused tab: {refused.started} runs started in 10 s; when a seat freed: {joined.started} runs")
    assert refused.started <= 2 and refused.finished == refused.started and not refused.exceptions
    assert any("This room is full (1 student" in s for s in refused.said), refused.said
    assert not any(f"Following room {code}" in s for s in refused.said)
    assert any(f"Following room {code}" in s for s in joined.said) and not joined.exceptions, joined.said
    assert joined.started <= 3  # its look (every CHECK_SECONDS), then the whole page, once


def joined(page: Page) -> int:
    """The teacher's count of seated students (its ``_seats`` line)."""
    counts = [int(m.group(1)) for t in page.texts("alert") if (m := re.search(r": (\d+) students? joined", t))]
    assert counts, page.texts("alert")
    return counts[0]


async def seats_line(teacher: Tab) -> int:
    """The teacher's line as its timer redraws it (the ``_seats`` fragment, every ``TALLY_SECONDS``; the class's
    sentences have a timer of the same period: the seats' is the one that draws the line)."""
    for timer in [f for f, every in teacher.auto_reruns.items() if every == TALLY_SECONDS]:
        page = await teacher.poll(timer)
        if any(re.search(r": (\d+) students? joined", t) for t in page.texts("alert")):
            return joined(page)
    raise AssertionError(f"no timer of the teacher's page draws the seats line: {teacher.auto_reruns}")


@pytest.mark.parametrize("teaching", [False, True], ids=["teacher idle", "teacher changing"])
def test_a_socket_that_never_reads_holds_no_seat_after_30_s(teaching):
    """Issue 32: one script filled the 300 seats in 13 s, and sockets that never read held every seat for 40 s and
    more (the server told the room every 10 s that each connected follower was there). A seat is held only by a page
    that answers its check, whether the teacher changes anything or not; a page that answers keeps its seat."""

    async def scenario(url: str) -> tuple[int, int, float]:
        async with Tab(url) as teacher, Tab(url) as reader, Tab(url) as silent:
            code = await start_room(teacher)
            await reader.open({"room": code})
            await silent.knock({"room": code})  # its first run takes a seat; it never reads, never answers
            knocked = time.monotonic()
            both = await seats_line(teacher)
            while both < 2 and time.monotonic() - knocked < 10:
                await asyncio.sleep(0.5)
                both = await seats_line(teacher)

            async def teach() -> None:
                seed = 100
                while time.monotonic() - knocked < SEAT_SECONDS + 2:
                    seed += 1
                    await teacher.change(seed=seed)  # every follower's body is pushed, the silent one's too
                    await asyncio.sleep(2)

            answering = reader.idle(SEAT_SECONDS + 2 - (time.monotonic() - knocked))  # a browser: its timers fire
            await asyncio.gather(answering, *([teach()] if teaching else []))
            return both, await seats_line(teacher), time.monotonic() - knocked

    with streamlit_server() as (url, _):
        both, after, seconds = asyncio.run(scenario(url))
    assert both == 2
    assert after == 1, f"{after} seats held {seconds:.0f} s after a socket that never reads took one"


@pytest.mark.parametrize("trouble", ["hung", "killed and started again"])
def test_with_redis_hung_or_gone_pages_say_so_and_come_back_by_their_own_timers(tmp_path, trouble):
    """Issue 32: with Redis hung (SIGSTOP) or killed, a page's next look at the room raised redis-py's error
    (Streamlit's redacted box), the teacher lost the controls, and no page came back without a reload. Here the
    student's check finds Redis away: its page says so; the teacher changes the seed meanwhile. Redis back (killed:
    started again on its append-only file), each page's own timer (a look every ``CHECK_SECONDS``, fired here as a
    browser fires it) takes it back into the room, and the student shows the teacher's change."""
    redis = RedisProcess(tmp_path, persist=True).start()

    async def scenario(url: str) -> dict:
        async with Tab(url) as teacher, Tab(url) as student:
            code = await start_room(teacher)
            await student.open({"room": code})
            [check] = student.auto_reruns
            redis.hang() if trouble == "hung" else redis.kill()
            await student.poll(check)  # its next check: the whole page says why
            await teacher.change(seed=77)
            away = {"student": alerts(student), "teacher": alerts(teacher), "seed box": teacher.values.get("seed")}
            away["exceptions"] = exceptions(student.page) + exceptions(teacher.page)
            away["timers"] = [*student.auto_reruns.values(), *teacher.auto_reruns.values()]
            redis.resume() if trouble == "hung" else redis.start()
            await asyncio.sleep(AWAY_SECONDS)
            for tab in (teacher, student):  # each page's one timer (``away["timers"]``): its look at the room
                for look in list(tab.auto_reruns)[:1]:
                    await tab.poll(look)
            back = {
                "student": alerts(student),
                "teacher": alerts(teacher),
                "follows": " ".join(student.page.texts("markdown")),
            }
            back["exceptions"] = exceptions(student.page) + exceptions(teacher.page)
            return {"code": code, "away": away, "back": back}

    try:
        with streamlit_server(env={REDIS_URL: redis.url}) as (url, _):
            r = asyncio.run(scenario(url))
    finally:
        redis.stop()
    away, back = r["away"], r["back"]
    assert not away["exceptions"] and not back["exceptions"], (away["exceptions"], back["exceptions"])
    for who in ("student", "teacher"):
        assert "The room's server cannot be reached right now" in away[who], away[who]
        assert f"asks again every {CHECK_SECONDS:g} s" in away[who]
    assert away["seed box"] == 77 and away["timers"] == [CHECK_SECONDS, CHECK_SECONDS]  # the teacher's controls
    assert f"You run room {r['code']}" in back["teacher"] and "cannot be reached" not in back["teacher"]
    assert f"Following room {r['code']}" in back["follows"] and re.search(r"\bseed 77\b", back["follows"]), back
    assert "cannot be reached" not in back["student"]
