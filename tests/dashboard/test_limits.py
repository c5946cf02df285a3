"""Issue 18's attacks on training and on the runtime API the limits read, with the issue's numbers as the cases.

Rooms' limits are in ``test_rooms.py`` (both store backends); the two-process Redis room and the real-socket seat
and flood checks in ``test_rooms_live.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import hypothesis
from hypothesis import strategies as hyp
from streamlit.runtime import Runtime

from core.training import recommended, train
from dashboard.compute.training_jobs import CANCELLED, JOBS_PER_ADDRESS, MAX_JOBS, WAIT_LOOK_SECONDS, Registry
from dashboard.serve import clients, streamlit_runtime

WAIT = 60
HALL = "198.51.100.4"
"""One address for a whole script (or a lecture hall behind its NAT)."""


def small(seed: int, steps: int = 20):
    return dataclasses.replace(recommended("shift"), seed=seed, steps=steps)


def gated(calls: list, gate: threading.Event):
    def trainer(settings, **kwargs):
        calls.append(settings)
        gate.wait(WAIT)
        return train(settings, **kwargs)

    return trainer


def wait_done(job) -> None:
    deadline = time.monotonic() + WAIT
    while job.active:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.02)


def test_seven_fresh_sockets_from_one_address_do_not_fill_the_queue():
    """Issue 18: seven fresh sockets queued seven heavy runs; a real student was told "6 trainings are running"."""
    calls, gate = [], threading.Event()
    reg = Registry(gated(calls, gate))
    outcomes = [reg.start(small(seed), f"fresh-socket-{seed}", HALL) for seed in range(7)]
    refused = [o for o in outcomes if isinstance(o, str)]
    assert len(refused) == 7 - JOBS_PER_ADDRESS and all("Your network already has 3" in r for r in refused)
    student = reg.start(small(99), "real student", "192.0.2.10")
    assert not isinstance(student, str)  # the queue still has room for everyone else
    assert JOBS_PER_ADDRESS < MAX_JOBS
    gate.set()
    for job in [*outcomes[:JOBS_PER_ADDRESS], student]:
        wait_done(job)


def test_a_job_no_open_tab_watches_is_cancelled_and_keeps_nothing():
    """Issue 18: the seven runs kept training after their sockets closed, and memory stayed 520 MB up."""
    calls, gate, tabs = [], threading.Event(), {"flood-1": True, "flood-2": True}
    reg = Registry(gated(calls, gate), max_running=1, alive=tabs.get)
    running = reg.start(small(1, steps=2000), "flood-1", HALL)
    waiting = reg.start(small(2, steps=2000), "flood-2", HALL)
    tabs.update({"flood-1": False, "flood-2": False})  # both sockets close
    gate.set()
    wait_done(running)
    wait_done(waiting)
    assert running.error == CANCELLED and waiting.error == CANCELLED
    assert running.trained is None and reg.job(small(1, steps=2000)) is None  # nothing kept
    assert reg.job(small(2, steps=2000)) is None and len(calls) == 1  # the waiting one never trained
    again = reg.start(small(1, steps=2000), "comes back", HALL)  # a new request trains afresh
    assert again is not running
    reg.stop(small(1, steps=2000), "comes back")
    wait_done(again)


def test_every_change_of_a_jobs_state_is_reported_and_a_dropped_job_says_why():
    """A following page does not poll the teacher's job: it is redrawn when ``when_changed`` reports a job starting
    to train, ending, cancelled (every tab closed) or evicted. Once per change, however often a callback is given."""
    calls, gate, tabs = [], threading.Event(), {"first": True, "second": True, "third": False}
    reg = Registry(gated(calls, gate), keep_finished=1, alive=tabs.get)
    seen, runs = [], [small(1), small(2), small(3)]

    def report() -> None:  # each run's state as the callback finds it: its job's, or why the registry dropped it
        seen.append(tuple(job.state if (job := reg.job(s)) else reg.dropped(s) for s in runs))

    reg.when_changed(report)
    reg.when_changed(report)  # every following page's run gives it again: still one report per change

    def reported(n: int) -> None:
        deadline = time.monotonic() + WAIT
        while len(seen) < n:
            assert time.monotonic() < deadline, f"{len(seen)} of {n} changes reported"
            time.sleep(0.02)

    first = reg.start(runs[0], "first", HALL)
    reported(1)  # it trains (the gate holds it there)
    gate.set()
    wait_done(first)
    reported(2)
    second = reg.start(runs[1], "second", HALL)
    wait_done(second)
    reported(4)  # its end evicts the first (one finished run is kept)
    third = reg.start(runs[2], "third", HALL)  # its tab has closed already
    wait_done(third)
    reported(6)
    assert seen == [
        ("training", None, None),
        ("done", None, None),
        ("done", "training", None),
        ("evicted", "done", None),
        ("evicted", "done", "training"),
        ("evicted", "done", "cancelled"),
    ]
    again = reg.start(runs[0], "first", HALL)  # trained afresh: no longer a dropped run
    assert reg.dropped(runs[0]) is None and reg.job(runs[0]) is again
    reg.stop(runs[0], "first")
    wait_done(again)


def test_three_closed_tabs_no_longer_block_the_hall():
    """Issue 32: three tabs blocked training for the whole hall. Their jobs end at their next step (or, waiting, within
    ``WAIT_LOOK_SECONDS``); from the moment the tabs close they count against neither the address nor the server."""
    calls, gate, tabs = [], threading.Event(), {f"tab-{i}": True for i in range(MAX_JOBS + 1)}
    reg = Registry(gated(calls, gate), max_running=1, alive=tabs.get)
    three = [reg.start(small(i), f"tab-{i}", HALL) for i in range(JOBS_PER_ADDRESS)]
    assert "Your network already has 3" in reg.start(small(50), "tab-3", HALL)
    others = [reg.start(small(10 + i), f"tab-{4 + i}", f"192.0.2.{i}") for i in range(MAX_JOBS - JOBS_PER_ADDRESS)]
    assert "The server is busy" in reg.start(small(60), "a student elsewhere", "192.0.2.99")
    for i in range(JOBS_PER_ADDRESS):
        tabs[f"tab-{i}"] = False  # the three tabs close; their jobs are still training or waiting (the gate)
    assert three[0].active  # still training: its next step ends it
    student = reg.start(small(70), "tab-3", HALL)  # at once: the hall is not told its network has 3
    assert not isinstance(student, str), student
    gate.set()
    for job in [*three, *others, student]:
        reg.stop(job.settings, job.owner)
        wait_done(job)
    assert all(job.error == CANCELLED for job in three)


def test_a_waiting_job_whose_tabs_closed_ends_without_waiting_for_a_slot():
    """A closed tab's job counts against no limit, so it must not wait behind a long run either: it ends within
    ``WAIT_LOOK_SECONDS`` while the running job still holds the only slot."""
    calls, gate, tabs = [], threading.Event(), {"running": True, "waiting": True}
    reg = Registry(gated(calls, gate), max_running=1, alive=tabs.get)
    running = reg.start(small(1), "running", HALL)
    waiting = reg.start(small(2), "waiting", "192.0.2.10")
    tabs["waiting"] = False
    deadline = time.monotonic() + WAIT_LOOK_SECONDS + 5
    while waiting.active:
        assert time.monotonic() < deadline, "the waiting job is still waiting for the slot"
        time.sleep(0.05)
    assert running.active and waiting.error == CANCELLED and reg.job(small(2)) is None and len(calls) == 1
    gate.set()
    wait_done(running)


def test_a_job_trains_on_while_one_of_its_askers_watches_and_only_once():
    calls, gate, tabs = [], threading.Event(), {"first": True, "second": True}
    reg = Registry(gated(calls, gate), alive=tabs.get)
    job = reg.start(small(3), "first", HALL)
    assert reg.start(small(3), "second", "192.0.2.10") is job  # identical settings train once
    tabs["first"] = False  # the starter closes its tab; the second still watches
    gate.set()
    wait_done(job)
    assert job.error is None and job.trained is not None and job.trained.result.steps_done == 20
    assert len(calls) == 1


def test_a_job_whose_tabs_the_runtime_cannot_judge_runs_to_the_end():
    """No runtime (AppTest) or a session the runtime forgot: the job is not cancelled on a guess."""
    reg = Registry(alive=lambda session: None)
    job = reg.start(small(4), "unknown", HALL)
    wait_done(job)
    assert job.trained is not None and job.error is None


def test_without_a_runtime_no_tab_is_judged():
    assert not Runtime.exists() and clients.alive("any") is None


def test_alive_tells_a_forgotten_session_of_this_process_from_one_of_another(monkeypatch):
    """A session the runtime has forgotten is gone when it ran here (``here=True``, the room watcher's pages), and
    unknown otherwise (it may run on another process); a connected one is alive, a disconnected one still stored
    has gone."""

    class Sessions:  # the two calls ``alive`` makes on Streamlit's session manager
        def is_active_session(self, session_id):
            return session_id == "open"

        def get_session_info(self, session_id):
            return object() if session_id in ("open", "closed") else None

    monkeypatch.setattr(streamlit_runtime, "sessions", Sessions)
    assert clients.alive("open") is True and clients.alive("open", here=True) is True
    assert clients.alive("closed") is False and clients.alive("closed", here=True) is False
    assert clients.alive("forgotten") is None
    assert clients.alive("forgotten", here=True) is False


def test_the_servers_registry_counts_a_forgotten_tab_as_gone(monkeypatch):
    """Every session that asks the registry for a job ran on this process, so one Streamlit no longer knows has
    closed (``clients.alive(..., here=True)``); asked without ``here``, such a tab read as "cannot tell", and a job
    whose every asker had gone trained on."""
    from dashboard.compute import training_jobs

    asked = []
    monkeypatch.setattr(training_jobs, "alive", lambda session, here=False: asked.append((session, here)) or False)
    assert training_jobs.registry()._alive("s1") is False
    assert asked == [("s1", True)]


# -- the address a client counts against: a forged X-Forwarded-For (issue 32 part 3) ---------------------------------
HOSTS = ["127.0.0.1", "::1", "[::1]:80", "127.0.0.1:5", "::0001", "203.0.113.9", "203.0.113.9:443", "10.0.0.1"]
HOSTS += ["2001:db8::1", "[2001:db8::1]:8", "[2001:db8::1]x", "", " ", "unknown", "local", "1.2.3.4:x"]
HOSTS += ["203.0.113.50", "[2001:db8::9]:1", "198.51.100.7:80"]  # the peers of the test below, as entries
"""Entries a forged header may carry: loopback in its spellings, other addresses with and without ports (the
client's own among them), junk."""
header_values = hyp.lists(
    hyp.lists(
        hyp.one_of(hyp.sampled_from(HOSTS), hyp.text(hyp.characters(codec="latin-1"), max_size=6)), max_size=5
    ).map(", ".join),
    min_size=1,
    max_size=3,
)
"""One to three X-Forwarded-For headers (a client may send it more than once), each a list of entries."""


def uvicorn_reports(peer: str, values: list[str], trusted: str | None = None) -> str | None:
    """What Streamlit reports as ``st.context.ip_address`` for a websocket from ``peer`` with these X-Forwarded-For
    values: uvicorn's own middleware rewrites the scope as Streamlit's server runs it (``trusted``: uvicorn's
    ``forwarded_allow_ips``, None for its default), then Streamlit's rule (None for 127.0.0.1 and ::1)."""
    from uvicorn.config import Config
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    config = Config(app=None) if trusted is None else Config(app=None, forwarded_allow_ips=trusted)
    assert config.proxy_headers  # what Streamlit leaves on (test_the_address_reads_what_uvicorn_reads)
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"]

    scope = {"type": "websocket", "client": (peer, 50000), "headers": [(b"x-forwarded-for", v.encode("latin-1"))
                                                                        for v in values]}  # fmt: skip
    asyncio.run(ProxyHeadersMiddleware(app, trusted_hosts=config.forwarded_allow_ips)(scope, None, None))
    host = seen["client"][0]
    return None if host in ("127.0.0.1", "::1") else host


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(values=header_values, peer=hyp.sampled_from(["127.0.0.1", "::1"]))
def test_a_forged_forwarded_for_from_this_machine_counts_against_this_machine(values, peer):
    """Issue 32: uvicorn believed X-Forwarded-For from 127.0.0.1, so 45 forged rooms filled the server and three forged
    tabs the training queue. Whatever the header says, a page from this machine counts as this machine's."""
    assert clients.client_address(uvicorn_reports(peer, []), [], proxies_named=False) == clients.LOCAL
    assert clients.client_address(uvicorn_reports(peer, values), values, proxies_named=False) == clients.LOCAL


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(values=header_values, peer=hyp.sampled_from(["203.0.113.50", "198.51.100.7", "2001:db8::9"]))
def test_a_client_elsewhere_counts_against_its_own_address_whatever_it_forges(values, peer):
    """uvicorn does not believe a client elsewhere, and neither does the app: it counts against its own address. The
    one exception: a header whose chosen entry is the client's own address puts it with this machine's share."""
    from uvicorn.middleware.proxy_headers import _TrustedHosts  # uvicorn's own choice, not the one under test

    picked, _ = _TrustedHosts("127.0.0.1,::1").get_trusted_client_address(", ".join(values))
    counted = clients.client_address(uvicorn_reports(peer, values), values, proxies_named=False)
    assert counted == (clients.LOCAL if picked == peer else peer)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(values=header_values, peer=hyp.sampled_from(["127.0.0.1", "10.0.0.2", "203.0.113.50"]))
def test_a_deployment_that_names_its_proxies_gets_the_address_uvicorn_reads_through_them(values, peer):
    """FORWARDED_ALLOW_IPS set (nginx or Caddy on this machine, README): uvicorn reads the header from those proxies
    only, and the app takes what uvicorn reports."""
    reported = uvicorn_reports(peer, values, trusted="127.0.0.1,10.0.0.0/8")
    assert clients.client_address(reported, values, proxies_named=True) == (reported or clients.LOCAL)


def test_the_address_reads_what_uvicorn_reads(monkeypatch):
    """Streamlit 1.67 leaves uvicorn's proxy_headers on and its forwarded_allow_ips to FORWARDED_ALLOW_IPS (unset:
    127.0.0.1 and ::1): the case ``clients.client_address`` undoes, reading the same variable. A Streamlit that
    passes either fails here. Without a runtime (no connection) a page is this machine's, with no browser id."""
    from streamlit.web.server.starlette import starlette_server
    from uvicorn.config import Config

    kwargs = starlette_server._get_uvicorn_config_kwargs()
    assert not {"proxy_headers", "forwarded_allow_ips"} & kwargs.keys()
    monkeypatch.delenv(clients.FORWARDED_ALLOW_IPS, raising=False)
    config = Config(app=None, **kwargs)
    assert config.proxy_headers and config.forwarded_allow_ips == ",".join(clients.UVICORN_TRUSTS)
    assert clients.address() == clients.LOCAL and clients.browser() == ""


# -- the browser: Streamlit's XSRF cookie (issue 31 part 7) ----------------------------------------------------------
@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(token=hyp.binary(min_size=1, max_size=32), other=hyp.binary(min_size=1, max_size=32))
def test_a_browsers_id_is_its_xsrf_token_however_streamlit_masked_it(token, other):
    """Streamlit sets the cookie anew (a new mask) on each health check: two cookies of one browser give one id, as
    Streamlit's own decoder reads them, and another browser's token another."""
    from streamlit.web.server.starlette.starlette_app_utils import (
        decode_xsrf_token_string,
        generate_xsrf_token_string,
    )

    first, again = generate_xsrf_token_string(token), generate_xsrf_token_string(token)
    assert clients.xsrf_token(first) == clients.xsrf_token(again) == decode_xsrf_token_string(first)[0].hex()
    assert (clients.xsrf_token(generate_xsrf_token_string(other)) == clients.xsrf_token(first)) == (other == token)
    assert clients.xsrf_token(token.hex()) == token.hex()  # version 1: the token itself


def test_a_cookie_that_is_no_xsrf_token_gives_no_browser():
    for junk in ("", "2|", "2|zz|00|1", "2|0102|0304|1", "not hex", "2|01020304|0g|5"):
        assert clients.xsrf_token(junk) == ""
    assert clients.XSRF_COOKIE == "_streamlit_xsrf"
