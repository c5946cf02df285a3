"""The hub download end to end, against a server on 127.0.0.1 that answers as the hub does (tests/hub_server.py).

The files are stand-ins made here (random bytes, pinned by their own sha256 and size), so these tests need no
network and no installed weights: they test the client (its requests, redirects, checks, progress, giving up,
one download per process), not MiniLM's bytes. That the real files come through it and load as MiniLM is
tested in test_pretrained_weights.py and tests/dashboard/test_minilm_download.py, where the weights are installed.
That the stand-in server answers as the hub does is checked with ``huggingface_hub``'s own client.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from core.pretrained import hub
from core.pretrained.hub import ChecksumError, IncompleteDownload, download_once
from tests.conftest import skip_or_fail
from tests.hub_server import stand_in

SIZES = {"model.safetensors": 400_000, "vocab.txt": 3_000}
"""Like MiniLM's two files, 1/227 and 1/77 of their size: the weights an LFS file (a redirect), the vocabulary not."""


@pytest.fixture
def files(tmp_path):
    """(repository, the folder holding its files) for stand-in files."""
    folder = tmp_path / "upstream"
    return stand_in(folder, SIZES), folder


@pytest.fixture
def served(files, hub_server):
    repository, folder = files
    return hub_server(repository, folder, lfs=("model.safetensors",))


def _assert_nothing_kept(folder: Path) -> None:
    assert not folder.exists() or sorted(p.name for p in folder.iterdir()) == [], list(folder.iterdir())


def test_a_complete_download_has_the_pinned_bytes(files, served, tmp_path) -> None:
    repository, upstream = files
    cache = tmp_path / "cache"
    found = download_once(repository, cache, served.url).wait(timeout=20)
    assert found == cache
    assert sorted(p.name for p in cache.iterdir()) == sorted(SIZES)  # no .part left behind
    for name in SIZES:
        assert (cache / name).read_bytes() == (upstream / name).read_bytes()
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 1}  # the weights through the CDN's redirect


def test_a_download_that_finished_is_not_repeated(files, served, tmp_path) -> None:
    repository, _ = files
    first = download_once(repository, tmp_path / "cache", served.url)
    first.wait(timeout=20)
    assert download_once(repository, tmp_path / "cache", served.url) is first
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 1}
    (tmp_path / "cache" / "vocab.txt").unlink()  # the files went: a new download, of the missing file only
    again = download_once(repository, tmp_path / "cache", served.url)
    assert again is not first and again.wait(timeout=20) == tmp_path / "cache"
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 2}


@pytest.mark.parametrize("name", sorted(SIZES))
@pytest.mark.parametrize("at", [0, 0.5, -1])
def test_a_connection_closed_early_is_a_network_error_and_keeps_nothing(files, served, tmp_path, name, at) -> None:
    repository, _ = files
    served.cut[name] = int(SIZES[name] * at) % SIZES[name]  # nothing, half, all but the last byte
    download = download_once(repository, tmp_path / "cache", served.url)
    with pytest.raises(IncompleteDownload, match=rf"after {served.cut[name]:,} of {SIZES[name]:,} bytes of {name}"):
        download.wait(timeout=20)
    assert isinstance(download.error, OSError)  # the page offers to try again; locate_minilm says "failed"
    kept = tmp_path / "cache"
    assert not list(kept.glob("*.part")) and not (kept / name).exists()


def test_a_shorter_file_on_the_server_is_refused_on_its_announced_size(files, served, tmp_path) -> None:
    repository, _ = files
    served.served["model.safetensors"] = served.served["model.safetensors"][:1000]
    with pytest.raises(ChecksumError, match=r"offers 1,000 bytes; the pinned model\.safetensors has 400,000"):
        download_once(repository, tmp_path / "cache", served.url).wait(timeout=20)
    assert not (tmp_path / "cache" / "model.safetensors").exists()


@pytest.mark.parametrize("name", sorted(SIZES))
@pytest.mark.parametrize("where", [0, 0.5, -1])
def test_other_bytes_of_the_same_size_are_refused_and_not_kept(files, served, tmp_path, name, where) -> None:
    repository, _ = files
    data = bytearray(served.served[name])
    data[int(len(data) * where)] ^= 0x01
    served.served[name] = bytes(data)
    with pytest.raises(
        ChecksumError, match=rf"sent other bytes: sha256 [0-9a-f]{{64}}, expected [0-9a-f]{{64}} for {name}"
    ):
        download_once(repository, tmp_path / "cache", served.url).wait(timeout=20)
    cache = tmp_path / "cache"
    assert not (cache / name).exists() and not list(cache.glob("*.part"))


def test_a_slow_server_moves_the_progress_as_bytes_arrive(files, served, tmp_path) -> None:
    """What a page's bar reads (``done``, ``fraction``), sampled while 403 kB arrive at 200 kB/s: it moves through
    many values, never back, and ends at the total."""
    repository, _ = files
    served.bytes_per_second = 200_000
    download = download_once(repository, tmp_path / "cache", served.url)
    seen = []
    while not download.finished.is_set():
        seen.append(download.done)
        time.sleep(0.05)
    assert download.wait() == tmp_path / "cache"
    between = sorted(set(d for d in seen if 0 < d < download.total))
    assert len(between) >= 10, seen
    assert seen == sorted(seen) and download.done == download.total == sum(SIZES.values())
    assert download.fraction == 1.0 and download.seconds >= 1.5


def _free_port() -> int:
    from bench.streamlit_server import free_port

    return free_port()


def test_no_server_fails_within_two_seconds(files, tmp_path) -> None:
    repository, _ = files
    start = time.perf_counter()
    download = download_once(repository, tmp_path / "cache", f"http://127.0.0.1:{_free_port()}")
    assert download.reached.wait(2.0) and download.finished.wait(2.0)
    assert time.perf_counter() - start < 2.0
    assert isinstance(download.error, ConnectionRefusedError)
    _assert_nothing_kept(tmp_path / "cache")


def test_a_host_that_never_answers_fails_within_two_seconds(files, tmp_path, monkeypatch) -> None:
    """DNS or a connect that hangs (``getaddrinfo`` ignores socket timeouts): given up on at ``OFFLINE_SECONDS``."""
    repository, _ = files

    def hang(*args, **kwargs):
        time.sleep(10)
        raise OSError("unreachable")

    monkeypatch.setattr(hub.socket, "create_connection", hang)
    start = time.perf_counter()
    download = download_once(repository, tmp_path / "cache", "https://huggingface.co")
    assert download.finished.wait(2.0), "still waiting after 2 s"
    assert time.perf_counter() - start < 2.0 and isinstance(download.error, TimeoutError)


def test_a_failed_download_is_kept_until_asked_again(files, hub_server, tmp_path) -> None:
    """A page's rerun answers at once from the failure; "Try again" (``again``, ``forget``) starts a new one."""
    repository, upstream = files
    port = _free_port()
    failed = download_once(repository, tmp_path / "cache", f"http://127.0.0.1:{port}")
    failed.finished.wait(2.0)
    assert download_once(repository, tmp_path / "cache", f"http://127.0.0.1:{port}") is failed
    served = hub_server(repository, upstream)
    again = download_once(repository, tmp_path / "cache", served.url, again=True)
    assert again is not failed and again.wait(timeout=20) == tmp_path / "cache"
    hub.forget(tmp_path / "cache")
    assert download_once(repository, tmp_path / "cache", served.url) is not again


def test_two_pages_asking_at_once_download_once(files, served, tmp_path) -> None:
    repository, _ = files
    served.bytes_per_second = 2_000_000  # long enough for every caller to arrive while it runs
    barrier, got = threading.Barrier(8), []

    def page() -> None:
        barrier.wait()
        got.append(download_once(repository, tmp_path / "cache", served.url))

    threads = [threading.Thread(target=page) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert len(got) == 8 and all(d is got[0] for d in got)
    assert got[0].wait(timeout=20) == tmp_path / "cache"
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 1} and served.heads == {}


def test_two_processes_into_one_cache_each_write_their_own_file(files, served, tmp_path) -> None:
    """Two app processes share a cache but not their downloads: each writes under a name of its own and renames a
    verified file into place, so neither reads the other's half-written bytes."""
    repository, upstream = files
    served.bytes_per_second = 2_000_000
    both = [hub.Download(repository, tmp_path / "cache", served.url).start() for _ in range(2)]
    for d in both:
        assert d.wait(timeout=20) == tmp_path / "cache"
    assert served.gets["model.safetensors"] == 2  # at the same time (the vocabulary, later, may be found there)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(SIZES)
    for name in SIZES:
        assert (tmp_path / "cache" / name).read_bytes() == (upstream / name).read_bytes()


def test_the_endpoint_is_hf_endpoint_when_set(monkeypatch) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub.endpoint() == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:8080")
    assert hub.endpoint() == "http://127.0.0.1:8080"


def test_the_stand_in_server_answers_as_the_hub_does_for_huggingface_hub(files, served, tmp_path, monkeypatch) -> None:
    """``huggingface_hub``'s own client downloads the same bytes from it at the pinned revision: its HEAD reads
    X-Repo-Commit, ETag / X-Linked-Etag and X-Linked-Size, and it follows the weights' redirect."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        skip_or_fail(
            "huggingface_hub is not installed (it comes with transformers): pip install -r requirements-dev.txt"
        )
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # require_transformers may have set it for this process
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    repository, upstream = files
    for pinned in repository.files:
        path = hf_hub_download(
            repository.repo,
            pinned.name,
            revision=repository.revision,
            endpoint=served.url,
            cache_dir=tmp_path / "hf",
            etag_timeout=1.5,
        )
        assert Path(path).read_bytes() == (upstream / pinned.name).read_bytes()
        assert f"snapshots/{repository.revision}/" in Path(path).as_posix()
    assert served.heads["model.safetensors"] >= 1 and served.gets == {"model.safetensors": 1, "vocab.txt": 1}
