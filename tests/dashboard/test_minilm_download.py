"""MiniLM on a fresh server (a Community Cloud app: requirements.txt only), in the page (AppTest).

Nothing on the server holds the files (``no_minilm_here``) and ``HF_ENDPOINT`` names a server on 127.0.0.1 that
answers as the hub does (tests/hub_server.py). The tests that need the model's own bytes serve the installed
package's files and skip without them (CI's full pass has them); the others serve stand-ins or nothing, and run
in CI's light pass too. No test reaches the network. Two pages at once (AppTest runs one at a time) and the bar as a
browser receives it: test_minilm_download_live.py, on a real server.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from core.pretrained import FIX_COMMAND, load_minilm
from core.pretrained.hub import Download, Repository
from core.pretrained.locate import MINILM_FILES
from core.pretrained.runs import layer_runs
from dashboard.compute import computations, minilm_files
from tests.conftest import require_minilm
from tests.dashboard.charts import charts, grids
from tests.dashboard.conftest import make_app, no_exception
from tests.hub_server import stand_in

SENTENCE = "The bank of the river."


@pytest.fixture
def fresh_server(no_minilm_here):
    """MiniLM not loaded in this process, and nothing on this server to load it from."""
    computations.minilm_or_error.clear()
    yield no_minilm_here
    computations.minilm_or_error.clear()


def _free_url() -> str:
    from bench.streamlit_server import free_port

    return f"http://127.0.0.1:{free_port()}"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


@pytest.fixture(scope="module")
def installed():
    """The installed files' folder (skips without them; CI's full pass has them), found before any test hides it."""
    return require_minilm()


def _assert_the_heads_are_minilms(at, installed) -> None:
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    want = layer_runs(load_minilm(installed), SENTENCE)[0].trace.weights  # layer 1, (12, T, T)
    got = grids(charts(at)["heads_chart"])
    assert len(got) == 12
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-7)


def test_offline_the_page_says_what_to_do_here_and_on_cloud_within_2_s(fresh_server, monkeypatch):
    url = _free_url()  # nobody listens there: a server with no network
    monkeypatch.setenv("HF_ENDPOINT", url)
    at = make_app(sentence=SENTENCE).run()  # the page at rest first: what follows times MiniLM's answer alone
    start = time.perf_counter()
    at.button_group(key="weights").set_value("minilm").run()
    elapsed = time.perf_counter() - start
    no_exception(at)
    assert elapsed < 2.0, f"the offline page took {elapsed:.2f} s"
    host = url.removeprefix("http://")
    [error] = [e.value for e in at.error]
    assert f"downloading them from {host} failed" in error
    assert [c.value for c in at.code] == [FIX_COMMAND]
    captions = " ".join(c.value for c in at.caption)
    assert "On your own computer, install them once" in captions and "ATTENTION_LAB_MINILM_DIR" in captions
    assert f"On Streamlit Community Cloud, or any server that reaches {host}, nothing needs installing" in captions
    assert f"({_mb(MINILM_FILES.size)}, each file checked by sha256) once for the server" in captions
    assert at.button(key="minilm_retry")
    start = time.perf_counter()
    at.run()  # a rerun answers from the failure the process keeps, without waiting for the network again
    assert time.perf_counter() - start < 1.0 and [e.value for e in at.error] == [error]


def test_a_server_sending_other_files_is_refused_with_the_fix(fresh_server, monkeypatch, hub_server, tmp_path):
    """Files of other sizes (a proxy's error page, another revision): refused on what the server announces."""
    other = stand_in(tmp_path / "other", {f.name: 1000 for f in MINILM_FILES.files})
    served = hub_server(Repository(MINILM_FILES.repo, MINILM_FILES.revision, other.files), tmp_path / "other")
    monkeypatch.setenv("HF_ENDPOINT", served.url)
    at = make_app(weights="minilm", sentence=SENTENCE).run()
    no_exception(at)
    [error] = [e.value for e in at.error]
    assert "MiniLM's files could not be used" in error and "offers 1,000 bytes" in error
    assert [c.value for c in at.code] == [FIX_COMMAND] and at.button(key="minilm_retry")
    assert not fresh_server.exists() or not any(fresh_server.iterdir())  # nothing kept


@pytest.fixture
def served_minilm(hub_server, installed):
    """The installed files, served on 127.0.0.1 as the hub serves them."""
    return hub_server(MINILM_FILES, installed)


def test_the_first_use_downloads_the_pinned_files_and_draws_the_heads(
    fresh_server, monkeypatch, served_minilm, installed
):
    monkeypatch.setenv("HF_ENDPOINT", served_minilm.url)
    at = make_app(weights="minilm", sentence=SENTENCE).run()
    _assert_the_heads_are_minilms(at, installed)
    assert served_minilm.gets == {"model.safetensors": 1, "vocab.txt": 1}
    assert sorted(p.name for p in fresh_server.iterdir()) == ["model.safetensors", "vocab.txt"]
    assert computations.minilm().directory == fresh_server
    at.run()  # the next run: the model is loaded, nothing is fetched again
    assert served_minilm.gets == {"model.safetensors": 1, "vocab.txt": 1}


def test_try_again_after_the_network_came_back_downloads(fresh_server, monkeypatch, hub_server, installed):
    monkeypatch.setenv("HF_ENDPOINT", _free_url())
    at = make_app(weights="minilm", sentence=SENTENCE).run()
    assert at.button(key="minilm_retry") and at.error
    served = hub_server(MINILM_FILES, installed)
    monkeypatch.setenv("HF_ENDPOINT", served.url)  # the network is back (here: the hub's address answers)
    at.button(key="minilm_retry").click().run()
    _assert_the_heads_are_minilms(at, installed)
    assert served.gets == {"model.safetensors": 1, "vocab.txt": 1}


class _Bar:
    """What ``st.progress`` is given: each call's fraction and text, and whether it was emptied."""

    def __init__(self, shown: list) -> None:
        self.shown = shown
        self.emptied = False

    def progress(self, fraction: float, text: str) -> None:
        self.shown.append((fraction, text))

    def empty(self) -> None:
        self.emptied = True


def test_the_bar_moves_while_a_slow_server_sends(hub_server, tmp_path):
    """``wait_for`` draws the page's bar from the download as bytes arrive (stand-in files: 1.2 MB at 0.6 MB/s)."""
    repository = stand_in(tmp_path / "upstream", {"model.safetensors": 1_200_000, "vocab.txt": 4_000})
    served = hub_server(repository, tmp_path / "upstream", lfs=("model.safetensors",))
    served.bytes_per_second = 600_000
    shown: list[tuple[float, str]] = []
    bars: list[_Bar] = []

    def bar_of(fraction: float, text: str) -> _Bar:
        bars.append(_Bar(shown))
        shown.append((fraction, text))
        return bars[-1]

    download = Download(repository, tmp_path / "cache", served.url).start()
    assert minilm_files.wait_for(download, bar_of) is True
    fractions = [f for f, _ in shown]
    assert len(bars) == 1 and bars[0].emptied  # one bar, gone once the files are here
    assert fractions == sorted(fractions) and len({f for f in fractions if 0 < f < 1}) >= 5, fractions
    for _, text in shown:
        assert text.startswith(f"Downloading {repository.repo} (revision {repository.revision[:7]}) from 127.0.0.1:")
        assert f"of {_mb(repository.size)}, each file checked by sha256" in text
    done_mb = [float(text.split(": ")[1].split(" MB")[0]) for _, text in shown]
    assert done_mb == sorted(done_mb) and done_mb[-1] > done_mb[0]


def test_a_page_offline_shows_no_bar(tmp_path):
    """Offline, the answer is the message, not a bar drawn for the 1.5 s the hub is given."""
    repository = stand_in(tmp_path / "upstream", {"model.safetensors": 1000})
    drawn = []
    download = Download(repository, tmp_path / "cache", _free_url()).start()
    assert minilm_files.wait_for(download, lambda *a, **k: drawn.append(a)) is False
    assert drawn == [] and isinstance(download.error, ConnectionRefusedError)


def test_what_heads_learn_opens_on_a_fresh_server_with_every_minilm_step_drawn(
    fresh_server, monkeypatch, served_minilm
):
    """The tour's first eight steps are MiniLM's: on a fresh server its first step downloads the files (once), and
    every one of the eight draws its quiz or its maps, none an error (the first six showed only the error)."""
    from dashboard.classroom.tours import load_tours

    monkeypatch.setenv("HF_ENDPOINT", served_minilm.url)
    tour = load_tours()["what-heads-learn"]
    minilm_steps = [n for n, step in enumerate(tour.steps, 1) if step.settings.get("weights") == "minilm"]
    assert minilm_steps == [1, 2, 3, 4, 5, 6, 7, 8]
    for number in minilm_steps:
        at = make_app(tour="what-heads-learn", tour_step=str(number)).run()
        no_exception(at)
        assert not at.error, (number, [e.value for e in at.error])
        if tour.steps[number - 1].settings.get("quiz"):  # the question comes before any map
            assert [s for s in at.selectbox if s.key.startswith("quiz_pick_")], f"step {number} asks nothing"
        else:
            assert charts(at), f"step {number} draws no chart"
    assert served_minilm.gets == {"model.safetensors": 1, "vocab.txt": 1}
