"""Shared test helpers: optional dependencies skip locally but fail in CI.

`.ci/run` sets ATTENTION_LAB_REQUIRE_ALL=1, which turns every "torch missing" or
"chromium missing" skip into a failure, so CI can never pass by skipping them.

The tests run the way the app runs: one BLAS thread per process, pinned here before
anything imports NumPy (as ``dashboard/app.py`` does; tests/test_blas_threads.py checks it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
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


class RedisProcess:
    """A redis-server of one test's own, on a port it keeps: hang it (SIGSTOP), resume it, kill it (SIGKILL), start it
    again on the same port. ``persist``: every write goes to an append-only file in ``directory`` first, so a killed
    Redis started again has its rooms back (the default, like the README's, keeps nothing)."""

    def __init__(self, directory: Path, persist: bool = False) -> None:
        from bench.streamlit_server import free_port

        self.persist = persist
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        saving = ["--appendonly", "yes", "--appendfsync", "always"] if persist else ["--appendonly", "no"]
        self.args = [require_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        self.args += [*saving, "--dir", str(directory)]
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20) -> RedisProcess:
        import redis

        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        client, deadline = redis.Redis.from_url(self.url), time.monotonic() + timeout
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)

    def hang(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.resume()
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture
def own_redis(tmp_path):
    """A ``RedisProcess`` started for this test (nothing saved); stopped after it, hung or not."""
    server = RedisProcess(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def hub_server():
    """Start ``tests.hub_server.HubServer``\\ s for this test: ``hub_server(repository, folder)`` serves that folder's
    files on 127.0.0.1 as the Hugging Face hub does; each is stopped after the test."""
    from tests.hub_server import HubServer

    started: list[HubServer] = []

    def start(repository, folder: Path, lfs: tuple[str, ...] = ()) -> HubServer:
        started.append(HubServer(repository, folder, lfs).__enter__())
        return started[-1]

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def no_minilm_here(monkeypatch, tmp_path):
    """No directory named, no package, an empty cache under ``tmp_path`` and no proxy: MiniLM can only come from a
    download, as on a fresh Community Cloud app. Yields the cache folder."""
    from core.pretrained import locate

    monkeypatch.delenv(locate.ENV_VAR, raising=False)
    monkeypatch.setattr(locate, "package_directory", lambda: None)
    monkeypatch.setenv(locate.CACHE_ENV_VAR, str(tmp_path / "cache"))
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return locate.cache_directory()
