"""What one student's redraw costs the server: CPU per follower redraw, and where it goes (a profile).

    python -m bench.follower                     # 20 students, 8 changes: ms of server CPU per follower redraw
    python -m bench.follower --profile /tmp/f.prof   # the same under bench.profiled: a follower run's top functions
    python -m bench.follower --view steps --profile /tmp/s.prof   # a follower's redraw of the steps view
    python -m bench.follower --against main --pairs 3  # this checkout and main's, alternately: before/after, a ratio

A teacher starts a room; ``--students`` protocol tabs (``bench.protocol.Tab``) join it. First the teacher alone
changes the seed ``--changes`` times (its own runs' CPU), then with the class in the room: every change, each
student's page is redrawn (pushed by the server, or on its poll, whichever the page does) and read to its end.
Server CPU over those rounds, less the teacher's own, divided by the redraws, is one follower redraw's cost: the
figure that decides how many students one process serves (N x cost must fit the 2 s target). CPU is the server
process's own (``/proc``), so the clients' CPU on the same cores does not count. Bytes and elements are what one
student's redraw received. ``--against REF`` runs REF's app (``git archive``) and this one in turns, on fresh servers,
so both see the same load; the ratio is the median of each pair's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import random
import re
import signal
import statistics
import tempfile
import time
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.measure import PeakRss
from bench.protocol import Page, Tab
from bench.streamlit_server import ROOT, checkout, streamlit_server
from core.sources import WEIGHTS
from dashboard.views import VIEWS

IDLE_S = 10.0
"""Seconds nobody changes anything, at the end: what idle students cost."""
FRAGMENT_RUN = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
FOLLOWER_RUN = "_followed_body"
"""The function every run of a following page's body calls (``classroom.follower_page``): ``--profile`` keeps the
runs that called it, a student's redraws, not the teacher's."""
POLLING = 1.0
"""A page whose fragment reruns itself this often (or faster) follows by polling; a slower one is pushed."""


async def redrawn(tab: Tab, timeout: float = 60) -> Page:
    """The student's next whole run: on its poll (a polling page), or the one the server pushes."""
    polls = [(f, s) for f, s in tab.auto_reruns.items() if s <= POLLING]
    if not polls:  # the server's push (a timer's look it finished on its own redraws nothing: wait on)
        end = time.monotonic() + timeout
        while not (page := await tab.next_run(max(0.0, end - time.monotonic()))).redrew:
            pass
        return page
    [(fragment, interval)] = polls
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await asyncio.sleep(interval)
        page = await tab.poll(fragment)
        if page.status != ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            return page
    raise TimeoutError("no redraw")


async def as_a_browser(tab: Tab, seconds: float) -> None:
    """Nothing changes for ``seconds``: the tab runs its page's self-rerunning fragments, as a browser's timers do."""
    end = time.monotonic() + seconds
    phase = random.Random(id(tab)).uniform  # timers at any phase: a 10 s window sees its share of a 30 s check
    due = {f: time.monotonic() + phase(0, s) for f, s in tab.auto_reruns.items()}
    while due and (now := time.monotonic()) < end:
        fragment, at = min(due.items(), key=lambda d: d[1])
        if at >= end:
            break
        await asyncio.sleep(max(0.0, at - now))
        await tab.poll(fragment)
        due[fragment] = at + tab.auto_reruns.get(fragment, seconds)
    await asyncio.sleep(max(0.0, end - time.monotonic()))


def main_thread_cpu(pid: int) -> float:
    """CPU seconds of the server's main thread: its event loop, which sends every message of every session."""
    with open(f"/proc/{pid}/task/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def shows_seed(page: Page, tab: Tab, seed: int) -> bool:
    """The student's page follows the teacher's seed: its seed widget, or on a following page (which draws no
    settings widgets, ``dashboard/classroom/follower_page.py``) the teacher's settings line."""
    if "seed" in tab.values:
        return tab.values["seed"] == seed
    return any(re.search(rf"\bseed {seed}\b", e.markdown.body) for e in page.of("markdown"))


async def rounds(
    url: str, students: int, changes: int, cpu, loop_cpu, measuring=lambda: None, view: str = "heads", weights="random"
) -> dict[str, float]:
    async with Tab(url, timeout=120) as teacher:
        await teacher.open({"sentence": "the teacher reads the book to the class", "view": view, "weights": weights})
        await teacher.change(room_start=True)
        code = teacher.values["room"]
        seed = 1
        c0 = cpu()
        for _ in range(changes):
            seed += 1
            await teacher.change(seed=seed)
        alone = (cpu() - c0) / changes
        tabs = [Tab(url, timeout=120) for _ in range(students)]
        for t in tabs:
            await t.__aenter__()
        try:
            for t in tabs:
                await t.open({"room": code})
            pushed = not any(s <= POLLING for s in tabs[0].auto_reruns.values())
            for _ in range(2):  # warm: every session has run the new code path once
                seed += 1
                await asyncio.gather(teacher.change(seed=seed), *(redrawn(t) for t in tabs))
            measuring()  # a profiled server: forget the runs so far (joins, warm-up, imports)
            c0, l0, t0, fails, received, elements = cpu(), loop_cpu(), time.monotonic(), 0, 0, 0
            for _ in range(changes):
                seed += 1
                pages = (await asyncio.gather(teacher.change(seed=seed), *(redrawn(t) for t in tabs)))[1:]
                fails += sum(not p.finished or not shows_seed(p, t, seed) for p, t in zip(pages, tabs, strict=True))
                received += sum(p.received for p in pages)
                elements += sum(len(p.elements) for p in pages)
            total, loop, wall = cpu() - c0, loop_cpu() - l0, time.monotonic() - t0
            idle0 = cpu()
            await asyncio.gather(*(as_a_browser(t, IDLE_S) for t in tabs))
            idle = cpu() - idle0
        finally:
            for t in tabs:
                await t.__aexit__(None, None, None)
    per = (total - changes * alone) / (changes * students)
    loop_share = loop / total
    return {
        "alone": alone,
        "per": per,
        "wall": wall,
        "fails": fails,
        "pushed": pushed,
        "idle": idle,
        "loop": loop_share,
        "bytes": received / (changes * students),
        "elements": elements / (changes * students),
    }


def measure(args: argparse.Namespace, root: Path = ROOT) -> dict[str, float]:
    """One server (``root``'s app), one class: the rounds' figures; with ``--profile``, the profile file written."""
    extra = {}
    if args.profile:
        env = {"ATTENTION_LAB_PROFILE": args.profile, "ATTENTION_LAB_PROFILE_ONLY": FOLLOWER_RUN}
        extra = {"module": "bench.profiled", "env": env}
    with streamlit_server(root=root, **extra) as (url, proc), PeakRss(proc.pid) as rss:

        def measuring() -> None:
            if args.profile:
                proc.send_signal(signal.SIGUSR2)

        loop_cpu = lambda: main_thread_cpu(proc.pid)  # noqa: E731
        r = asyncio.run(rounds(url, args.students, args.changes, rss.cpu, loop_cpu, measuring, args.view, args.weights))
        if args.profile:
            before = os.path.getmtime(args.profile) if os.path.exists(args.profile) else None
            proc.send_signal(signal.SIGUSR1)
            end = time.monotonic() + 60
            while time.monotonic() < end and (
                not os.path.exists(args.profile) or os.path.getmtime(args.profile) == before
            ):
                time.sleep(0.5)
            time.sleep(1)  # the file is written in one go; let it finish
    return r


def report(r: dict[str, float], args: argparse.Namespace, name: str = "") -> None:
    how = "pushed by the server" if r["pushed"] else "on the page's poll"
    print(f"follower{name}: {args.view} view, {args.weights} weights, {args.students} students, {args.changes} "
          f"changes, redraws {how}; failures {r['fails']}")  # fmt: skip
    print(
        f"  teacher's own run {1000 * r['alone']:.1f} ms CPU; one follower redraw {1000 * r['per']:.1f} ms server CPU"
    )
    print(f"  one follower redraw received {r['bytes'] / 1000:.1f} kB in {r['elements']:.0f} elements")
    print(
        f"  of the server's CPU in those rounds, {100 * r['loop']:.0f}% was its event loop (messages), the rest scripts"
    )
    print(f"  rounds took {r['wall'] / args.changes:.2f} s each (all {args.students} redrawn)")
    print(f"  idle: {1000 * r['idle'] / IDLE_S / args.students:.2f} ms server CPU per student per second")


def against(args: argparse.Namespace) -> int:
    """REF's app and this one in turns, ``--pairs`` times: each cost, and this one's over REF's."""
    with tempfile.TemporaryDirectory(prefix="follower-ref-") as into:
        ref_root = checkout(args.against, into)
        pairs = []
        for i in range(args.pairs):
            old = measure(args, ref_root)
            new = measure(args)
            report(old, args, f" [{args.against}, pair {i + 1}]")
            report(new, args, f" [this checkout, pair {i + 1}]")
            pairs.append((old, new))
    ratios = [n["per"] / o["per"] for o, n in pairs]
    byte_ratios = [n["bytes"] / o["bytes"] for o, n in pairs]
    print(
        f"follower redraw, this checkout / {args.against}: CPU x{statistics.median(ratios):.2f} "
        f"(pairs {', '.join(f'{r:.2f}' for r in ratios)}); "
        f"{statistics.median(1000 * o['per'] for o, _ in pairs):.1f} -> "
        f"{statistics.median(1000 * n['per'] for _, n in pairs):.1f} ms median; "
        f"bytes x{statistics.median(byte_ratios):.2f}; elements "
        f"{pairs[0][0]['elements']:.0f} -> {pairs[0][1]['elements']:.0f}"
    )
    return 0 if all(o["fails"] == 0 == n["fails"] for o, n in pairs) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=20)
    ap.add_argument("--changes", type=int, default=8)
    ap.add_argument("--view", default="heads", choices=VIEWS, help="the view the teacher shows (default heads)")
    ap.add_argument("--weights", default="random", choices=WEIGHTS, help="the teacher's weights (default random)")
    ap.add_argument("--profile", metavar="FILE", help="run the server under bench.profiled; write pstats to FILE")
    ap.add_argument("--against", metavar="REF", help="also run REF's app (a commit, e.g. main), in turns with this")
    ap.add_argument("--pairs", type=int, default=3, help="with --against: how many turns each")
    args = ap.parse_args()
    if args.against:
        if args.profile:
            ap.error("--profile profiles this checkout only: run it without --against")
        return against(args)
    r = measure(args)
    report(r, args)
    if args.profile:
        stats = pstats.Stats(args.profile)
        runs = sum(n for (_, _, f), (_, n, *_) in stats.stats.items() if f == FOLLOWER_RUN)
        print(f"profile: {runs} follower runs, {1000 * stats.total_tt / max(runs, 1):.1f} ms profiled CPU per run")
        stats.sort_stats("cumulative").print_stats(45)
    return 0 if r["fails"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
