"""Caches bounded by the bytes their entries hold, and emptied of what nobody reads: every cache of the dashboard.

    @bounded_cache.cache(max_bytes=96 * MB)
    def attention_run(tokens, config) -> Run: ...       # one shared, read-only Run per (tokens, config)

    grids = bounded_cache.BoundedCache("figures", max_bytes=48 * MB)
    grids.get(key, build)                               # the object form, for a cache keyed by hand

Why not ``st.cache_data`` / ``st.cache_resource``: they bound a cache by its number of entries only, and an entry
of this app is 2 kB or 30 MB depending on the settings (one largest kv_cache run held 27 MB, so 16 entries of
them were 430 MB); ``st.cache_data`` also unpickles a fresh copy of its entry for every caller on every rerun.
Here:

- An entry's size is what it keeps alive (``held_bytes``): each NumPy buffer once (a view keeps its whole base),
  strings and containers by ``sys.getsizeof``, walked through dataclasses, tuples, lists, dicts and objects'
  attributes. Arrays of an object registered with ``resident`` (the loaded MiniLM, held for the process's life
  anyway) count nothing. An array two entries share counts in both: the total is an upper bound.
- Least recently used entries go first until the total is at most ``max_bytes``; a value larger than that is
  returned and not kept.
- An entry nobody has read for ``IDLE_SECONDS`` goes too (a daemon thread looks every ``SWEEP_SECONDS``; after it
  dropped something, it returns freed memory to the system: ``server_memory.give_back``), so a server whose class
  has left goes back to its resting size instead of keeping its caches full for the next class.
- Every caller gets the same object, never a copy, with every array in it read-only (a write raises instead of
  changing another student's page); one computation per key at a time, the other callers wait for its value.
- The key is the arguments, but those whose name starts with ``_`` (the value they pass is keyed by another
  argument, as in Streamlit's caches); arguments must be hashable.

``CACHE_BUDGET`` is what the caches may hold together: ``tests/dashboard/test_bounded_cache.py`` reads every
cache in dashboard/ and fails if one is bounded by entries only, or if the bounds add up to more.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import inspect
import sys
import threading
import time
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

import numpy as np

from dashboard.serve import server_memory

MB = 2**20
CACHE_BUDGET = 400 * MB
"""What every cache of a server process may hold together (these and the training registry's results), as issue 32
suggests: with the process at rest (about 275 MB, MiniLM loaded) that fills Community Cloud's smallest allowance,
690 MB, but for the pages in flight. ``python -m bench.memory --cycle``'s 30 heavy users, who train nothing,
peaked at 650 MB; in such runs these caches held up to 170 MB."""
IDLE_SECONDS = 30.0
"""An entry nobody read for this long is dropped: every value here is recomputed in milliseconds (a shared grid of
heads in tens), while a class that has left would otherwise keep hundreds of MB."""
SWEEP_SECONDS = 10.0
"""How often the sweeping thread looks for idle entries."""

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_SCALARS = (str, bytes, bytearray, int, float, complex, type(None))
_MACHINERY = (
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Condition,
    threading.Event,
)
"""What ``held_bytes`` does not walk into: code and synchronisation, not data a cache keeps."""

_resident: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
_caches: weakref.WeakSet[BoundedCache] = weakref.WeakSet()
_sweeper: threading.Thread | None = None
_sweeper_lock = threading.Lock()


def _root(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (itself, or the base its view chain ends in)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _arrays(value: object, seen: set[int]) -> Iterator[np.ndarray]:
    """Every ndarray reachable from ``value`` (through the containers ``held_bytes`` walks), each once."""
    for item in _walk(value, seen):
        if isinstance(item, np.ndarray):
            yield item


def _walk(value: object, seen: set[int]) -> Iterator[object]:
    """``value`` and everything it holds, each object once: containers, dataclasses, objects' attributes."""
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, np.ndarray):
            if item.dtype == object:
                stack.extend(item.ravel().tolist())
        elif isinstance(item, _SCALARS):
            pass
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (tuple, list, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, _MACHINERY):
            pass
        else:
            if dataclasses.is_dataclass(item):
                stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
            if hasattr(item, "__dict__"):
                stack.extend(vars(item).values())
            for slot in getattr(type(item), "__slots__", ()):
                if hasattr(item, slot):
                    stack.append(getattr(item, slot))


def held_bytes(value: object) -> int:
    """The bytes ``value`` keeps alive: each ndarray's buffer once (a view counts its base's, which it keeps
    whole), every other object by ``sys.getsizeof``; arrays registered with ``resident`` count nothing."""
    total = 0
    buffers: set[int] = set()
    for item in _walk(value, set()):
        if not isinstance(item, np.ndarray):
            total += sys.getsizeof(item)
            continue
        root = _root(item)
        if _resident.get(id(root)) is root:
            continue
        if item is not root:
            total += sys.getsizeof(item)  # the view's own header: its data is the root's
        if id(root) not in buffers:
            buffers.add(id(root))
            total += sys.getsizeof(root) + (0 if root.flags.owndata else root.nbytes)  # a buffer not NumPy's
    return total


def resident(value: T) -> T:
    """Mark the arrays of ``value`` (an object the process holds anyway: the loaded model) as counted by no cache:
    a cached run that reads the model's W matrices holds its own arrays, not the model's. Returns ``value``."""
    for array in _arrays(value, set()):
        root = _root(array)
        _resident[id(root)] = root
    return value


def read_only(value: T) -> T:
    """``value`` with every array inside it made read-only (``_walk``'s containers), then returned."""
    for array in _arrays(value, set()):
        array.flags.writeable = False
    return value


@dataclasses.dataclass
class _Entry:
    value: object
    nbytes: int
    used: float


class BoundedCache:
    """A least-recently-used cache of at most ``max_bytes`` (``held_bytes`` of its entries), which drops entries
    unread for ``idle`` seconds (None: only when more push them out, for small values slow to compute again);
    thread-safe, one computation per key at a time. ``size`` and ``clock`` are for tests."""

    def __init__(
        self,
        name: str,
        max_bytes: int,
        idle: float | None = IDLE_SECONDS,
        size: Callable[[object], int] = held_bytes,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"{name}: max_bytes must be positive, got {max_bytes}")
        self.name, self.max_bytes, self.idle = name, max_bytes, idle
        self._size, self._clock = size, clock
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()  # least recently read first
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}
        self.nbytes = 0
        """What the entries hold now (``held_bytes``), never more than ``max_bytes``."""
        _caches.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def _read(self, key: Hashable) -> _Entry | None:
        """Under the lock: the entry for ``key``, marked as just read, or None."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.used = self._clock()
            self._entries.move_to_end(key)
        return entry

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept for ``key``, or ``compute()``'s, made read-only and kept if it fits. A caller that finds
        another computing the same key waits for it; an exception from ``compute`` is raised and nothing kept."""
        with self._lock:
            self._expire()
            if (entry := self._read(key)) is not None:
                return entry.value  # type: ignore[return-value]
            turn = self._computing.setdefault(key, threading.Lock())
        with turn:
            with self._lock:
                if (entry := self._read(key)) is not None:  # computed while this caller waited for its turn
                    return entry.value  # type: ignore[return-value]
            try:
                value = compute()
                self.put(key, value)
            finally:
                with self._lock:
                    if self._computing.get(key) is turn:
                        del self._computing[key]
        return value

    def peek(self, key: Hashable) -> Any | None:
        """The value kept for ``key`` (marked as read), or None; computes nothing."""
        with self._lock:
            entry = self._read(key)
        return None if entry is None else entry.value

    def put(self, key: Hashable, value: object) -> None:
        """Keep ``value`` for ``key`` (replacing what was kept), its arrays made read-only, then drop the least
        recently read entries until the total fits; a value larger than ``max_bytes`` is not kept at all."""
        nbytes = self._size(read_only(value))
        with self._lock:
            self._drop(key)
            if nbytes <= self.max_bytes:
                self._entries[key] = _Entry(value, nbytes, self._clock())
                self.nbytes += nbytes
            while self.nbytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
        _start_sweeper()

    def discard_where(self, match: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key ``match`` is true for."""
        with self._lock:
            for key in [k for k in self._entries if match(k)]:
                self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def expire(self) -> int:
        """Drop the entries nobody read for ``idle`` seconds; returns how many."""
        with self._lock:
            return self._expire()

    def _expire(self) -> int:
        """Under the lock: ``expire``. The least recently read come first, so it stops at the first fresh one."""
        if self.idle is None:
            return 0
        since = self._clock() - self.idle
        idle = []
        for key, entry in self._entries.items():
            if entry.used >= since:
                break
            idle.append(key)
        for key in idle:
            self._drop(key)
        return len(idle)

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.nbytes -= entry.nbytes


def cache(max_bytes: int, *, spinner: str | None = None, idle: float | None = IDLE_SECONDS) -> Callable[[F], F]:
    """Decorate a function so its value is kept per arguments in a ``BoundedCache`` of ``max_bytes`` (and
    ``idle``); ``spinner`` is shown while a value is computed (as Streamlit caches' ``show_spinner``). The function
    gains ``clear()`` and ``cache`` (its ``BoundedCache``)."""

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        keyed = [name for name in signature.parameters if not name.startswith("_")]
        kept = BoundedCache(f"{function.__module__}.{function.__qualname__}", max_bytes, idle=idle)

        def compute(args: tuple, kwargs: dict) -> object:
            if spinner is None:
                return function(*args, **kwargs)
            import streamlit as st

            with st.spinner(spinner):
                return function(*args, **kwargs)

        @functools.wraps(function)
        def cached(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = tuple(bound.arguments[name] for name in keyed)
            return kept.get(key, lambda: compute(args, kwargs))

        cached.clear = kept.clear  # type: ignore[attr-defined]
        cached.cache = kept  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return decorate


def clear_all() -> None:
    """Empty every cache of the process (a benchmark's cold run, a test that must compute afresh)."""
    for kept in list(_caches):
        kept.clear()


def held() -> int:
    """What every cache of the process holds now, in bytes."""
    return sum(kept.nbytes for kept in list(_caches))


def sweep() -> int:
    """Drop every cache's idle entries; when any went, collect garbage and give freed memory back to the system
    (glibc's ``malloc_trim``: without it, the heap keeps the freed pages and RSS stays where the class left it).
    Returns how many entries went."""
    dropped = sum(kept.expire() for kept in list(_caches))
    if dropped:
        gc.collect()
        server_memory.give_back()
    return dropped


def _sweeping() -> None:
    while True:
        time.sleep(SWEEP_SECONDS)
        sweep()


def _start_sweeper() -> None:
    """Start the one sweeping thread of the process, once (a daemon: it never holds up the server's exit)."""
    global _sweeper
    if _sweeper is not None:
        return
    with _sweeper_lock:
        if _sweeper is None:
            _sweeper = threading.Thread(target=_sweeping, name="bounded_cache.sweep", daemon=True)
            _sweeper.start()
