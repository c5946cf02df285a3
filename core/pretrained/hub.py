"""Downloading pinned files from the Hugging Face hub: a plain ``urllib`` client, once per process.

The hub serves a file of a repository at a revision at ``{endpoint}/{repo}/resolve/{revision}/{name}``; a large
(LFS or Xet) file answers with a redirect to its CDN, which ``urllib`` follows. The endpoint is
``$HF_ENDPOINT`` when set (as ``huggingface_hub`` reads it: a mirror, or a test's server on 127.0.0.1).

Each file is checked three ways before it gets its final name: the size the server announces, the bytes that
arrived (a connection that closed early is a network error, worth another try) and the sha256 (other bytes are
refused, not retried). It is written under a name of its own first, so two processes sharing a cache never write
into one file.

``Download`` runs one download in a thread of its own, with its progress readable from any thread;
``download_once`` gives every caller in the process the same one for a folder, so two pages asking at once
download once.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ENDPOINT_ENV_VAR = "HF_ENDPOINT"
"""Environment variable naming the hub's address, as ``huggingface_hub`` reads it."""

HF_BASE_URL = "https://huggingface.co"

OFFLINE_SECONDS = 1.5
"""Time allowed to reach the hub (DNS and TCP connect) before giving up: the page must answer within 2 s."""

READ_TIMEOUT_SECONDS = 30.0
"""Once connected, how long a read may stall: 91 MB on a slow link arrives in many short waits."""

CHUNK_BYTES = 1 << 16
"""The most one read takes (``read1``: what has arrived, up to this): the progress moves as bytes arrive."""


class ChecksumError(ValueError):
    """A file's bytes are not the pinned ones (corrupted, truncated or another revision)."""


class IncompleteDownload(ConnectionError):
    """The connection ended before the whole file arrived: a network error, worth another try."""


@dataclass(frozen=True)
class Pinned:
    """One file of a repository at a revision, as it must arrive."""

    name: str
    sha256: str
    size: int
    """Bytes: the progress's total before any server answers, and a check on what it announces."""


@dataclass(frozen=True)
class Repository:
    """What to download: the files of ``repo`` at the commit ``revision``."""

    repo: str
    revision: str
    files: tuple[Pinned, ...]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def url(self, base_url: str, name: str) -> str:
        return f"{base_url.rstrip('/')}/{self.repo}/resolve/{self.revision}/{name}"


def endpoint() -> str:
    """The hub's address: ``$HF_ENDPOINT`` or https://huggingface.co."""
    return os.environ.get(ENDPOINT_ENV_VAR) or HF_BASE_URL


def sha256_of(path: Path) -> str:
    """Hex sha256 of the file at ``path``, read in chunks by ``hashlib.file_digest`` (never all in memory)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check_reachable(base_url: str) -> None:
    """Raise ``OSError`` unless the host (or the proxy) answers a TCP connect within ``OFFLINE_SECONDS``.

    ``socket`` timeouts do not cover DNS (``getaddrinfo`` can block far longer), so the
    look-up and the connect run in a daemon thread that is given up on at the deadline.
    """
    url = urllib.parse.urlsplit(base_url)
    proxy = urllib.request.getproxies().get(url.scheme)
    target = urllib.parse.urlsplit(proxy) if proxy else url
    host, port = target.hostname, target.port or (443 if target.scheme == "https" else 80)
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=OFFLINE_SECONDS).close()
            outcome.append(None)
        except OSError as err:
            outcome.append(err)

    thread = threading.Thread(target=connect, daemon=True, name="hub-reachable")
    thread.start()
    thread.join(OFFLINE_SECONDS)
    if not outcome:
        raise TimeoutError(f"{host}:{port} did not answer within {OFFLINE_SECONDS} s")
    if outcome[0] is not None:
        raise outcome[0]


def fetch_file(url: str, pinned: Pinned, folder: Path, progress: Callable[[int], None] = lambda n: None) -> Path:
    """GET ``url`` into ``folder/pinned.name``, calling ``progress(bytes)`` as bytes arrive; the file is renamed
    into place only once its size and sha256 are the pinned ones.

    Raises ``ChecksumError`` for other bytes (another size announced, more or other bytes sent),
    ``IncompleteDownload`` when the connection ends early, ``OSError`` for any other network failure.
    """
    folder.mkdir(parents=True, exist_ok=True)
    digest, got = hashlib.sha256(), 0
    fd, name = tempfile.mkstemp(dir=folder, prefix=f"{pinned.name}.", suffix=".part")
    part = Path(name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=READ_TIMEOUT_SECONDS) as response:
            announced = response.headers.get("Content-Length")
            if announced is not None and int(announced) != pinned.size:
                raise ChecksumError(
                    f"{url} offers {int(announced):,} bytes; the pinned {pinned.name} has {pinned.size:,}: "
                    "another file or revision"
                )
            while chunk := response.read1(CHUNK_BYTES):
                got += len(chunk)
                if got > pinned.size:
                    raise ChecksumError(f"{url} sent more than the pinned {pinned.name}'s {pinned.size:,} bytes")
                digest.update(chunk)
                out.write(chunk)
                progress(len(chunk))
        if got < pinned.size:
            raise IncompleteDownload(f"the connection closed after {got:,} of {pinned.size:,} bytes of {pinned.name}")
        if digest.hexdigest() != pinned.sha256:
            raise ChecksumError(
                f"{url} sent other bytes: sha256 {digest.hexdigest()}, expected {pinned.sha256} for {pinned.name}"
            )
        return part.replace(folder / pinned.name)
    except http.client.HTTPException as err:  # IncompleteRead of a chunked answer, a malformed status line
        raise IncompleteDownload(f"{pinned.name}: {err!r}") from err
    finally:
        part.unlink(missing_ok=True)


def download(
    repository: Repository, folder: Path, base_url: str, progress: Callable[[int], None] = lambda n: None
) -> Path:
    """Fetch every file of ``repository`` that ``folder`` lacks (``fetch_file``); ``progress`` counts every byte
    of the total, a file already there at once."""
    for pinned in repository.files:
        target = folder / pinned.name
        if target.is_file() and target.stat().st_size == pinned.size and sha256_of(target) == pinned.sha256:
            progress(pinned.size)
            continue
        fetch_file(repository.url(base_url, pinned.name), pinned, folder, progress)
    return folder


class Download:
    """One download of ``repository`` into ``folder``, in a daemon thread of its own (``start``).

    Read from any thread: ``done`` of ``total`` bytes, ``reached`` (set once the hub answered, or the download
    ended), ``finished``, ``error``. ``wait`` returns the folder or raises what stopped it.
    """

    def __init__(self, repository: Repository, folder: Path, base_url: str) -> None:
        self.repository, self.folder, self.base_url = repository, folder, base_url
        self.total = repository.size
        self.done = 0
        self.reached = threading.Event()
        self.finished = threading.Event()
        self.error: BaseException | None = None
        self.seconds: float | None = None
        """How long it took, once finished."""
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"download-{repository.repo}")

    def start(self) -> Download:
        self._thread.start()
        return self

    def _count(self, n: int) -> None:
        self.done += n  # one writer (this download's thread); readers see some recent value

    def _run(self) -> None:
        start = time.perf_counter()
        try:
            check_reachable(self.base_url)
            self.reached.set()
            download(self.repository, self.folder, self.base_url, self._count)
        except Exception as err:  # every failure is reported to the waiting pages, none is lost in a thread
            self.error = err
        finally:
            self.seconds = time.perf_counter() - start
            self.reached.set()
            self.finished.set()

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 1.0

    @property
    def failed(self) -> bool:
        return self.finished.is_set() and self.error is not None

    def complete(self) -> bool:
        """Finished without error, and every file still in the folder."""
        return (
            self.finished.is_set()
            and self.error is None
            and all((self.folder / f.name).is_file() for f in self.repository.files)
        )

    def wait(self, timeout: float | None = None) -> Path:
        """The folder once the download finished; raises its error, or ``TimeoutError`` after ``timeout``."""
        if not self.finished.wait(timeout):
            raise TimeoutError(f"the download into {self.folder} is still running after {timeout} s")
        if self.error is not None:
            raise self.error
        return self.folder


_downloads: dict[Path, Download] = {}
_downloads_lock = threading.Lock()


def download_once(repository: Repository, folder: Path, base_url: str, *, again: bool = False) -> Download:
    """The process's download into ``folder``: the one running, or the last one if it failed (``again``: start a
    new one instead) or is still complete; otherwise a new one, started. Every caller gets the same object."""
    with _downloads_lock:
        known = _downloads.get(folder)
        if known is not None and (not known.finished.is_set() or known.complete() or (known.failed and not again)):
            return known
        _downloads[folder] = started = Download(repository, folder, base_url).start()
        return started


def forget(folder: Path) -> None:
    """Drop the process's finished download into ``folder`` (the next ``download_once`` starts a new one)."""
    with _downloads_lock:
        known = _downloads.get(folder)
        if known is not None and known.finished.is_set():
            del _downloads[folder]
