"""What the load benches measure on the server: its resident memory and CPU time, and percentiles of a run.

Used by ``bench.load``, ``bench.classroom`` and ``bench.memory``; ``TARGET_RSS_MB`` is the memory target
all three hold the server to (Community Cloud publishes 690 MB to 2.7 GB: README.md, "Memory").
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import psutil

TARGET_RSS_MB = 600.0


class PeakRss:
    """Sample the server's resident memory (process and children) every ``period`` seconds in a thread."""

    def __init__(self, pid: int, period: float = 0.25) -> None:
        self.proc = psutil.Process(pid)
        self.period = period
        self.peak = 0
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def cpu(self) -> float:
        """CPU seconds (user + system) used so far by the server and its children."""
        total = 0.0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def now(self) -> int:
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = self.now()
            self.samples.append(rss)
            self.peak = max(self.peak, rss)
            self._stop.wait(self.period)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")
