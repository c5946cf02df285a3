"""A local stand-in for the Hugging Face hub, on 127.0.0.1: the download tests' server (``conftest.hub_server``).

It answers as the hub does (what ``huggingface_hub.file_download.get_hf_file_metadata`` reads, and what the
hub sent for this model's files):

- ``{repo}/resolve/{revision}/{name}`` of a small file (``vocab.txt``): 200 with the bytes, ``ETag`` (the git
  blob's sha1) and ``X-Repo-Commit``;
- of a large one (LFS, ``model.safetensors``): 302 to the CDN's address with ``X-Repo-Commit``,
  ``X-Linked-Etag`` (the sha256), ``X-Linked-Size`` and ``ETag``; the CDN path answers with the bytes;
- anything else: 404 with ``X-Error-Code: EntryNotFound``.

HEAD answers the same headers without a body. What a test changes: ``served`` (the bytes sent for a name: other
bytes, a shorter file), ``cut`` (send the full ``Content-Length``, then close after that many bytes),
``bytes_per_second`` (a slow link, in 16 kB pieces). ``gets`` counts the bodies sent per name.
"""

from __future__ import annotations

import collections
import hashlib
import http.server
import threading
import time
from pathlib import Path

from core.pretrained.hub import Pinned, Repository

LFS_FROM_BYTES = 10_000_000
"""Files from this size up are LFS files on the hub (a redirect to the CDN): MiniLM's weights, not its vocabulary.
Stand-ins are small: ``lfs`` names them."""


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def stand_in(folder: Path, sizes: dict[str, int], seed: int = 0) -> Repository:
    """Small random files in ``folder`` and their pins: a repository made up for the test, like MiniLM's in shape."""
    import random

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    pins = []
    for name, size in sizes.items():
        data = rng.randbytes(size)
        (folder / name).write_bytes(data)
        pins.append(Pinned(name, hashlib.sha256(data).hexdigest(), size))
    return Repository("stand-in/tiny-model", "0123456789abcdef0123456789abcdef01234567", tuple(pins))


class HubServer:
    """Serves ``repository``'s files from ``folder`` as the hub would (see the module docstring)."""

    def __init__(self, repository: Repository, folder: Path, lfs: tuple[str, ...] = ()) -> None:
        self.repository = repository
        self.served: dict[str, bytes] = {f.name: (folder / f.name).read_bytes() for f in repository.files}
        self.lfs = set(lfs) | {f.name for f in repository.files if f.size >= LFS_FROM_BYTES}
        self.cut: dict[str, int] = {}
        self.bytes_per_second: float | None = None
        self.gets: collections.Counter[str] = collections.Counter()
        self.heads: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="hub-server")

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        hub = self
        resolve = f"/{hub.repository.repo}/resolve/{hub.repository.revision}/"

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep pytest's output clean
                pass

            def do_HEAD(self) -> None:
                self._answer(body=False)

            def do_GET(self) -> None:
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                pinned = {f.name: f for f in hub.repository.files}
                name = self.path.removeprefix(resolve) if self.path.startswith(resolve) else None
                cdn = self.path.removeprefix("/cdn/") if self.path.startswith("/cdn/") else None
                if name in pinned and name in hub.lfs:
                    return self._redirect(pinned[name])
                if name in pinned:
                    return self._file(name, {"ETag": f'"{git_blob_sha1(hub.served[name])}"'}, body)
                by_sha = {f.sha256: f.name for f in hub.repository.files if f.name in hub.lfs}
                if cdn in by_sha:
                    return self._file(by_sha[cdn], {"ETag": f'"{cdn}"'}, body)
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _redirect(self, pinned: Pinned) -> None:
                if self.command == "HEAD":
                    with hub._lock:
                        hub.heads[pinned.name] += 1
                self.send_response(302)
                self.send_header("Location", f"{hub.url}/cdn/{pinned.sha256}")
                self.send_header("X-Repo-Commit", hub.repository.revision)
                self.send_header("X-Linked-Etag", f'"{pinned.sha256}"')
                self.send_header("X-Linked-Size", str(len(hub.served[pinned.name])))
                self.send_header("ETag", f'"{git_blob_sha1(pinned.sha256.encode())}"')  # the pointer file's
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _file(self, name: str, headers: dict[str, str], body: bool) -> None:
                data = hub.served[name]
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Repo-Commit", hub.repository.revision)
                for key, value in headers.items():
                    self.send_header(key, value)
                if not body:
                    with hub._lock:
                        hub.heads[name] += 1
                    return self.end_headers()
                with hub._lock:
                    hub.gets[name] += 1
                cut = hub.cut.get(name)
                if cut is not None:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                sent = data if cut is None else data[:cut]
                piece = 1 << 14
                for start in range(0, len(sent), piece):
                    self.wfile.write(sent[start : start + piece])
                    if hub.bytes_per_second:
                        self.wfile.flush()
                        time.sleep(piece / hub.bytes_per_second)
                self.wfile.flush()

        return Handler
