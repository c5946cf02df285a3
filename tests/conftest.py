"""Shared test helpers: optional dependencies skip locally but fail in CI.

`.ci/run` sets ATTENTION_LAB_REQUIRE_ALL=1, which turns every "torch missing" or
"chromium missing" skip into a failure, so CI can never pass by skipping them.

The tests run the way the app runs: one BLAS thread per process, pinned here before
anything imports NumPy (as ``dashboard/app.py`` does; tests/test_blas_threads.py checks it).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest  # none of these imports NumPy: the pin below still comes first

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Read by OpenBLAS, OpenMP and MKL when they load; the browser tests' servers inherit them."""
for _name in BLAS_THREAD_VARIABLES:
    os.environ[_name] = "1"

ROOT = Path(__file__).resolve().parents[1]

REQUIRE_ALL = os.environ.get("ATTENTION_LAB_REQUIRE_ALL") == "1"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``, or fail when CI requires every test to run."""
    if REQUIRE_ALL:
        pytest.fail(f"{reason} (ATTENTION_LAB_REQUIRE_ALL=1: CI must run this test)", pytrace=False)
    pytest.skip(reason)


def require_torch():
    """Return the torch module, or skip/fail when it is not installed."""
    try:
        import torch
    except ImportError:
        skip_or_fail("torch is not installed: pip install torch==2.13.0")
    return torch


def require_chromium() -> str:
    """Return the chromium path, or skip/fail when Debian's chromium is missing."""
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        skip_or_fail(f"chromium not found at {CHROMIUM}: apt-get install -y chromium")
    return CHROMIUM


def require_transformers():
    """Return the transformers module (with torch), or skip/fail when either is not installed."""
    require_torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference loads local files only, never the hub
    try:
        import transformers
    except ImportError:
        skip_or_fail("transformers is not installed: pip install -r requirements-dev.txt")
    return transformers


def require_minilm() -> Path:
    """Return the verified directory of all-MiniLM-L6-v2's files, or skip/fail when they are not installed."""
    from core.pretrained import FIX_COMMAND, WeightsNotFound, locate_minilm

    try:
        return locate_minilm(download=False)
    except WeightsNotFound:
        skip_or_fail(f"all-MiniLM-L6-v2's weights are not installed: {FIX_COMMAND}")


REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")


def require_redis_server() -> str:
    """Return the redis-server executable, or skip/fail when Debian's redis-server is missing."""
    found = shutil.which(REDIS_SERVER)
    if found is None:
        skip_or_fail(f"redis-server not found ({REDIS_SERVER}): apt-get install -y redis-server")
    return found


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server on a free local port, no persistence, for this test session; yields its URL.

    Tests that share it flush it first (``redis_url``). Never a mock or fakeredis: the Lua script, the locks and
    the key expiry are what is tested.
    """
    from bench.streamlit_server import redis_server as started

    with started(require_redis_server()) as url:
        yield url


@pytest.fixture
def redis_url(redis_server):
    """The session's redis-server, emptied: each test starts with no rooms."""
    import redis

    redis.Redis.from_url(redis_server).flushdb()
    return redis_server
