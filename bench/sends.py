"""The class sends its sentences while the teacher teaches (issue 34 part 6): a ``bench.classroom`` room, twice.

    python -m bench.sends                        # 200 students, 30 s of sends, then the same room without them
    python -m bench.sends --students 20          # a busy machine

Each run is ``bench.classroom.classroom`` with ``Record.sends`` set: the teacher changes a followed control every
5-10 s (no quiz rounds, in either run) and, between changes, fires its page's timers as a browser does (the seats
line and "N sentences from the class", every ``TALLY_SECONDS``), reading the count each time. Once the class has
joined and sat idle (``IDLE_S``), every student, at its own moment within ``WITHIN_S``, opens "Send a sentence to
your teacher" (a stateful expander in the box's fragment: that fragment reruns), types a sentence into the box and
presses Send (the fragment reruns twice, as a browser commits the box before the click). Every student comes from
127.0.0.1, so the room's limit per address (``SENDS_PER_ADDRESS``, 300 per 30 s) must admit them all.

The second run is the same room, same seed, same teacher's script, nobody sending. Reported: failures (the
classroom's, a send whose page did not say "Sent", the count never reaching the class), the teacher's change ->
student's redraw p95 of both runs and their ratio (target: within 10%), and the time from the last press of Send to
the teacher's page showing the count of every student (target: within 2 s).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import re
import time
from dataclasses import dataclass, field

from bench.classroom import Result, classroom
from bench.protocol import Page, Tab
from dashboard.classroom.class_sentences import TEXT

WITHIN_S = 30.0
"""Every student sends within this many seconds of the first."""
TYPE_S = (2.0, 8.0)
"""Seconds a student takes to type, between opening the box and pressing Send."""
TARGET_SLOWER = 0.10
"""The redraw p95 with sends may be at most 10% above the p95 without."""
TARGET_COUNT_S = 2.0
"""The teacher's page shows the whole class's count within 2 s of the last send."""
SECONDS = 70.0
"""Each run's length after the class joined: the idle window, the 30 s of sends, the count's wait, the end."""
BOX = "class_send"
"""The send box's expander (``class_sentences.sentences_panel``)."""
BUTTON = "class_send_button"
SENT_PREFIX = "Sent:"
"""How the page begins its message once the room took a sentence (``class_sentences._send``)."""
COUNT = re.compile(r"^(\d+) sentences? from the class$")


def count_shown(texts: list[str]) -> int | None:
    """The count "N sentences from the class" among a page's markdown texts (captions), or None."""
    return next((int(m.group(1)) for t in texts if (m := COUNT.match(t.strip()))), None)


def slower(p95_with: float, p95_without: float) -> float:
    """How much slower the redraws were with the sends: 0.05 is 5% (NaN when either run measured none)."""
    if not p95_without > 0 or math.isnan(p95_with):
        return math.nan
    return p95_with / p95_without - 1


def meets(slowdown: float, count_s: float | None, failures: int) -> bool:
    """The row's targets: no failure, redraws at most ``TARGET_SLOWER`` slower, the count within
    ``TARGET_COUNT_S`` (None: never shown). NaN meets nothing; the ratio is taken to 6 decimals (1.1 / 1.0 - 1 is
    0.10000000000000009 in floats)."""
    return failures == 0 and round(slowdown, 6) <= TARGET_SLOWER and count_s is not None and count_s <= TARGET_COUNT_S


def plan(students: int, seed: int) -> dict[int, tuple[float, float]]:
    """Student -> (seconds into the window it opens the box, seconds it presses Send), both within ``WITHIN_S``."""
    rng = random.Random(seed)
    out = {}
    for i in range(students):
        press = rng.uniform(TYPE_S[0], WITHIN_S)
        out[i] = (max(0.0, press - rng.uniform(*TYPE_S)), press)
    return out


@dataclass
class Sends:
    """``Record.sends``: who sends when, and what happened (comes back from the clients' process with the Record)."""

    students: int
    seed: int = 0
    start: float = math.inf
    """When the window opens (monotonic): set by the teacher once the class sat idle."""
    when: dict[int, tuple[float, float]] = field(default_factory=dict)
    steps: dict[int, int] = field(default_factory=dict)
    """Student -> steps done: 1 the box opened, 2 sent."""
    pressed: dict[int, float] = field(default_factory=dict)
    """Student -> when it pressed Send."""
    sent: int = 0
    """Pages that said the sentence was sent."""
    failures: list[str] = field(default_factory=list)
    counts: list[tuple[float, int]] = field(default_factory=list)
    """(when, count) each time the teacher's page drew the count."""
    shown: float | None = None
    """When the teacher's page first showed every student's sentence."""
    timers: dict[str, float] = field(default_factory=dict)
    """The teacher's page's timers: fragment -> when it fires next (kept across the teacher's changes)."""

    def __post_init__(self) -> None:
        self.when = self.when or plan(self.students, self.seed)

    def due(self, i: int) -> float:
        """When student ``i`` acts next (inf: never, or done)."""
        step = self.steps.get(i, 0)
        return math.inf if i not in self.when or step >= 2 else self.start + self.when[i][step]

    async def step(self, tab: Tab, i: int) -> Page:
        """Student ``i``'s next step: open the box (its fragment reruns), or type and press Send."""
        step = self.steps[i] = self.steps.get(i, 0) + 1
        if step == 1:
            return await tab.change(**{BOX: True})
        await _set(tab, TEXT, f"student {i} thinks the cat sat on the mat")
        self.pressed[i] = time.monotonic()
        return await _set(tab, BUTTON, True)

    def check(self, tab: Tab, i: int) -> None:
        """At the end: a student that pressed Send has its page saying so."""
        if i not in self.when:
            return
        said = [t for t in tab.page.texts("alert") if t]
        if any(t.startswith(SENT_PREFIX) for t in said):
            self.sent += 1
        else:
            self.failures.append(f"student {i}: steps {self.steps.get(i, 0)}, the page says {said}")

    async def watch(self, tab: Tab, seconds: float) -> None:
        """``seconds`` of the teacher's tab left alone: its timers fire at their intervals (their phase kept across
        the teacher's changes, as a browser's are), and each count drawn is recorded."""
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            for f, every in tab.auto_reruns.items():
                self.timers.setdefault(f, now + every)
            if not self.timers:
                await asyncio.sleep(end - now)
                return
            f, at = min(self.timers.items(), key=lambda kv: kv[1])
            if at > now:
                await asyncio.sleep(min(at, end) - now)
                continue
            every = tab.auto_reruns.get(f)
            if every is None:  # a timer the page no longer has
                del self.timers[f]
                continue
            self.timers[f] = at + every * max(1, math.ceil((now - at) / every))
            page = await tab.poll(f)
            n = count_shown(page.texts("markdown"))
            if n is not None:
                self.counts.append((time.monotonic(), n))
                if self.shown is None and self.students and n >= self.students:
                    self.shown = time.monotonic()

    def count_seconds(self) -> float | None:
        """Last press of Send -> the teacher's page showing every student's sentence (None: never shown)."""
        if self.shown is None or not self.pressed:
            return None
        return self.shown - max(self.pressed.values())


async def _set(tab: Tab, key: str, value: object) -> Page:
    """Set a widget of the send box; first, if a push overtook the box's own last run (the tab's page lacks the
    box until it comes), read that run."""
    while key not in tab.page.widgets():
        await tab.next_run(timeout=tab.timeout)
    return await tab.change(**{key: value})


def run(students: int, seconds: float, seed: int) -> int:
    """The room with the sends, then without: the row."""
    sends = Sends(students, seed)
    with_ = classroom(students, seconds, seed, sends=sends)
    without = classroom(students, seconds, seed, sends=Sends(0, seed))
    failures = with_.failures + len(sends.failures) + without.failures
    count_s = sends.count_seconds()
    last = sends.counts[-1][1] if sends.counts else None
    if sends.shown is None:
        failures += 1
    slowdown = slower(with_.p95, without.p95)
    for f in sends.failures[:10]:
        print(f"  send failed: {f}")
    print(f"sends: {students} students pressed Send ({len(sends.pressed)}), {sends.sent} pages said it was sent; the "
          f"teacher's page last showed {last} sentences; last press -> count of all: "
          f"{'never' if count_s is None else f'{count_s:.2f} s'}")  # fmt: skip
    print(f"  redraw p95 with sends {with_.p95:.3f} s, without {without.p95:.3f} s: {100 * slowdown:+.1f}%")
    print(row(students, with_, without, count_s, failures))
    ok = meets(slowdown, count_s, failures)
    print(f"{'meets' if ok else 'MISSES'} the targets: 0 failures, p95 within {100 * TARGET_SLOWER:.0f}% of the run "
          f"without sends, the count within {TARGET_COUNT_S:g} s of the last send")  # fmt: skip
    return 0 if ok else 1


ROW_HEAD = (
    "| students | failures | redraw p95 with sends | without | slower by | last send -> count | clients starved |\n"
    "|---|---|---|---|---|---|---|"
)


def row(students: int, with_: Result, without: Result, count_s: float | None, failures: int) -> str:
    count = "never" if count_s is None else f"{count_s:.2f} s"
    slowdown = slower(with_.p95, without.p95)
    return (
        f"{ROW_HEAD}\n| {students} | {failures} | {with_.p95:.2f} s | {without.p95:.2f} s | {100 * slowdown:+.0f}% | "
        f"{count} | {with_.starved} / {without.starved} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=SECONDS, help="each run's length after the class joined")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    return run(args.students, args.seconds, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
