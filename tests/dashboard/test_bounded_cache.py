"""``dashboard.compute.bounded_cache``: every cache of the dashboard bounded by bytes, within one budget, and each entry
measured by what it really keeps alive."""

from __future__ import annotations

import ast
import dataclasses
import gc
import importlib
import pickle
import pkgutil
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import dashboard
from bench.memory import cache_bounds
from core import AttentionConfig, run
from core.kv_cache import decode
from dashboard.compute import bounded_cache, computations, training_jobs
from dashboard.compute.bounded_cache import CACHE_BUDGET, MB, BoundedCache, held_bytes
from tests.conftest import ROOT

DASHBOARD = ROOT / "dashboard"
SINGLETONS = {
    "computations.py:minilm_or_error": "the loaded model: part of the process at rest, arrays resident (in no cache)",
    "streamlit_runtime.py:_chart_internals": "st.plotly_chart's imported functions, one namespace: no data",
    "room_page.py:store": "the room store: what it holds is bounded by the room limits",
    "training_jobs.py:registry": "finished trainings, at most KEEP_BYTES: counted in CACHE_BUDGET below",
    "tour_export.py:plotly_js": "plotly.js as text (4.8 MB), made the first time a tour is downloaded",
}
"""Streamlit caches of a function without arguments: one value per process, each bounded by what it is."""
LARGEST = AttentionConfig(d_model=512, n_heads=16, positional="sinusoidal")
TOKENS = tuple(f"w{i % 20}" for i in range(64))


def test_every_cache_in_dashboard_is_bounded_by_bytes():
    """A cache keyed by arguments is a ``bounded_cache.cache(max_bytes=...)``: ``st.cache_data(max_entries=16)``
    kept 16 entries of whatever size (16 largest kv_cache runs: 430 MB), and an ``lru_cache`` is the same. Read
    from the source by ``bench.memory.cache_bounds``, which bench.memory prints."""
    found = cache_bounds()
    assert len(found) >= 15, "the scan is looking in the wrong place"
    for cached in found:
        where = f"{Path(cached.file).name}:{cached.function}"
        if cached.max_bytes is None:
            assert where in SINGLETONS, f"{where}: {cached.decorator} is bounded by entries, not bytes"
            assert cached.bounded, f"{where}: a singleton takes no arguments and keeps one value"
        else:
            assert cached.decorator == "bounded_cache.cache" and cached.max_bytes > 0, where


def test_the_caches_together_fit_the_budget():
    """What every cache may hold, with the training registry's results, is at most ``CACHE_BUDGET``; and every
    cache the source declares is counted (none hides from the sum)."""
    for module in pkgutil.walk_packages(dashboard.__path__, "dashboard."):
        if module.name != "dashboard.app":  # the entry file runs the page
            importlib.import_module(module.name)
    caches = [c for c in list(bounded_cache._caches) if c.name.startswith("dashboard.")]
    declared = sum(cached.max_bytes is not None for cached in cache_bounds())
    objects = sum(
        isinstance(node, ast.Call) and ast.unparse(node.func) == "bounded_cache.BoundedCache"
        for path in DASHBOARD.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert len(caches) == declared + objects >= 15
    total = sum(c.max_bytes for c in caches) + training_jobs.KEEP_BYTES
    assert total <= CACHE_BUDGET, f"{total / MB:.0f} MB of caches over the {CACHE_BUDGET / MB:.0f} MB budget"


def distinct_largest_runs(n: int) -> None:
    for seed in range(n):  # each seed its own W matrices: nothing shared between entries
        computations.attention_run(TOKENS, dataclasses.replace(LARGEST, seed=1000 + seed))


def test_largest_runs_keep_no_more_memory_than_the_bound():
    """Twelve largest runs (11 MB each) through ``computations.attention_run``: the memory the cache keeps, as the
    allocator counts it (tracemalloc, NumPy's buffers included), stays within its bound, the newest kept. The
    old ``st.cache_resource(max_entries=32)`` kept all twelve: 132 MB."""
    kept = computations.attention_run.cache
    kept.clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        distinct_largest_runs(12)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held <= kept.max_bytes * 1.02, f"{held / MB:.0f} MB kept"
    assert held >= 0.9 * kept.nbytes  # the cache's count is what the process holds, not an underestimate
    assert 3 <= len(kept) < 12
    newest = dataclasses.replace(LARGEST, seed=1011)
    assert (TOKENS, newest) in kept
    kept.clear()


def test_an_entrys_bytes_are_what_it_keeps_alive():
    """A run's count matches its pickle (every array's bytes, written out independently); a view counts its base
    once, as it keeps it whole; an array marked resident (the loaded model's) counts nothing."""
    largest = run(TOKENS, LARGEST)
    assert abs(held_bytes(largest) - len(pickle.dumps(largest))) < 0.01 * len(pickle.dumps(largest))
    base = np.zeros((1000, 100))  # 800,000 bytes
    assert base.nbytes < held_bytes((base[:10], base[10:], base.T)) < base.nbytes + 2000
    assert held_bytes(base[:1]) > base.nbytes  # one row keeps the whole buffer
    model = np.ones((500, 100))
    bounded_cache.resident({"w": model})
    assert held_bytes((model[:, :3], "x")) < 1000


def test_minilm_runs_count_their_own_arrays_not_the_models():
    """The six layers' runs read the model's W matrices (14 MB, held by the model anyway): an entry counts the
    runs' own arrays only."""
    if isinstance(computations.minilm(), str):
        pytest.skip("MiniLM is not installed here")  # it is in CI and on the dev machine (README)
    runs = computations.minilm_runs("the bank of the river", False)
    weights = {id(r.projections.w_q) for r in runs}
    own = sum(a.nbytes for r in runs for a in (r.x, r.positions, r.trace.weights, r.trace.scores, r.trace.context))
    assert len(weights) == 6 and own < held_bytes(runs) < 14 * MB / 10


def test_the_kv_cache_view_keeps_one_cache_with_the_same_numbers():
    """Each step's K and V are kept as the first t + 1 rows of the last step's: the numbers ``decode`` computed for
    that step, exactly; at the largest settings the steps keep 1.8 MB instead of 18 MB."""
    config = AttentionConfig(d_model=512, n_heads=16, positional="rope")
    cached = computations.cache_run(TOKENS, config)
    full = cached.full
    fresh = decode(
        full.x + full.positions, full.projections, 16, rope=True, scale=full.trace.scale
    )  # the steps as core makes them, each with its own copy of the cache
    for kept, made in zip(cached.steps, fresh, strict=True):
        for name in ("q", "k_cache", "v_cache", "mask", "weights", "output"):
            a, b = getattr(kept, name), getattr(made, name)
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
    assert held_bytes(computations._decoded(TOKENS, config)) < 2.5 * MB < 16 * MB < held_bytes(fresh)


# --- the cache itself ---------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def sized(max_bytes: int = 100, idle: float | None = 30.0) -> tuple[BoundedCache, Clock]:
    clock = Clock()
    return BoundedCache("test", max_bytes, idle=idle, size=lambda value: value[0], clock=clock), clock


def test_the_least_recently_read_go_first_until_the_total_fits():
    kept, _ = sized(100)
    for key in "abc":
        kept.put(key, (40,))
    assert "a" not in kept and kept.nbytes == 80  # 120 > 100: the oldest went
    kept.get("b", lambda: (40,))  # read: now the newest
    kept.put("d", (40,))
    assert "c" not in kept and "b" in kept and "d" in kept and kept.nbytes == 80
    kept.put("huge", (101,))  # larger than the whole cache: not kept, nothing pushed out for it
    assert "huge" not in kept and len(kept) == 2
    assert kept.get("huge", lambda: (101,)) == (101,)  # still computed and returned


def test_entries_nobody_reads_go_after_idle_seconds_and_the_sweep_frees_them(monkeypatch):
    kept, clock = sized(100, idle=30.0)
    forever, _ = sized(100, idle=None)
    kept.put("old", (10,))
    forever.put("table", (10,))
    clock.now = 20.0
    kept.put("new", (10,))
    clock.now = 31.0
    trimmed = []
    monkeypatch.setattr(bounded_cache.server_memory, "give_back", lambda: trimmed.append(True))
    assert bounded_cache.sweep() >= 1
    assert "old" not in kept and "new" in kept and kept.nbytes == 10 and trimmed
    assert "table" in forever  # idle=None: only pushed out by newer entries


def test_one_computation_per_key_however_many_ask_at_once():
    kept = BoundedCache("test", 10 * MB)
    calls = []
    gate = threading.Event()

    def computations() -> np.ndarray:
        calls.append(1)
        gate.wait(5)
        return np.zeros(10)

    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(kept.get("k", computations))) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(got) == 8 and all(g is got[0] for g in got)
    with pytest.raises(ValueError, match="read-only"):
        got[0][0] = 1.0  # shared by every caller: nobody can change it under another


def test_a_failed_computation_is_raised_and_not_kept():
    kept = BoundedCache("test", MB)

    def fail() -> None:
        raise ValueError("over the cap")

    with pytest.raises(ValueError, match="over the cap"):
        kept.get("k", fail)
    assert "k" not in kept and kept.get("k", lambda: "ok") == "ok"


def test_the_decorator_keys_on_arguments_but_underscored_ones():
    calls = []

    @bounded_cache.cache(max_bytes=MB)
    def f(a: int, b: int = 2, _c: object = None) -> int:
        calls.append((a, b))
        return a + b

    assert f(1) == f(1, 2) == f(a=1, _c="ignored") == 3
    assert f(1, 3) == 4 and calls == [(1, 2), (1, 3)]
    f.clear()
    assert f(1) == 3 and len(calls) == 3
